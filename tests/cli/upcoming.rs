//! `upcoming`: every task's coming occurrences in time order.
use crate::support::{Rig, Task, TestEnv, HOUR, T0};
use serde_json::Value;

#[test]
fn upcoming_merges_every_tasks_occurrences_in_time_order() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("hourly").confirm(env);
    Task::named("daily")
        .instruction("y")
        .daily("09:30")
        .tz("UTC")
        .confirm(env);
    Task::named("paused").instruction("z").confirm(env);
    env.run(&["pause", "paused"]).ok();
    Task::named("theirs")
        .instruction("w")
        .by("unix:bob")
        .confirm(env);
    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();

    let out = env.run(&["upcoming", "--within", "3h"]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    assert!(lines[0].starts_with("NEXT"), "{}", out.stdout);
    for (line, (next, task)) in lines[1..].iter().zip([
        ("2026-12-02 09:30 UTC", "daily"),
        ("2026-12-02 10:00 UTC", "hourly"),
        ("2026-12-02 11:00 UTC", "hourly"),
        ("2026-12-02 12:00 UTC", "hourly"),
    ]) {
        assert!(line.starts_with(next), "{line}");
        assert!(line.trim_end().ends_with(task), "{line}");
    }
    assert!(lines[2].contains("2026-12-02 09:00 UTC") && lines[2].contains("succeeded"));
    assert!(lines[1].contains(" -  "), "no run yet: {}", lines[1]);

    let rows = env.json(&["upcoming", "--within", "3h", "--limit", "2"]);
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert_eq!(rows[0]["name"], "daily");
    assert_eq!(rows[0]["left_seconds"], 1800);
    assert_eq!(rows[0]["last_status"], Value::Null);
    assert_eq!(rows[1]["at"], "2026-12-02T10:00:00Z");
    assert_eq!(rows[1]["last_status"], "succeeded");
    env.run(&["upcoming", "--within", "0s"]).fails(2);
}

#[test]
fn upcoming_is_the_first_occurrences_of_all_tasks_whatever_the_limit() {
    // Interval tasks with prime periods: their occurrences interleave and tie
    // (7 x 11 minutes). `upcoming` stops reading tasks once the rest start
    // too late to make the list; whatever --limit, its rows must be the
    // first N of every task's occurrences merged by time, then in the order
    // tasks are listed (next run, then creation, then id).
    let env = TestEnv::new();
    let mut tasks = Vec::new();
    for minutes in [7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 120, 600] {
        let task = Task::named(&format!("every-{minutes}m"))
            .every(&format!("{minutes}m"))
            .confirm(&env);
        tasks.push((task.task_id.as_str().to_string(), minutes * 60));
    }
    // Half an hour on, no tick has run: the shorter tasks are overdue, and
    // upcoming lists them from their next run on, as before.
    let now = T0 + 1800;
    env.set_now(now);
    let end = now + 2 * HOUR;
    // (time, the task's next run, its id): all were created at T0.
    let mut all: Vec<(i64, i64, String)> = Vec::new();
    for (id, period) in &tasks {
        let mut at = T0 + period;
        while at <= end {
            all.push((at, T0 + period, id.clone()));
            at += period;
        }
    }
    all.sort();
    let all: Vec<(i64, String)> = all.into_iter().map(|(at, _, id)| (at, id)).collect();
    for limit in [1, 2, 5, 13, 40, all.len(), all.len() + 10] {
        let rows = env.json(&["upcoming", "--within", "2h", "--limit", &limit.to_string()]);
        let got: Vec<(i64, String)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    now + r["left_seconds"].as_i64().unwrap(),
                    r["task_id"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(i64, String)> = all.iter().take(limit).cloned().collect();
        assert_eq!(got, want, "--limit {limit}");
    }
}

#[test]
fn upcoming_lists_tasks_that_run_at_one_instant_in_the_order_list_shows_them() {
    // Five tasks at 09:00 (a morning burst) and an hourly one, created a
    // minute apart: at one instant, the task listed first (next run, then
    // the older) comes first, and `upcoming` stops reading once the rest
    // cannot make the list.
    let env = TestEnv::new();
    let mut created = Vec::new();
    let hourly = Task::named("hourly").instruction("h").confirm(&env);
    created.push(hourly.task_id.as_str().to_string());
    for i in 1..=5 {
        env.set_now(T0 + 60 * i);
        let task = Task::named(&format!("burst-{i}"))
            .instruction("d")
            .daily("09:00")
            .tz("UTC")
            .confirm(&env);
        created.push(task.task_id.as_str().to_string());
    }
    let at_nine: Vec<(i64, String)> = created.iter().map(|id| (0, id.clone())).collect();
    let later: Vec<(i64, String)> = (1..=3).map(|h| (h * HOUR, created[0].clone())).collect();
    let all: Vec<(i64, String)> = at_nine.into_iter().chain(later).collect();
    for limit in 1..=all.len() {
        let rows = env.json(&["upcoming", "--within", "4h", "--limit", &limit.to_string()]);
        let got: Vec<(i64, String)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    // Seconds after 09:00 (T0 is 08:00, now five minutes on).
                    T0 + 300 + r["left_seconds"].as_i64().unwrap() - (T0 + HOUR),
                    r["task_id"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, all[..limit].to_vec(), "--limit {limit}");
    }
}

#[test]
fn upcoming_across_zones_shows_the_order_in_utc() {
    let env = TestEnv::new();
    Task::named("sh")
        .daily("09:00")
        .tz("Asia/Shanghai")
        .confirm(&env);
    Task::named("utc").daily("09:00").tz("UTC").confirm(&env);
    let out = env.run(&["upcoming", "--within", "2d"]).ok().stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("UTC"), "{out}");
    // Instant order, as the UTC column reads: 09:00 UTC, then 01:00 UTC tomorrow.
    assert!(lines[1].starts_with("2026-12-02 09:00 UTC"), "{out}");
    assert!(lines[2].starts_with("2026-12-03 01:00 UTC"), "{out}");
}

#[test]
fn upcoming_names_the_last_occurrence_a_coalesced_missed_run_stands_for() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("t").confirm(env);
    // Five hourly occurrences pass with no tick; the latest is past its
    // grace, so one missed run stands for all five.
    env.advance(5 * 3600 + 30 * 60);
    rig.tick(&[]).ok();
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "missed", "{run}");
    assert_eq!(run["skipped_occurrences"], 5, "{run}");
    let first = run["scheduled_for"].as_str().unwrap().to_string();
    let out = env.run(&["upcoming", "--limit", "1"]).ok();
    let row = out.stdout.lines().nth(1).expect("one row");
    let last = chrono::DateTime::parse_from_rfc3339(&first).unwrap() + chrono::Duration::hours(4);
    let last = last.format("%Y-%m-%d %H:%M UTC").to_string();
    assert!(
        row.contains(&format!("{last}  missed")),
        "{last}: {}",
        out.stdout
    );
}
