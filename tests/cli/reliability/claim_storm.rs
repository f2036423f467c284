//! Scenario 1: sixteen ticks started together over 500 tasks all due at the
//! same instant. Every occurrence is claimed by exactly one tick; a tick
//! that gives up busy (exit 75) leaves nothing half-done behind it.
use crate::support::{Rig, Task, TestEnv, T0};

use std::process::Child;
use std::time::Instant;

use serde_json::Value;

use super::{assert_invariants, journal_starts, spawn, stress, Rng};

const HOUR: i64 = 3600;

/// Creates `n` hourly tasks: one drafted and confirmed through the CLI,
/// the others copies of its row with fresh ids (through the CLI each would
/// cost ~25 ms, which adds up to most of the scenario's time).
pub fn create_hourly_tasks(env: &TestEnv, n: usize, rng: &mut Rng) {
    Task::new().instruction("storm task").confirm(env);
    let ids: Vec<String> = (1..n).map(|_| fake_uuid(rng)).collect();
    if crate::support::on_postgres() {
        let table = agentcron::store::transfer::table("tasks").unwrap();
        let columns: Vec<&str> = table
            .columns
            .iter()
            .map(|c| c.0)
            .filter(|c| *c != "task_id")
            .collect();
        let columns = columns.join(", ");
        let batch: String = ids
            .iter()
            .map(|id| format!("INSERT INTO tasks (task_id, {columns}) SELECT '{id}', {columns} FROM tasks LIMIT 1;"))
            .collect();
        env.sql(&format!("BEGIN; {batch} COMMIT;"));
        return;
    }
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('tasks') WHERE name <> 'task_id'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let columns = columns.join(", ");
    let sql =
        format!("INSERT INTO tasks (task_id, {columns}) SELECT ?1, {columns} FROM tasks LIMIT 1");
    let tx = conn.unchecked_transaction().unwrap();
    for id in ids {
        tx.execute(&sql, [id]).unwrap();
    }
    tx.commit().unwrap();
}

/// A v4-shaped id from the scenario's seeded generator.
fn fake_uuid(rng: &mut Rng) -> String {
    let (a, b) = (rng.next(), rng.next());
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

struct TickResult {
    code: i32,
    events: Vec<Value>,
    stderr: String,
}

fn storm(rig: &Rig, ticks: usize, busy_timeout: Option<&str>) -> Vec<TickResult> {
    if let Some(t) = busy_timeout {
        rig.env.set_env("AGENTCRON_BUSY_TIMEOUT", t);
    }
    let children: Vec<Child> = (0..ticks)
        .map(|_| {
            spawn(
                &rig.env,
                &["--json", "tick", "--max-runs", "1000", "--jobs", "2"],
            )
        })
        .collect();
    let results = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let code = out.status.code().unwrap_or(-1);
            assert_ne!(code, 101, "tick panicked");
            assert_ne!(code, -1, "tick killed by a signal: {out:?}");
            TickResult {
                code,
                events: String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect();
    rig.env.set_env("AGENTCRON_BUSY_TIMEOUT", "5s");
    results
}

/// Runs the storm and checks it; returns (busy exits, runs claimed by busy ticks).
/// The storms run one at a time: two at once would need ~130 connections on
/// PostgreSQL (16 ticks with their workers and lease keepers each).
static ONE_STORM_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn storm_and_check(tasks: usize, busy_timeout: Option<&str>, rng: &mut Rng) -> (usize, usize) {
    let _turn = ONE_STORM_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let rig = Rig::new();
    let created = Instant::now();
    create_hourly_tasks(&rig.env, tasks, rng);
    eprintln!("created {tasks} tasks in {:?}", created.elapsed());
    rig.env.set_now(T0 + HOUR);
    let began = Instant::now();
    let results = storm(&rig, 16, busy_timeout);
    let busy: Vec<&TickResult> = results.iter().filter(|r| r.code == 75).collect();
    for r in &results {
        assert!(
            r.code == 0 || r.code == 75,
            "tick exited {}: {}",
            r.code,
            r.stderr
        );
    }
    // A tick that gave up busy must not leave a claim behind unexecuted:
    // once every tick has exited, nothing is running.
    let running = rig
        .env
        .count("SELECT count(*) FROM runs WHERE status = 'running'");
    let claimed_by_busy: usize = busy
        .iter()
        .map(|r| {
            r.events
                .iter()
                .filter(|e| e["event"] == "claimed" && e["decision"] == "running")
                .count()
        })
        .sum();
    eprintln!(
        "storm over {tasks} tasks: {} ticks, {} busy exits (claims made by busy ticks: {claimed_by_busy}), \
         {running} runs left running, {:?}",
        results.len(),
        busy.len(),
        began.elapsed()
    );
    assert_eq!(
        running, 0,
        "runs left `running` by ticks that exited (busy ticks claimed {claimed_by_busy})"
    );
    // A final tick picks up whatever the busy ones left.
    rig.tick(&["--max-runs", "1000", "--jobs", "2"]).ok();
    let starts = journal_starts(&rig.env.path("exec.journal"));
    let figures = assert_invariants(&rig.env, &rig.env.path("exec.journal"));
    assert_eq!(starts.len(), tasks, "every task executed exactly once");
    assert_eq!(
        rig.env.count(
            "SELECT count(DISTINCT task_id) FROM runs WHERE status = 'succeeded' AND attempt = 1"
        ),
        tasks as i64
    );
    assert_eq!(figures.runs, tasks, "one run per task, nothing else");
    eprintln!(
        "storm figures: runs {}, starts {}, lost 0, duplicated 0, busy exits {}, {:?} in all",
        figures.runs,
        figures.starts,
        busy.len(),
        created.elapsed()
    );
    (busy.len(), claimed_by_busy)
}

#[test]
fn claim_storm_sixteen_ticks_claim_each_of_500_occurrences_once() {
    let (mut rng, _guard) = super::seeded("claim_storm_sixteen_ticks", 1);
    for _ in 0..stress() {
        storm_and_check(500, None, &mut rng);
    }
}

/// The same storm with a one-second busy timeout, so that most ticks do give up
/// with exit 75: each must give up cleanly ("nothing changed, safe to retry").
#[test]
fn claim_storm_with_a_short_busy_timeout_busy_ticks_leave_nothing_behind() {
    let (mut rng, _guard) = super::seeded("claim_storm_with_a_short_busy_timeout", 1);
    for _ in 0..stress() {
        storm_and_check(500, Some("1s"), &mut rng);
    }
}
