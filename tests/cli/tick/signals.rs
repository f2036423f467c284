//! A tick stopped by a signal (or an interrupted `approve --here`) kills
//! the executors and notifiers it started and ends their leases, leaving
//! the ledger true. Real processes; on both stores.
use crate::support::{wait_for_within, write_script, Rig, Task, TestEnv, T0};

use std::process::Child;
use std::time::{Duration, Instant};

use crate::reliability::{journal_starts, kill, spawn};

const HOUR: i64 = 3600;

/// An executor that journals its start (`start RUN TOKEN PID`) and sleeps
/// `long`'s seconds when its instruction starts with "long".
pub(super) fn executor(env: &TestEnv, long: u32) -> String {
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

/// A tick (`tick_args`) spawned an hour after T0 on task `long`, whose
/// executor (`executor`) sleeps `seconds`; returned once that executor has
/// journaled its start, with the run's id, lease token and executor pid.
pub(super) fn tick_running_long(
    env: &TestEnv,
    seconds: u32,
    tick_args: &[&str],
) -> (Child, (String, String, i32)) {
    env.set_env("AGENTCRON_EXECUTOR", &executor(env, seconds));
    Task::named("long").instruction("long").confirm(env);
    env.set_now(T0 + HOUR);
    let journal = env.path("exec.journal");
    let tick = spawn(env, tick_args);
    wait_for_within("the executor", Duration::from_secs(20), || {
        !journal_starts(&journal).is_empty()
    });
    (tick, journal_starts(&journal).remove(0))
}

/// Waits for `child` at most `limit`; kills it and fails if it is still
/// running then (a tick that hangs must fail the test, not hang it).
pub(super) fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> (i32, String, String) {
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

fn run_of<'a>(runs: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    runs.iter()
        .find(|r| r["run_id"] == id)
        .unwrap_or_else(|| panic!("no run {id} in {runs:?}"))
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
        let (tick, (run_id, token, pid)) =
            tick_running_long(env, 30, &["tick", "--kill-grace", "1s"]);
        let tick_pid = tick.id() as i32;
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
        assert_eq!(journal_starts(&env.path("exec.journal")).len(), 1);
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
    Task::named("quick").instruction("quick").confirm(env);
    Task::named("long").instruction("long").confirm(env);
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
    Task::named("a").every("1d").confirm(env);
    env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    let run_id = rig.runs("a")[0]["run_id"].as_str().unwrap().to_string();
    // The approved continuation sleeps.
    env.executors_sleep("30");
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
