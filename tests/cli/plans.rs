//! No read command walks a whole table (issue 16): every statement the read
//! commands issue by default is recorded as SQLite prepares it to run (the
//! real texts, through the real commands), then planned with EXPLAIN QUERY
//! PLAN against the migrated schema. A full scan of `tasks`, `runs` or
//! `deliveries` fails the test; so does a walk of a whole index of theirs,
//! unless the index holds only rows in a rare state (`PARTIAL`).
//!
//! The recorder (`agentcron::store::sqlite::trace`) also counts each
//! statement's steps for `growth.rs`, which runs the commands below too.
//!
//! Built with `--features test-hooks` only (the recorder is not in release
//! builds); `.ci/run` runs it.

#![cfg(feature = "test-hooks")]

use agentcron::cli::Cli;
use agentcron::store::sqlite::trace::recorded;
pub use agentcron::store::sqlite::trace::stepped;
use clap::Parser;
use rusqlite::Connection;

/// Partial indexes of rows in a rare or passing state (running, in doubt,
/// parked, queued, triggered and not yet claimed; notices not yet
/// delivered; the scheduler's outages): a walk along one is as long as what
/// the statement counts, never the history of runs, so a SCAN of one passes.
const PARTIAL: &[&str] = &[
    "tasks_trigger_due",
    "runs_blocking",
    "runs_leased",
    "runs_unknown",
    "runs_parked",
    "tasks_queued",
    "deliveries_pending",
    "deliveries_sending",
    "deliveries_unknown",
    "deliveries_undeliverable",
    // One event per cron outage (no tick for 5 minutes), not per run.
    "events_scheduler_gaps",
    // The tasks that are overdue now (`status`).
    "tasks_overdue",
    // The tasks bound to a profile (`status`: which a changed profile
    // holds): as many as the operator's profiles run, not the history.
    "tasks_by_profile",
];

/// The plan lines that read all of `tasks`, `runs`, `deliveries` or `events`
/// (which grow with the history), or a whole index of theirs that is not
/// `PARTIAL`.
fn full_scans(conn: &Connection, sql: &str) -> Vec<String> {
    plan(conn, sql)
        .into_iter()
        .filter(|line| {
            line.starts_with("SCAN ") && reads_history(line) && !along_partial_index(line)
        })
        .collect()
}

/// A plan line that reads `tasks`, `runs`, `deliveries` or `events` (or
/// their usual aliases): the tables that grow with the history.
fn reads_history(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    matches!(words.first(), Some(&("SEARCH" | "SCAN")))
        && matches!(
            words.get(1),
            Some(&("tasks" | "runs" | "deliveries" | "events" | "t" | "r" | "d" | "e"))
        )
}

/// A plan line that reads along one of the `PARTIAL` indexes.
fn along_partial_index(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.contains(&"INDEX") && words.iter().any(|word| PARTIAL.contains(word))
}

/// The plan lines that sort for ORDER BY: a read that shows the first N of
/// something sorts every row that matched before the LIMIT keeps N (`log`
/// sorted every event of the tenant; looking a run up by id prefix, every
/// run). A tick's claim may sort what is due; a read command may not, unless
/// every history table it reads is read along a `PARTIAL` index (a task's
/// runs in doubt, say): then what it sorts is as short as that state.
fn sorts(conn: &Connection, sql: &str) -> Vec<String> {
    let lines = plan_with_parents(conn, sql);
    // The statement's own reads, not the lookups of its correlated
    // subqueries (one per row it keeps).
    let bounded = lines
        .iter()
        .filter(|(parent, _)| *parent == 0)
        .filter(|(_, line)| reads_history(line))
        .all(|(_, line)| along_partial_index(line));
    if bounded {
        return Vec::new();
    }
    lines
        .into_iter()
        .map(|(_, line)| line)
        .filter(|line| line.starts_with("USE TEMP B-TREE FOR") && line.contains("ORDER BY"))
        .collect()
}

/// EXPLAIN QUERY PLAN's lines for `sql`.
pub fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    plan_with_parents(conn, sql)
        .into_iter()
        .map(|(_, line)| line)
        .collect()
}

/// EXPLAIN QUERY PLAN's lines for `sql`, each with its parent's id (0 for
/// the statement's own steps).
fn plan_with_parents(conn: &Connection, sql: &str) -> Vec<(i64, String)> {
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap_or_else(|e| panic!("cannot plan {sql}: {e}"));
    // Unbound parameters are NULL: planning does not look at their values.
    let mut rows = stmt.raw_query();
    let mut details = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        details.push((row.get(1).unwrap(), row.get::<_, String>(3).unwrap()));
    }
    details
}

// Commands run in this process, as the binary runs them, so that the
// recorder above sees their statements.

pub const NOW: &str = "2026-12-02T08:00:00Z";

/// The issue's read commands at their default output, over what `seeded`
/// makes, but `list` (docs/CONTRACT.md §4 has it print every task).
pub const READS: &[&[&str]] = &[
    &["runs"],
    &["--json", "runs"],
    &["runs", "a"],
    &["show", "a"],
    &["show", "b"],
    &["status"],
    &["status", "--tenant", "default"],
    &["upcoming"],
    &["explain", "a"],
    &["explain", "run-a"],
    &["log"],
    &["log", "a"],
];

/// Runs one command line in this process, as the binary would.
pub fn agentcron(db: &str, args: &[&str]) {
    agentcron_at(db, NOW, args)
}

/// `agentcron`, its clock at `now`.
pub fn agentcron_at(db: &str, now: &str, args: &[&str]) {
    // This process is the test harness, not agentcron: a tick it runs
    // starts its children under the supervisor cargo built.
    agentcron::process::use_supervisor(std::path::Path::new(env!(
        "CARGO_BIN_EXE_agentcron-supervise"
    )));
    let mut argv = vec!["agentcron", "--db", db, "--as", "alice", "--now", now];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let code = agentcron::run(cli).unwrap_or_else(|e| panic!("{argv:?}: {e:#}"));
    assert_eq!(code, 0, "{argv:?}");
}

/// Drafts a task of `flags` and confirms it, as its author would, with the
/// global flags `scope` (a tenant) on both.
pub fn confirmed(db: &str, scope: &[&str], flags: &[&str]) {
    let scoped = |args: &[&str]| agentcron(db, &[scope, args].concat());
    scoped(&[&["draft"][..], flags].concat());
    let (draft, hash): (String, String) = Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT draft_id, payload_hash FROM drafts ORDER BY created_at DESC, rowid DESC",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    scoped(&["confirm", &draft, "--hash", &hash]);
}

/// Two confirmed tasks (one with a finished, notified run; one blocked
/// by a run in doubt), so that every read follows its longest path.
pub fn seeded(db: &str) -> Connection {
    for name in ["a", "b"] {
        confirmed(
            db,
            &[],
            &["--instruction", "x", "--every", "1h", "--name", name],
        );
    }
    let conn = Connection::open(db).unwrap();
    conn.execute_batch(
        "INSERT INTO runs (run_id, task_id, tenant_key, scheduled_for, scheduled_local, attempt,
                           due_at, status, payload_hash, created_at, started_at, finished_at)
         SELECT 'run-' || name, task_id, tenant_key, 1796198400, '2026-12-02T08:00:00', 1,
                1796198400, CASE name WHEN 'a' THEN 'succeeded' ELSE 'unknown' END,
                payload_hash, 1796198400, 1796198400, 1796198401
         FROM tasks;
         INSERT INTO deliveries (delivery_id, run_id, tenant_key, seq, state, target, message,
                                 created_at, updated_at)
         VALUES ('d-a', 'run-a', 'default', 1, 'delivered', 't', 'm', 1796198401, 1796198401);",
    )
    .unwrap();
    conn
}

mod tests {
    use super::*;

    #[test]
    fn no_read_command_scans_or_sorts_the_history() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("plans.db").display().to_string();
        let conn = seeded(&db);
        let lists: &[&[&str]] = &[&["list"], &["--json", "list"], &["list", "--all"]];
        let mut statements = Vec::new();
        for args in lists.iter().chain(READS) {
            let seen = recorded(|| agentcron(&db, args));
            assert!(
                !seen.is_empty(),
                "{args:?} ran no statement: the recorder is broken"
            );
            statements.extend(seen.into_iter().map(|sql| (args.join(" "), sql)));
        }
        let scans: Vec<String> = statements
            .iter()
            .flat_map(|(command, sql)| {
                let mut found = full_scans(&conn, sql);
                found.extend(sorts(&conn, sql));
                found
                    .into_iter()
                    .map(move |line| format!("`{command}`: {line}\n  in: {sql}"))
            })
            .collect();
        assert!(
            scans.is_empty(),
            "full scans or sorts:\n{}",
            scans.join("\n")
        );
    }

    #[test]
    fn an_idle_tick_writes_only_its_own_record_and_scans_nothing() {
        // Nothing due (the tasks next run an hour on), nothing expired: one
        // read finds that, and steps 1-4 take no write transaction.
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("idle.db").display().to_string();
        let conn = seeded(&db);
        let seen = recorded(|| agentcron(&db, &["tick", "--executor", "true"]));
        assert!(!seen.is_empty(), "the recorder is broken");
        let steps: Vec<&String> = seen
            .iter()
            .filter(|sql| {
                let sql = sql.to_ascii_uppercase();
                sql.contains("UPDATE RUNS")
                    || sql.contains("UPDATE DELIVERIES SET STATE")
                    || sql.contains("TASKS_DUE_BY_TENANT")
                    || sql.contains("WITH RECURSIVE")
            })
            .collect();
        assert!(steps.is_empty(), "an idle tick ran steps 1-4: {steps:#?}");
        // Each plan line with the statement it is of.
        let scans_of = |statements: &[String]| -> Vec<String> {
            statements
                .iter()
                .flat_map(|sql| {
                    full_scans(&conn, sql)
                        .into_iter()
                        .map(move |s| format!("{s} <- {sql}"))
                })
                .collect()
        };
        let scans = scans_of(&seen);
        assert!(scans.is_empty(), "full scans: {scans:#?}");
        // The same tick an hour later has work: the read says so.
        let later =
            recorded(|| agentcron_at(&db, "2026-12-02T09:00:30Z", &["tick", "--executor", "true"]));
        assert!(
            later.iter().any(|sql| sql.contains("tasks_due_by_tenant")),
            "a tick with due work did not claim: {later:#?}"
        );
        let scans = scans_of(&later);
        assert!(scans.is_empty(), "full scans in a claim: {scans:#?}");
    }

    #[test]
    fn a_full_scan_or_a_sort_is_caught() {
        // The check itself can fail: a statement that reads every run.
        let mut migrated = Connection::open_in_memory().unwrap();
        agentcron::store::sqlite::schema::migrate(&mut migrated, &mut |_| Ok(())).unwrap();
        assert_eq!(
            full_scans(
                &migrated,
                "SELECT count(*) FROM runs r WHERE r.summary = ?1"
            )
            .len(),
            1
        );
        // A walk of a whole index of runs is one too; of a partial one, not.
        assert_eq!(full_scans(&migrated, "SELECT count(*) FROM runs").len(), 1);
        assert_eq!(
            full_scans(
                &migrated,
                "SELECT count(*) FROM runs WHERE status = 'unknown'"
            )
            .len(),
            0
        );
        assert_eq!(
            full_scans(&migrated, "SELECT * FROM tasks WHERE task_id = ?1").len(),
            0
        );
        // A sort of every matching row before the limit is one too: `log`
        // did this with every event of the tenant.
        assert_eq!(
            sorts(
                &migrated,
                "SELECT * FROM events WHERE tenant_key IN (?1, '*') ORDER BY event_id DESC LIMIT 50"
            )
            .len(),
            1
        );
        assert_eq!(
            sorts(
                &migrated,
                "SELECT * FROM events WHERE tenant_key = ?1 ORDER BY event_id DESC LIMIT 50"
            )
            .len(),
            0
        );
    }
}
