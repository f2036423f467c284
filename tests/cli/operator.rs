//! Operator tools: reconcile, runs, log, explain, status, prune, check.

use crate::support::T0;
use crate::support::{unknown_run, Rig};

const HOUR: i64 = 3600;

#[test]
fn reconcile_lists_unknown_runs_and_settles_each_decision() {
    for (decision, status) in [
        ("confirmed_succeeded", "succeeded"),
        ("confirmed_failed", "failed"),
        ("abandoned", "failed"),
    ] {
        let rig = Rig::new();
        let run_id = unknown_run(&rig, "u");
        let listed = rig.env.json(&["reconcile"]);
        assert_eq!(listed.as_array().unwrap().len(), 1);
        assert_eq!(listed[0]["run_id"], run_id.as_str());
        assert!(listed[0]["reason"].as_str().unwrap().contains("timed out"));
        let before = rig.starts().len();
        let settled = rig.env.json(&[
            "reconcile",
            &run_id,
            "--decision",
            decision,
            "--reason",
            "checked the logs",
        ]);
        assert_eq!(settled["status"], status, "{decision}");
        assert_eq!(rig.starts().len(), before, "reconcile never runs anything");
        assert_eq!(
            rig.env.json(&["show", "u"])["next_retry_at"],
            serde_json::Value::Null,
            "never retried"
        );
        let row = rig.env.sql(&format!(
            "SELECT actor, decision, reason FROM reconciliations WHERE run_id = '{run_id}'"
        ));
        assert_eq!(
            row,
            vec![vec![
                "unix:tester".to_string(),
                decision.to_string(),
                "checked the logs".to_string()
            ]]
        );
        assert_eq!(rig.env.json(&["reconcile"]).as_array().unwrap().len(), 0);
        // The task is released: its next occurrence runs.
        rig.env.set_now(T0 + 2 * HOUR);
        rig.tick(&[]).ok();
        assert_eq!(rig.runs("u")[0]["status"], "succeeded");
    }
}

#[test]
fn reconciling_another_tenants_run_is_denied_without_naming_its_task() {
    let rig = Rig::new();
    let run_id = unknown_run(&rig, "u");
    let task_id = rig.runs("u")[0]["task_id"].as_str().unwrap().to_string();
    let out = rig
        .env
        .run(&[
            "reconcile",
            &run_id,
            "--decision",
            "abandoned",
            "--reason",
            "x",
            "--tenant",
            "t2",
        ])
        .fails(4);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!("agentcron: error: run {run_id} belongs to another tenant"),
    );
    assert!(!out.stderr.contains(&task_id[..8]), "{}", out.stderr);
    assert_eq!(rig.runs("u")[0]["status"], "unknown");
}

#[test]
fn reconcile_refuses_other_runs_and_needs_a_reason() {
    let rig = Rig::new();
    let run_id = unknown_run(&rig, "u");
    rig.env
        .run(&["reconcile", &run_id, "--decision", "abandoned"])
        .fails(2);
    rig.env
        .run(&["reconcile", &run_id, "--decision", "maybe", "--reason", "x"])
        .fails(2);
    rig.env
        .run(&[
            "reconcile",
            &run_id,
            "--decision",
            "abandoned",
            "--reason",
            "x",
            "--as",
            "bob",
        ])
        .fails(4);
    rig.env
        .run(&[
            "reconcile",
            "nope",
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ])
        .fails(3);
    rig.env.json(&[
        "reconcile",
        &run_id,
        "--decision",
        "abandoned",
        "--reason",
        "x",
    ]);
    let out = rig
        .env
        .run(&[
            "reconcile",
            &run_id,
            "--decision",
            "abandoned",
            "--reason",
            "again",
        ])
        .fails(5);
    assert!(out.stderr.contains("not unknown"), "{}", out.stderr);
}

#[test]
fn runs_filters_by_task_and_status_newest_first() {
    let rig = Rig::new();
    rig.env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "a",
        "--max-retries",
        "0",
    ]);
    rig.env
        .task(&["--instruction", "y", "--every", "1h", "--name", "b"]);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.env.json(&["runs"]).as_array().unwrap().len(), 4);
    let a = rig.env.json(&["runs", "a"]);
    assert_eq!(a.as_array().unwrap().len(), 2);
    assert_eq!(
        a[0]["scheduled_for"], "2026-12-02T10:00:00Z",
        "newest first"
    );
    assert_eq!(
        rig.env
            .json(&["runs", "--status", "failed"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        rig.env
            .json(&["runs", "--limit", "1"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        rig.env
            .json(&["runs", "--as", "mallory"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    rig.env.run(&["runs", "--status", "weird"]).fails(2);
    let out = rig.env.run(&["runs", "a"]).ok();
    assert!(out.stdout.starts_with("RUN"), "{}", out.stdout);
}

#[test]
fn log_shows_the_audit_trail_newest_first_to_owners_only() {
    let rig = Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "l"]);
    rig.env.json(&["pause", "l", "--reason", "holiday"]);
    let log = rig.env.json(&["log", "l"]);
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["pause", "confirm"]);
    assert_eq!(log[0]["actor"], "unix:tester");
    assert_eq!(log[0]["detail"]["reason"], "holiday");
    assert_eq!(
        rig.env
            .json(&["log", "--as", "mallory"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

fn explain(rig: &Rig, task: &str, at: &str) -> serde_json::Value {
    rig.env.json(&["explain", task, "--at", at])
}

#[test]
fn explain_names_the_rule_that_decided() {
    let rig = Rig::new();
    rig.env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "e",
        "--grace",
        "2m",
    ]);
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
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "c"]);
    rig.env.set_now(T0 + 5 * HOUR + 600);
    rig.tick(&[]).ok();
    let e = explain(&rig, "c", "2026-12-02T11:30:00Z");
    assert_eq!(e["rule"], "missed_coalesced", "{e}");

    let rig = Rig::new();
    rig.env.task(&[
        "--instruction",
        "x",
        "--every",
        "1d",
        "--name",
        "r",
        "--retry-backoff",
        "1m",
    ]);
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
    rig.env.task(&[
        "--instruction",
        "x",
        "--daily",
        "02:30",
        "--tz",
        "America/New_York",
        "--name",
        "d",
    ]);
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
fn status_reports_and_exits_1_when_ticks_are_stale() {
    let rig = Rig::new();
    // No store yet: not found, and none is made (issue 14 item 8; on
    // PostgreSQL an empty schema is no store either, issue 33 item 4).
    let out = rig.env.run(&["status", "--max-tick-age", "5m"]);
    assert_eq!(out.code, 3);
    rig.env
        .draft(&["--instruction", "x", "--every", "1h", "--name", "d"]);
    let out = rig.env.run(&["status", "--max-tick-age", "5m"]);
    assert_eq!(out.code, 1, "no tick ever: stale");
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "s"]);
    rig.tick(&[]).ok();
    let s = rig.env.json(&["status", "--max-tick-age", "5m"]);
    assert_eq!(s["stale"], false);
    assert_eq!(s["tasks"]["active"], 1);
    rig.env.advance(2 * HOUR);
    let s = rig.env.run(&["--json", "status", "--max-tick-age", "5m"]);
    assert_eq!(s.code, 1);
    let s = s.json();
    assert_eq!(s["stale"], true);
    assert_eq!(s["due"], 1);
    assert!(s["size_bytes"].as_u64().unwrap() > 0);
    rig.env.run(&["status"]).ok();
}

#[test]
fn prune_keeps_unknown_and_parked_runs_and_shrinks_the_file() {
    let rig = Rig::new();
    let stuck = unknown_run(&rig, "stuck");
    rig.with_notifier(0);
    rig.tick(&[]).ok(); // deliver the unknown run's notice
    for i in 0..30 {
        rig.env.task(&[
            "--instruction",
            &"pad ".repeat(2000),
            "--every",
            "1h",
            "--name",
            &format!("t{i}"),
        ]);
    }
    for hour in 2..=4 {
        rig.env.set_now(T0 + hour * HOUR);
        rig.tick(&["--max-runs", "100"]).ok();
    }
    let total = rig.env.count("SELECT count(*) FROM runs");
    rig.env.set_now(T0 + 100 * 86400);
    let dry = rig.env.json(&["prune", "--older-than", "30d", "--dry-run"]);
    assert_eq!(dry["runs"].as_i64().unwrap(), total - 1);
    assert_eq!(
        rig.env.count("SELECT count(*) FROM runs"),
        total,
        "dry run deletes nothing"
    );
    let done = rig.env.json(&["prune", "--older-than", "30d"]);
    assert_eq!(done["runs"].as_i64().unwrap(), total - 1);
    // --vacuum gives the space back: SQLite's VACUUM rewrites the file
    // smaller; PostgreSQL's plain VACUUM only makes the space reusable
    // (VACUUM FULL would lock every table).
    let vacuumed = rig.env.json(&["prune", "--older-than", "30d", "--vacuum"]);
    assert_eq!(vacuumed["runs"], 0);
    if !crate::support::on_postgres() {
        assert!(
            vacuumed["size_after"].as_u64().unwrap() < vacuumed["size_before"].as_u64().unwrap(),
            "{vacuumed}"
        );
    }
    let left = rig.env.sql("SELECT run_id, status FROM runs");
    assert_eq!(left, vec![vec![stuck, "unknown".to_string()]]);
    assert_eq!(rig.env.json(&["check"])["ok"], true);
}

#[test]
fn check_names_each_violation() {
    let rig = Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "k"]);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(
        rig.env.run(&["check"]).ok().stdout.trim(),
        "ok: every invariant holds"
    );
    rig.env
        .sql("UPDATE runs SET status = 'running', lease_until = 1 RETURNING 1");
    let out = rig.env.run(&["check"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("lease that expired"), "{}", out.stdout);
}

#[test]
fn log_merges_every_tenants_events_with_the_tenants_newest_first_once_each() {
    let rig = Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "l"]);
    rig.tick(&[]).ok();
    // A tick for every tenant after a gap records the gap for every
    // tenant (`*`); the tenant's own log shows it among its events.
    rig.env.set_now(T0 + 3 * HOUR);
    rig.tick(&[]).ok();
    rig.env.json(&["pause", "l"]);
    let log = |args: &[&str]| -> Vec<(i64, String)> {
        let mut all = vec!["log"];
        all.extend_from_slice(args);
        rig.env
            .json(&all)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["event_id"].as_i64().unwrap(),
                    e["action"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let mine = log(&["--limit", "1000"]);
    assert_eq!(mine[0].1, "pause");
    assert!(
        mine.windows(2).all(|w| w[0].0 > w[1].0),
        "newest first, each once: {mine:?}"
    );
    let gaps = |events: &[(i64, String)]| events.iter().filter(|e| e.1 == "scheduler_gap").count();
    assert_eq!(gaps(&mine), 1, "{mine:?}");
    assert!(mine.iter().any(|e| e.1 == "confirm"), "{mine:?}");
    // The all-tenants key itself lists its events once, not once per walk.
    let every = log(&["--tenant", "*", "--limit", "1000"]);
    assert_eq!(gaps(&every), 1, "{every:?}");
    assert_eq!(every.len(), 1, "{every:?}");
    // The limit keeps the newest.
    assert_eq!(log(&["--limit", "1"]).len(), 1);
}

#[test]
fn status_counts_each_tenants_tasks_by_state_and_check_catches_a_count_gone_wrong() {
    let rig = Rig::new();
    for (name, tenant) in [("a", "t1"), ("b", "t1"), ("c", "t1"), ("d", "t2")] {
        rig.env.task(&[
            "--instruction",
            "x",
            "--every",
            "1h",
            "--name",
            name,
            "--tenant",
            tenant,
        ]);
    }
    rig.env.task(&[
        "--instruction",
        "x",
        "--at",
        "2026-12-02T08:30:00Z",
        "--name",
        "once",
        "--tenant",
        "t2",
    ]);
    rig.env.json(&["pause", "a", "--tenant", "t1"]);
    rig.env.json(&["delete", "b", "--tenant", "t1"]);
    rig.env.json(&["pause", "d", "--tenant", "t2"]);
    rig.env.json(&["resume", "d", "--tenant", "t2"]);
    // The one-off task runs and is completed by the tick.
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let tasks = |scope: &[&str]| {
        let mut args = vec!["status"];
        args.extend_from_slice(scope);
        rig.env.json(&args)["tasks"].clone()
    };
    let counts =
        |active, paused| serde_json::json!({"active": active, "paused": paused, "error": 0});
    assert_eq!(tasks(&["--tenant", "t1"]), counts(1, 1));
    assert_eq!(tasks(&["--tenant", "t2"]), counts(1, 0));
    assert_eq!(tasks(&[]), counts(2, 1));
    assert_eq!(tasks(&["--tenant", "nobody"]), counts(0, 0));
    assert_eq!(rig.env.json(&["check"])["ok"], true);

    // Any writer of the tasks table keeps the counts (they are triggers),
    // and one that went wrong is named by check.
    rig.env
        .sql("UPDATE tasks SET state = 'paused' WHERE name = 'c' RETURNING 1");
    assert_eq!(tasks(&["--tenant", "t1"]), counts(0, 2));
    if let Some(schema) = rig.env.pg_schema() {
        // From a session whose search_path does not hold the store's tables.
        rig.env.sql(&format!(
            "SET search_path TO public; UPDATE {schema}.tasks SET state = 'active' WHERE name = 'c';
             UPDATE {schema}.tasks SET state = 'paused' WHERE name = 'c'"
        ));
        assert_eq!(tasks(&["--tenant", "t1"]), counts(0, 2));
    }
    assert_eq!(rig.env.json(&["check"])["ok"], true);
    rig.env.sql(
        "UPDATE task_counts SET n = n + 2 WHERE state = 'paused' AND tenant_key = 't1' RETURNING 1",
    );
    rig.env
        .sql("INSERT INTO task_counts VALUES ('error', 'ghost', 1) RETURNING 1");
    let out = rig.env.run(&["check"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout.trim(),
        "violation: tenant t1 has 2 paused tasks but status counts 4\n\
         violation: tenant ghost has 0 error tasks but status counts 1"
    );
}
