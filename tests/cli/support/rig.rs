//! `Rig`: a `TestEnv` wired to the executor and notifier fixtures, whose
//! journals are the ground truth for how often a side effect happened; and
//! the builders several suites share (a run frozen unknown, a run parked).
use crate::support::{kill, spawn_tick, wait_for, Task};

use std::path::PathBuf;

use super::TestEnv;

const HOUR: i64 = 3600;

pub fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// A TestEnv wired to the fixtures, with its journals.
pub struct Rig {
    pub env: TestEnv,
}

impl Rig {
    pub fn new() -> Rig {
        let env = TestEnv::new();
        env.set_env(
            "FIXTURE_JOURNAL",
            env.path("exec.journal").to_str().unwrap(),
        );
        env.set_env(
            "NOTIFIER_JOURNAL",
            env.path("notify.journal").to_str().unwrap(),
        );
        env.set_env("NOTIFIER_CALLS", env.path("notify.calls").to_str().unwrap());
        std::fs::create_dir_all(env.path("stdin")).unwrap();
        env.set_env("FIXTURE_STDIN", env.path("stdin").to_str().unwrap());
        env.set_env("AGENTCRON_EXECUTOR", &fixture("executor.sh"));
        Rig { env }
    }

    pub fn tick(&self, extra: &[&str]) -> crate::support::Outcome {
        let mut args = vec!["tick"];
        args.extend_from_slice(extra);
        self.env.run(&args)
    }

    pub fn tick_json(&self, extra: &[&str]) -> Vec<serde_json::Value> {
        let mut args = vec!["--json", "tick"];
        args.extend_from_slice(extra);
        self.env.run(&args).ok().json_lines()
    }

    pub fn starts(&self) -> Vec<String> {
        journal(&self.env.path("exec.journal"))
            .into_iter()
            .filter(|l| l.starts_with("start "))
            .collect()
    }

    pub fn notices(&self) -> Vec<serde_json::Value> {
        journal(&self.env.path("notify.journal"))
            .iter()
            .map(|l| serde_json::from_str(l).expect("notifier got JSON"))
            .collect()
    }

    pub fn runs(&self, task: &str) -> Vec<serde_json::Value> {
        let shown = self.env.json(&["show", task]);
        shown["runs"].as_array().unwrap().clone()
    }

    pub fn with_notifier(&self, exit: i32) {
        self.env
            .set_env("AGENTCRON_NOTIFIER", &fixture("notifier.sh"));
        self.env.set_env("NOTIFIER_EXIT", &exit.to_string());
    }
}

pub fn journal(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A task `name` whose run is frozen unknown (its executor timed out).
pub fn unknown_run(rig: &Rig, name: &str) -> String {
    Task::named(name).confirm(&rig.env);
    rig.env.executors_sleep("5");
    rig.env.advance(HOUR);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    rig.env.set_env("FIXTURE_MODE", "succeed");
    let run = &rig.runs(name)[0];
    assert_eq!(run["status"], "unknown");
    run["run_id"].as_str().unwrap().to_string()
}

/// A task `name` whose run is parked awaiting confirmation on wait id w1
/// (deadline 2026-12-04); the executor succeeds again afterwards.
pub fn parked_run(rig: &Rig, name: &str) -> String {
    rig.env.set_env("FIXTURE_MODE", "awaiting");
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    Task::named(name).confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    rig.env.set_env("FIXTURE_MODE", "succeed");
    let run = &rig.runs(name)[0];
    assert_eq!(run["status"], "awaiting_confirmation", "{run}");
    run["run_id"].as_str().unwrap().to_string()
}

/// A task `name` whose run holds a lease no tick renews any more: its tick
/// (run with `tick_args`, such as a short `--lease`) and its executor were
/// killed with SIGKILL an hour after T0. Returns the run id; the executor
/// succeeds again afterwards.
pub fn orphaned_lease(rig: &Rig, name: &str, tick_args: &[&str]) -> String {
    rig.env.executors_sleep("30");
    Task::named(name).confirm(&rig.env);
    rig.env.advance(HOUR);
    let mut tick = spawn_tick(rig, tick_args);
    wait_for("the executor to start", || !rig.starts().is_empty());
    kill(tick.id() as i32, libc::SIGKILL);
    let _ = tick.wait();
    // `start RUN TOKEN PID`; the executor leads its own process group.
    let start = rig.starts()[0].clone();
    let fields: Vec<&str> = start.split(' ').collect();
    let executor_pid: i32 = fields[3].parse().unwrap();
    kill(-executor_pid, libc::SIGKILL);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    fields[1].to_string()
}

/// The status of run `run_id` of `task`, as `show` reports it.
pub fn run_status(rig: &Rig, task: &str, run_id: &str) -> String {
    let runs = rig.runs(task);
    let run = runs
        .iter()
        .find(|r| r["run_id"] == run_id)
        .expect("the run");
    run["status"].as_str().unwrap().to_string()
}
