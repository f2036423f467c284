//! The edges of a tick's life (issue 23, items 1, 3, 5, 6 and 8): a notice
//! whose result cannot be recorded, a signal, a missing executor, a lease
//! that expired while a notifier waits, a lock that outlasts busy_timeout
//! after the tick did its work. Real processes throughout; the ones that
//! apply to PostgreSQL run there too (the suite's second pass).

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use super::{journal_starts, kill, spawn};
use crate::support::{on_postgres, write_script, TestEnv, T0};
use crate::support::{wait_for_within, Rig};

const HOUR: i64 = 3600;

/// An executor that journals its start (`start RUN TOKEN PID`) and sleeps
/// `long`'s seconds when its instruction starts with "long".
fn executor(env: &TestEnv, long: u32) -> String {
    let path = env.path("executor");
    write_script(
        &path,
        &format!(
            "#!/bin/sh\ninput=$(cat)\n\
             echo \"start $AGENTCRON_RUN_ID $AGENTCRON_LEASE_TOKEN $$\" >> \"$FIXTURE_JOURNAL\"\n\
             case \"$input\" in *'\"instruction\":\"long'*) sleep {long} ;; esac\n\
             echo done\n"
        ),
    );
    path.display().to_string()
}

/// Waits for `child` at most `limit`; kills it and fails if it is still
/// running then (a tick that hangs must fail the test, not hang it).
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> (i32, String, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            use std::io::Read;
            let (mut out, mut err) = (String::new(), String::new());
            child.stdout.take().map(|mut s| s.read_to_string(&mut out));
            child.stderr.take().map(|mut s| s.read_to_string(&mut err));
            use std::os::unix::process::ExitStatusExt;
            let code = status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
            assert_ne!(code, 101, "{what} panicked: {err}");
            return (code, out, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Holds the store's write lock (SQLite) or an exclusive lock on `table`
/// (PostgreSQL) for `hold`, from a thread; touches `locked` once it holds it.
fn hold_lock(
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

fn run_of<'a>(runs: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    runs.iter()
        .find(|r| r["run_id"] == id)
        .unwrap_or_else(|| panic!("no run {id} in {runs:?}"))
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
    env.task(&["--instruction", "quick", "--every", "1h", "--name", "quick"]);
    env.task(&["--instruction", "long", "--every", "1h", "--name", "long"]);
    env.set_now(T0 + HOUR);
    let tick = spawn(env, &["tick", "--lease", "3s"]);
    wait_for_within("the quick run's notifier", Duration::from_secs(20), || {
        env.path("called").exists()
    });
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

/// Whether any live (not zombie) process is in process group `pgid`.
fn group_alive(pgid: i32) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // pid (comm) state ppid pgrp ...: comm may hold spaces.
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
            let fields: Vec<&str> = after.split(' ').collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
}

/// Item 3: SIGTERM, SIGINT or SIGHUP to a tick kills its executor's group,
/// ends the lease at once (`lease check` answers 5), settles the run
/// `unknown` ("tick interrupted") and exits 128 + the signal.
#[test]
fn a_signalled_tick_kills_its_executors_and_ends_their_leases() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let rig = Rig::new();
        let env = &rig.env;
        env.set_env("AGENTCRON_EXECUTOR", &executor(env, 30));
        env.task(&["--instruction", "long", "--every", "1h", "--name", "long"]);
        env.set_now(T0 + HOUR);
        let journal = env.path("exec.journal");
        let tick = spawn(env, &["tick", "--kill-grace", "1s"]);
        let tick_pid = tick.id() as i32;
        wait_for_within("the executor", Duration::from_secs(20), || {
            !journal_starts(&journal).is_empty()
        });
        let (run_id, token, pid) = journal_starts(&journal).remove(0);
        let sent = Instant::now();
        kill(tick_pid, signal);
        let (code, _, stderr) = wait_bounded(tick, Duration::from_secs(20), "the signalled tick");
        let took = sent.elapsed();
        assert_eq!(code, 128 + signal, "signal {signal}: {stderr}");
        assert!(
            took < Duration::from_secs(5),
            "signal {signal}: took {took:?}"
        );
        eprintln!("signal {signal}: the tick exited {code} after {took:?}");
        assert!(
            !group_alive(pid),
            "signal {signal}: the executor's group outlived the tick"
        );
        env.run(&["lease", "check", &run_id, "--token", &token])
            .fails(5);
        let run = run_of(&rig.runs("long"), &run_id).clone();
        assert_eq!(run["status"], "unknown", "signal {signal}: {run}");
        let reason = env.sql(&format!(
            "SELECT reason FROM runs WHERE run_id = '{run_id}'"
        ));
        assert_eq!(reason[0][0], "tick interrupted", "signal {signal}");
        assert!(stderr.contains("interrupted"), "signal {signal}: {stderr}");
        // Its notice waits for the next tick (no notifier here).
        assert_eq!(
            env.count(&format!(
                "SELECT count(*) FROM deliveries WHERE run_id = '{run_id}' AND state = 'pending'"
            )),
            1
        );
        // Nothing is replayed: the next tick runs nothing.
        rig.tick(&[]).ok();
        assert_eq!(journal_starts(&journal).len(), 1);
    }
}

/// Item 3, with notices: a notifier hung on one notice is killed too (its
/// notice becomes `unknown`, never resent), and the interrupted run's own
/// notice is left `pending` for the next tick.
#[test]
fn a_signalled_tick_kills_its_notifiers_and_leaves_the_ledger_true() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("AGENTCRON_EXECUTOR", &executor(env, 30));
    rig.with_notifier(0);
    env.set_env("NOTIFIER_SLEEP", "30");
    env.task(&["--instruction", "quick", "--every", "1h", "--name", "quick"]);
    env.task(&["--instruction", "long", "--every", "1h", "--name", "long"]);
    env.set_now(T0 + HOUR);
    let tick = spawn(env, &["tick", "--kill-grace", "1s"]);
    let calls = env.path("notify.calls");
    wait_for_within("the quick run's notifier", Duration::from_secs(20), || {
        calls.exists()
    });
    kill(tick.id() as i32, libc::SIGTERM);
    let (code, _, stderr) = wait_bounded(tick, Duration::from_secs(20), "the signalled tick");
    assert_eq!(code, 128 + libc::SIGTERM, "{stderr}");
    let quick = rig.runs("quick")[0].clone();
    let long = rig.runs("long")[0].clone();
    assert_eq!(quick["status"], "succeeded");
    assert_eq!(long["status"], "unknown");
    let state = |run: &serde_json::Value| {
        env.sql(&format!(
            "SELECT state FROM deliveries WHERE run_id = '{}'",
            run["run_id"].as_str().unwrap()
        ))[0][0]
            .clone()
    };
    assert_eq!(
        state(&quick),
        "unknown",
        "the notifier was called: maybe sent"
    );
    assert_eq!(state(&long), "pending");
}

/// Item 3 for `approve --here`: the continuation's executor runs in the
/// caller's shell, and Ctrl-C there must not leave it running with a live
/// lease.
#[test]
fn an_interrupted_approve_here_kills_its_executor_and_ends_the_lease() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("FIXTURE_MODE", "awaiting");
    env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    env.task(&["--instruction", "x", "--every", "1d", "--name", "a"]);
    env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    let run_id = rig.runs("a")[0]["run_id"].as_str().unwrap().to_string();
    // The approved continuation sleeps.
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "30");
    let journal = env.path("exec.journal");
    let approve = spawn(env, &["approve", &run_id, "--wait-id", "w1", "--here"]);
    wait_for_within("the continuation", Duration::from_secs(20), || {
        journal_starts(&journal).len() == 2
    });
    let (_, token, pid) = journal_starts(&journal).remove(1);
    kill(approve.id() as i32, libc::SIGINT);
    let (code, _, stderr) = wait_bounded(approve, Duration::from_secs(20), "approve --here");
    assert_eq!(code, 128 + libc::SIGINT, "{stderr}");
    assert!(!group_alive(pid), "the executor outlived approve --here");
    env.run(&["lease", "check", &run_id, "--token", &token])
        .fails(5);
    assert_eq!(rig.runs("a")[0]["status"], "unknown");
}

/// Item 5: with something due and no executor, a tick refuses before it
/// claims: no run is spent on a missing flag.
#[test]
fn a_tick_with_due_work_and_no_executor_claims_nothing() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    env.set_now(T0 + HOUR);
    let before = env.json(&["show", "h"]);
    let out = env
        .command(&["tick"])
        .env_remove("AGENTCRON_EXECUTOR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no executor"), "{stderr}");
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
    let out = env
        .command(&["tick"])
        .env_remove("AGENTCRON_EXECUTOR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// Item 6: a run whose lease expired (its tick was killed) becomes
/// `unknown`, and its notice goes out in the tick that froze it.
#[test]
fn the_notice_of_an_expired_lease_goes_out_in_the_same_tick() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("AGENTCRON_EXECUTOR", &executor(env, 30));
    env.task(&["--instruction", "long", "--every", "1h", "--name", "long"]);
    env.set_now(T0 + HOUR);
    let journal = env.path("exec.journal");
    let mut tick = spawn(env, &["tick"]);
    wait_for_within("the executor", Duration::from_secs(20), || {
        !journal_starts(&journal).is_empty()
    });
    let (run_id, _, pid) = journal_starts(&journal).remove(0);
    kill(tick.id() as i32, libc::SIGKILL);
    kill(-pid, libc::SIGKILL);
    tick.wait().unwrap();
    env.set_now(T0 + HOUR + 120);
    rig.with_notifier(0);
    let out = rig.tick(&[]).ok();
    assert_eq!(rig.runs("long")[0]["status"], "unknown", "{}", out.stdout);
    // What cron mails names the task and the run, and its reconcile
    // command reaches the run as printed (issue 36 item 4).
    assert!(
        out.stdout
            .contains(&format!("run {} of task long (", &run_id[..8])),
        "{}",
        out.stdout
    );
    let db = shell_words::quote(&env.db_arg()).into_owned();
    assert!(
        out.stdout.contains(&format!(
            "`agentcron --db {db} --as unix:tester reconcile {run_id} --decision "
        )),
        "{}",
        out.stdout
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
    env.set_env("AGENTCRON_EXECUTOR", &executor(env, 4));
    env.task(&["--instruction", "long", "--every", "1h", "--name", "long"]);
    env.set_now(T0 + HOUR);
    let journal = env.path("exec.journal");
    let tick = spawn(env, &["tick", "--verbose"]);
    wait_for_within("the executor", Duration::from_secs(20), || {
        !journal_starts(&journal).is_empty()
    });
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
    assert!(stdout.contains("succeeded"), "{stdout}");
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

/// Item 5: `tick` on a store that does not exist (a typo in cron's `--db`,
/// a volume not mounted yet) exits 3 and creates nothing, neither the file
/// nor its folder; so do the commands that act on what a store holds.
#[test]
fn a_tick_on_a_store_that_does_not_exist_exits_3_and_creates_nothing() {
    if on_postgres() {
        return; // a PostgreSQL database is the server's to create
    }
    let rig = Rig::new();
    let env = &rig.env;
    let folder = env.db.parent().unwrap().to_path_buf();
    assert!(!folder.exists());
    let out = rig.tick(&[]).fails(3);
    assert!(out.stderr.contains("no database at"), "{}", out.stderr);
    for args in [
        vec!["tick", "--dry-run"],
        vec!["lease", "check", "0000", "--token", "t"],
        vec!["pause", "x"],
        vec!["reconcile"],
        vec!["prune", "--older-than", "30d"],
    ] {
        env.run(&args).fails(3);
    }
    assert!(!folder.exists(), "nothing was created");
    // `draft` still creates it.
    env.draft(&["--instruction", "x", "--every", "1h"]);
    assert!(env.db.exists());
}
