//! `trigger`: one extra run now, claimed by the next tick under the same
//! rules as an occurrence, at most once, without moving the schedule.
use crate::support::{
    assert_contains, events, finished, spawn_tick, wait_for, Rig, Task, HOUR, T0,
};

use std::process::Child;

use serde_json::Value;

fn manual_runs(runs: &[Value]) -> Vec<&Value> {
    runs.iter().filter(|r| r["trigger"] == "manual").collect()
}

#[test]
fn trigger_runs_once_at_the_next_tick_without_moving_the_schedule() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("t").confirm(env);
    env.advance(600);
    let out = env
        .run(&["trigger", "t", "--reason", "testing the report"])
        .ok();
    assert_contains(&out.stdout, "one extra run due");
    assert_eq!(
        env.json(&["show", "t"])["next_run_at"],
        "2026-12-02T09:00:00Z",
        "the schedule does not move"
    );
    rig.tick(&[]).ok();
    let runs = rig.runs("t");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["trigger"], "manual");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T08:10:00Z");
    assert_eq!(rig.starts().len(), 1);
    let stdin = std::fs::read_dir(env.path("stdin"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let sent: Value =
        serde_json::from_str(&std::fs::read_to_string(stdin.path()).unwrap()).unwrap();
    assert_eq!(sent["run"]["trigger"], "manual");

    // At most once: another tick finds nothing.
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(
        env.json(&["show", "t"])["next_run_at"],
        "2026-12-02T09:00:00Z"
    );

    let log = env.run(&["log", "t"]).ok().stdout;
    assert_contains(&log, "triggered a run: testing the report");
    let trigger = &events(env, &["t"], "trigger")[0];
    assert_eq!(trigger["actor"], "unix:tester");

    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let runs = rig.runs("t");
    assert_eq!(runs[0]["trigger"], "schedule");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T09:00:00Z");
}

#[test]
fn trigger_refusals_paused_pending_non_owner() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("p").confirm(env);
    env.run(&["pause", "p"]).ok();
    let out = env.run(&["trigger", "p"]).fails(5);
    assert_contains(&out.stderr, "is paused");
    env.run(&["resume", "p"]).ok();
    env.run(&["trigger", "p", "--as", "unix:mallory"]).fails(4);
    env.run(&["trigger", "p", "--tenant", "other"]).fails(3);
    env.run(&["trigger", "p"]).ok();
    let out = env.run(&["trigger", "p"]).fails(5);
    assert_contains(&out.stderr, "already has a run triggered");
    // Pausing drops the pending trigger: nothing runs while paused, nor after.
    env.run(&["pause", "p"]).ok();
    env.run(&["resume", "p"]).ok();
    rig.tick(&[]).ok();
    assert!(rig.starts().is_empty());
}

#[test]
fn a_trigger_not_claimed_within_grace_is_missed() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("g").flags(&["--grace", "60s"]).confirm(env);
    env.run(&["trigger", "g"]).ok();
    env.advance(120);
    rig.tick(&[]).ok();
    let runs = rig.runs("g");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "missed");
    assert_eq!(runs[0]["trigger"], "manual");
    assert_contains(runs[0]["reason"].as_str().unwrap(), "after the trigger");
    assert!(rig.starts().is_empty());
}

#[test]
fn a_trigger_while_a_run_is_active_is_skipped_overlap() {
    let rig = Rig::new();
    let env = &rig.env;
    env.executors_sleep("2");
    Task::named("o").confirm(env);
    env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &[]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    env.advance(5);
    env.run(&["trigger", "o"]).ok();
    rig.tick(&[]).ok();
    let out = tick.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let runs = rig.runs("o");
    let manual = manual_runs(&runs);
    assert_eq!(manual.len(), 1);
    assert_eq!(manual[0]["status"], "skipped_overlap");
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn a_trigger_at_an_occurrence_second_takes_the_second_before() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("c").confirm(env);
    env.set_now(T0 + HOUR);
    env.run(&["trigger", "c"]).ok();
    rig.tick(&[]).ok();
    let runs = rig.runs("c");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let manual = manual_runs(&runs);
    assert_eq!(manual.len(), 1);
    assert_eq!(manual[0]["scheduled_for"], "2026-12-02T08:59:59Z");
    let scheduled: Vec<_> = runs.iter().filter(|r| r["trigger"] == "schedule").collect();
    assert_eq!(scheduled[0]["scheduled_for"], "2026-12-02T09:00:00Z");
}

#[test]
fn overlapping_ticks_run_a_trigger_at_most_once() {
    let rig = Rig::new();
    let env = &rig.env;
    for i in 0..5 {
        Task::named(&format!("m{i}")).confirm(env);
        env.run(&["trigger", &format!("m{i}")]).ok();
    }
    let ticks: Vec<Child> = (0..4).map(|_| spawn_tick(&rig, &[])).collect();
    for child in ticks {
        finished(child, 0);
    }
    assert_eq!(rig.starts().len(), 5);
    assert_eq!(
        env.count("SELECT count(*) FROM runs WHERE trigger = 'manual'"),
        5
    );
    assert_eq!(
        env.count("SELECT count(*) FROM tasks WHERE trigger_at IS NOT NULL"),
        0
    );
}
