//! Where the SQLite store meets the file system (issue 23): the `.db` file
//! alone holds every committed change between commands, `backup` writes a
//! consistent private copy while ticks run, `tick` never creates a store,
//! first use is safe when several commands start at once, and a read-only
//! store can still be read. SQLite only (PostgreSQL has no files of ours).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::spawn;
use crate::support::Rig;
use crate::support::{on_postgres, Outcome, TestEnv, BIN};

fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn task_names(env: &TestEnv, db: &Path) -> Vec<String> {
    let list = env.json(&["--db", db.to_str().unwrap(), "list"]);
    list.as_array()
        .unwrap_or_else(|| panic!("list --json: {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_store_whose_wal_vanished_keeps_its_confirmed_task() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    env.task(&["--name", "kept", "--instruction", "x", "--every", "1h"]);
    // No process is running: whatever the -wal held is gone with it.
    std::fs::remove_file(sidecar(&env.db, "-wal")).unwrap();
    assert_eq!(task_names(&env, &env.db), ["kept"]);
    env.run(&["check"]).ok();
}

#[test]
fn a_finished_once_task_does_not_run_again_when_the_wal_vanished() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    rig.env
        .task(&["--name", "once", "--instruction", "x", "--in", "1h"]);
    // A store whose WAL was folded in since (a large WAL is truncated as the
    // last writer closes): the task is in the .db, its run only in the WAL.
    let conn = rusqlite::Connection::open(&rig.env.db).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    rig.env.advance(3600);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(rig.env.json(&["show", "once"])["state"], "completed");
    std::fs::remove_file(sidecar(&rig.env.db, "-wal")).unwrap();
    rig.env.advance(60);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "the finished once-task ran again");
    assert_eq!(rig.env.json(&["show", "once"])["state"], "completed");
    rig.env.run(&["check"]).ok();
}

#[test]
fn a_copy_of_the_db_file_alone_holds_the_task_and_its_run() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    rig.env
        .task(&["--name", "copied", "--instruction", "x", "--every", "1h"]);
    rig.env.advance(3600);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    // `cp agentcron.db backup.db`, as an operator would, without -wal.
    let copy = rig.env.path("copy/backup.db");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&rig.env.db, &copy).unwrap();
    assert_eq!(task_names(&rig.env, &copy), ["copied"]);
    let runs = rig
        .env
        .json(&["--db", copy.to_str().unwrap(), "runs", "copied"]);
    let statuses: Vec<&str> = runs
        .as_array()
        .unwrap_or_else(|| panic!("runs --json: {runs}"))
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["succeeded"]);
}

#[test]
fn backup_while_ticks_run_is_a_private_store_that_check_accepts() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    for i in 0..8 {
        rig.env.task(&[
            "--name",
            &format!("b{i}"),
            "--instruction",
            "x",
            "--every",
            "1m",
        ]);
    }
    let mut backups = Vec::new();
    for round in 0..4 {
        rig.env.advance(60);
        let ticks: Vec<_> = (0..2)
            .map(|_| spawn(&rig.env, &["tick", "--jobs", "2"]))
            .collect();
        let file = rig.env.path(&format!("backup-{round}.db"));
        let out = rig
            .env
            .run(&["--json", "backup", file.to_str().unwrap()])
            .ok();
        assert_eq!(out.json()["backup"], file.to_str().unwrap());
        for tick in ticks {
            let out = tick.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
        }
        // Checked at the instant it was taken: a run it caught `running`
        // holds a lease that is still valid then (later, a tick on the
        // restored copy marks such a run unknown, for `reconcile`).
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600, "{}", file.display());
        rig.env.run(&["--db", file.to_str().unwrap(), "check"]).ok();
        assert_eq!(task_names(&rig.env, &file).len(), 8);
        backups.push(file);
    }
    // An existing file is never overwritten, the store's own least of all.
    let before = std::fs::read(&backups[0]).unwrap();
    let out = rig
        .env
        .run(&["backup", backups[0].to_str().unwrap()])
        .fails(2);
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);
    assert_eq!(std::fs::read(&backups[0]).unwrap(), before);
    rig.env
        .run(&["backup", rig.env.db.to_str().unwrap()])
        .fails(2);
}

#[test]
fn backup_of_a_missing_store_creates_nothing() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let out = env
        .run(&["backup", env.path("b.db").to_str().unwrap()])
        .fails(3);
    assert!(out.stderr.contains("no database at"), "{}", out.stderr);
    assert!(!env.db.parent().unwrap().exists());
    assert!(!env.path("b.db").exists());
}

#[test]
fn tick_on_a_missing_store_exits_3_and_creates_nothing() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let db = env.path("not-mounted/agentcron.db");
    let db_arg = db.to_str().unwrap();
    let out = env
        .run(&["--db", db_arg, "tick", "--executor", "true"])
        .fails(3);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines[0],
        format!("agentcron: error: no database at {db_arg}; `agentcron draft` creates it")
    );
    assert!(
        out.stderr.contains("hint:") && out.stderr.contains("--db"),
        "{}",
        out.stderr
    );
    assert!(!db.parent().unwrap().exists(), "tick created the folder");
    // The commands that change the store still create it.
    env.run(&[
        "--db",
        db_arg,
        "draft",
        "--instruction",
        "x",
        "--every",
        "1h",
    ])
    .ok();
    env.run(&["--db", db_arg, "tick", "--executor", "true"])
        .ok();
}

/// Four `draft`s at once on a store that does not exist yet, `rounds`
/// times on fresh stores (at most `budget` in all); returns the failures.
fn concurrent_first_uses(env: &TestEnv, rounds: usize, budget: Duration) -> (usize, Vec<String>) {
    let began = Instant::now();
    let mut failures = Vec::new();
    let mut done = 0;
    while done < rounds && began.elapsed() < budget {
        let db = env.path(&format!("r{done}/agentcron.db"));
        let children: Vec<_> = (0..4)
            .map(|i| {
                env.command(&[
                    "--db",
                    db.to_str().unwrap(),
                    "draft",
                    "--instruction",
                    &format!("x{i}"),
                    "--every",
                    "1h",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            if out.status.code() != Some(0) {
                failures.push(format!(
                    "round {done}: exit {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        let _ = std::fs::remove_dir_all(db.parent().unwrap());
        done += 1;
    }
    (done, failures)
}

#[test]
fn four_drafts_at_once_on_a_new_store_all_succeed() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let rounds = 200 * crate::reliability::stress() as usize;
    let (done, failures) = concurrent_first_uses(&env, rounds, Duration::from_secs(120));
    eprintln!(
        "{done} rounds of 4 concurrent first drafts, {} failed",
        failures.len()
    );
    assert!(done >= 50, "only {done} rounds in the time budget");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Runs `agentcron args` with `folder` mounted read-only (a bind mount in a
/// mount namespace of its own, so root's writes fail as on read-only
/// media); None when this machine cannot do that.
pub(crate) fn run_on_read_only(env: &TestEnv, folder: &Path, args: &[&str]) -> Option<Outcome> {
    let folder = folder.to_str().unwrap();
    let script = format!(
        "mount --bind '{folder}' '{folder}' && mount -o remount,ro,bind '{folder}' || exit 97; exec \"$0\" \"$@\""
    );
    let template = env.command(args);
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script, BIN])
        .args(args)
        .env_clear()
        .envs(template.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() == Some(97) || stderr.starts_with("unshare:") {
        return None;
    }
    Some(Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    })
}

#[test]
fn a_store_in_a_read_only_folder_can_still_be_read() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    env.task(&["--name", "ro", "--instruction", "x", "--every", "1h"]);
    let folder = env.db.parent().unwrap().to_path_buf();
    let Some(out) = run_on_read_only(&env, &folder, &["--json", "list"]) else {
        crate::support::skipped(
            "cannot mount a folder read-only here (needs unshare -m and mount)",
        );
        return;
    };
    let out = out.ok();
    assert_eq!(out.json()[0]["name"], "ro", "{}", out.stdout);
    // With an idle tick's heartbeat in the WAL, read through the -shm.
    env.run(&["tick", "--executor", "true"]).ok();
    env.advance(60);
    env.run(&["tick", "--executor", "true"]).ok();
    assert!(std::fs::metadata(sidecar(&env.db, "-wal")).unwrap().len() > 0);
    let out = run_on_read_only(&env, &folder, &["--json", "list"])
        .unwrap()
        .ok();
    assert_eq!(out.json()[0]["name"], "ro", "{}", out.stdout);
    let out = run_on_read_only(&env, &folder, &["pause", "ro"])
        .unwrap()
        .fails(1);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!(
            "agentcron: error: the database {} is read-only here: its folder or file system is not writable",
            env.db.display()
        )
    );
    // A store copied onto read-only media: no -wal or -shm beside it.
    for suffix in ["-wal", "-shm"] {
        std::fs::remove_file(sidecar(&env.db, suffix)).unwrap();
    }
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o500)).unwrap();
    let out = run_on_read_only(&env, &folder, &["--json", "list"])
        .unwrap()
        .ok();
    assert_eq!(out.json()[0]["name"], "ro", "{}", out.stdout);
    run_on_read_only(&env, &folder, &["check"]).unwrap().ok();
    // A command that writes says in one line what is wrong.
    let out = run_on_read_only(&env, &folder, &["pause", "ro"])
        .unwrap()
        .fails(1);
    assert!(out.stderr.contains("read-only"), "{}", out.stderr);
    assert!(!sidecar(&env.db, "-wal").exists());
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// Runs agentcron as `nobody`, as in unsafe_files.rs.
fn run_as_nobody(env: &TestEnv, args: &[&str]) -> Outcome {
    use std::os::unix::process::CommandExt;
    let out = env
        .command(args)
        .uid(65534)
        .gid(65534)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_folder_its_owner_cannot_write_still_serves_its_store() {
    // chmod does not stop root: the owner is nobody, as in unsafe_files.rs.
    // SAFETY: geteuid has no preconditions.
    if on_postgres() || unsafe { libc::geteuid() } != 0 {
        return;
    }
    let env = TestEnv::new();
    std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let folder = env.db.parent().unwrap().to_path_buf();
    std::fs::create_dir(&folder).unwrap();
    std::os::unix::fs::chown(&folder, Some(65534), Some(65534)).unwrap();
    let draft = run_as_nobody(
        &env,
        &[
            "--json",
            "draft",
            "--name",
            "mine",
            "--instruction",
            "x",
            "--every",
            "1h",
        ],
    )
    .ok()
    .json();
    run_as_nobody(
        &env,
        &[
            "confirm",
            draft["draft_id"].as_str().unwrap(),
            "--hash",
            draft["payload_hash"].as_str().unwrap(),
        ],
    )
    .ok();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o500)).unwrap();
    // Its -wal and -shm are there and writable: SQLite needs no new file.
    let out = run_as_nobody(&env, &["--json", "list"]).ok();
    assert_eq!(out.json()[0]["name"], "mine");
    run_as_nobody(&env, &["pause", "mine"]).ok();
    // Without a -shm, which SQLite cannot create there: one line that says so.
    std::fs::remove_file(sidecar(&env.db, "-shm")).unwrap();
    let out = run_as_nobody(&env, &["list"]).fails(1);
    assert!(
        out.stderr.starts_with(&format!(
            "agentcron: error: cannot read {}: its folder is not writable",
            env.db.display()
        )),
        "{}",
        out.stderr
    );
    let out = run_as_nobody(&env, &["resume", "mine"]).fails(1);
    assert!(out.stderr.contains("is read-only here"), "{}", out.stderr);
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// Heartbeats are no change a backup must hold: an idle tick takes no
/// checkpoint and leaves the `.db` file as it was.
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
