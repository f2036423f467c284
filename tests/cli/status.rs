//! `status`: the deployment's health in one screen: stale ticks, when cron
//! stopped, each tenant's tasks by state, what to do about unknown runs and
//! undeliverable notices.
use crate::support::{assert_contains, besides_authority, Rig, Task, TestEnv, T0};

const HOUR: i64 = 3600;

#[test]
fn status_reports_and_exits_1_when_ticks_are_stale() {
    let rig = Rig::new();
    // No store yet: not found, and none is made (issue 14 item 8; on
    // PostgreSQL an empty schema is no store either, issue 33 item 4).
    let out = rig.env.run(&["status", "--max-tick-age", "5m"]);
    assert_eq!(out.code, 3);
    Task::named("d").default_notify().draft(&rig.env);
    let out = rig.env.run(&["status", "--max-tick-age", "5m"]);
    assert_eq!(out.code, 1, "no tick ever: stale");
    Task::named("s").confirm(&rig.env);
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
fn status_counts_each_tenants_tasks_by_state_and_check_catches_a_count_gone_wrong() {
    let rig = Rig::new();
    for (name, tenant) in [("a", "t1"), ("b", "t1"), ("c", "t1"), ("d", "t2")] {
        Task::named(name).tenant(tenant).confirm(&rig.env);
    }
    Task::named("once")
        .at("2026-12-02T08:30:00Z")
        .tenant("t2")
        .confirm(&rig.env);
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

const MINUTE: i64 = 60;

#[test]
fn status_says_when_cron_stopped_and_names_the_last_gap() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("h").confirm(env);
    rig.tick(&[]).ok();
    // A minute later all is well: quiet, not stale.
    env.advance(MINUTE);
    let out = env.run(&["status"]).ok();
    assert_eq!(besides_authority(&out.stderr), "", "{}", out.stderr);
    assert_eq!(env.json(&["status"])["stale"], false);
    // Five minutes without a tick while a task is active: cron stopped.
    env.advance(5 * MINUTE);
    let out = env.run(&["status"]).ok();
    assert_contains(&out.stderr, "no tick for 6 min while 1 task(s) are active");
    let status = env.run(&["--json", "status"]).ok().json();
    assert_eq!(status["stale"], true);
    // The exit code changes only with --max-tick-age.
    env.run(&["status", "--max-tick-age", "10m"]).ok();
    assert_eq!(env.run(&["status", "--max-tick-age", "2m"]).code, 1);
    // Cron comes back after 8 minutes in all: the gap is named for a day.
    env.advance(2 * MINUTE);
    rig.tick(&[]).ok();
    let out = env.run(&["status"]).ok();
    assert_contains(
        &out.stdout,
        "last gap   no tick for 8 min until 2026-12-02 08:08",
    );
    let gap = &env.json(&["status"])["last_gap"];
    assert_eq!(gap["seconds"], 8 * MINUTE, "{gap}");
    assert_eq!(gap["until"], "2026-12-02T08:08:00Z");
    // A day later the gap is history (`log` keeps it).
    env.set_now(T0 + 8 * MINUTE + 86400 + 1);
    let status = env.run(&["--json", "status"]).ok().json();
    assert!(status["last_gap"].is_null(), "{status}");
}

#[test]
fn status_of_a_store_with_no_active_task_is_never_stale_by_default() {
    let env = TestEnv::new();
    Task::new().default_notify().draft(&env);
    let out = env.run(&["status"]).ok();
    assert_eq!(out.stderr, "");
    assert_eq!(env.json(&["status"])["stale"], false);
}

/// Issue 36 item 4: `status` says what to do about notices that may not
/// have reached anyone, not only how many there are.
#[test]
fn status_says_what_to_do_about_unknown_and_undeliverable_notices() {
    let rig = crate::support::Rig::new();
    Task::named("h").confirm(&rig.env);
    rig.env.advance(3600);
    rig.tick(&[]).ok();
    rig.env
        .sql("UPDATE deliveries SET state = 'unknown', claim_token = NULL");
    let out = rig.env.run(&["status"]).ok();
    assert!(
        out.stderr.contains("1 notice(s) unknown")
            && out.stderr.contains("never resent")
            && out.stderr.contains("`agentcron runs`"),
        "{}",
        out.stderr
    );
}
