//! Issue 36 item 9: restore in the right order. A copy taken while a run was
//! in flight holds that run as `running`; once its lease has passed,
//! `reconcile` freezes and lists it before any tick has run, so a person
//! settles it before ticks restart, and nothing is replayed.
use crate::support::{assert_contains, kill, spawn_tick, wait_for_within, Rig, Task, T0};

use std::time::Duration;

#[test]
fn a_run_in_flight_in_a_restored_copy_is_settled_before_ticks_restart() {
    let rig = Rig::new();
    let env = &rig.env;
    if env.pg_schema().is_some() {
        return; // PostgreSQL restores with pg_dump; `backup` is SQLite's.
    }
    Task::named("job").confirm(env);
    env.executors_sleep("30");
    env.set_now(T0 + 3600);
    let mut tick = spawn_tick(&rig, &[]);
    wait_for_within("the executor", Duration::from_secs(20), || {
        !rig.starts().is_empty()
    });
    let copy = env.path("copy.db");
    env.run(&["backup", copy.to_str().unwrap()]).ok();
    // The host dies; the copy is restored in place of its store.
    kill(tick.id() as i32, libc::SIGKILL);
    let _ = tick.wait();
    let pid: i32 = rig.starts()[0].split(' ').nth(3).unwrap().parse().unwrap();
    kill(-pid, libc::SIGKILL);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", env.db.display()));
    }
    std::fs::rename(&copy, &env.db).unwrap();
    env.set_env("FIXTURE_MODE", "succeed");

    // Past the lease, no tick yet: reconcile finds the run and settles it.
    env.set_now(T0 + 3600 + 3600);
    let listed = env.run(&["reconcile"]).ok().stdout;
    let run_id = rig.starts()[0].split(' ').nth(1).unwrap().to_string();
    assert!(listed.contains(&run_id), "{listed}");
    env.run(&[
        "reconcile",
        &run_id,
        "--decision",
        "confirmed_failed",
        "--reason",
        "the host died mid-run",
    ])
    .ok();
    assert_eq!(env.json(&["show", "job"])["runs"][0]["status"], "failed");
    // Ticks restart: the next occurrence runs, the old one is not replayed.
    rig.tick(&[]).ok();
    let starts = rig.starts();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_ne!(starts[1].split(' ').nth(1).unwrap(), run_id);
}

/// Issue 36 item 9: a host that syncs profiles before anyone drafted is told
/// what to do, and `zone set --create-store` does it; without the flag a
/// mistyped --db still makes nothing.
#[test]
fn zone_set_on_a_store_not_made_yet_says_how_and_creates_it_when_asked() {
    let env = crate::support::TestEnv::new();
    let out = env
        .run(&["zone", "set", "unix:alice", "Europe/Berlin"])
        .fails(3);
    assert_contains(&out.stderr, "--create-store");
    if env.pg_schema().is_none() {
        assert!(!env.db.exists(), "nothing created");
    }
    env.run(&[
        "zone",
        "set",
        "unix:alice",
        "Europe/Berlin",
        "--create-store",
    ])
    .ok();
    let shown = env.run(&["zone", "show", "unix:alice"]).ok().stdout;
    assert_contains(&shown, "Europe/Berlin");
}
