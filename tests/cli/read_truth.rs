//! Issue 36 item 2, "read-side truth": what `show`, `list`, `upcoming`,
//! `explain` and `log` say matches what happened and what will happen.

use serde_json::Value;

use crate::support::{Rig, TestEnv, T0};

const HOUR: i64 = 3600;
/// 2026-12-03 09:30 in Shanghai.
const SHANGHAI_0930: i64 = T0 + 17 * HOUR + 30 * 60;

/// A store (made by a first draft) where unix:tester is in Shanghai and
/// task `standup` follows them, daily at 09:30.
fn standup_following_shanghai(env: &TestEnv) {
    env.draft(&["--instruction", "first", "--every", "1h"]);
    env.run(&["zone", "set", "unix:tester", "Asia/Shanghai"])
        .ok();
    env.task(&[
        "--instruction",
        "stand-up",
        "--daily",
        "09:30",
        "--tz",
        "follow",
        "--name",
        "standup",
    ]);
}

#[test]
fn show_says_an_approved_run_waits_for_the_tick_not_for_a_person() {
    let rig = Rig::new();
    let run_id = crate::support::parked_run(&rig, "p");
    let out = rig.env.run(&["show", "p"]).ok();
    assert!(
        out.stdout.contains("waits for `agentcron approve`"),
        "{}",
        out.stdout
    );
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    let out = rig.env.run(&["show", "p"]).ok();
    assert!(
        out.stdout
            .contains("approved by unix:tester; the next tick runs it"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("waits for `agentcron approve`"),
        "{}",
        out.stdout
    );
}

#[test]
fn list_and_upcoming_show_a_pending_retry_as_the_next_run() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "daily",
        "--retry-backoff",
        "5m",
    ]);
    env.set_env("FIXTURE_MODE", "fail");
    env.advance(HOUR);
    rig.tick(&[]).ok();
    let task = env.json(&["show", "daily"]);
    assert!(task["next_retry_at"].is_string(), "{task}");
    let list = env.run(&["list"]).ok().stdout;
    assert!(list.contains("(retry)"), "{list}");
    let upcoming = env.run(&["upcoming"]).ok().stdout;
    assert!(upcoming.contains("(retry)"), "{upcoming}");
    let rows = env.json(&["upcoming"]);
    assert_eq!(rows[0]["retry"], true, "{rows}");
    assert_eq!(rows[0]["at"], task["next_retry_at"], "{rows}");
}

#[test]
fn explain_names_a_triggered_run_that_blocks_the_task() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "t"]);
    env.run(&["trigger", "t", "--reason", "now please"]).ok();
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "5");
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    env.set_env("FIXTURE_MODE", "succeed");
    let runs = rig.runs("t");
    assert_eq!(runs[0]["status"], "unknown", "{runs:?}");
    assert_eq!(runs[0]["trigger"], "manual");
    // The next occurrence is due; no tick has claimed it yet.
    env.advance(HOUR);
    let explained = env.json(&["explain", "t"]);
    let paragraph = explained["explanation"].as_str().unwrap();
    assert!(
        paragraph.contains(&format!(
            "run {} (unknown, a manual trigger's run) blocks the task",
            runs[0]["run_id"].as_str().unwrap()
        )),
        "{explained}"
    );
    assert_eq!(explained["rule"], "blocked", "{explained}");
}

#[test]
fn explain_right_after_a_zone_move_explains_the_run_that_happened() {
    let rig = Rig::new();
    let env = &rig.env;
    standup_following_shanghai(env);
    env.set_now(SHANGHAI_0930 + 20);
    rig.tick(&[]).ok();
    let ran = &rig.runs("standup")[0];
    assert_eq!(ran["status"], "succeeded");
    env.advance(30 * 60);
    env.run(&["zone", "set", "unix:tester", "Europe/Berlin"])
        .ok();
    let explained = env.json(&["explain", "standup"]);
    assert_eq!(explained["run"]["run_id"], ran["run_id"], "{explained}");
    assert_eq!(
        explained["occurrence"], "2026-12-03T01:30:00Z",
        "{explained}"
    );
}

#[test]
fn empty_results_say_so_and_name_the_tenants_the_caller_has() {
    let env = TestEnv::new();
    env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "h",
        "--tenant",
        "acme",
    ]);
    let out = env.run(&["--tenant", "acm", "list"]).ok();
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("No tasks in tenant 'acm'")
            && out.stderr.contains("you have tasks in tenant 'acme' (1)"),
        "{}",
        out.stderr
    );
    let out = env
        .run(&["--tenant", "acme", "upcoming", "--within", "10m"])
        .ok();
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .contains("Nothing due within 10 min in tenant 'acme'"),
        "{}",
        out.stderr
    );
}

#[test]
fn log_says_zone_moves_applies_and_denials_in_words() {
    let rig = Rig::new();
    let env = &rig.env;
    standup_following_shanghai(env);
    env.run(&["zone", "set", "unix:tester", "Europe/Berlin"])
        .ok();
    env.run(&["zone", "unset", "unix:tester"]).ok();
    let file = env.path("tasks.toml");
    std::fs::write(
        &file,
        "source = \"ops\"\n[nightly]\ninstruction = \"x\"\ndaily = \"02:00\"\ntz = \"UTC\"\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let plan = env.json(&["plan", &file]);
    env.run(&[
        "apply",
        &file,
        "--hash",
        plan["plan_hash"].as_str().unwrap(),
    ])
    .ok();
    let run_id = crate::support::parked_run(&rig, "p");
    env.run(&["deny", &run_id, "--wait-id", "w1"]).ok();
    let log = env.run(&["log", "--limit", "100"]).ok().stdout;
    for words in [
        "set unix:tester's zone: Asia/Shanghai → Europe/Berlin",
        "unset unix:tester's zone (was Europe/Berlin)",
        "re-timed from Asia/Shanghai to Europe/Berlin",
        "confirmed by apply of source:ops (plan ",
        "denied wait w1: the run is failed",
    ] {
        assert!(log.contains(words), "missing {words:?} in:\n{log}");
    }
    assert!(!log.contains("identity_key="), "{log}");
    assert!(!log.contains("confirmed draft ,"), "{log}");
    let actions: Vec<Value> = env
        .json(&["log", "--limit", "100"])
        .as_array()
        .unwrap()
        .clone();
    assert!(actions.iter().any(|e| e["action"] == "deny"), "{actions:?}");
}

#[test]
fn log_reads_an_action_a_newer_build_wrote_as_its_detail() {
    let env = TestEnv::new();
    standup_following_shanghai(&env);
    let tenant = env.sql("SELECT tenant_key FROM tasks LIMIT 1")[0][0].clone();
    env.sql(&format!(
        "INSERT INTO events (at, tenant_key, actor, action, task_id, run_id, detail)
         VALUES ({T0}, '{tenant}', 'agentcron:tick', 'budget_exceeded', NULL, NULL,
                 '{{\"spent\":3}}')"
    ));
    let log = env.run(&["log", "--limit", "100"]).ok().stdout;
    let line = log.lines().find(|l| l.contains("budget_exceeded"));
    assert!(line.is_some_and(|l| l.contains("spent=3")), "{log}");
    let events = env.json(&["log", "--limit", "100"]);
    let newer = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "budget_exceeded");
    assert_eq!(
        newer.map(|e| e["detail"]["spent"].clone()),
        Some(3.into()),
        "{events}"
    );
}

#[test]
fn a_time_in_the_future_is_never_now_and_list_says_who_a_task_follows() {
    let env = TestEnv::new();
    standup_following_shanghai(&env);
    env.set_now(SHANGHAI_0930 - 30);
    let list = env.run(&["list"]).ok().stdout;
    assert!(list.contains("(in 30 s)"), "{list}");
    assert!(!list.contains("(now)"), "{list}");
    assert!(list.contains("follows unix:tester"), "{list}");
}

#[test]
fn upcoming_across_zones_shows_the_order_in_utc() {
    let env = TestEnv::new();
    env.task(&[
        "--instruction",
        "x",
        "--daily",
        "09:00",
        "--tz",
        "Asia/Shanghai",
        "--name",
        "sh",
    ]);
    env.task(&[
        "--instruction",
        "x",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--name",
        "utc",
    ]);
    let out = env.run(&["upcoming", "--within", "2d"]).ok().stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("UTC"), "{out}");
    // Instant order, as the UTC column reads: 09:00 UTC, then 01:00 UTC tomorrow.
    assert!(lines[1].starts_with("2026-12-02 09:00 UTC"), "{out}");
    assert!(lines[2].starts_with("2026-12-03 01:00 UTC"), "{out}");
}
