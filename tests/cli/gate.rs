//! A task's gate (docs/CONTRACT.md §6): run before the executor with the
//! executor's stdin and environment. Exit 0 opens it, exit 1 skips the run
//! (`skipped_gate`), anything else fails open and the run's summary says
//! so. Real processes: the gate is a script that journals its calls, its
//! stdin and its environment, then does as GATE_MODE says.
use crate::support::{assert_contains, gone, write_script, Rig, Task};

use std::time::{Duration, Instant};

use serde_json::Value;

const HOUR: i64 = 3600;

const GATE: &str = r#"#!/bin/sh
# Gate stand-in: journals the call, keeps its stdin and environment, then
# does as GATE_MODE says.
cat > "$GATE_DIR/stdin.$AGENTCRON_RUN_ID.json"
env > "$GATE_DIR/env"
echo "gate $AGENTCRON_RUN_ID" >> "$GATE_DIR/calls"
case "$GATE_MODE" in
  open) exit 0 ;;
  closed) echo; echo "  ${GATE_SAYS:-nothing new in the inbox}"; echo "and more"; exit 1 ;;
  crash) echo "half"; exit 3 ;;
  kill) kill -9 $$ ;;
  hang) sleep 30 & echo "$!" > "$GATE_DIR/child"; wait ;;
esac
"#;

/// A rig whose task `t` (hourly, due now) has the gate script in `mode`;
/// `flags` are its draft's own.
fn gated(mode: &str, flags: &[&str]) -> Rig {
    let rig = Rig::new();
    let dir = rig.env.path("gate");
    std::fs::create_dir_all(&dir).unwrap();
    let script = rig.env.path("gate.sh");
    write_script(&script, GATE);
    rig.env.set_env("GATE_DIR", dir.to_str().unwrap());
    rig.env.set_env("GATE_MODE", mode);
    let gate = script.display().to_string();
    let mut args = vec!["--instruction", "x", "--every", "1h", "--name", "t"];
    args.extend_from_slice(&["--gate", &gate]);
    args.extend_from_slice(flags);
    rig.env.task(&args);
    rig.env.advance(HOUR);
    rig
}

fn gate_calls(rig: &Rig) -> usize {
    crate::support::rig::journal(&rig.env.path("gate/calls")).len()
}

fn only_run(rig: &Rig) -> Value {
    let runs = rig.runs("t");
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn a_gate_exiting_0_lets_the_executor_run_with_the_same_stdin_and_no_store() {
    let rig = gated("open", &[]);
    rig.tick(&[]).ok();
    let run = only_run(&rig);
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["summary"], "done", "{run}");
    assert_eq!((gate_calls(&rig), rig.starts().len()), (1, 1));
    // The gate read what the executor read, byte for byte.
    let id = run["run_id"].as_str().unwrap();
    let gate_stdin = std::fs::read(rig.env.path(&format!("gate/stdin.{id}.json"))).unwrap();
    let exec_stdin = std::fs::read(rig.env.path(&format!("stdin/{id}.json"))).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&gate_stdin).trim_end(),
        String::from_utf8_lossy(&exec_stdin).trim_end()
    );
    // The executor's environment: the run's own variables, no store.
    let env = std::fs::read_to_string(rig.env.path("gate/env")).unwrap();
    assert_contains(&env, &format!("AGENTCRON_RUN_ID={id}"));
    let db = rig.env.db_arg();
    assert!(!env.contains("AGENTCRON_DB"), "{env}");
    assert!(!env.contains(&db), "the store's location leaked: {env}");
}

#[test]
fn a_gate_exiting_1_skips_the_run_with_its_first_line_and_no_retry() {
    let rig = gated(
        "closed",
        &[
            "--max-retries",
            "3",
            "--notify",
            "attention",
            "--realert",
            "3h",
        ],
    );
    rig.with_notifier(0);
    rig.tick(&[]).ok();
    let run = only_run(&rig);
    assert_eq!(run["status"], "skipped_gate", "{run}");
    assert_eq!(run["summary"], "nothing new in the inbox", "{run}");
    assert_eq!(run["reason"], "the gate found nothing to do (exit 1)");
    assert!(rig.starts().is_empty(), "the executor never ran");
    // Not a failure, not a success: no retry, the streak untouched.
    let task = rig.env.json(&["show", "t"]);
    assert_eq!(task["consecutive_failures"], 0, "{task}");
    assert!(task["next_retry_at"].is_null(), "{task}");
    // A designed outcome (docs/CONTRACT.md §16, amended by issue 44):
    // `attention` sends nothing for a gate's skip, whatever it says; the
    // ledger keeps it, held back by policy.
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    rig.env.set_env("GATE_SAYS", "3 new mails, none for you");
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert!(rig.notices().is_empty(), "{:?}", rig.notices());
    for run in rig.runs("t") {
        assert_eq!(run["status"], "skipped_gate");
        assert_eq!(run["delivery_status"], "suppressed", "{run}");
    }
    assert_eq!(
        rig.env.count(
            "SELECT count(*) FROM deliveries WHERE suppressed_reason = 'policy' AND kind = 'skipped'"
        ),
        3
    );
    assert!(rig.starts().is_empty());
    assert_eq!(gate_calls(&rig), 3);
}

#[test]
fn a_skipped_gate_line_is_escaped_in_the_runs_table() {
    let rig = gated("closed", &[]);
    rig.env.set_env("GATE_SAYS", "\u{1b}[31mred\u{1b}[0m");
    rig.tick(&[]).ok();
    let out = rig.env.run(&["runs", "t"]).ok();
    assert_contains(&out.stdout, "\\x1b[31mred");
    assert!(!out.stdout.contains('\u{1b}'), "{}", out.stdout);
}

/// The run of a gate that failed: the executor ran, and its summary says
/// why the gate failed first.
fn failed_open(mode: &str, tick: &[&str]) -> (Rig, Value) {
    let rig = gated(mode, &[]);
    let mut args = vec!["--kill-grace", "1s"];
    args.extend_from_slice(tick);
    rig.tick(&args).ok();
    let run = only_run(&rig);
    assert_eq!(run["status"], "succeeded", "the executor ran: {run}");
    assert_eq!(rig.starts().len(), 1);
    (rig, run)
}

#[test]
fn a_gate_that_crashes_fails_open() {
    let (_, run) = failed_open("crash", &[]);
    assert_eq!(run["summary"], "gate failed: exit 3; done", "{run}");
    let (_, run) = failed_open("kill", &[]);
    assert_eq!(
        run["summary"], "gate failed: killed by signal 9; done",
        "{run}"
    );
}

#[test]
fn a_gate_that_hangs_past_its_limit_fails_open_and_its_group_is_gone() {
    let started = Instant::now();
    let (rig, run) = failed_open("hang", &["--gate-timeout", "1s"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        run["summary"], "gate failed: timed out after 1 s; done",
        "{run}"
    );
    let pid: i32 = std::fs::read_to_string(rig.env.path("gate/child"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    crate::support::wait_for_within(
        "the gate's child to be gone",
        Duration::from_secs(3),
        || gone(pid),
    );
}

#[test]
fn a_gate_that_cannot_start_fails_open() {
    let rig = Rig::new();
    Task::named("t")
        .flags(&["--gate", "/nonexistent/gate --check"])
        .confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let run = only_run(&rig);
    assert_eq!(run["status"], "succeeded", "{run}");
    let summary = run["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("gate failed: cannot start: `/nonexistent/gate` does not exist"),
        "{summary}"
    );
    assert!(summary.ends_with("; done"), "{summary}");
}

#[test]
fn a_dry_run_shows_the_gate_and_does_not_run_it() {
    let rig = gated("open", &[]);
    let out = rig.tick(&["--dry-run"]).ok();
    let gate = rig.env.path("gate.sh").display().to_string();
    assert_contains(&out.stdout, &format!("(attempt 1) after its gate `{gate}`"));
    let events = rig.tick_json(&["--dry-run"]);
    assert_eq!(events[0]["event"], "would_claim", "{events:?}");
    assert_eq!(events[0]["gate"], gate.as_str(), "{events:?}");
    assert_eq!(gate_calls(&rig), 0, "a dry run runs no gate");
    assert!(rig.starts().is_empty());
}

#[test]
fn a_gate_timeout_over_30_s_is_refused() {
    let rig = Rig::new();
    let out = rig.tick(&["--gate-timeout", "31s"]).fails(2);
    assert_eq!(
        out.stderr.trim_end(),
        "agentcron: error: --gate-timeout: must be from 1 s to 30 s"
    );
}
