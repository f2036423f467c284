//! Unsafe database files (docs/CONTRACT.md §11): a database, `-wal` or `-shm`
//! that other users could write, or a folder they could replace it in, is
//! refused before anything is read from it; `-wal`/`-shm` are created 0600
//! with the database's owner. SQLite only (PostgreSQL has no files of ours).
//!
//! The suite runs as root, as the scenario does; the cases that need
//! another user use uid/gid 65534 (nobody).
use crate::support::{assert_contains, on_postgres, Task, TestEnv, AS_NOBODY, T0};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A new folder `name` in the test's folder, with `mode`.
fn folder(env: &TestEnv, name: &str, mode: u32) -> PathBuf {
    let path = env.path(name);
    std::fs::create_dir(&path).unwrap();
    chmod(&path, mode);
    path
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A store with one task at `db`, its WAL folded in and `-wal`/`-shm`
/// removed, so the next opening creates them.
fn store_at(env: &TestEnv, db: &Path) {
    let db_arg = db.to_str().unwrap();
    Task::new().default_notify().db(db_arg).confirm(env);
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(sidecar(db, suffix));
    }
}

/// Runs agentcron under `umask 000`, as root or as `uid`.
fn run_as(env: &TestEnv, uid: Option<u32>, args: &[&str]) -> crate::support::Outcome {
    let mut cmd = env.command(args);
    // SAFETY: umask is async-signal-safe and touches only this child.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let out = cmd.output().unwrap();
    crate::support::Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn first_line(stderr: &str) -> &str {
    stderr.lines().next().unwrap_or("")
}

#[test]
fn a_database_or_wal_writable_by_other_users_is_refused_and_left_alone() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let db = env.path("private/agentcron.db");
    store_at(&env, &db);
    let db_arg = db.to_str().unwrap();
    for (file, bad) in [(db.clone(), 0o666), (db.clone(), 0o620)] {
        chmod(&file, bad);
        let before = std::fs::read(&db).unwrap();
        for args in [&["list"][..], &["tick"], &["check"]] {
            let mut all = vec!["--db", db_arg];
            all.extend_from_slice(args);
            let out = env.run(&all).fails(2);
            assert_eq!(
                first_line(&out.stderr),
                format!(
                    "agentcron: error: refusing {db_arg}: mode {bad:04o} is writable by other users"
                ),
            );
        }
        assert_eq!(std::fs::read(&db).unwrap(), before);
        assert!(!sidecar(&db, "-wal").exists(), "nothing was created");
        chmod(&file, 0o600);
    }
    env.run(&["--db", db_arg, "list"]).ok();
    for suffix in ["-wal", "-shm"] {
        let file = sidecar(&db, suffix);
        chmod(&file, 0o666);
        let out = env.run(&["--db", db_arg, "list"]).fails(2);
        assert_eq!(
            first_line(&out.stderr),
            format!(
                "agentcron: error: refusing {}: mode 0666 is writable by other users",
                file.display()
            ),
        );
        chmod(&file, 0o600);
    }
    env.run(&["--db", db_arg, "list"]).ok();
}

#[test]
fn a_folder_writable_by_others_without_the_sticky_bit_is_refused() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let shared = folder(&env, "shared", 0o777);
    let db = shared.join("agentcron.db");
    let db_arg = db.to_str().unwrap();
    let out = Task::new()
        .default_notify()
        .db(db_arg)
        .try_draft(&env)
        .fails(2);
    assert_eq!(
        first_line(&out.stderr),
        format!(
            "agentcron: error: refusing {}: mode 0777 lets other users replace the database (writable without the sticky bit)",
            shared.display()
        )
    );
    assert_eq!(
        std::fs::read_dir(&shared).unwrap().count(),
        0,
        "nothing created"
    );
    // Deeper down, too: a folder above it counts as much as its own.
    let deep = shared.join("a/b/agentcron.db");
    Task::new()
        .default_notify()
        .db(deep.to_str().unwrap())
        .try_draft(&env)
        .fails(2);
    assert!(!shared.join("a").exists());
    // An existing store whose folder became shared is refused as well.
    chmod(&shared, 0o700);
    store_at(&env, &db);
    chmod(&shared, 0o770);
    env.run(&["--db", db_arg, "list"]).fails(2);
}

#[test]
fn a_sticky_shared_folder_with_a_private_database_is_used_and_its_wal_and_shm_are_0600() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let tmp = folder(&env, "tmp", 0o1777);
    let db = tmp.join("agentcron.db");
    store_at(&env, &db);
    assert_eq!(mode(&db), 0o600);
    // A database readable by others (allowed: not writable) used to give
    // its mode to the -wal and -shm SQLite created; they are 0600 now,
    // whatever the umask.
    chmod(&db, 0o644);
    env.set_now(T0 + 3600);
    let out = run_as(&env, None, &["--db", db.to_str().unwrap(), "list"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for suffix in ["-wal", "-shm"] {
        assert_eq!(mode(&sidecar(&db, suffix)), 0o600, "{suffix}");
    }
}

#[test]
fn root_refuses_another_users_shared_database_and_hands_it_the_wal_and_shm_of_a_private_one() {
    if on_postgres() || !is_root() {
        return;
    }
    let env = TestEnv::new();
    let tmp = folder(&env, "tmp", 0o1777);
    let db = tmp.join("agentcron.db");
    store_at(&env, &db);
    std::os::unix::fs::chown(&db, Some(NOBODY), Some(NOBODY)).unwrap();
    // The scenario: root, a 0666 file of another user in a 1777
    // folder. Refused, and SQLite never got to create -wal/-shm for it.
    chmod(&db, 0o666);
    let db_arg = db.to_str().unwrap();
    let out = run_as(&env, None, &["--db", db_arg, "list"]).fails(2);
    assert_contains(&out.stderr, "mode 0666 is writable by other users");
    assert!(!sidecar(&db, "-wal").exists() && !sidecar(&db, "-shm").exists());
    // Private to its owner, root may use it; -wal/-shm stay that user's.
    chmod(&db, 0o600);
    run_as(&env, None, &["--db", db_arg, "list"]).ok();
    for suffix in ["-wal", "-shm"] {
        let meta = std::fs::symlink_metadata(sidecar(&db, suffix)).unwrap();
        assert_eq!(
            (meta.mode() & 0o7777, meta.uid(), meta.gid()),
            (0o600, NOBODY, NOBODY),
            "{suffix}"
        );
    }
    // A -wal someone else put there is not read.
    std::os::unix::fs::chown(sidecar(&db, "-wal"), Some(0), Some(0)).unwrap();
    let out = env.run(&["--db", db_arg, "list"]).fails(2);
    assert_contains(
        &out.stderr,
        "belongs to uid 0, not to the database's owner (uid 65534)",
    );
}

#[test]
fn a_database_of_another_user_is_refused_to_anyone_but_root() {
    if on_postgres() || !is_root() {
        return;
    }
    let env = TestEnv::new();
    chmod(env.dir.path(), 0o755);
    let tmp = folder(&env, "tmp", 0o1777);
    let db = tmp.join("agentcron.db");
    store_at(&env, &db);
    let db_arg = db.to_str().unwrap();
    let out = run_as(&env, Some(NOBODY), &["--db", db_arg, "list"]).fails(2);
    assert_eq!(
        first_line(&out.stderr),
        format!("agentcron: error: refusing {db_arg}: it belongs to root (uid 0), mode 0600, not to you (uid 65534)")
    );
}

#[test]
fn a_symlinked_wal_or_shm_is_refused_by_name() {
    if on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let db = env.path("private/agentcron.db");
    store_at(&env, &db);
    let elsewhere = env.path("elsewhere");
    std::fs::write(&elsewhere, b"").unwrap();
    for suffix in ["-wal", "-shm"] {
        let link = sidecar(&db, suffix);
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let out = env.run(&["--db", db.to_str().unwrap(), "list"]).fails(2);
        assert_eq!(
            first_line(&out.stderr),
            format!(
                "agentcron: error: refusing {}: it is a symbolic link",
                link.display()
            )
        );
        assert_eq!(
            std::fs::read(&elsewhere).unwrap(),
            b"",
            "the target is untouched"
        );
        std::fs::remove_file(&link).unwrap();
    }
    env.run(&["--db", db.to_str().unwrap(), "list"]).ok();
}

/// Runs `args` against `env`'s store as the unprivileged `nobody`.
fn as_nobody(env: &TestEnv, args: &[&str]) -> (i32, String) {
    let out = env
        .command_through("setpriv", &AS_NOBODY, args)
        .output()
        .expect("setpriv runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_store_the_caller_cannot_reach_names_its_owner_and_mode() {
    if !is_root() {
        crate::support::skipped("needs root to run a command as another user");
        return;
    }
    let env = TestEnv::new();
    if env.pg_schema().is_some() {
        return;
    }
    Task::new().after("1h").default_notify().draft(&env);
    // The store's folder is 0700 root: nobody cannot even look inside.
    let (code, stderr) = as_nobody(&env, &["list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("permission denied by the folder")
            && stderr.contains("(owner root (uid 0), mode 0700)"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        2,
        "one error line and a hint: {stderr}"
    );
    // A folder anyone may enter, a file of root's: its owner and mode.
    let folder = env.db.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&folder, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, stderr) = as_nobody(&env, &["list"]);
    assert_eq!(code, 2, "{stderr}");
    assert_contains(
        &stderr,
        "it belongs to root (uid 0), mode 0600, not to you (uid 65534)",
    );
}
