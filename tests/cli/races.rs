//! Concurrency and crashes with real processes: overlapping ticks, a tick
//! killed with SIGKILL mid-run, a tick frozen with SIGSTOP past its lease.

use std::collections::HashSet;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::support::T0;
use crate::support::{kill, spawn_tick, wait_for, Rig};

const HOUR: i64 = 3600;

#[test]
fn overlapping_ticks_execute_each_occurrence_exactly_once() {
    let rig = Rig::new();
    let tasks = 120;
    for i in 0..tasks {
        rig.env
            .task(&["--instruction", &format!("task {i}"), "--every", "1h"]);
    }
    rig.env.set_now(T0 + HOUR);
    let ticks: Vec<Child> = (0..6)
        .map(|_| spawn_tick(&rig, &["--max-runs", "1000", "--jobs", "2"]))
        .collect();
    for child in ticks {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
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
fn a_killed_tick_leaves_an_unknown_run_that_blocks_the_next_occurrence() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "30");
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "k"]);
    rig.env.set_now(T0 + HOUR);
    let mut tick = spawn_tick(&rig, &["--lease", "2s"]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    kill(tick.id() as i32, libc::SIGKILL);
    let _ = tick.wait();
    let executor_pid: i32 = rig.starts()[0].split(' ').nth(3).unwrap().parse().unwrap();
    kill(-executor_pid, libc::SIGKILL); // its own process group; clean up

    rig.env.set_now(T0 + HOUR + 10);
    let out = rig.tick(&[]).ok();
    assert!(out.stdout.contains("lease expired"), "{}", out.stdout);
    let runs = rig.runs("k");
    assert_eq!(runs[0]["status"], "unknown");
    assert_eq!(runs[0]["reason"], "execution lease expired");

    rig.env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    let runs = rig.runs("k");
    assert_eq!(runs[0]["status"], "skipped_overlap");
    assert_eq!(runs[1]["status"], "unknown");
    assert_eq!(
        rig.starts().len(),
        1,
        "the uncertain run was never replayed"
    );
}

#[test]
fn a_tick_frozen_past_its_lease_cannot_record_its_outcome() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "1");
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "f"]);
    rig.env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &["--lease", "3s"]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    kill(tick.id() as i32, libc::SIGSTOP);
    // Another tick, later than the lease, freezes the run as unknown.
    rig.env.set_now(T0 + HOUR + 30);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("f")[0]["status"], "unknown");
    wait_for("the executor to finish", || {
        crate::support::journal(&rig.env.path("exec.journal"))
            .iter()
            .any(|l| l.starts_with("end "))
    });
    kill(tick.id() as i32, libc::SIGCONT);
    let out = tick.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("lease lost"), "{stdout}");
    assert_eq!(
        rig.runs("f")[0]["status"],
        "unknown",
        "the late outcome was discarded"
    );
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM events WHERE action = 'outcome_discarded'"),
        1
    );
}

#[test]
fn a_lost_lease_kills_the_running_executor() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "30");
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "s"]);
    rig.env.set_now(T0 + HOUR);
    let started = Instant::now();
    let tick = spawn_tick(&rig, &["--lease", "3s", "--kill-grace", "1s"]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    // A later tick sees the lease as expired (its clock is 60 s ahead).
    rig.env.set_now(T0 + HOUR + 60);
    rig.tick(&[]).ok();
    let out = tick.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the executor was not stopped"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("lease lost"));
    let pid: i32 = rig.starts()[0].split(' ').nth(3).unwrap().parse().unwrap();
    assert!(
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z')))
            .unwrap_or(true),
        "executor {pid} still running"
    );
    assert_eq!(rig.runs("s")[0]["status"], "unknown");
}

#[test]
fn a_healthy_run_keeps_its_lease_past_the_lease_length() {
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "4");
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    rig.env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &["--lease", "2s"]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    std::thread::sleep(Duration::from_secs(3));
    // Three real seconds later, past the original 2 s lease: renewed, so a
    // second tick at the same moment must leave the run alone.
    rig.env.set_now(T0 + HOUR + 3);
    let out = rig.tick(&[]).ok();
    assert!(!out.stdout.contains("lease expired"), "{}", out.stdout);
    let out = tick.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(rig.runs("h")[0]["status"], "succeeded");
}

#[test]
fn a_database_busy_for_most_of_busy_timeout_never_expires_a_healthy_run() {
    if crate::support::on_postgres() {
        return; // holds the SQLite write lock directly
    }
    let rig = Rig::new();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "6");
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "b"]);
    rig.env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &["--lease", "10s"]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    // Another writer holds the lock for 0.8 × busy_timeout (5 s), while a
    // second tick, 5 s later by its clock, wants to expire leases.
    let conn = rusqlite::Connection::open(&rig.env.db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    rig.env.set_now(T0 + HOUR + 5);
    let second = spawn_tick(&rig, &[]);
    std::thread::sleep(Duration::from_millis(4000));
    conn.execute_batch("COMMIT").unwrap();
    let second = second.wait_with_output().unwrap();
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(!String::from_utf8_lossy(&second.stdout).contains("lease expired"));
    let first = tick.wait_with_output().unwrap();
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(rig.runs("b")[0]["status"], "succeeded");
}

#[test]
fn a_busy_database_is_one_error_line() {
    if crate::support::on_postgres() {
        return; // holds the SQLite write lock directly
    }
    let rig = Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "b"]);
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
            rig.env
                .task(&["--instruction", &format!("task {i}"), "--every", "1h"]);
        }
        rig.env.set_now(T0 + HOUR);
        let ticks: Vec<Child> = (0..4).map(|_| spawn_tick(&rig, &[])).collect();
        for child in ticks {
            let out = child.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(rig.starts().len(), 5);
    }
}
