//! Leases: a healthy run keeps its lease, a lost lease kills its executor,
//! a frozen or killed tick leaves an unknown run, an expired lease is told
//! in the same tick, and `lease check` holds only for the running token.
use crate::support::{
    assert_contains, finished, kill, on_postgres, orphaned_lease, spawn_tick, wait_for,
    wait_for_within, write_script, Rig, Task, TestEnv, T0,
};

use super::signals::{executor, tick_running_long, wait_bounded};
use std::time::{Duration, Instant};

use crate::reliability::spawn;
use std::path::Path;

const HOUR: i64 = 3600;

#[test]
fn a_killed_tick_leaves_an_unknown_run_that_blocks_the_next_occurrence() {
    let rig = Rig::new();
    orphaned_lease(&rig, "k", &["--lease", "2s"]);

    rig.env.set_now(T0 + HOUR + 10);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stdout, "lease expired");
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
    rig.env.executors_sleep("1");
    Task::named("f").confirm(&rig.env);
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
    let out = finished(tick, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_contains(&stdout, "lease lost");
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
    rig.env.executors_sleep("30");
    Task::named("s").confirm(&rig.env);
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
    rig.env.executors_sleep("4");
    Task::named("h").confirm(&rig.env);
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
    rig.env.executors_sleep("6");
    Task::named("b").confirm(&rig.env);
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
    let second = finished(second, 0);
    assert!(!String::from_utf8_lossy(&second.stdout).contains("lease expired"));
    finished(tick, 0);
    assert_eq!(rig.runs("b")[0]["status"], "succeeded");
}

/// (a) The dry run says what step 1 of the real tick does with a lease that
/// expired, and changes nothing.
#[test]
fn a_dry_run_reports_the_leases_the_tick_would_expire() {
    let rig = Rig::new();
    let run_id = orphaned_lease(&rig, "long", &[]);
    rig.env.set_now(T0 + HOUR + 120);
    let dry = rig.tick(&["--dry-run"]).ok();
    assert_eq!(
        dry.stdout,
        format!(
            "would freeze run {} of task long ({}): lease expired, outcome unknown \
             (`agentcron reconcile` settles it once you know what happened)\n",
            &run_id[..8],
            &rig.env.json(&["show", "long"])["task_id"].as_str().unwrap()[..8]
        )
    );
    let events = rig.tick_json(&["--dry-run"]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "would_expire_lease");
    assert_eq!(events[0]["task_name"], "long");
    assert_eq!(events[0]["run"]["run_id"], run_id.as_str());
    assert_eq!(rig.runs("long")[0]["status"], "running");
    let real = rig.tick_json(&[]);
    assert!(
        real.iter()
            .any(|e| e["event"] == "lease_expired" && e["run"]["run_id"] == run_id.as_str()),
        "{real:?}"
    );
    assert_eq!(rig.runs("long")[0]["status"], "unknown");
}

/// Holds the store's write lock (SQLite) or an exclusive lock on `table`
/// (PostgreSQL) for `hold`, from a thread; touches `locked` once it holds it.
pub(super) fn hold_lock(
    env: &TestEnv,
    table: &str,
    locked: &Path,
    hold: Duration,
) -> std::thread::JoinHandle<()> {
    let (db, locked, table) = (env.db_arg(), locked.to_path_buf(), table.to_string());
    let pg = on_postgres();
    std::thread::spawn(move || {
        if pg {
            let mut client = postgres::Client::connect(&db, postgres::NoTls).expect("connect");
            let mut tx = client.transaction().expect("begin");
            tx.batch_execute(&format!("LOCK TABLE {table} IN EXCLUSIVE MODE"))
                .expect("lock");
            std::fs::write(&locked, "").unwrap();
            std::thread::sleep(hold);
            tx.rollback().expect("rollback");
        } else {
            let conn = rusqlite::Connection::open(&db).expect("open");
            conn.busy_timeout(Duration::from_secs(10)).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").expect("lock");
            std::fs::write(&locked, "").unwrap();
            std::thread::sleep(hold);
            conn.execute_batch("ROLLBACK").expect("rollback");
        }
    })
}

/// Item 1: the notifier of one run finishes while another connection holds
/// the lock past busy_timeout, so its result cannot be recorded. That must
/// count nothing twice: the tick keeps renewing the lease of the other,
/// longer run (which ends `succeeded`, not `unknown`), and ends.
#[test]
fn a_notice_result_that_cannot_be_recorded_neither_hangs_the_tick_nor_stops_renewals() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("AGENTCRON_BUSY_TIMEOUT", "1s");
    env.set_env("AGENTCRON_EXECUTOR", &executor(env, 6));
    let notifier = env.path("notifier");
    write_script(
        &notifier,
        &format!(
            "#!/bin/sh\ncat > /dev/null\ntouch '{called}'\n\
             i=0; while [ ! -e '{locked}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n",
            called = env.path("called").display(),
            locked = env.path("locked").display()
        ),
    );
    env.set_env("AGENTCRON_NOTIFIER", notifier.to_str().unwrap());
    Task::named("quick").instruction("quick").confirm(env);
    Task::named("long").instruction("long").confirm(env);
    env.set_now(T0 + HOUR);
    let tick = spawn(env, &["tick", "--lease", "3s"]);
    wait_for_within("the quick run's notifier", Duration::from_secs(20), || {
        env.path("called").exists()
    });
    // The claim for the slot the quick run freed waits up to 15 ms for
    // another write to carry it (CONTRACT §6), then runs alone; let it
    // land, so that the first write to meet the lock is the notice's result.
    std::thread::sleep(Duration::from_millis(200));
    let holder = hold_lock(
        env,
        "deliveries",
        &env.path("locked"),
        Duration::from_millis(1500),
    );
    let began = Instant::now();
    let (code, stdout, stderr) = wait_bounded(tick, Duration::from_secs(30), "the tick");
    eprintln!(
        "the tick ended {:?} after the lock was taken",
        began.elapsed()
    );
    holder.join().unwrap();
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stderr.contains("could not be recorded"),
        "the lost notice result is reported: {stderr}"
    );
    for name in ["quick", "long"] {
        let runs = rig.runs(name);
        assert_eq!(runs.len(), 1, "{name}: {runs:?}");
        assert_eq!(runs[0]["status"], "succeeded", "{name}: {:?}", runs[0]);
    }
    // The notice whose result was lost stays claimed, and a later tick past
    // its deadline freezes it as unknown; it is never sent again.
    let quick = rig.runs("quick")[0]["run_id"].as_str().unwrap().to_string();
    let state = |run: &str| {
        env.sql(&format!(
            "SELECT state FROM deliveries WHERE run_id = '{run}'"
        ))[0][0]
            .clone()
    };
    assert_eq!(state(&quick), "sending");
    env.advance(600);
    rig.tick(&[]).ok();
    assert_eq!(state(&quick), "unknown");
    let calls = std::fs::read_to_string(env.path("notify.calls")).unwrap_or_default();
    assert!(!calls.contains(&quick), "never sent again");
}

/// Item 6: a run whose lease expired (its tick was killed) becomes
/// `unknown`, and its notice goes out in the tick that froze it.
#[test]
fn the_notice_of_an_expired_lease_goes_out_in_the_same_tick() {
    let rig = Rig::new();
    let env = &rig.env;
    let (mut tick, (run_id, _, pid)) = tick_running_long(env, 30, &["tick"]);
    kill(tick.id() as i32, libc::SIGKILL);
    kill(-pid, libc::SIGKILL);
    tick.wait().unwrap();
    env.set_now(T0 + HOUR + 120);
    rig.with_notifier(0);
    let out = rig.tick(&[]).ok();
    assert_eq!(rig.runs("long")[0]["status"], "unknown", "{}", out.stdout);
    // What cron mails names the task and the run, and its reconcile
    // command reaches the run as printed (issue 36 item 4).
    assert_contains(&out.stdout, &format!("run {} of task long (", &run_id[..8]));
    let db = shell_words::quote(&env.db_arg()).into_owned();
    assert_contains(
        &out.stdout,
        &format!("`agentcron --db {db} --as unix:tester reconcile {run_id} --decision "),
    );
    let notices = rig.notices();
    assert_eq!(
        notices.len(),
        1,
        "delivered in the same tick: {}",
        out.stdout
    );
    assert_eq!(notices[0]["run"]["run_id"], run_id.as_str());
}

#[test]
fn lease_check_holds_only_for_the_running_token() {
    let rig = Rig::new();
    Task::named("l").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let start = rig.starts()[0].clone();
    let parts: Vec<&str> = start.split(' ').collect();
    // The run is settled now, so its lease no longer holds.
    rig.env
        .run(&["lease", "check", parts[1], "--token", parts[2]])
        .fails(5);
}
