//! Scenario 3: the clock jumps forward and back, crosses DST transitions
//! and reaches 2038-01-19 and 9999-12-31. No occurrence runs twice, nothing
//! panics, and no output shows a negative duration.
use crate::support::{Outcome, Rig, Task};

use std::collections::{BTreeSet, HashMap, HashSet};

use super::{assert_invariants, journal_starts, seeded, stress};

const MIN: i64 = 60;
const HOUR: i64 = 3600;
const DAY: i64 = 86400;

/// A negative number of seconds, minutes, … in human text ("in -3 min",
/// "late by -5 s") or a negative number in JSON (`"seconds":-5`).
fn assert_no_negative_duration(context: &str, text: &str) {
    let chars: Vec<char> = text.chars().collect();
    for i in 1..chars.len().saturating_sub(1) {
        let (before, c, after) = (chars[i - 1], chars[i], chars[i + 1]);
        let negative = c == '-'
            && after.is_ascii_digit()
            && (before == ' ' || before == '(' || before == ':' || before == '=');
        assert!(
            !negative,
            "{context}: negative value in output: …{}…",
            chars[i.saturating_sub(40)..(i + 40).min(chars.len())]
                .iter()
                .collect::<String>()
        );
    }
}

/// Ticks at `now` and looks at what every read command says afterwards.
fn tick_and_look(rig: &Rig, tasks: &[String]) {
    tick_and_maybe_look(rig, tasks, true);
}

fn tick_and_maybe_look(rig: &Rig, tasks: &[String], look_around: bool) {
    let at = rig.env.now();
    let out = rig.tick(&["--max-runs", "50"]).ok();
    assert_no_negative_duration(&format!("tick at {at}"), &out.stdout);
    assert_no_negative_duration(&format!("tick at {at}"), &out.stderr);
    if !look_around {
        return;
    }
    let json = rig.env.run(&["--json", "tick", "--max-runs", "50"]).ok();
    assert_no_negative_duration(&format!("json tick at {at}"), &json.stdout);
    let look = |args: &[&str]| {
        let out: Outcome = rig.env.run(args).ok();
        assert_no_negative_duration(&format!("{args:?} at {at}"), &out.stdout);
    };
    look(&["list"]);
    look(&["status"]);
    look(&["runs", "--limit", "20"]);
    // tick_age_seconds goes negative after the clock steps back: a known
    // defect, pinned by `status_never_reports_a_negative_tick_age`.
    let status = rig.env.run(&["--json", "status"]).ok();
    let status: String = status
        .stdout
        .lines()
        .filter(|l| !l.contains("\"tick_age_seconds\""))
        .collect();
    assert_no_negative_duration(&format!("status --json at {at}"), &status);
    for task in tasks {
        look(&["show", task]);
        look(&["next", task, "--count", "3"]);
        look(&["explain", task]);
    }
}

/// The (task name, occurrence) of every executor start, asserting each once.
fn started_occurrences(rig: &Rig) -> HashMap<String, BTreeSet<i64>> {
    let names: HashMap<String, (String, i64)> = rig
        .env
        .sql("SELECT r.run_id, t.name, r.scheduled_for FROM runs r JOIN tasks t USING (task_id)")
        .into_iter()
        .map(|r| (r[0].clone(), (r[1].clone(), r[2].parse().unwrap())))
        .collect();
    let mut seen = HashSet::new();
    let mut by_task: HashMap<String, BTreeSet<i64>> = HashMap::new();
    for (run, _, _) in journal_starts(&rig.env.path("exec.journal")) {
        let (name, at) = names[&run].clone();
        assert!(
            seen.insert((name.clone(), at)),
            "{name}: occurrence {at} ran twice"
        );
        by_task.entry(name).or_default().insert(at);
    }
    by_task
}

fn make_tasks(rig: &Rig, tz: &str, specs: &[(&str, &[&str])]) -> Vec<String> {
    for (name, schedule) in specs {
        let mut args = vec![
            "--instruction",
            "clock",
            "--name",
            name,
            "--tz",
            tz,
            "--max-retries",
            "0",
        ];
        args.extend_from_slice(schedule);
        rig.env.task(&args);
    }
    specs.iter().map(|(n, _)| n.to_string()).collect()
}

#[test]
fn clock_jumps_forward_and_back_never_run_an_occurrence_twice() {
    let (mut rng, _guard) = seeded("clock_jumps_forward", 3);
    let rig = Rig::new();
    let tasks = make_tasks(
        &rig,
        "UTC",
        &[
            ("hourly", &["--every", "1h"]),
            ("daily", &["--daily", "09:30"]),
            ("quarter", &["--cron", "*/15 * * * *"]),
            ("weekdays", &["--cron", "0 9 * * 1-5"]),
        ],
    );
    tick_and_look(&rig, &tasks);
    // The pattern of the issue, then random jumps of both signs.
    let mut moves = vec![3 * DAY, -2 * HOUR, 3 * HOUR, 3 * DAY, -2 * HOUR, 2 * HOUR];
    for _ in 0..20 * stress() {
        // Quarter-hour multiples land ticks on occurrences, so that
        // steps back revisit occurrences that really ran.
        let quarters = match rng.below(4) {
            0 => -(1 + rng.below(12) as i64),
            1 => rng.below(4 * 96) as i64,
            _ => 1 + rng.below(8) as i64,
        };
        let step = quarters * 15 * MIN;
        moves.push(step);
    }
    for step in moves {
        rig.env.advance(step);
        tick_and_look(&rig, &tasks);
    }
    started_occurrences(&rig);
    let figures = assert_invariants(&rig.env, &rig.env.path("exec.journal"));
    eprintln!(
        "clock jumps: {} runs, {} starts, 0 run twice",
        figures.runs, figures.starts
    );
}

/// Ticks every 30 minutes (on :00 and :30 UTC, which are :00 and :30 in New
/// York too) from `from` to `to`, with one step back of two hours at `back_at`.
fn sweep(rig: &Rig, tasks: &[String], from: i64, to: i64, back_at: i64) {
    let mut at = from;
    let mut went_back = false;
    let mut step = 0;
    while at <= to {
        rig.env.set_now(at);
        // The read commands are slow to run 14 times a tick; every 2 hours
        // and around the step back is enough to catch a negative duration.
        let near = (at - back_at).abs() <= 3 * HOUR;
        tick_and_maybe_look(rig, tasks, near || step % 4 == 0);
        step += 1;
        if at == back_at && !went_back {
            went_back = true;
            at -= 2 * HOUR;
        } else {
            at += 30 * MIN;
        }
    }
}

fn utc(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .timestamp()
}

fn set(items: &[&str]) -> BTreeSet<i64> {
    items.iter().map(|t| utc(t)).collect()
}

#[test]
fn dst_transitions_in_new_york_run_each_occurrence_once() {
    let (_rng, _guard) = seeded("dst_transitions", 0);
    let rig = Rig::new();
    let march = utc("2026-03-07T00:00:00Z");
    rig.env.set_now(march);
    let tasks = make_tasks(
        &rig,
        "America/New_York",
        &[
            ("daily0230", &["--daily", "02:30"]),
            ("cron0130", &["--cron", "30 1 * * *"]),
            ("hourly", &["--cron", "0 * * * *"]),
        ],
    );
    let march_end = utc("2026-03-10T00:00:00Z");
    sweep(&rig, &tasks, march, march_end, utc("2026-03-08T08:00:00Z"));
    let november = utc("2026-10-31T00:00:00Z");
    let november_end = utc("2026-11-03T00:00:00Z");
    // The months between pass with no tick: coalesced into missed runs.
    rig.env.set_now(november - 30 * MIN);
    tick_and_look(&rig, &tasks);
    sweep(
        &rig,
        &tasks,
        november,
        november_end,
        utc("2026-11-01T07:00:00Z"),
    );

    let ran = started_occurrences(&rig);
    let window = |name: &str, from: i64, to: i64| -> BTreeSet<i64> {
        ran[name]
            .iter()
            .copied()
            .filter(|t| (from..=to).contains(t))
            .collect()
    };
    // 02:30 does not exist on 03-08 (shifted to 03:30 EDT); it exists once on 11-01.
    assert_eq!(
        window("daily0230", march, march_end),
        set(&[
            "2026-03-07T02:30:00-05:00",
            "2026-03-08T03:30:00-04:00",
            "2026-03-09T02:30:00-04:00"
        ])
    );
    assert_eq!(
        window("daily0230", november, november_end),
        set(&[
            "2026-10-31T02:30:00-04:00",
            "2026-11-01T02:30:00-05:00",
            "2026-11-02T02:30:00-05:00"
        ])
    );
    // 01:30 occurs twice on 11-01: fixed-time cron runs once, at the first instant.
    assert_eq!(
        window("cron0130", march, march_end),
        set(&[
            "2026-03-07T01:30:00-05:00",
            "2026-03-08T01:30:00-05:00",
            "2026-03-09T01:30:00-04:00"
        ])
    );
    assert_eq!(
        window("cron0130", november, november_end),
        set(&[
            "2026-10-31T01:30:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-02T01:30:00-05:00"
        ])
    );
    // "0 * * * *" follows real time: every real hour once, 23 local hours on
    // 03-08 and 25 on 11-01.
    // (The March sweep starts when the task is created; November's first
    // tick, at 00:00, runs that hour.)
    for (first, from, to) in [(1, march, march_end), (0, november, november_end)] {
        let hours: BTreeSet<i64> = (first..=(to - from) / HOUR)
            .map(|h| from + h * HOUR)
            .collect();
        assert_eq!(window("hourly", from, to), hours);
    }
    let local: Vec<String> = rig
        .env
        .sql(
            "SELECT scheduled_local FROM runs JOIN tasks USING (task_id)
             WHERE name = 'hourly' AND scheduled_local LIKE '2026-11-01T01:00:00%'
             ORDER BY scheduled_for",
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(
        local,
        ["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"]
    );
    let figures = assert_invariants(&rig.env, &rig.env.path("exec.journal"));
    eprintln!(
        "dst new york: {} runs, {} starts, 0 run twice",
        figures.runs, figures.starts
    );
}

#[test]
fn the_2038_boundary_is_an_ordinary_hour() {
    let (_rng, _guard) = seeded("the_2038_boundary", 0);
    let rig = Rig::new();
    let start = utc("2038-01-19T00:00:00Z");
    rig.env.set_now(start);
    let tasks = make_tasks(
        &rig,
        "UTC",
        &[
            ("hourly", &["--every", "1h"]),
            ("epoch", &["--cron", "14 3 19 1 *"]),
            ("daily", &["--daily", "03:14"]),
        ],
    );
    for at in [
        "2038-01-19T01:00:00Z",
        "2038-01-19T02:00:00Z",
        "2038-01-19T03:00:00Z",
        "2038-01-19T03:14:00Z",
        "2038-01-19T03:14:07Z",
        "2038-01-19T03:14:08Z",
        "2038-01-19T04:00:00Z",
        "2038-01-19T05:00:00Z",
        "2038-01-19T06:00:00Z",
    ] {
        rig.env.set_now(utc(at));
        tick_and_look(&rig, &tasks);
    }
    let ran = started_occurrences(&rig);
    assert_eq!(ran["hourly"].len(), 6);
    assert_eq!(ran["epoch"], set(&["2038-01-19T03:14:00Z"]));
    assert!(ran["hourly"].contains(&utc("2038-01-19T04:00:00Z")));
    assert!(ran["hourly"].iter().any(|t| *t > i64::from(i32::MAX)));
    assert_eq!(
        rig.env.json(&["show", "epoch"])["next_run_at"],
        "2039-01-19T03:14:00Z"
    );
    assert_invariants(&rig.env, &rig.env.path("exec.journal"));
}

#[test]
fn the_end_of_year_9999_completes_an_interval_task_cleanly() {
    let (_rng, _guard) = seeded("the_end_of_year_9999", 0);
    let rig = Rig::new();
    rig.env.set_now(utc("9999-12-31T21:00:00Z"));
    let tasks = make_tasks(
        &rig,
        "UTC",
        &[
            ("hourly", &["--every", "1h"]),
            ("last", &["--cron", "59 23 31 12 *"]),
            ("daily", &["--daily", "23:30"]),
        ],
    );
    for at in [
        "9999-12-31T22:00:00Z",
        "9999-12-31T23:00:00Z",
        "9999-12-31T23:30:00Z",
        "9999-12-31T23:59:00Z",
        "9999-12-31T23:59:59Z",
    ] {
        rig.env.set_now(utc(at));
        tick_and_look(&rig, &tasks);
    }
    let ran = started_occurrences(&rig);
    assert_eq!(
        ran["hourly"],
        set(&["9999-12-31T22:00:00Z", "9999-12-31T23:00:00Z"])
    );
    assert_eq!(ran["last"], set(&["9999-12-31T23:59:00Z"]));
    assert_eq!(ran["daily"], set(&["9999-12-31T23:30:00Z"]));
    for name in ["hourly", "last", "daily"] {
        let task = rig.env.json(&["show", name]);
        assert_eq!(task["state"], "completed", "{name}: {task}");
        assert_eq!(task["next_run_at"], serde_json::Value::Null, "{name}");
    }
    // A schedule with no occurrence left is refused; nothing is written.
    let before = rig.env.db_bytes();
    for schedule in [
        &["--every", "1h"][..],
        &["--in", "1m"],
        &["--daily", "09:00"],
    ] {
        let mut args = vec!["draft", "--instruction", "late"];
        args.extend_from_slice(schedule);
        rig.env.run(&args).fails(2);
    }
    assert_eq!(rig.env.db_bytes(), before);
    // A clock past the last representable second is a usage error, not a panic.
    for now in ["10000-01-01T00:00:00Z", "253402300800", "-62167219201"] {
        rig.env.set_env("AGENTCRON_NOW", now);
        let out = rig.env.command(&["list"]).output().unwrap();
        assert_ne!(out.status.code(), Some(101), "AGENTCRON_NOW={now}");
        assert!(out.status.code().is_some(), "AGENTCRON_NOW={now}: signal");
    }
    rig.env
        .set_env("AGENTCRON_NOW", &utc("9999-12-31T23:59:59Z").to_string());
    assert_invariants(&rig.env, &rig.env.path("exec.journal"));
}

#[test]
fn status_never_reports_a_negative_tick_age() {
    let rig = Rig::new();
    // A tick needs a store: a draft makes one.
    Task::new().default_notify().draft(&rig.env);
    rig.tick(&[]).ok();
    rig.env.advance(-2 * HOUR);
    let out = rig.env.run(&["--json", "status"]).ok();
    assert_no_negative_duration("status --json after the clock stepped back", &out.stdout);
}
