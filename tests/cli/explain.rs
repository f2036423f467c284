//! `explain`: why an occurrence or a run went as it did, naming the rule
//! that decided (blocked, unknown, coalesced, retried, DST, triggered, a
//! zone move).
use crate::support::{
    parked_run, standup_following_shanghai, unknown_run, Rig, Task, SHANGHAI_0930, T0,
};

const HOUR: i64 = 3600;

fn explain(rig: &Rig, task: &str, at: &str) -> serde_json::Value {
    rig.env.json(&["explain", task, "--at", at])
}

#[test]
fn explain_names_the_rule_that_decided() {
    let rig = Rig::new();
    Task::named("e").flags(&["--grace", "2m"]).confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let e = explain(&rig, "e", "2026-12-02T09:30:00Z");
    assert_eq!(e["rule"], "succeeded");
    assert!(e["explanation"].as_str().unwrap().contains("succeeded"));
    // Late beyond grace.
    rig.env.set_now(T0 + 2 * HOUR + 312);
    rig.tick(&[]).ok();
    let e = explain(&rig, "e", "2026-12-02T10:30:00Z");
    assert_eq!(e["rule"], "missed");
    assert!(
        e["explanation"]
            .as_str()
            .unwrap()
            .contains("late by 5 min 12 s > grace 2 min"),
        "{e}"
    );
    // Before the task existed.
    let e = explain(&rig, "e", "2026-12-02T08:00:00Z");
    assert_eq!(
        e["rule"], "created_after",
        "the anchor instant is the moment of confirmation"
    );
    // Paused with a reason.
    rig.env.json(&["pause", "e", "--reason", "maintenance"]);
    rig.env.set_now(T0 + 4 * HOUR + 10);
    let e = explain(&rig, "e", "2026-12-02T12:00:00Z");
    assert_eq!(e["rule"], "paused");
    assert!(
        e["explanation"].as_str().unwrap().contains("maintenance"),
        "{e}"
    );
    // The future.
    assert_eq!(
        rig.env
            .json(&["explain", "e", "--at", "2026-12-09T00:00:00Z"])["rule"],
        "future"
    );
}

#[test]
fn explain_blocked_unknown_coalesced_retried_and_dst() {
    let rig = Rig::new();
    let run_id = unknown_run(&rig, "b");
    rig.env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    let e = explain(&rig, "b", "2026-12-02T10:00:00Z");
    assert_eq!(e["rule"], "skipped_overlap");
    assert!(
        e["explanation"]
            .as_str()
            .unwrap()
            .contains(&format!("blocked by run {run_id} which is unknown")),
        "{e}"
    );
    assert_eq!(
        explain(&rig, "b", "2026-12-02T09:00:00Z")["rule"],
        "unknown"
    );

    let rig = Rig::new();
    Task::named("c").confirm(&rig.env);
    rig.env.set_now(T0 + 5 * HOUR + 600);
    rig.tick(&[]).ok();
    let e = explain(&rig, "c", "2026-12-02T11:30:00Z");
    assert_eq!(e["rule"], "missed_coalesced", "{e}");

    let rig = Rig::new();
    Task::named("r")
        .every("1d")
        .flags(&["--retry-backoff", "1m"])
        .confirm(&rig.env);
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.advance(60);
    rig.tick(&[]).ok();
    let e = explain(&rig, "r", "2026-12-03T12:00:00Z");
    assert_eq!(e["rule"], "succeeded");
    assert!(
        e["explanation"]
            .as_str()
            .unwrap()
            .contains("superseded by a retry"),
        "{e}"
    );

    let rig = Rig::new();
    rig.env.set_now(1_772_900_000); // 2026-03-07
    Task::named("d")
        .daily("02:30")
        .tz("America/New_York")
        .confirm(&rig.env);
    rig.env.set_now(1_772_900_000 + 2 * 86400);
    let e = explain(&rig, "d", "2026-03-08T12:00:00Z");
    assert_eq!(e["dst_shifted_from"], "02:30");
    assert!(
        e["explanation"]
            .as_str()
            .unwrap()
            .contains("DST-shifted from wall time 02:30"),
        "{e}"
    );
    assert_eq!(e["rule"], "no_tick");
}

#[test]
fn explain_names_a_triggered_run_that_blocks_the_task() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("t").confirm(env);
    env.run(&["trigger", "t", "--reason", "now please"]).ok();
    env.executors_sleep("5");
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
fn explain_takes_a_run_and_explains_its_occurrence() {
    let rig = Rig::new();
    let run = parked_run(&rig, "a");
    rig.env.advance(5 * HOUR);
    let by_run = rig.env.json(&["explain", &run[..8]]);
    assert_eq!(by_run["run"]["run_id"], run.as_str());
    assert_eq!(by_run["occurrence"], by_run["run"]["scheduled_for"]);
    rig.env
        .run(&["explain", &run[..8], "--at", "2026-12-02 09:00"])
        .fails(2);
}
