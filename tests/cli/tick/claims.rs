//! What a tick claims: each occurrence once however many ticks overlap,
//! nothing when there is no executor, and a busy store said in one line.
use crate::support::{assert_contains, finished, on_postgres, spawn_tick, Rig, Task, T0};

use super::leases::hold_lock;
use super::signals::{tick_running_long, wait_bounded};
use std::collections::HashSet;
use std::process::Child;
use std::time::Duration;

const HOUR: i64 = 3600;

/// Item 5: with something due and no executor, a tick refuses before it
/// claims: no run is spent on a missing flag.
#[test]
fn a_tick_with_due_work_and_no_executor_claims_nothing() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("h").confirm(env);
    env.set_now(T0 + HOUR);
    let before = env.json(&["show", "h"]);
    let out = env.run_without("AGENTCRON_EXECUTOR", &["tick"]);
    let stderr = &out.stderr;
    assert_eq!(out.code, 2, "{stderr}");
    assert_contains(stderr, "no executor");
    assert_eq!(
        stderr.lines().count(),
        2,
        "one error line and its hint: {stderr}"
    );
    assert!(out.stdout.is_empty());
    let after = env.json(&["show", "h"]);
    assert_eq!(after["runs"], serde_json::json!([]));
    assert_eq!(after["next_run_at"], before["next_run_at"]);
    // Nothing due: nothing to refuse.
    env.set_now(T0 + HOUR + 600);
    rig.tick(&[]).ok();
    let out = env.run_without("AGENTCRON_EXECUTOR", &["tick"]);
    assert_eq!(out.code, 0);
}

/// Item 8: a tick that started and recorded a run, and then found the
/// database busy past busy_timeout on a later claim, did change things:
/// it says what it did and exits 0, not 75 ("nothing changed").
#[test]
fn a_tick_busy_after_doing_work_reports_it_and_exits_0() {
    if on_postgres() {
        return; // the lock below is SQLite's; item 1 covers PostgreSQL's.
    }
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("AGENTCRON_BUSY_TIMEOUT", "1s");
    let (tick, _) = tick_running_long(env, 4, &["tick", "--verbose"]);
    // Held across the tick's next look for due work (every second).
    let holder = hold_lock(
        env,
        "tasks",
        &env.path("locked"),
        Duration::from_millis(2500),
    );
    let (code, stdout, stderr) = wait_bounded(tick, Duration::from_secs(30), "the tick");
    holder.join().unwrap();
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert_contains(&stdout, "succeeded");
    assert!(
        stderr.contains("busy"),
        "the busy claim is reported: {stderr}"
    );
    assert!(
        stderr.contains("this tick started 1 run(s)"),
        "what it did: {stderr}"
    );
    assert_eq!(rig.runs("long")[0]["status"], "succeeded");
}

#[test]
fn overlapping_ticks_execute_each_occurrence_exactly_once() {
    let rig = Rig::new();
    let tasks = 120;
    for i in 0..tasks {
        Task::new()
            .instruction(&format!("task {i}"))
            .confirm(&rig.env);
    }
    rig.env.set_now(T0 + HOUR);
    let ticks: Vec<Child> = (0..6)
        .map(|_| spawn_tick(&rig, &["--max-runs", "1000", "--jobs", "2"]))
        .collect();
    for child in ticks {
        finished(child, 0);
    }
    let starts = rig.starts();
    let run_ids: HashSet<&str> = starts
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(starts.len(), tasks, "each occurrence executed once");
    assert_eq!(run_ids.len(), tasks);
    assert_eq!(rig.env.count("SELECT count(*) FROM runs"), tasks as i64);
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM runs WHERE status = 'succeeded'"),
        tasks as i64
    );
    assert_eq!(
        rig.env
            .count("SELECT count(DISTINCT task_id || scheduled_for) FROM runs"),
        tasks as i64
    );
}

#[test]
fn a_busy_database_is_one_error_line() {
    if crate::support::on_postgres() {
        return; // holds the SQLite write lock directly
    }
    let rig = Rig::new();
    Task::named("b").confirm(&rig.env);
    rig.env.set_env("AGENTCRON_BUSY_TIMEOUT", "1s");
    rig.env.set_now(T0 + HOUR);
    let conn = rusqlite::Connection::open(&rig.env.db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = rig.env.run(&["pause", "b"]).fails(75);
    assert_eq!(
        out.stderr,
        "agentcron: error: the database is busy (another agentcron held it past \
         busy_timeout); nothing was changed; retry in a moment\n"
    );
    // A tick is several transactions: its line names the one that waited.
    let out = rig.env.run(&["tick"]).fails(75);
    assert_eq!(
        out.stderr,
        "agentcron: error: the database was busy while recording the tick (another \
         agentcron held it past busy_timeout); that step changed nothing; retry in a moment\n"
    );
    conn.execute_batch("COMMIT").unwrap();
    assert!(rig.starts().is_empty());
}

#[test]
fn overlapping_ticks_on_a_small_store_never_lose_the_shared_memory_lock() {
    // A tick that dropped its -shm lock (by closing a descriptor of the file)
    // let another tick reset the -shm under it: SIGBUS, or a malformed index.
    for _ in 0..3 {
        let rig = Rig::new();
        for i in 0..5 {
            Task::new()
                .instruction(&format!("task {i}"))
                .confirm(&rig.env);
        }
        rig.env.set_now(T0 + HOUR);
        let ticks: Vec<Child> = (0..4).map(|_| spawn_tick(&rig, &[])).collect();
        for child in ticks {
            finished(child, 0);
        }
        assert_eq!(rig.starts().len(), 5);
    }
}

/// Issue 46 item 1: a tick's PostgreSQL session holds no transaction open
/// while it waits for its executor (a claim commits before the executor
/// starts; the outcome is written after it ends), so other hosts' claims
/// never wait on rows it holds meanwhile.
#[test]
fn a_ticks_session_is_never_idle_in_a_transaction_while_its_executor_runs() {
    if !on_postgres() {
        return;
    }
    let rig = Rig::new();
    let env = &rig.env;
    let (tick, _) = tick_running_long(env, 3, &["tick"]);
    let session = format!("agentcron/{}", tick.id());
    let mut states = HashSet::new();
    for _ in 0..100 {
        let rows = env.sql(&format!(
            "SELECT state FROM pg_stat_activity WHERE application_name = '{session}'"
        ));
        states.extend(rows.into_iter().map(|row| row[0].clone()));
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = finished(tick, 0);
    assert!(
        states.contains("idle"),
        "the tick's session was not seen: {states:?}"
    );
    assert!(
        !states.iter().any(|s| s.starts_with("idle in transaction")),
        "{states:?}"
    );
}
