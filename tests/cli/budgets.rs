//! Budgets (docs/CONTRACT.md §6, Budgets): what a task may spend per window
//! of its zone, counted from what its executor reports and from the runs it
//! starts. Real processes on the store the suite runs on: the executor
//! fixture replies with a `usage`, the tick records it when it settles the
//! run and skips a run whose window is spent.
use crate::support::{assert_contains, cell, Rig, Task};

use serde_json::Value;

const HOUR: i64 = 3600;
/// 2026-03-08T06:00:00Z: 01:00 in New York, the day its clocks spring
/// forward (that day is 23 hours long there: 05:00Z to 04:00Z).
const NY_SPRING: i64 = 1_772_949_600;

/// The reply of an executor that spent `usd`.
fn spending(rig: &Rig, usd: &str) {
    rig.env.set_env(
        "FIXTURE_MODE",
        &format!(r#"json:{{"status":"succeeded","summary":"ok","usage":{{"usd":{usd}}}}}"#),
    );
}

/// The runs of `t`, oldest first, as (status, reason).
fn statuses(rig: &Rig) -> Vec<String> {
    let mut runs = rig.runs("t");
    runs.reverse();
    runs.iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

/// The notices the notifier got of `kind`.
fn notices_of(rig: &Rig, kind: &str) -> Vec<Value> {
    rig.notices()
        .into_iter()
        .filter(|n| n["kind"] == kind)
        .collect()
}

/// An hourly task in New York with `usd=1/day`, confirmed at NY_SPRING.
fn new_york_budget(rig: &Rig) {
    rig.with_notifier(0);
    rig.env.set_now(NY_SPRING);
    spending(rig, "0.6");
    Task::named("t")
        .tz("America/New_York")
        .budget("usd=1/day")
        .confirm(&rig.env);
}

/// Three hourly ticks after NY_SPRING: two runs spend 1.2 of the 1 a day,
/// and the third finds the day's budget spent.
fn ticks_into_a_spent_budget(rig: &Rig) {
    for hour in 1..=3 {
        rig.env.set_now(NY_SPRING + hour * HOUR);
        rig.tick(&[]).ok();
    }
}

#[test]
fn a_spent_window_skips_runs_until_the_next_local_day_across_a_dst_change() {
    let rig = Rig::new();
    new_york_budget(&rig);
    ticks_into_a_spent_budget(&rig);
    assert_eq!(statuses(&rig), ["succeeded", "succeeded", "skipped_budget"]);
    assert_eq!(rig.starts().len(), 2, "the skipped run never started");
    // Each run says what it spent; the skipped one spent nothing.
    let runs = rig.runs("t");
    assert_eq!(
        runs[1]["usage"],
        serde_json::json!({"usd": 0.6}),
        "{}",
        runs[1]
    );
    assert!(runs[0].get("usage").is_none(), "{}", runs[0]);
    let skipped = &runs[0];
    assert_eq!(
        skipped["reason"],
        "budget usd=1/day spent (1.2 of 1); the window resets at 2026-03-09 00:00 EDT",
        "{skipped}"
    );
    // 23:00 EDT (03:00Z) is still the 8th: skipped. Midnight EDT (04:00Z)
    // begins the 9th, an hour before a fixed -05:00 would.
    rig.env.set_now(NY_SPRING + 21 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("t")[0]["status"], "skipped_budget");
    rig.env.set_now(NY_SPRING + 22 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("t")[0]["status"], "succeeded");
    assert_eq!(rig.starts().len(), 3);
    // One budget notice for the 8th's window, however many runs it skipped.
    let told = notices_of(&rig, "budget");
    assert_eq!(told.len(), 1, "{told:?}");
    let held = rig
        .env
        .count("SELECT count(*) FROM deliveries WHERE kind = 'budget' AND state = 'suppressed'");
    assert!(held >= 1, "later skips are held back in the ledger");
    // Usage is counted in the tenant's total: three runs at 0.6.
    let total: f64 = cell(
        &rig.env,
        "SELECT total FROM usage_totals WHERE usage_key = 'usd'",
    )
    .parse()
    .unwrap();
    assert!((total - 1.8).abs() < 1e-9, "{total}");
}

#[test]
fn the_executor_sees_its_limits_on_stdin() {
    let rig = Rig::new();
    new_york_budget(&rig);
    rig.env.set_now(NY_SPRING + HOUR);
    rig.tick(&["--timeout", "10m"]).ok();
    rig.env.set_now(NY_SPRING + 2 * HOUR);
    rig.tick(&["--timeout", "10m"]).ok();
    let run_id = rig.runs("t")[0]["run_id"].as_str().unwrap().to_string();
    let stdin: Value = serde_json::from_str(
        &std::fs::read_to_string(rig.env.path(&format!("stdin/{run_id}.json"))).unwrap(),
    )
    .unwrap();
    let limits = &stdin["limits"];
    assert_eq!(limits["timeout_seconds"], 600, "{limits}");
    let usd = &limits["budgets"][0];
    assert_eq!(usd["key"], "usd", "{limits}");
    assert_eq!(usd["limit"], 1.0, "{limits}");
    assert_eq!(usd["period"], "day", "{limits}");
    assert_eq!(usd["spent"], 0.6, "{limits}");
    assert!(
        (usd["remaining"].as_f64().unwrap() - 0.4).abs() < 1e-9,
        "{limits}"
    );
    assert_eq!(usd["resets_at"], "2026-03-09T00:00:00-04:00", "{limits}");
    // A task without budgets gets its timeout and no budgets.
    let plain = Rig::new();
    Task::named("p").timeout("30s").confirm(&plain.env);
    plain.env.advance(HOUR);
    plain.tick(&[]).ok();
    let run_id = plain.runs("p")[0]["run_id"].as_str().unwrap().to_string();
    let stdin: Value = serde_json::from_str(
        &std::fs::read_to_string(plain.env.path(&format!("stdin/{run_id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(
        stdin["limits"],
        serde_json::json!({"timeout_seconds": 30, "budgets": []})
    );
}

#[test]
fn runs_budget_counts_a_manual_trigger() {
    let rig = Rig::new();
    Task::named("t")
        .every("6h")
        .budget("runs=2/day")
        .confirm(&rig.env);
    rig.env.run(&["trigger", "t"]).ok();
    rig.tick(&[]).ok();
    rig.env.advance(6 * HOUR);
    rig.tick(&[]).ok();
    rig.env.advance(60);
    rig.env.run(&["trigger", "t"]).ok();
    rig.tick(&[]).ok();
    assert_eq!(statuses(&rig), ["succeeded", "succeeded", "skipped_budget"]);
    let skipped = &rig.runs("t")[0];
    assert_eq!(skipped["trigger"], "manual", "{skipped}");
    assert!(
        skipped["reason"]
            .as_str()
            .unwrap()
            .starts_with("budget runs=2/day spent (2 of 2)"),
        "{skipped}"
    );
    assert_eq!(rig.starts().len(), 2);
}

#[test]
fn a_usage_it_cannot_read_is_ignored_and_said_and_the_status_kept() {
    let rig = Rig::new();
    rig.env.set_env(
        "FIXTURE_MODE",
        r#"json:{"status":"succeeded","summary":"ok","usage":{"usd":-1,"big":1e300,"txt":"0.5","Bad":1,"tokens":5}}"#,
    );
    Task::named("t").budget("tokens=10/day").confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let summary = run["summary"].as_str().unwrap();
    assert!(summary.starts_with("ok (usage ignored: "), "{summary}");
    for said in [
        "usd -1 is negative",
        "big 1e300 is over the limit of 1e15",
        "txt \"0.5\" is not a number",
        "'Bad' is not a key",
    ] {
        assert!(summary.contains(said), "{said}: {summary}");
    }
    // What was good in it is kept.
    assert_eq!(
        cell(&rig.env, "SELECT usage FROM runs"),
        r#"{"tokens":5.0}"#
    );
    assert_eq!(cell(&rig.env, "SELECT spent FROM budget_windows"), "5");
    // A usage that is not an object is ignored whole.
    rig.env
        .set_env("FIXTURE_MODE", r#"json:{"status":"failed","usage":[1]}"#);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(
        run["summary"], "usage ignored: it is not an object",
        "{run}"
    );
}

/// A crash between the executor's reply and the settling transaction counts
/// nothing; a crash after it counts the usage once.
#[cfg(feature = "test-hooks")]
#[test]
fn a_crash_counts_usage_once_or_not_at_all() {
    for (point, counted) in [("before_outcome", false), ("after_outcome", true)] {
        let rig = Rig::new();
        spending(&rig, "0.6");
        Task::named("t").budget("usd=1/day").confirm(&rig.env);
        rig.env.advance(HOUR);
        rig.env
            .set_env("AGENTCRON_TEST_HOOK", &format!("{point}:abort"));
        let out = rig.tick(&["--lease", "2s"]);
        assert_ne!(out.code, 0, "{point}: the tick should have aborted");
        rig.env.set_env("AGENTCRON_TEST_HOOK", "");
        // Recovery ticks past the lease: nothing runs again.
        rig.env.advance(30);
        rig.tick(&[]).ok();
        rig.env.advance(30);
        rig.tick(&[]).ok();
        assert_eq!(rig.starts().len(), 1, "{point}");
        let totals = rig.env.sql("SELECT total FROM usage_totals");
        let spent = rig.env.sql("SELECT spent FROM budget_windows");
        if counted {
            assert_eq!(totals, [["0.6"]], "{point}");
            assert_eq!(spent, [["0.6"]], "{point}");
            assert_eq!(rig.runs("t")[0]["status"], "succeeded");
        } else {
            assert!(totals.is_empty(), "{point}: {totals:?}");
            assert!(spent.is_empty(), "{point}: {spent:?}");
            assert_eq!(rig.runs("t")[0]["status"], "unknown");
        }
    }
}

#[test]
fn show_status_explain_and_metrics_tell_a_spent_budget() {
    let rig = Rig::new();
    new_york_budget(&rig);
    ticks_into_a_spent_budget(&rig);
    let shown = rig.env.run(&["show", "t"]).ok().stdout;
    assert_contains(&shown, "spent         usd 1.2 of 1 this day (spent: runs are skipped); resets 2026-03-09 00:00 EDT (in 19 h)");
    let task = rig.env.json(&["show", "t"]);
    let window = &task["budget_windows"][0];
    assert_eq!(window["key"], "usd", "{task}");
    assert_eq!(window["spent"], 1.2, "{task}");
    assert_eq!(window["remaining"], 0.0, "{task}");
    assert_eq!(window["resets_at"], "2026-03-09T00:00:00-04:00", "{task}");
    let status = rig.env.run(&["status"]).ok().stdout;
    assert_contains(
        &status,
        "budget     t: usd 1.2 of 1 this day (spent: runs are skipped); resets",
    );
    let spent = &rig.env.json(&["status"])["budgets_spent"];
    assert_eq!(spent[0]["name"], "t", "{spent}");
    assert_eq!(spent[0]["key"], "usd", "{spent}");
    assert_eq!(spent[0]["limit"], 1.0, "{spent}");
    let run_id = rig.runs("t")[0]["run_id"].as_str().unwrap().to_string();
    let explained = rig.env.run(&["explain", &run_id]).ok().stdout;
    assert_contains(&explained, "budget usd=1/day spent (1.2 of 1)");
    assert_contains(&explained, "resets at 2026-03-09 00:00 EDT");
    let metrics = rig.env.run(&["metrics"]).ok().stdout;
    assert_contains(&metrics, "# TYPE agentcron_usage_total counter");
    assert_contains(&metrics, "agentcron_usage_total{key=\"usd\"} 1.2");
    // Prune never lowers it.
    rig.env.set_now(NY_SPRING + 400 * 86400);
    rig.env.run(&["prune", "--older-than", "1d"]).ok();
    let metrics = rig.env.run(&["metrics"]).ok().stdout;
    assert_contains(&metrics, "agentcron_usage_total{key=\"usd\"} 1.2");
    // The next day's window is not spent: status names nothing.
    let status = rig.env.json(&["status"]);
    assert_eq!(status["budgets_spent"], serde_json::json!([]), "{status}");
}
