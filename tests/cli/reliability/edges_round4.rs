//! Round 4 of the edges (issue 33, items 1, 2, 3, 5 and 6): a backup that is
//! interrupted, a change a backup's snapshot kept in the WAL, a torn `.db`
//! after a killed checkpoint, an overlong failure reply, and symlinked
//! folders on the way to the store. SQLite only, except the reply (item 5),
//! which runs on both stores.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::support::{on_postgres, TestEnv};

fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// Item 6: a symlinked folder anywhere in the path.

#[test]
fn a_store_through_a_symlinked_folder_works_for_draft_list_and_tick() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let real = env.path("real");
    std::fs::create_dir(&real).unwrap();
    let link = env.path("link");
    symlink(&real, &link).unwrap();
    let db = link.join("s.db");
    let db_arg = db.to_str().unwrap();
    let draft = env.json(&[
        "--db",
        db_arg,
        "draft",
        "--instruction",
        "x",
        "--every",
        "1h",
    ]);
    env.json(&[
        "--db",
        db_arg,
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        draft["payload_hash"].as_str().unwrap(),
    ]);
    let list = env.json(&["--db", db_arg, "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    env.run(&["--db", db_arg, "tick"]).ok();
    // The store lives in the real folder, reached through the link.
    assert!(real.join("s.db").is_file());
}

#[test]
fn the_default_path_under_a_symlinked_home_works() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let real_home = env.path("real-home");
    std::fs::create_dir(&real_home).unwrap();
    let home = env.path("home");
    symlink(&real_home, &home).unwrap();
    let run = |args: &[&str]| {
        let out = env
            .command(args)
            .env_remove("AGENTCRON_DB")
            .env_remove("XDG_STATE_HOME")
            .env("HOME", &home)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run(&["draft", "--instruction", "x", "--every", "1h"]);
    assert_eq!(code, 0, "{err}");
    // A store with a draft and no task: `list` opens it and says so.
    let (code, out, err) = run(&["list", "--all"]);
    assert_eq!(
        (code, err.as_str()),
        (0, "agentcron: No tasks in tenant 'default'\n"),
        "{out}"
    );
    assert!(real_home
        .join(".local/state/agentcron/agentcron.db")
        .is_file());
}

#[test]
fn a_backup_into_a_symlinked_folder_is_written() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    env.task(&["--instruction", "x", "--every", "1h"]);
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

#[test]
fn a_symlink_as_the_final_component_is_still_refused_and_creates_nothing() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let real = env.path("real");
    std::fs::create_dir(&real).unwrap();
    let link = env.path("link");
    symlink(&real, &link).unwrap();
    // A dangling final symlink: following it would create the target.
    let dangling = link.join("s.db");
    symlink(real.join("target.db"), &dangling).unwrap();
    let out = env
        .run(&[
            "--db",
            dangling.to_str().unwrap(),
            "draft",
            "--instruction",
            "x",
            "--in",
            "1h",
        ])
        .fails(2);
    assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
    assert_eq!(names_in(&real), vec!["s.db".to_string()]);
}

#[test]
fn a_failed_open_leaves_no_files_behind() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let folder = env.path("store");
    std::fs::create_dir(&folder).unwrap();
    let db = folder.join("s.db");
    // A -shm that is a folder: SQLite cannot open the store, and the .db
    // and -wal that agentcron would create must not stay behind.
    std::fs::create_dir(sidecar(&db, "-shm")).unwrap();
    let out = env.run(&[
        "--db",
        db.to_str().unwrap(),
        "draft",
        "--instruction",
        "x",
        "--in",
        "1h",
    ]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        names_in(&folder),
        vec!["s.db-shm".to_string()],
        "{}",
        out.stderr
    );
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
    env.task(&["--instruction", "x", "--every", "1h"]);
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
    assert!(out.stdout.contains("ok"), "{}", out.stdout);
}

#[test]
fn a_task_confirmed_while_a_backup_runs_reaches_the_db_file() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    env.task(&["--instruction", "before", "--every", "1h"]);
    let draft = env.draft(&["--instruction", "during", "--every", "1h"]);
    add_ballast(&env.db, 200);
    let out_dir = env.path("backups");
    std::fs::create_dir(&out_dir).unwrap();
    let file = out_dir.join("copy.db");
    let mut backup = env
        .command(&["backup", file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_partial(&out_dir);
    // The backup's snapshot holds the confirm's closing checkpoint back.
    let task = env.json(&[
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        draft["payload_hash"].as_str().unwrap(),
    ]);
    let id = task["task_id"].as_str().unwrap().to_string();
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
    let draft = env.draft(&["--instruction", "during", "--every", "1h"]);
    add_ballast(&env.db, 200);
    let out_dir = env.path("backups");
    std::fs::create_dir(&out_dir).unwrap();
    let file = out_dir.join("copy.db");
    let mut backup = env
        .command(&["backup", file.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_partial(&out_dir);
    let task = env.json(&[
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        draft["payload_hash"].as_str().unwrap(),
    ]);
    let id = task["task_id"].as_str().unwrap().to_string();
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

// Item 3: a closing checkpoint that is killed or signalled.

#[cfg(feature = "test-hooks")]
mod hooked {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;

    use super::{db_alone_holds_task, sidecar};
    use crate::support::{on_postgres, TestEnv};

    /// Confirms a new task with `hook` set; returns the task's id and the
    /// confirm's process, stdout read up to its one JSON line.
    fn confirm_with_hook(env: &TestEnv, hook: &str) -> (String, std::process::Child) {
        let draft = env.draft(&["--instruction", "x", "--every", "1h"]);
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

// Item 5: a failure reply longer than the capture cap.

#[test]
fn a_failure_reply_longer_than_the_capture_is_not_a_success() {
    let rig = crate::support::Rig::new();
    let env = &rig.env;
    // One line: {"status":"failed","summary":"<1.5 MB>"}, then exit 0.
    let executor = env.path("long-failure.sh");
    crate::support::write_script(
        &executor,
        "#!/bin/sh\ncat >/dev/null\nprintf '{\"status\":\"failed\",\"summary\":\"'\nhead -c 1500000 /dev/zero | tr '\\0' x\nprintf '\"}\\n'\n",
    );
    env.set_env("AGENTCRON_EXECUTOR", executor.to_str().unwrap());
    let task = env.task(&["--instruction", "x", "--every", "1h", "--name", "long"]);
    let id = task["task_id"].as_str().unwrap();
    env.advance(3600);
    env.run(&["tick"]).ok();
    let runs = rig.runs(id);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "failed", "{}", runs[0]);
    let reason = runs[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("1 MiB"), "{}", runs[0]);
}
