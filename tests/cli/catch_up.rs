//! Catch-up (docs/CONTRACT.md §6): a `--catch-up latest` task whose
//! occurrences passed their grace while no tick ran (cron stopped, the host
//! slept) runs the latest of them once, the earlier ones missed; never a
//! burst, never after a `resume`.
use crate::support::{assert_contains, Rig, Task};

use serde_json::Value;

const HOUR: i64 = 3600;
const DAY: i64 = 86_400;

/// A daily 09:00 UTC task `d` (the first occurrence an hour after T0),
/// with `flags` of its own.
fn daily(rig: &Rig, flags: &[&str]) {
    let mut args = vec![
        "--instruction",
        "the digest",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--name",
        "d",
    ];
    args.extend_from_slice(flags);
    rig.env.task(&args);
}

/// Statuses of the task's runs, oldest first, with their occurrence,
/// occurrences they stand for and catch-up mark.
fn history(rig: &Rig) -> Vec<(String, String, i64, bool)> {
    let mut runs = rig.runs("d");
    runs.reverse();
    runs.iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_string(),
                r["scheduled_local"].as_str().unwrap().to_string(),
                r["skipped_occurrences"].as_i64().unwrap(),
                r.get("catch_up") == Some(&Value::Bool(true)),
            )
        })
        .collect()
}

fn row(status: &str, local: &str, skipped: i64, catch_up: bool) -> (String, String, i64, bool) {
    (status.into(), local.into(), skipped, catch_up)
}

/// Three days and two hours without a tick: the occurrences of Dec 2, 3, 4
/// and 5 at 09:00 have all passed their grace.
fn after_three_days(rig: &Rig) {
    rig.env.advance(HOUR + 3 * DAY + 2 * HOUR);
}

#[test]
fn after_three_days_without_cron_the_latest_occurrence_runs_once() {
    let rig = Rig::new();
    daily(&rig, &["--catch-up", "latest"]);
    after_three_days(&rig);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "catching up a missed occurrence");
    assert_eq!(
        history(&rig),
        [
            row("missed", "2026-12-02T09:00:00+00:00", 3, false),
            row("succeeded", "2026-12-05T09:00:00+00:00", 0, true),
        ]
    );
    assert_eq!(rig.starts().len(), 1, "one executor, never a burst");
    // The run JSON says so; the executor's stdin too.
    let run = &rig.runs("d")[0];
    assert_eq!(run["catch_up"], true, "{run}");
    let id = run["run_id"].as_str().unwrap();
    let stdin = std::fs::read_to_string(rig.env.path(&format!("stdin/{id}.json"))).unwrap();
    assert!(stdin.contains(r#""catch_up":true"#), "{stdin}");
    // A run on time carries no key at all.
    let missed = &rig.runs("d")[1];
    assert!(missed.get("catch_up").is_none(), "{missed}");
    // A tick right after runs nothing more.
    rig.env.advance(60);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(rig.runs("d").len(), 2);
    // `runs` marks it.
    let table = rig.env.run(&["runs", "d"]).ok().stdout;
    assert_contains(&table, "catch-up, started 2 h after due");
}

#[test]
fn explain_says_why_a_run_caught_up() {
    let rig = Rig::new();
    daily(&rig, &["--catch-up", "latest"]);
    after_three_days(&rig);
    rig.tick(&[]).ok();
    let run = rig.runs("d")[0]["run_id"].as_str().unwrap().to_string();
    let explained = rig.env.json(&["explain", &run]);
    let text = explained["explanation"].to_string();
    assert!(text.contains("as a catch-up"), "{explained}");
    assert_eq!(explained["run"]["catch_up"], true, "{explained}");
}

#[test]
fn without_catch_up_every_late_occurrence_is_missed() {
    let rig = Rig::new();
    daily(&rig, &["--catch-up", "none"]);
    after_three_days(&rig);
    rig.tick(&[]).ok();
    assert_eq!(
        history(&rig),
        [row("missed", "2026-12-02T09:00:00+00:00", 4, false)]
    );
    assert!(rig.starts().is_empty());
}

#[test]
fn a_dry_run_says_it_would_catch_up() {
    let rig = Rig::new();
    daily(&rig, &["--catch-up", "latest"]);
    after_three_days(&rig);
    let out = rig.tick(&["--dry-run"]).ok();
    assert_contains(
        &out.stdout,
        "would run d for 2026-12-05 09:00 UTC (attempt 1, catching up a missed occurrence)",
    );
    assert!(rig.runs("d").is_empty(), "a dry run records nothing");
}

#[test]
fn a_resumed_task_does_not_catch_up() {
    let rig = Rig::new();
    daily(&rig, &["--catch-up", "latest"]);
    rig.env.run(&["pause", "d"]).ok();
    after_three_days(&rig);
    rig.env.run(&["resume", "d"]).ok();
    rig.tick(&[]).ok();
    assert!(
        rig.starts().is_empty(),
        "resume is explicit: nothing runs late"
    );
    assert!(rig.runs("d").is_empty(), "{:?}", rig.runs("d"));
    // The next occurrence runs on time, as any.
    rig.env.advance(DAY - 2 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(
        history(&rig),
        [row("succeeded", "2026-12-06T09:00:00+00:00", 0, false)]
    );
}

#[test]
fn a_once_task_resumed_after_its_time_is_missed_not_run() {
    let rig = Rig::new();
    Task::named("d")
        .at("2026-12-02 09:00")
        .tz("UTC")
        .flags(&["--catch-up", "latest"])
        .confirm(&rig.env);
    rig.env.run(&["pause", "d"]).ok();
    after_three_days(&rig);
    rig.env.run(&["resume", "d"]).ok();
    rig.tick(&[]).ok();
    assert!(rig.starts().is_empty());
    assert_eq!(
        history(&rig),
        [row("missed", "2026-12-02T09:00:00+00:00", 1, false)]
    );
}

#[test]
fn a_catch_up_run_that_fails_is_retried_as_usual() {
    let rig = Rig::new();
    daily(&rig, &["--catch-up", "latest", "--max-retries", "1"]);
    rig.env.set_env("FIXTURE_MODE", "fail");
    after_three_days(&rig);
    rig.tick(&[]).ok();
    let task = rig.env.json(&["show", "d"]);
    assert_eq!(task["consecutive_failures"], 1, "{task}");
    assert!(task["next_retry_at"].is_string(), "{task}");
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.advance(120);
    rig.tick(&[]).ok();
    let runs = rig.runs("d");
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[0]["attempt"], 2, "{runs:?}");
    assert_eq!(runs[0]["scheduled_local"], "2026-12-05T09:00:00+00:00");
    assert_eq!(rig.starts().len(), 2);
}
