//! Where the SQLite store meets the file system: the `.db` file alone holds
//! every committed change between commands, a vanished WAL keeps confirmed
//! tasks, commands that only read never create a store, first use is safe
//! when several commands start at once, a read-only store can still be
//! read, paths through symlinks work and a symlinked final component is
//! refused, and opening failures are one error line.
use crate::support::{
    assert_contains, assert_starts_with, on_postgres, Outcome, Rig, Task, TestEnv,
};

use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::bad_input::assert_one_line;
use crate::backup::names_in;

pub(crate) fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

pub(crate) fn task_names(env: &TestEnv, db: &Path) -> Vec<String> {
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
    Task::named("kept").confirm(&env);
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
    Task::named("once").after("1h").confirm(&rig.env);
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
    Task::named("copied").confirm(&rig.env);
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
    Task::new().default_notify().db(db_arg).try_draft(&env).ok();
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
    let out = env
        .command_through("unshare", &["-m", "sh", "-c", &script], args)
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
    Task::named("ro").confirm(&env);
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
    assert_contains(&out.stderr, "read-only");
    assert!(!sidecar(&env.db, "-wal").exists());
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// Runs agentcron as `nobody`, as in unsafe_files.rs.
fn run_as_nobody(env: &TestEnv, args: &[&str]) -> Outcome {
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
    assert_starts_with(
        &out.stderr,
        &format!(
            "agentcron: error: cannot read {}: its folder is not writable",
            env.db.display()
        ),
    );
    let out = run_as_nobody(&env, &["resume", "mine"]).fails(1);
    assert_contains(&out.stderr, "is read-only here");
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
    Task::new().confirm(env);
    let before = std::fs::read(&env.db).unwrap();
    rig.tick(&[]).ok();
    rig.tick(&[]).ok();
    assert!(
        std::fs::read(&env.db).unwrap() == before,
        "heartbeats stay in the WAL: no checkpoint for an idle tick"
    );
}

#[test]
fn a_quoted_tilde_in_db_is_refused_with_the_reason() {
    let env = TestEnv::new();
    for db in ["~/x.db", "~"] {
        let out = Task::new()
            .after("1h")
            .default_notify()
            .db(db)
            .try_draft(&env);
        let out = out.fails(2);
        assert_contains(&out.stderr, "starts with a literal '~'");
    }
    assert!(!env.path("~").exists());
    assert!(
        !std::path::Path::new("~").exists(),
        "nothing made in the working folder"
    );
}

#[test]
fn read_only_commands_on_a_missing_database_exit_3_and_create_nothing() {
    let env = TestEnv::new();
    let folder = env.path("nowhere");
    let db = folder.join("deeper").join("agentcron.db");
    let db_text = db.display().to_string();
    for args in [
        vec!["status"],
        vec!["list"],
        vec!["show", "abcd"],
        vec!["runs"],
        vec!["log"],
        vec!["explain", "abcd"],
        vec!["next", "abcd"],
        vec!["check"],
        vec!["export"],
    ] {
        let mut all = vec!["--db", db_text.as_str()];
        all.extend_from_slice(&args);
        let out = env.run(&all).fails(3);
        assert_eq!(
            out.stderr,
            format!(
                "agentcron: error: no database at {db_text}; `agentcron draft` creates it\n  \
                 hint: check --db (or AGENTCRON_DB, e.g. on cron's command line); only draft, \
                 plan/apply, import and `zone set` or `profile set` with --create-store create a \
                 store\n"
            ),
            "{args:?}"
        );
        assert!(!folder.exists(), "{args:?} created {}", folder.display());
    }
    // A command that writes still creates the file, 0600 in 0700 folders.
    let mut all = vec!["--db", db_text.as_str()];
    all.extend_from_slice(&["draft", "--instruction", "x", "--in", "1h"]);
    env.run(&all).ok();
    assert!(db.exists());
    let mut all = vec!["--db", db_text.as_str()];
    all.push("list");
    env.run(&all).ok();
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
    Task::new().default_notify().db(db_arg).confirm(&env);
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
    let out = Task::new()
        .after("1h")
        .default_notify()
        .db(dangling.to_str().unwrap())
        .try_draft(&env)
        .fails(2);
    assert_contains(&out.stderr, "symbolic link");
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
    let out = Task::new()
        .after("1h")
        .default_notify()
        .db(db.to_str().unwrap())
        .try_draft(&env);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        names_in(&folder),
        vec!["s.db-shm".to_string()],
        "{}",
        out.stderr
    );
}

// ---- 8d. one line for errors with causes ------------------------------------

#[test]
fn a_database_under_proc_is_one_error_line() {
    let env = TestEnv::new();
    let out = env.run(&["--db", "/proc/version", "list"]).fails(1);
    assert_one_line(
        &out.stderr,
        &["/proc/version", "unable to open database file"],
    );
    let out = env
        .run(&[
            "--db",
            "/proc/self/x.db",
            "draft",
            "--instruction",
            "x",
            "--in",
            "1h",
        ])
        .fails(1);
    assert_one_line(
        &out.stderr,
        &["/proc/self/x.db", "No such file or directory"],
    );
}

#[test]
fn sqlite_failures_to_open_are_one_error_line() {
    let env = TestEnv::new();
    // SQLite reads it as an empty database (its size is 0): no store, for a
    // command that creates none (docs/CONTRACT.md §1), in one line.
    let out = env
        .run(&["--db", "/proc/sys/kernel/hostname", "list"])
        .fails(3);
    assert_one_line(&out.stderr, &["/proc/sys/kernel/hostname"]);
    assert!(!out.stderr.contains("Error code"), "{}", out.stderr);
    // A symlinked folder (which /proc/self is) is followed (issue 33 item
    // 6): what it reaches is read as it is, an empty file, no store.
    let out = env.run(&["--db", "/proc/self/status", "list"]).fails(3);
    assert_one_line(&out.stderr, &["/proc/self/status", "no agentcron store"]);
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
    assert_contains(&out.stderr, "no database at");
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
    Task::new().default_notify().draft(env);
    assert!(env.db.exists());
}
