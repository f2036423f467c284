//! `backup`: a consistent private copy of a SQLite store, also while ticks
//! run; what a backup's snapshot held back in the WAL is folded in; an
//! interrupted backup leaves nothing that passes for a store; folders it
//! refuses. SQLite only (PostgreSQL has its own tools).
use crate::support::{assert_contains, on_postgres, Rig, Task, TestEnv};

use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};

use crate::reliability::spawn;
use crate::reliability::store_files::{sidecar, task_names};

/// The names in `dir`, sorted.
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_backup_into_a_symlinked_folder_is_written() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    Task::new().confirm(&env);
    let real = env.path("real");
    std::fs::create_dir(&real).unwrap();
    let link = env.path("link");
    symlink(&real, &link).unwrap();
    let target = link.join("copy.db");
    let out = env.run(&["backup", target.to_str().unwrap()]).ok();
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(real.join("copy.db").is_file());
    let list = env.json(&["--db", target.to_str().unwrap(), "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}

// Items 1 and 2: a backup that takes a while.

/// Adds `megabytes` of ballast to the store (a table of its own, which a
/// backup copies like any other), so that a backup takes long enough to be
/// interrupted or to overlap another command; the WAL is folded in after.
fn add_ballast(db: &Path, megabytes: usize) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE ballast (x BLOB);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {})
         INSERT INTO ballast SELECT randomblob(4000) FROM n;",
        megabytes * 256
    ))
    .unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

/// The backup's temporary files in `dir`.
fn partials(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.contains(".agentcron-partial-"))
        .collect()
}

/// Waits until a backup into `dir` has begun writing its copy.
fn wait_for_partial(dir: &Path) {
    crate::support::wait_for("the backup's copy to grow", || {
        names_in(dir)
            .iter()
            .any(|n| std::fs::metadata(dir.join(n)).is_ok_and(|m| m.len() > 0))
    });
}

/// Whether the `.db` file alone (its WAL ignored) holds a task `id`.
fn db_alone_holds_task(db: &Path, id: &str) -> bool {
    let uri = format!("file:{}?immutable=1", db.display());
    let conn = rusqlite::Connection::open_with_flags(
        uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    conn.query_row(
        "SELECT count(*) FROM tasks WHERE task_id = ?1",
        [id],
        |row| row.get::<_, i64>(0),
    )
    .unwrap()
        == 1
}

#[test]
fn an_interrupted_backup_leaves_no_file_that_passes_for_a_store() {
    use std::os::unix::process::ExitStatusExt;
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    Task::new().confirm(&env);
    add_ballast(&env.db, 200);
    let out_dir = env.path("backups");
    std::fs::create_dir(&out_dir).unwrap();
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGKILL] {
        let file = out_dir.join(format!("copy-{signal}.db"));
        let child = env
            .command(&["backup", file.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_partial(&out_dir);
        crate::support::kill(child.id() as i32, signal);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!file.exists(), "signal {signal}: {stderr}");
        assert!(!sidecar(&file, "-journal").exists(), "signal {signal}");
        if signal == libc::SIGKILL {
            assert_eq!(out.status.signal(), Some(libc::SIGKILL));
            // What is left is named as a partial copy, never as FILE.
            let left = names_in(&out_dir);
            let prefix = format!(".copy-{signal}.db.agentcron-partial-");
            assert!(
                !left.is_empty() && left.iter().all(|n| n.starts_with(&prefix)),
                "{left:?}"
            );
        } else {
            assert_eq!(out.status.code(), Some(128 + signal), "{stderr}");
            assert_eq!(
                stderr.trim(),
                format!(
                    "agentcron: warning: interrupted by {}: no backup was written",
                    if signal == libc::SIGTERM {
                        "SIGTERM"
                    } else {
                        "SIGINT"
                    }
                )
            );
            assert!(partials(&out_dir).is_empty(), "{:?}", names_in(&out_dir));
        }
        // The README's verification does not take it for a store.
        env.run(&["--db", file.to_str().unwrap(), "check"]).fails(3);
        assert!(!file.exists());
    }
    // An uninterrupted backup is whole and self-contained.
    let file = out_dir.join("whole.db");
    env.run(&["backup", file.to_str().unwrap()]).ok();
    let out = env.run(&["--db", file.to_str().unwrap(), "check"]).ok();
    assert_contains(&out.stdout, "ok");
}

/// Drafts a task, starts a backup of a store made large enough that it is
/// still copying, then confirms the task: returns the task's id, the
/// backup still running, and the backup's file.
fn confirmed_during_a_backup(env: &TestEnv) -> (String, std::process::Child, PathBuf) {
    let draft = Task::new()
        .instruction("during")
        .default_notify()
        .draft(env);
    add_ballast(&env.db, 200);
    let out_dir = env.path("backups");
    std::fs::create_dir(&out_dir).unwrap();
    let file = out_dir.join("copy.db");
    let backup = env
        .command(&["backup", file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_partial(&out_dir);
    let task = env.json(&[
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        draft["payload_hash"].as_str().unwrap(),
    ]);
    (task["task_id"].as_str().unwrap().to_string(), backup, file)
}

#[test]
fn a_task_confirmed_while_a_backup_runs_reaches_the_db_file() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    Task::new().instruction("before").confirm(&env);
    // The backup's snapshot holds the confirm's closing checkpoint back.
    let (id, mut backup, _) = confirmed_during_a_backup(&env);
    assert!(
        backup.try_wait().unwrap().is_none(),
        "the backup ended before the confirm: make the ballast larger"
    );
    assert!(!db_alone_holds_task(&env.db, &id), "the confirm folded");
    assert!(backup.wait().unwrap().success());
    env.run(&["tick"]).ok();
    assert!(
        db_alone_holds_task(&env.db, &id),
        "the .db alone lacks the task"
    );
    // The fold leaves nothing owed: the next idle tick does not touch the file.
    assert!(!sidecar(&env.db, "-fold").exists());
}

#[test]
fn the_backup_folds_what_its_snapshot_held_back() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let (id, mut backup, _) = confirmed_during_a_backup(&env);
    assert!(
        backup.try_wait().unwrap().is_none(),
        "make the ballast larger"
    );
    assert!(backup.wait().unwrap().success());
    // No other command ran: the backup folded as it closed.
    assert!(
        db_alone_holds_task(&env.db, &id),
        "the .db alone lacks the task"
    );
}

// A closing checkpoint that is killed or signalled.

#[cfg(feature = "test-hooks")]
mod hooked {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;

    use super::{db_alone_holds_task, sidecar};
    use crate::support::{on_postgres, Task, TestEnv};

    /// Confirms a new task with `hook` set; returns the task's id and the
    /// confirm's process, stdout read up to its one JSON line.
    fn confirm_with_hook(env: &TestEnv, hook: &str) -> (String, std::process::Child) {
        let draft = Task::new().default_notify().draft(env);
        let mut child = env
            .command(&[
                "--json",
                "confirm",
                draft["draft_id"].as_str().unwrap(),
                "--hash",
                draft["payload_hash"].as_str().unwrap(),
            ])
            .env("AGENTCRON_TEST_HOOK", hook)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // The document ends with a line `}`; the process goes on to close.
        let mut text = String::new();
        let mut reader = std::io::BufReader::new(child.stdout.as_mut().unwrap());
        while !text.ends_with("}\n") || text.lines().last() != Some("}") {
            assert!(reader.read_line(&mut text).unwrap() > 0, "{text}");
        }
        let task: serde_json::Value = serde_json::from_str(&text).unwrap();
        (task["task_id"].as_str().unwrap().to_string(), child)
    }

    #[test]
    fn a_fold_killed_before_it_ran_is_done_by_the_next_command() {
        if on_postgres() {
            return;
        }
        let env = TestEnv::new();
        for next in [&["list"][..], &["status"][..], &["tick"][..]] {
            let (id, child) = confirm_with_hook(&env, "sqlite-fold:abort");
            let status = child.wait_with_output().unwrap().status;
            assert_eq!(status.signal(), Some(libc::SIGABRT));
            assert!(!db_alone_holds_task(&env.db, &id), "the confirm folded");
            assert!(sidecar(&env.db, "-fold").exists());
            env.run(next).ok();
            assert!(
                db_alone_holds_task(&env.db, &id),
                "`{}` did not fold",
                next[0]
            );
            assert!(!sidecar(&env.db, "-fold").exists());
        }
    }

    #[test]
    fn a_term_during_the_closing_checkpoint_waits_for_it() {
        if on_postgres() {
            return;
        }
        let env = TestEnv::new();
        let (id, child) = confirm_with_hook(&env, "sqlite-fold:sleep:1500");
        // The JSON is printed before the store closes; the hook holds the
        // close at the start of its fold.
        std::thread::sleep(std::time::Duration::from_millis(300));
        crate::support::kill(child.id() as i32, libc::SIGTERM);
        let status = child.wait_with_output().unwrap().status;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        assert!(db_alone_holds_task(&env.db, &id), "the fold was cut short");
        assert!(!sidecar(&env.db, "-fold").exists());
    }
}

#[test]
fn backup_while_ticks_run_is_a_private_store_that_check_accepts() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    for i in 0..8 {
        Task::named(&format!("b{i}")).every("1m").confirm(&rig.env);
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
    assert_contains(&out.stderr, "already exists");
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
    assert_contains(&out.stderr, "no database at");
    assert!(!env.db.parent().unwrap().exists());
    assert!(!env.path("b.db").exists());
}

/// (g) A backup is refused into a folder others may write without the
/// sticky bit (they could swap the copy for a store of theirs before it is
/// restored), as the store's own folder is: exit 2, the folder and its
/// mode named, nothing written. With the sticky bit it is written.
#[test]
fn backup_refuses_a_world_writable_folder_without_the_sticky_bit() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    Task::new().confirm(&env);
    let open = env.path("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = open.join("copy.db");
    let out = env.run(&["backup", file.to_str().unwrap()]).fails(2);
    assert_eq!(
        out.stderr,
        format!(
            "agentcron: error: refusing {}: mode 0777 lets other users replace the backup \
             (writable without the sticky bit)\n  hint: chmod go-w the folder (or +t), or \
             keep the backup in a private folder\n",
            open.display()
        )
    );
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    if crate::support::on_postgres() {
        return; // a PostgreSQL store is backed up with pg_dump
    }
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    env.run(&["backup", file.to_str().unwrap()]).ok();
    assert!(file.exists());
}
