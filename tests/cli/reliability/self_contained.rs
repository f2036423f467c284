//! Issue 23 item 2: the store is self-contained between commands. After a
//! command that changed tasks, drafts or runs, the `.db` file alone holds
//! every committed change: a copy of it is a backup, and a `-wal` lost with
//! no process running loses nothing (before: after draft + confirm + tick
//! the `.db` had no tables at all; removing the `-wal` lost every task, and
//! on an older checkpoint ran a finished once-task again). `backup` writes a
//! consistent copy while ticks run.

use std::path::Path;

use crate::support::Rig;
use crate::support::{on_postgres, TestEnv, T0};

const HOUR: i64 = 3600;

fn sidecar(db: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// A store at `path`, read by agentcron as `--db`.
fn at(env: &TestEnv, path: &Path, args: &[&str]) -> crate::support::Outcome {
    let mut all = vec!["--db", path.to_str().unwrap()];
    all.extend_from_slice(args);
    env.run(&all)
}

#[test]
fn a_copy_of_the_db_file_alone_holds_every_confirmed_task_and_run() {
    if on_postgres() {
        return; // a file's property
    }
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let copy = env.path("copy.db");
    std::fs::copy(&env.db, &copy).unwrap();
    assert!(!sidecar(&copy, "-wal").exists());
    let listed = at(env, &copy, &["--json", "runs", "h"]).ok().json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["status"], "succeeded");
    at(env, &copy, &["check"]).ok();
}

#[test]
fn a_lost_wal_loses_no_task_and_replays_no_run() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&[
        "--instruction",
        "x",
        "--at",
        "2026-12-02T09:00:00Z",
        "--name",
        "once",
    ]);
    std::fs::remove_file(sidecar(&env.db, "-wal")).ok();
    std::fs::remove_file(sidecar(&env.db, "-shm")).ok();
    assert_eq!(env.json(&["show", "once"])["state"], "active");
    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    // The finished once-task: its completion is in the file, not only in
    // the WAL, so losing the WAL cannot make it due again.
    std::fs::remove_file(sidecar(&env.db, "-wal")).ok();
    std::fs::remove_file(sidecar(&env.db, "-shm")).ok();
    assert_eq!(env.json(&["show", "once"])["state"], "completed");
    env.advance(60);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "never run again");
    env.run(&["check"]).ok();
}

#[test]
fn an_idle_tick_leaves_the_db_file_untouched() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h"]);
    let before = std::fs::read(&env.db).unwrap();
    rig.tick(&[]).ok();
    rig.tick(&[]).ok();
    assert!(
        std::fs::read(&env.db).unwrap() == before,
        "heartbeats stay in the WAL: no checkpoint for an idle tick"
    );
}

#[test]
fn backup_writes_a_consistent_private_copy_while_ticks_run() {
    let rig = Rig::new();
    let env = &rig.env;
    let target = env.path("backup.db");
    if on_postgres() {
        let out = env.run(&["backup", target.to_str().unwrap()]).fails(2);
        assert!(out.stderr.contains("pg_dump"), "{}", out.stderr);
        return;
    }
    for i in 0..5 {
        env.task(&["--instruction", &format!("t{i}"), "--every", "1m"]);
    }
    env.set_now(T0 + HOUR);
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "1");
    let mut tick = super::spawn(env, &["tick"]);
    // While the tick runs its executors.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = env.run(&["backup", target.to_str().unwrap()]).ok();
    assert!(out.stdout.starts_with("Backed up to"), "{}", out.stdout);
    assert!(tick.wait().unwrap().success());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!sidecar(&target, "-wal").exists());
    at(env, &target, &["check"]).ok();
    let tasks = at(env, &target, &["--json", "list"]).ok().json();
    assert_eq!(tasks.as_array().unwrap().len(), 5);
    // Never over an existing file.
    let out = env.run(&["backup", target.to_str().unwrap()]).fails(2);
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);
}
