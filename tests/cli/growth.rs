//! No command does more work as the store grows (issue 16). Each command
//! runs against a store, then against the same store grown tenfold (far-off
//! tasks, settled runs with their notices, audit events), and the steps of
//! SQLite's virtual machine its statements take are compared. Steps, unlike
//! time, are exact, and a seek is one step however deep its index.
//!
//! The plan test (`plans.rs`) catches a statement that scans a table; this
//! catches what a plan does not show: a search whose range is most of a
//! table (`status` counting every active task by state, a tick after a
//! scheduler gap testing each active task), a sort of every match before a
//! LIMIT, or a loop over every task running a cheap statement each.
//!
//! `list` prints every task, so its work grows with them; it is checked
//! apart: with the tasks as they are, none of its statements may do more as
//! their history grows.
//!
//! It counts the statements of the thread that runs the command, not those
//! of a tick's executor workers (each about one run, which is a constant).

#![cfg(feature = "test-hooks")]

use std::collections::BTreeMap;

use rusqlite::Connection;

use crate::plans::{agentcron, agentcron_at, confirmed, seeded, stepped, READS};

/// Inserts `n` copies of each row of `table` that `filter` selects; `set`
/// gives some columns an expression over the copy's number `k.i` instead of
/// the original's value.
fn clone_rows(conn: &Connection, table: &str, filter: &str, n: i64, set: &[(&str, &str)]) {
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")
        .unwrap()
        .query_map([table], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let values: Vec<String> = columns
        .iter()
        .map(|column| {
            set.iter()
                .find(|(name, _)| name == column)
                .map_or(format!("{table}.{column}"), |(_, value)| value.to_string())
        })
        .collect();
    conn.execute(
        &format!(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
             INSERT INTO {table} ({}) SELECT {} FROM k, {table} WHERE {filter}",
            columns.join(", "),
            values.join(", ")
        ),
        [],
    )
    .unwrap();
}

/// Adds `n` of everything that grows with use: copies of each template
/// task (active, due long after anything the commands look at), and the
/// history of `grow_history`. `generation` keeps the ids of successive
/// calls apart.
fn grow(conn: &Connection, templates: &[String], generation: i64, n: i64) {
    for template in templates {
        clone_rows(
            conn,
            "tasks",
            &format!("task_id = '{template}'"),
            n,
            &[(
                "task_id",
                &format!("'far-{generation}-' || k.i || '-' || tenant_key"),
            )],
        );
    }
    grow_history(conn, generation, n);
}

/// Adds `n` settled runs of task `a`, each with its delivered notice, and
/// `n` copies of `a`'s own audit events.
fn grow_history(conn: &Connection, generation: i64, n: i64) {
    let id = |prefix: &str| format!("'{prefix}-{generation}-' || k.i");
    let hours_back = format!("scheduled_for - 3600 * ({} + k.i)", generation * 100_000);
    clone_rows(
        conn,
        "runs",
        "run_id = 'run-a'",
        n,
        &[
            ("run_id", &id("run-a")),
            ("scheduled_for", &hours_back),
            ("due_at", &hours_back),
        ],
    );
    clone_rows(
        conn,
        "deliveries",
        "delivery_id = 'd-a'",
        n,
        &[("delivery_id", &id("d-a")), ("run_id", &id("run-a"))],
    );
    clone_rows(
        conn,
        "events",
        // The task's own events, not the copies an earlier call made.
        "task_id = (SELECT task_id FROM tasks WHERE name = 'a') AND actor <> 'growth'",
        n,
        &[("event_id", "NULL"), ("actor", "'growth'")],
    );
}

/// One unnamed task of `tenant`, once on 2027-06-01: the model of the
/// many. Its copies share its payload, which does not name the task, and
/// its time: in the tenant `ties` they all run at one instant (as a
/// thousand tasks at 09:00 do), which `upcoming` must not read through.
fn far_task(db: &str, conn: &Connection, tenant: &str) -> String {
    confirmed(
        db,
        &["--tenant", tenant],
        &["--instruction", "far", "--at", "2027-06-01T00:00:00Z"],
    );
    conn.query_row(
        "SELECT task_id FROM tasks WHERE name IS NULL AND tenant_key = ?1",
        [tenant],
        |r| r.get(0),
    )
    .unwrap()
}

/// Whether work went from `was` steps to `now` by more than it may: a tenth,
/// and a little more for the few steps a bigger number can take. The store
/// grows tenfold, so work done per row of it grows far past this.
fn outgrew(was: i64, now: i64) -> bool {
    now > was + was / 10 + 50
}

/// Each command's steps (its total, and each statement's), in order.
type Steps = Vec<(String, i64, BTreeMap<String, i64>)>;

/// Runs every read command, then an idle tick a minute after `start`
/// (another tick at `start`, so that neither follows a scheduler gap) and a
/// claiming tick at `due` (an hour's occurrence of `a`, after a gap). The
/// tick after an idle tick rests at the note beside the store
/// (`store::idle`) and runs no statement at all; the idle tick measured is
/// the one that reads the tables (the note removed first).
fn measure(db: &str, start: (&str, &str), due: &str) -> Steps {
    let ties: &[&str] = &["--tenant", "ties", "upcoming", "--within", "200d"];
    let mut all: Vec<(String, BTreeMap<String, i64>)> = READS
        .iter()
        .chain([&ties])
        .map(|args| (args.join(" "), stepped(|| agentcron(db, args))))
        .collect();
    let tick = ["tick", "--executor", "true", "--notifier", "true"];
    let (before, idle) = start;
    agentcron_at(db, before, &tick);
    let rested = stepped(|| agentcron_at(db, idle, &tick));
    assert!(
        rested.is_empty(),
        "a resting tick ran statements: {rested:?}"
    );
    let _ = std::fs::remove_file(format!("{db}-idle"));
    all.push((
        "idle tick".into(),
        stepped(|| agentcron_at(db, idle, &tick)),
    ));
    all.push((
        "claiming tick".into(),
        stepped(|| agentcron_at(db, due, &tick)),
    ));
    all.into_iter()
        .map(|(command, statements)| (command, statements.values().sum(), statements))
        .collect()
}

#[test]
fn no_command_does_more_work_as_the_store_grows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("growth.db").display().to_string();
    let conn = seeded(&db);
    let templates = [
        far_task(&db, &conn, "default"),
        far_task(&db, &conn, "ties"),
    ];

    // Past every default limit (50 runs, 50 events), so that both stores
    // show as many rows.
    grow(&conn, &templates, 1, 120);
    let small = measure(
        &db,
        ("2026-12-02T08:00:30Z", "2026-12-02T08:01:30Z"),
        "2026-12-02T09:00:30Z",
    );
    grow(&conn, &templates, 2, 1_200);
    let large = measure(
        &db,
        ("2026-12-02T09:30:30Z", "2026-12-02T09:31:30Z"),
        "2026-12-02T10:00:30Z",
    );

    let mut grew = Vec::new();
    for ((command, before, statements_before), (_, after, statements_after)) in
        small.iter().zip(&large)
    {
        assert!(
            *before > 0,
            "`{command}` took no step: the counter is broken"
        );
        if outgrew(*before, *after) {
            let statements: Vec<String> = statements_after
                .iter()
                .map(|(sql, steps)| (statements_before.get(sql).copied().unwrap_or(0), steps, sql))
                .filter(|(was, steps, _)| **steps > was + 50)
                .map(|(was, steps, sql)| format!("    {was} -> {steps} steps: {sql}"))
                .collect();
            grew.push(format!(
                "`{command}`: {before} -> {after} steps\n{}",
                statements.join("\n")
            ));
        }
    }
    assert!(
        grew.is_empty(),
        "work that grew with the store:\n{}",
        grew.join("\n")
    );

    // `list` prints every task, so its work grows with the tasks; with the
    // tasks as they are, none of its statements may do more as their
    // history grows tenfold again (a task's last run and the run blocking
    // it are lookups, whatever came before).
    let lists: &[&[&str]] = &[&["list"], &["--json", "list"]];
    let list_steps = || -> Vec<BTreeMap<String, i64>> {
        lists
            .iter()
            .map(|args| stepped(|| agentcron(&db, args)))
            .collect()
    };
    let before = list_steps();
    grow_history(&conn, 3, 12_000);
    let after = list_steps();
    for ((args, before), after) in lists.iter().zip(&before).zip(&after) {
        for (sql, steps) in after {
            let was = before.get(sql).copied().unwrap_or(0);
            assert!(
                !outgrew(was, *steps),
                "`{}` did more as the history grew: {was} -> {steps} steps: {sql}",
                args.join(" ")
            );
        }
    }
}
