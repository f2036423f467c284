//! Scenario: another writer blocks a tick's lease renewals for longer than
//! the lease (docs/CONTRACT.md §6, "Leases cannot come back"). On SQLite another
//! process holds `BEGIN IMMEDIATE`; on PostgreSQL another connection holds
//! the run's row with `SELECT … FOR UPDATE`. The executor fences its one
//! side effect with `agentcron lease check`, as docs/PROTOCOLS.md says, and keeps
//! asking while it works. Once the lease check has answered 5 it must never
//! answer 0 again, the side effect happens once, and the run ends `unknown`
//! (never `failed` and retried, which would repeat the side effect).
//!
//! The tick runs in real time (`AGENTCRON_NOW` is the real clock at its
//! start, and the executor's `lease check` reads the real clock), since the
//! lease must really expire while the renewals wait.
use crate::support::{assert_contains, on_postgres, write_script, Rig, Task, TestEnv, BIN};

use std::io::BufRead;
use std::time::{Duration, Instant};

use super::spawn;

/// Lease length, how long the other writer holds its lock, and how long the
/// executor keeps asking (`FENCE_CHECKS` times, about 0.3 s apart).
const LEASE: &str = "3s";
const LOCK_HELD: Duration = Duration::from_secs(7);
const CHECKS: u32 = 40;

/// Fences the side effect, then journals the lease check's answer every
/// 0.25 s, and once more when the tick stops it (the tick stops a run
/// whose lease ran out whether or not the executor asked first); exits 1,
/// so an outcome recorded after a revival would be `failed` and retried.
const FENCED_EXECUTOR: &str = r#"#!/bin/sh
cat > /dev/null
check() {
  env -u AGENTCRON_NOW "$FENCE_BIN" lease check "$AGENTCRON_RUN_ID" --token "$AGENTCRON_LEASE_TOKEN" >/dev/null 2>&1
  echo $?
}
if [ "$(check)" = 0 ]; then echo "effect $AGENTCRON_RUN_ID" >> "$FENCE_JOURNAL"; fi
trap 'echo "check $(check)" >> "$FENCE_JOURNAL"; exit 1' TERM
i=0
while [ "$i" -lt "$FENCE_CHECKS" ]; do
  echo "check $(check)" >> "$FENCE_JOURNAL"
  sleep 0.25
  i=$((i + 1))
done
exit 1
"#;

#[allow(clippy::disallowed_methods)] // the test needs the real clock, as the executor sees it
pub fn real_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// Holds the write lock (SQLite) or the run's row lock (PostgreSQL) for
/// `held`, from another connection, in a thread; returns once it is held.
fn block_writes(env: &TestEnv, run_id: &str, held: Duration) -> std::thread::JoinHandle<()> {
    let (locked, is_locked) = std::sync::mpsc::channel();
    let handle = if on_postgres() {
        let (url, run_id) = (env.db_arg(), run_id.to_string());
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let mut tx = client.transaction().unwrap();
            let rows = tx
                .execute(
                    "SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE",
                    &[&run_id],
                )
                .unwrap();
            assert_eq!(rows, 1, "the run row to lock");
            locked.send(()).unwrap();
            std::thread::sleep(held);
            tx.commit().unwrap();
        })
    } else {
        let path = env.db.clone();
        std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.busy_timeout(Duration::from_secs(10)).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(held);
            conn.execute_batch("COMMIT").unwrap();
        })
    };
    is_locked
        .recv_timeout(Duration::from_secs(20))
        .expect("the other writer took its lock");
    handle
}

/// The run id of the first side effect, waiting for it.
fn wait_for_effect(journal: &std::path::Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(file) = std::fs::File::open(journal) {
            let effect = std::io::BufReader::new(file)
                .lines()
                .map_while(Result::ok)
                .find_map(|l| l.strip_prefix("effect ").map(str::to_string));
            if let Some(run) = effect {
                return run;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the executor never fenced its side effect"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An hourly task `name` due at the real clock's now, which the tick and
/// the executor's `lease check` read; renewals wait for a held lock rather
/// than give up as busy.
fn due_now_in_real_time(rig: &Rig, name: &str) {
    rig.env.set_env("AGENTCRON_BUSY_TIMEOUT", "30s");
    let start = real_now();
    rig.env.set_now(start - 3600);
    // Anchored at the draft's own second (the default anchor is the next
    // whole minute, which would not be due at `start`).
    let anchor = chrono::DateTime::from_timestamp(start - 3600, 0)
        .unwrap()
        .to_rfc3339();
    Task::named(name)
        .instruction(name)
        .flags(&["--start", &anchor])
        .confirm(&rig.env);
    rig.env.set_now(start);
}

#[test]
fn a_lease_lost_while_renewals_are_blocked_never_comes_back() {
    let rig = Rig::new();
    let journal = rig.env.path("fence.journal");
    let script = rig.env.path("fence.sh");
    write_script(&script, FENCED_EXECUTOR);
    rig.env
        .set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    rig.env.set_env("FENCE_BIN", BIN);
    rig.env.set_env("FENCE_JOURNAL", journal.to_str().unwrap());
    rig.env.set_env("FENCE_CHECKS", &CHECKS.to_string());
    due_now_in_real_time(&rig, "f");
    let tick = spawn(&rig.env, &["tick", "--lease", LEASE]);
    let run = wait_for_effect(&journal);
    let holder = block_writes(&rig.env, &run, LOCK_HELD);
    let out = tick.wait_with_output().unwrap();
    holder.join().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "tick: {stdout}{stderr}");
    assert_eq!(stderr, "");

    let text = std::fs::read_to_string(&journal).unwrap();
    let answers: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("check "))
        .collect();
    let first_lost = answers
        .iter()
        .position(|a| *a == "5")
        .unwrap_or_else(|| panic!("the lease never expired: {answers:?}"));
    assert!(
        answers[first_lost..].iter().all(|a| *a == "5"),
        "the lease came back after it was lost: {answers:?}"
    );
    eprintln!(
        "fencing: lease check answered 0 {first_lost} times, then 5 {} times",
        answers.len() - first_lost
    );
    // The executor was stopped once the lease was found lost.
    assert!(answers.len() < CHECKS as usize, "{answers:?}");
    assert_contains(&stdout, "lease lost; its outcome was not recorded");

    // A later tick, past the lease and the retry backoff: the run becomes
    // unknown and is never retried.
    rig.env.set_now(real_now() + 120);
    let out = rig.tick(&["--lease", LEASE]).ok();
    assert_contains(&out.stdout, "lease expired");
    let runs = rig
        .env
        .sql("SELECT run_id, status, attempt FROM runs ORDER BY attempt");
    assert_eq!(runs, vec![vec![run.clone(), "unknown".into(), "1".into()]]);
    let effects = text.lines().filter(|l| l.starts_with("effect ")).count();
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(
        (
            effects,
            text.lines().filter(|l| l.starts_with("effect ")).count()
        ),
        (1, 1),
        "the side effect happened once"
    );
}

/// Records when it was stopped; never asks `lease check`.
const UNFENCED_EXECUTOR: &str = r#"#!/bin/sh
cat > /dev/null
trap 'date +%s.%N > "$FENCE_STOPPED"; exit 1' TERM
echo started > "$FENCE_JOURNAL"
sleep 30 &
wait
"#;

/// An executor that never asks is stopped when the tick's lease runs out
/// in memory (its renewals waiting for the lock), not when the lock is
/// released and a renewal finally finds it expired: by then another tick
/// may already have frozen the run.
#[test]
fn an_executor_that_never_asks_is_stopped_when_its_lease_runs_out() {
    let rig = Rig::new();
    let journal = rig.env.path("unfenced.journal");
    let stopped = rig.env.path("unfenced.stopped");
    let script = rig.env.path("unfenced.sh");
    write_script(&script, UNFENCED_EXECUTOR);
    rig.env
        .set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    rig.env.set_env("FENCE_JOURNAL", journal.to_str().unwrap());
    rig.env.set_env("FENCE_STOPPED", stopped.to_str().unwrap());
    due_now_in_real_time(&rig, "u");
    let tick = spawn(&rig.env, &["tick", "--lease", LEASE]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !journal.exists() {
        assert!(Instant::now() < deadline, "the executor never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = rig.env.sql("SELECT run_id FROM runs")[0][0].clone();
    let holder = block_writes(&rig.env, &run, LOCK_HELD);
    let locked_at = real_seconds();
    holder.join().unwrap();
    let released_at = real_seconds();
    let out = tick.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "tick: {stdout}");
    let stopped_at: f64 = std::fs::read_to_string(&stopped)
        .expect("the executor was stopped with TERM")
        .trim()
        .parse()
        .unwrap();
    eprintln!(
        "unfenced: stopped {:.1} s after the lock was taken, {:.1} s before it was released",
        stopped_at - locked_at,
        released_at - stopped_at
    );
    assert!(
        stopped_at < released_at - 1.0,
        "the executor ran on past its lease until the lock was released \
         (stopped {stopped_at:.2}, lock released {released_at:.2})"
    );
    assert_contains(&stdout, "lease lost; its outcome was not recorded");
}

#[allow(clippy::disallowed_methods)] // compared with the executor's `date`
fn real_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}
