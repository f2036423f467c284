//! Silence noticed (issue 38 item 5, docs/CONTRACT.md §6, §16): a task that
//! sets `--expect-success DUR` is told `overdue` once when no run of it
//! succeeded within DUR of its last success (or of its first occurrence),
//! and again only after a new success and a new gap. Real processes through
//! the binary, on the store the suite runs on; the notifier's journal is
//! the ground truth for how many notices went out.
use crate::support::{assert_contains, events, Rig, Task, T0};

use serde_json::Value;

const HOUR: i64 = 3600;

/// `--every 1h` from T0 (08:00): the first occurrence is 09:00, so with
/// `--expect-success 3h` a task that never succeeds is overdue at 12:00.
fn expecting_task(rig: &Rig, flags: &[&str]) {
    Task::named("t")
        .flags(&["--expect-success", "3h"])
        .max_retries("0")
        .flags(flags)
        .confirm(&rig.env);
}

/// The overdue notices the notifier was handed.
fn overdue_notices(rig: &Rig) -> Vec<Value> {
    (rig.notices().into_iter())
        .filter(|n| n["kind"] == "overdue")
        .collect()
}

/// One tick every hour, `hours` times; returns what they printed.
fn hourly_ticks(rig: &Rig, hours: usize) -> String {
    let mut out = String::new();
    for _ in 0..hours {
        rig.env.advance(HOUR);
        out.push_str(&rig.tick(&[]).ok().stdout);
    }
    out
}

fn utc(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A time in JSON within a few seconds of `at`: a run's end is the pinned
/// instant moved on by however long the run took.
#[track_caller]
fn assert_about(value: &Value, at: i64) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a time: {value}"));
    let t = chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp();
    assert!((0..=5).contains(&(t - at)), "{text} is not {}", utc(at));
}

#[test]
fn overdue_after_a_cron_outage_is_told_once_then_again_after_a_new_success_and_gap() {
    let rig = Rig::new();
    rig.with_notifier(0);
    expecting_task(&rig, &[]);
    // 09:00 succeeds: the clock runs out at 12:00.
    hourly_ticks(&rig, 1);
    let shown = rig.env.json(&["show", "t"]);
    assert_about(&shown["success_due_at"], T0 + 4 * HOUR);
    assert!(shown["overdue_since"].is_null(), "{shown}");
    // Cron stops for ten hours; the runs fail from then on.
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.advance(10 * HOUR);
    let out = rig.tick(&[]).ok();
    let told = overdue_notices(&rig);
    assert_eq!(told.len(), 1, "{told:?}");
    let message = told[0]["message"].as_str().unwrap();
    assert!(
        message
            .contains("is overdue: no run has succeeded for 10 h (last success 2026-12-02 09:00"),
        "{message}"
    );
    assert_contains(message, "it expects one within 3 h");
    // The notifier told it: cron's mail does not repeat it (issue 44).
    assert!(!out.stdout.contains("is overdue"), "{}", out.stdout);
    // Further failing ticks: the same gap, nothing more.
    hourly_ticks(&rig, 5);
    assert_eq!(overdue_notices(&rig).len(), 1);
    let shown = rig.env.json(&["show", "t"]);
    assert_about(&shown["overdue_since"], T0 + 4 * HOUR);
    // A success ends it; a new gap of failures is told again, once.
    rig.env.set_env("FIXTURE_MODE", "succeed");
    hourly_ticks(&rig, 1);
    let shown = rig.env.json(&["show", "t"]);
    assert!(shown["overdue_since"].is_null(), "{shown}");
    assert_about(&shown["success_due_at"], rig.env.now() + 3 * HOUR);
    rig.env.set_env("FIXTURE_MODE", "fail");
    hourly_ticks(&rig, 6);
    let told = overdue_notices(&rig);
    assert_eq!(told.len(), 2, "{told:?}");
    assert_contains(
        told[1]["message"].as_str().unwrap(),
        "no run has succeeded for 3 h",
    );
    let overdue = events(&rig.env, &["t"], "overdue");
    assert_eq!(overdue.len(), 2, "{overdue:?}");
}

#[test]
fn a_failure_streak_past_the_duration_is_told_once_and_shown_everywhere() {
    let rig = Rig::new();
    rig.with_notifier(0);
    rig.env.set_env("FIXTURE_MODE", "fail");
    expecting_task(&rig, &[]);
    // 09:00, 10:00 and 11:00 fail: not overdue yet.
    hourly_ticks(&rig, 3);
    assert!(overdue_notices(&rig).is_empty());
    // 12:00: DUR after the first occurrence, and no success.
    let out = hourly_ticks(&rig, 1);
    assert!(!out.contains("is overdue"), "the notifier told it: {out}");
    assert!(
        overdue_notices(&rig)[0]["message"]
            .as_str()
            .unwrap()
            .contains("no run has succeeded since it was confirmed 4 h ago"),
        "{:?}",
        rig.notices()
    );
    hourly_ticks(&rig, 3);
    let told = overdue_notices(&rig);
    assert_eq!(told.len(), 1, "{told:?}");
    let since = utc(T0 + 4 * HOUR);

    let status = rig.env.json(&["status"]);
    let listed = status["overdue"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{status}");
    assert_eq!(listed[0]["name"], "t");
    assert_eq!(listed[0]["overdue_since"], since);
    assert!(listed[0]["last_success_at"].is_null(), "{status}");
    let text = rig.env.run(&["status"]).ok().stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("overdue") && l.contains("t (") && l.contains("no success yet")),
        "{text}"
    );

    let list = rig.env.json(&["list"]);
    assert_eq!(list[0]["overdue_since"], since, "{list}");
    let text = rig.env.run(&["list"]).ok().stdout;
    assert_contains(&text, "overdue 3 h ago");

    let text = rig.env.run(&["show", "t"]).ok().stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("overdue") && l.contains("since 2026-12-02 12:00")),
        "{text}"
    );
    // Never succeeded: no sample (not a success "in 1970").
    let metrics = rig.env.run(&["metrics"]).ok().stdout;
    assert!(
        !metrics.contains("last_success_timestamp_seconds"),
        "{metrics}"
    );

    // A success: off the list, and the gauge has its time.
    rig.env.set_env("FIXTURE_MODE", "succeed");
    hourly_ticks(&rig, 1);
    let status = rig.env.json(&["status"]);
    assert_eq!(status["overdue"], serde_json::json!([]), "{status}");
    let text = rig.env.run(&["status"]).ok().stdout;
    assert!(!text.contains("overdue"), "quiet when none: {text}");
    let id = rig.env.json(&["show", "t"])["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let metrics = rig.env.run(&["metrics"]).ok().stdout;
    let sample = format!("agentcron_last_success_timestamp_seconds{{task=\"{id}\"}} ");
    let value: i64 = (metrics.lines())
        .find_map(|l| l.strip_prefix(&sample))
        .unwrap_or_else(|| panic!("{metrics}"))
        .parse()
        .unwrap();
    assert!((0..=5).contains(&(value - rig.env.now())), "{metrics}");
    assert_contains(
        &metrics,
        "# TYPE agentcron_last_success_timestamp_seconds gauge",
    );
}

#[test]
fn notify_never_holds_the_overdue_notice_back() {
    let rig = Rig::new();
    rig.with_notifier(0);
    rig.env.set_env("FIXTURE_MODE", "fail");
    expecting_task(&rig, &["--notify", "never"]);
    hourly_ticks(&rig, 6);
    assert!(overdue_notices(&rig).is_empty(), "{:?}", rig.notices());
    assert_eq!(
        rig.env.count(
            "SELECT count(*) FROM deliveries WHERE kind = 'overdue' AND state = 'suppressed'"
        ),
        1
    );
    // Held back, not forgotten: status still says so.
    let status = rig.env.json(&["status"]);
    assert_eq!(status["overdue"].as_array().unwrap().len(), 1, "{status}");
}

/// Issue 44 item 3: the tick that decides the overdue is the one that
/// records the task's first runs (cron down since the confirmation): the
/// overdue is told all the same, once, on the runs that claim records.
#[test]
fn a_task_overdue_before_its_first_run_is_told_once() {
    let rig = Rig::new();
    rig.with_notifier(0);
    // Confirmed 08:00, hourly from 09:00, a success expected within 2 h:
    // overdue at 11:00. The run that finally starts at 12:00 succeeds.
    Task::named("t")
        .max_retries("0")
        .flags(&["--expect-success", "2h"])
        .confirm(&rig.env);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.set_now(T0 + 4 * HOUR);
    rig.tick(&[]).ok();
    let told = overdue_notices(&rig);
    assert_eq!(told.len(), 1, "{:?}", rig.notices());
    let message = told[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("t is overdue: no run has succeeded since it was confirmed 4 h ago"),
        "{message}"
    );
    assert_eq!(told[0]["run"]["status"], "missed", "{}", told[0]);
    // The gap was told once: later ticks tell nothing more.
    hourly_ticks(&rig, 3);
    assert_eq!(overdue_notices(&rig).len(), 1, "{:?}", rig.notices());
}

#[test]
fn a_paused_task_is_not_decided_and_resume_restarts_its_clock() {
    let rig = Rig::new();
    rig.with_notifier(0);
    expecting_task(&rig, &[]);
    rig.env.run(&["pause", "t"]).ok();
    rig.env.advance(10 * HOUR);
    rig.tick(&[]).ok();
    let shown = rig.env.json(&["show", "t"]);
    assert!(shown["overdue_since"].is_null(), "{shown}");
    rig.env.run(&["resume", "t"]).ok();
    // Resumed at 18:00: the next occurrence is 19:00, DUR after it.
    let shown = rig.env.json(&["show", "t"]);
    assert_eq!(shown["success_due_at"], utc(T0 + 14 * HOUR), "{shown}");
    assert!(overdue_notices(&rig).is_empty());
}

#[test]
fn a_replacement_without_expect_success_stops_the_clock() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "fail");
    expecting_task(&rig, &[]);
    hourly_ticks(&rig, 5);
    let shown = rig.env.json(&["show", "t"]);
    assert!(shown["overdue_since"].is_string(), "{shown}");
    rig.env
        .task(&["--replace", "t", "--expect-success", "none"]);
    let shown = rig.env.json(&["show", "t"]);
    assert!(shown["overdue_since"].is_null(), "{shown}");
    assert!(shown["success_due_at"].is_null(), "{shown}");
    assert_eq!(rig.env.json(&["status"])["overdue"], serde_json::json!([]));
    hourly_ticks(&rig, 5);
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM events WHERE action = 'overdue'"),
        1
    );
}

#[test]
fn a_reconciled_success_restarts_the_clock() {
    let rig = Rig::new();
    expecting_task(&rig, &[]);
    rig.env.executors_sleep("5");
    rig.env.advance(HOUR);
    // The tick's own timeout: the outcome is unknown.
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    let run = rig.runs("t")[0].clone();
    assert_eq!(run["status"], "unknown", "{run}");
    rig.env.advance(600);
    rig.env
        .run(&[
            "reconcile",
            run["run_id"].as_str().unwrap(),
            "--decision",
            "confirmed_succeeded",
            "--reason",
            "it did the work",
        ])
        .ok();
    let shown = rig.env.json(&["show", "t"]);
    assert_about(&shown["success_due_at"], rig.env.now() + 3 * HOUR);
}

#[test]
fn idle_ticks_with_many_expecting_tasks_decide_nothing() {
    let rig = Rig::new();
    rig.with_notifier(0);
    for i in 0..12 {
        let name = format!("t{i}");
        Task::named(&name)
            .every("1d")
            .flags(&["--expect-success", "3d"])
            .confirm(&rig.env);
    }
    // Nothing due, no clock run out: quiet, and nothing but the tick's record.
    for _ in 0..3 {
        rig.env.advance(60);
        let out = rig.tick(&[]).ok();
        assert_eq!(out.stdout, "", "{}", out.stdout);
    }
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM events WHERE action = 'overdue'"),
        0
    );
    let sql = "SELECT count(*) FROM tasks WHERE success_due_at IS NOT NULL";
    assert_eq!(rig.env.count(sql), 12);
}

/// The tick's reads of the success clock, planned by SQLite: along
/// `tasks_success_due`, never a walk of the tasks (recorded in process).
#[cfg(feature = "test-hooks")]
mod plan {
    use agentcron::store::sqlite::trace::recorded;

    use crate::plans::{agentcron_at, confirmed, plan, seeded};

    #[test]
    fn an_idle_tick_reads_the_success_clock_along_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("overdue.db").display().to_string();
        let conn = seeded(&db);
        for i in 0..200 {
            let name = format!("e{i}");
            let flags = [
                "--instruction",
                "x",
                "--every",
                "1d",
                "--name",
                &name,
                "--expect-success",
                "1h",
            ];
            confirmed(&db, &[], &flags);
        }
        let tick = &["tick", "--executor", "true"];
        let seen = recorded(|| agentcron_at(&db, "2026-12-02T08:01:00Z", tick));
        let clock: Vec<&String> = seen
            .iter()
            .filter(|s| s.contains("success_due_at"))
            .collect();
        assert!(!clock.is_empty(), "the tick never looked: {seen:#?}");
        for sql in clock {
            let lines = plan(&conn, sql);
            // A range of the index (a SEARCH), and no walk of the tasks.
            assert!(
                (lines.iter()).any(|l| l.starts_with("SEARCH tasks USING INDEX tasks_success_due")),
                "{lines:?} <- {sql}"
            );
            assert!(
                !(lines.iter()).any(|l| l.starts_with("SCAN tasks") && !l.contains("INDEX")),
                "{lines:?} <- {sql}"
            );
        }
        // Days on, every clock ran out (and every occurrence is missed, so
        // no run succeeds). The overdue step decides one batch (100); the
        // claim that records a task's first runs decides that task in the
        // same transaction (CONTRACT §6), so this tick, which records the
        // first (missed) runs of all 200, decides every one of them.
        let later = recorded(|| agentcron_at(&db, "2026-12-05T12:00:00Z", tick));
        for sql in later.iter().filter(|s| s.contains("success_due_at <=")) {
            let lines = plan(&conn, sql);
            assert!(
                (lines.iter()).any(|l| l.contains("USING INDEX tasks_success_due")),
                "{lines:?} <- {sql}"
            );
        }
        let decided: i64 = conn
            .query_row(
                "SELECT count(*) FROM tasks WHERE overdue_since IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(decided, 200, "a batch, and each task at its first runs");
    }
}
