//! Deterministic crash points (`--features test-hooks`): the tick aborts at a
//! named point, as `kill -9` there would, and a later tick recovers. Each
//! point has one exact expected final state; nothing is ever run twice.

#![cfg(feature = "test-hooks")]

use crate::support::{assert_contains, events};
use crate::support::{journal, kill, spawn_tick, wait_for, Rig, Task, T0};

const HOUR: i64 = 3600;

/// Runs one tick that aborts at `point`, then recovery ticks well past every
/// lease and deadline; returns (run status, delivery status, executions,
/// notifier calls).
fn crash_at(point: &str) -> (String, String, usize, usize) {
    let rig = Rig::new();
    rig.with_notifier(0);
    // Long enough for a heartbeat (after_spawn) to come while it runs.
    rig.env.executors_sleep("0.4");
    Task::named("c").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    if point == "after_delivery_claim" || point == "after_notifier_exit" {
        // A pending notice first (no notifier), then the crash while delivering it.
        rig.env.set_env("AGENTCRON_NOTIFIER", "");
        let mut cmd = rig.env.command(&["tick", "--lease", "2s"]);
        cmd.env_remove("AGENTCRON_NOTIFIER");
        assert!(cmd.output().unwrap().status.success());
        rig.with_notifier(0);
    }
    rig.env
        .set_env("AGENTCRON_TEST_HOOK", &format!("{point}:abort"));
    let out = rig.tick(&[
        "--lease",
        "2s",
        "--notify-timeout",
        "1s",
        "--kill-grace",
        "1s",
    ]);
    assert_ne!(
        out.code, 0,
        "the tick should have aborted at {point}: {} {}",
        out.stdout, out.stderr
    );
    rig.env.set_env("AGENTCRON_TEST_HOOK", "");
    // Let an orphaned executor finish, then recover past lease and deadline.
    std::thread::sleep(std::time::Duration::from_millis(700));
    rig.env.set_now(T0 + HOUR + 30);
    rig.tick(&[]).ok();
    rig.env.set_now(T0 + HOUR + 60);
    rig.tick(&[]).ok();
    let run = &rig.runs("c")[0];
    assert_eq!(rig.env.json(&["check"])["ok"], true, "{point}");
    (
        run["status"].as_str().unwrap().to_string(),
        run["delivery_status"]
            .as_str()
            .unwrap_or("none")
            .to_string(),
        rig.starts().len(),
        journal(&rig.env.path("notify.journal")).len(),
    )
}

#[test]
fn crash_after_the_claim_commit_freezes_the_run_unexecuted() {
    assert_eq!(
        crash_at("after_claim"),
        ("unknown".into(), "delivered".into(), 0, 1)
    );
}

#[test]
fn crash_after_spawn_freezes_the_run_and_never_replays_it() {
    assert_eq!(
        crash_at("after_spawn"),
        ("unknown".into(), "delivered".into(), 1, 1)
    );
}

#[test]
fn crash_before_the_outcome_freezes_the_run() {
    assert_eq!(
        crash_at("before_outcome"),
        ("unknown".into(), "delivered".into(), 1, 1)
    );
}

#[test]
fn crash_after_the_outcome_commit_keeps_the_outcome_and_never_sends_the_notice() {
    assert_eq!(
        crash_at("after_outcome"),
        ("succeeded".into(), "unknown".into(), 1, 0)
    );
}

#[test]
fn crash_after_the_delivery_claim_never_sends_the_notice() {
    assert_eq!(
        crash_at("after_delivery_claim"),
        ("succeeded".into(), "unknown".into(), 1, 0)
    );
}

#[test]
fn crash_after_the_notifier_exits_sends_the_notice_once() {
    assert_eq!(
        crash_at("after_notifier_exit"),
        ("succeeded".into(), "unknown".into(), 1, 1)
    );
}

#[test]
fn sigterm_during_the_claim_takes_the_unstarted_run_back_and_it_runs_late_at_the_next_tick() {
    // Issue 33 item 11: the signal arrives inside the claim's transaction;
    // the claim commits, the executor never starts. Nothing ran, so nothing
    // is frozen unknown: the occurrence is due again, seen in time.
    let rig = Rig::new();
    rig.with_notifier(0);
    Task::named("c").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR + 30);
    let ready = rig.env.path("in-claim");
    rig.env.set_env(
        "AGENTCRON_TEST_HOOK",
        &format!("during_claim:signal:{}", ready.display()),
    );
    let tick = spawn_tick(&rig, &["--verbose"]);
    wait_for("the tick to be inside its claim", || ready.exists());
    kill(tick.id() as i32, libc::SIGTERM);
    let out = tick.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("taken back"),
        "{out:?}"
    );
    assert_contains(&stderr, "taken back and are due again");
    rig.env.set_env("AGENTCRON_TEST_HOOK", "");
    assert!(rig.runs("c").is_empty(), "{:?}", rig.runs("c"));
    assert!(rig.starts().is_empty());
    assert_eq!(
        rig.env.json(&["reconcile"]).as_array().map(Vec::len),
        Some(0)
    );
    assert_eq!(rig.env.json(&["check"])["ok"], true);
    // Past its grace (90 s) now, but a tick saw it due in time: it runs.
    rig.env.set_now(T0 + HOUR + 200);
    rig.tick(&[]).ok();
    let runs = rig.runs("c");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T09:00:00Z");
    assert_eq!(rig.starts().len(), 1);
    let released = events(&rig.env, &["c"], "release");
    assert!(
        released.iter().any(|e| e["actor"] == "agentcron:tick"),
        "{released:?}"
    );
    let log = rig.env.run(&["log", "c"]).ok().stdout;
    assert_contains(&log, "took back the run it had claimed");
}
