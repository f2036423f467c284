//! Continuations: a run parked awaiting approval is approved (once), denied,
//! or expires; and executors killed for time or lease loss.
use crate::support::{assert_contains, finished, Rig, Task, T0};

const HOUR: i64 = 3600;

/// Its own parked run: a daily task, parked on the fixture's default
/// deadline, the executor left answering "awaiting" (so an approved
/// continuation says "approved and done").
fn parked_daily_run(rig: &Rig) -> String {
    rig.env.set_env("FIXTURE_MODE", "awaiting");
    Task::named("a").every("1d").confirm(&rig.env);
    rig.env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    let run = &rig.runs("a")[0];
    assert_eq!(run["status"], "awaiting_confirmation", "{run}");
    assert_eq!(run["wait_id"], "w1");
    assert_eq!(run["wait_kind"], "confirmation");
    run["run_id"].as_str().unwrap().to_string()
}

/// The continuation the executor of `run_id` was given on its last start.
fn continuation_seen(rig: &Rig, run_id: &str) -> serde_json::Value {
    let stdin: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(rig.env.path("stdin").join(format!("{run_id}.json"))).unwrap(),
    )
    .unwrap();
    stdin["continuation"].clone()
}

#[test]
fn approving_hands_the_run_to_the_next_tick_which_runs_it_once() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env
        .run(&["approve", &run_id, "--wait-id", "wrong"])
        .fails(5);
    // The operator's shell has no executor: approving needs none.
    let out = rig.env.run_without(
        "AGENTCRON_EXECUTOR",
        &["approve", &run_id, "--wait-id", "w1"],
    );
    let stdout = &out.stdout;
    assert_eq!(out.code, 0, "{stdout}");
    assert_contains(stdout, "the next tick runs");
    assert_eq!(rig.starts().len(), 1, "approve itself ran nothing");
    let run = &rig.runs("a")[0];
    assert_eq!(run["status"], "awaiting_confirmation");
    assert_eq!(run["approved_by"], "unix:tester");
    assert!(rig
        .env
        .run(&["show", "a"])
        .ok()
        .stdout
        .contains("approved by"));
    let again = rig
        .env
        .run(&["approve", &run_id, "--wait-id", "w1"])
        .fails(5);
    assert_contains(&again.stderr, "already approved");

    // The tick runs it with the decision, as cron's environment has it.
    let dry = rig.tick(&["--dry-run"]).ok().stdout;
    assert_contains(&dry, &format!("would run {} of a again", &run_id[..8]));
    assert_eq!(rig.starts().len(), 1);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    let events = rig.tick_json(&[]);
    assert!(
        events.iter().any(|e| e["event"] == "continued"),
        "{events:?}"
    );
    let run = &rig.runs("a")[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["approved_at"], serde_json::Value::Null);
    assert_eq!(
        continuation_seen(&rig, &run_id),
        serde_json::json!({"kind": "confirmation", "wait_id": "w1", "decision": "approved"})
    );
    assert_eq!(rig.starts().len(), 2);
    // Claimed at most once: neither a later tick nor a late approve runs it again.
    rig.tick(&[]).ok();
    rig.env
        .run(&["approve", &run_id, "--wait-id", "w1"])
        .fails(5);
    assert_eq!(rig.starts().len(), 2);
    let log = rig.env.run(&["log", "a"]).ok().stdout;
    assert_contains(&log, "the next tick runs it");
    assert_contains(&log, "ran the approved continuation");
    // Claimed, parked, approved, finished: leaving running twice is legal
    // here (found by the model-based store test: `check` called it a violation).
    let check = rig.env.run(&["check"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn approve_here_runs_the_executor_in_this_shell_at_once() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    let here = ["approve", &run_id, "--wait-id", "w1", "--here"];
    let out = rig.env.run_without("AGENTCRON_EXECUTOR", &here);
    assert_eq!(out.code, 2, "no executor here: a usage error");
    assert_eq!(rig.starts().len(), 1);
    let out = rig
        .env
        .run(&["approve", &run_id, "--wait-id", "w1", "--here"])
        .ok();
    assert_contains(&out.stdout, "succeeded");
    let run = &rig.runs("a")[0];
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["summary"], "approved and done");
    assert_eq!(
        continuation_seen(&rig, &run_id)["decision"],
        serde_json::json!("approved")
    );
    rig.env
        .run(&["approve", &run_id, "--wait-id", "w1", "--here"])
        .fails(5);
    assert_eq!(rig.starts().len(), 2);
}

#[test]
fn an_approval_outlives_the_wait_deadline_but_a_deny_before_the_tick_wins() {
    // Approved a minute before its deadline, ticked a minute after: the
    // person decided in time, so the tick runs it rather than expiring it.
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-03T08:01:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    rig.env.set_now(T0 + 86400 + 120);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    let out = rig.tick(&[]).ok();
    assert!(
        !out.stdout.contains("continuation expired"),
        "{}",
        out.stdout
    );
    assert_eq!(rig.runs("a")[0]["status"], "succeeded");
    assert_eq!(rig.starts().len(), 2);

    // Approved, then denied before any tick: the deny settles it, nothing runs.
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    let denied = rig.env.json(&["deny", &run_id, "--wait-id", "w1"]);
    assert_eq!(denied["status"], "failed");
    rig.tick(&[]).ok();
    let run = &rig.runs("a")[0];
    assert_eq!(
        (run["status"].as_str(), run["reason"].as_str()),
        (Some("failed"), Some("denied"))
    );
    assert_eq!(run["approved_at"], serde_json::Value::Null);
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn an_approved_run_of_a_task_paused_afterwards_waits_for_resume() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    rig.env.json(&["pause", "a"]);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "a paused task runs nothing");
    assert_eq!(rig.runs("a")[0]["status"], "awaiting_confirmation");
    rig.env.json(&["resume", "a"]);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 2);
    assert_eq!(rig.runs("a")[0]["status"], "succeeded");
}

#[test]
fn ticks_racing_for_an_approved_continuation_run_it_once() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    rig.env.executors_sleep("1");
    let ticks: Vec<_> = (0..6)
        .map(|_| crate::support::spawn_tick(&rig, &[]))
        .collect();
    for tick in ticks {
        finished(tick, 0);
    }
    assert_eq!(rig.starts().len(), 2, "one continuation, one start");
    assert_eq!(rig.runs("a")[0]["status"], "succeeded");
}

#[test]
fn only_an_owner_may_approve() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env
        .run(&["approve", &run_id, "--wait-id", "w1", "--as", "mallory"])
        .fails(4);
    rig.env
        .run(&["approve", "no-such-run", "--wait-id", "w1"])
        .fails(3);
}

#[test]
fn denying_records_failed_and_never_retries() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env.run(&["deny", &run_id, "--wait-id", "w1"]).ok();
    let run = &rig.runs("a")[0];
    assert_eq!(run["status"], "failed");
    assert_eq!(run["reason"], "denied");
    assert_eq!(
        rig.env.json(&["show", "a"])["next_retry_at"],
        serde_json::Value::Null
    );
    rig.env.run(&["deny", &run_id, "--wait-id", "w1"]).fails(5);
}

#[test]
fn an_expired_continuation_fails_and_is_delivered() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-03T08:30:00Z");
    let run_id = parked_daily_run(&rig);
    rig.with_notifier(0);
    rig.env.set_now(T0 + 86400 + 31 * 60);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stdout, "continuation expired");
    let run = &rig.runs("a")[0];
    assert_eq!(
        (run["status"].as_str(), run["reason"].as_str()),
        (Some("failed"), Some("continuation expired"))
    );
    rig.env
        .run(&["approve", &run_id, "--wait-id", "w1"])
        .fails(5);
    let messages: Vec<String> = rig
        .notices()
        .iter()
        .map(|n| n["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("waiting for approval")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("continuation expired")),
        "{messages:?}"
    );
}

#[test]
fn a_timed_out_executor_is_unknown_and_its_grandchildren_are_killed() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "spawn-grandchild");
    Task::named("t").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    let started = std::time::Instant::now();
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "unknown");
    assert!(
        run["reason"].as_str().unwrap().contains("timed out"),
        "{run}"
    );
    let pid: i32 = std::fs::read_to_string(rig.env.path("exec.journal.grandchild"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let gone = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
    };
    while !gone() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(gone(), "grandchild {pid} survived the timeout");
    // Unknown is never retried and blocks the next occurrence.
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("t")[0]["status"], "skipped_overlap");
}

#[test]
fn jobs_run_executors_in_parallel() {
    let rig = Rig::new();
    rig.env.executors_sleep("1");
    for i in 0..4 {
        Task::new().instruction(&format!("p{i}")).confirm(&rig.env);
    }
    rig.env.set_now(T0 + HOUR);
    let started = std::time::Instant::now();
    rig.tick(&["--jobs", "4"]).ok();
    let elapsed = started.elapsed();
    assert_eq!(rig.starts().len(), 4);
    // Four one-second executors in well under four seconds: they overlapped.
    assert!(
        elapsed < std::time::Duration::from_millis(3500),
        "{elapsed:?}"
    );
}

#[test]
fn approving_a_run_of_a_paused_task_is_refused_and_leaves_it_parked() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    rig.env.json(&["pause", "a"]);
    let before = rig.env.db_bytes();
    let out = rig
        .env
        .run(&["approve", &run_id, "--wait-id", "w1"])
        .fails(5);
    assert!(
        out.stderr
            .lines()
            .next()
            .unwrap()
            .contains("is paused; resume the task first"),
        "{}",
        out.stderr
    );
    assert_eq!(
        rig.env.db_bytes(),
        before,
        "a refused approve changes nothing"
    );
    assert_eq!(rig.starts().len(), 1, "the executor did not run again");
    assert_eq!(rig.runs("a")[0]["status"], "awaiting_confirmation");
    // Resumed, the same approval goes through, and the next tick runs it.
    rig.env.json(&["resume", "a"]);
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    assert_eq!(rig.starts().len(), 1);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 2);
}

#[test]
fn approving_a_run_of_a_deleted_task_is_refused_but_deny_settles_it() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    let task_id = rig.runs("a")[0]["task_id"].as_str().unwrap().to_string();
    rig.env.json(&["delete", "a"]);
    let before = rig.env.db_bytes();
    let out = rig
        .env
        .run(&["approve", &run_id, "--wait-id", "w1"])
        .fails(5);
    assert_contains(&out.stderr, "is deleted");
    assert_eq!(
        rig.env.db_bytes(),
        before,
        "a refused approve changes nothing"
    );
    assert_eq!(rig.starts().len(), 1, "the executor did not run again");
    let denied = rig.env.json(&["deny", &run_id, "--wait-id", "w1"]);
    assert_eq!(denied["status"], "failed");
    let run = &rig.runs(&task_id)[0];
    assert_eq!(
        (run["status"].as_str(), run["reason"].as_str()),
        (Some("failed"), Some("denied"))
    );
}

#[test]
fn another_tenants_parked_run_is_denied_without_naming_its_task() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    let run_id = parked_daily_run(&rig);
    let task_id = rig.runs("a")[0]["task_id"].as_str().unwrap().to_string();
    let before = rig.env.db_bytes();
    for args in [
        &["approve", &run_id, "--wait-id", "w1", "--tenant", "t2"][..],
        &["deny", &run_id, "--wait-id", "w1", "--tenant", "t2"],
    ] {
        let out = rig.env.run(args).fails(4);
        assert_eq!(
            out.stderr.lines().next().unwrap(),
            format!("agentcron: error: run {run_id} belongs to another tenant"),
        );
        assert!(!out.stderr.contains(&task_id), "{}", out.stderr);
        assert!(!out.stderr.contains(&task_id[..8]), "{}", out.stderr);
    }
    assert_eq!(rig.env.db_bytes(), before);
}
