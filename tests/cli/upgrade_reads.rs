//! Issue 43 item 1: a store at an older schema is the way back to the
//! build that wrote it, so nothing but `agentcron migrate` (and, on SQLite,
//! the writing commands of docs/CONTRACT.md §21) changes it: `tick
//! --dry-run`, `backup`, `check` and `export` read it as it is, `check`
//! verifies it without upgrading it, `backup` copies it at its schema and
//! prints a verification line that works, and `migrate --dry-run` reads a
//! store on read-only media.
use crate::reliability::store_files::run_on_read_only;
use crate::support::{assert_contains, on_postgres, skipped, TestEnv, AS_NOBODY};
use crate::upgrade::{latest, older_store, refused_as_behind, snapshot};

/// A test's SQLite store at the previous release's schema, with that
/// schema and its snapshot; None when the suite runs on PostgreSQL.
fn older_sqlite_store() -> Option<(TestEnv, i64, Vec<String>)> {
    if on_postgres() {
        return None;
    }
    let env = TestEnv::new();
    let (found, before) = older_store(&env);
    Some((env, found, before))
}

#[test]
fn tick_dry_run_check_and_export_leave_an_older_store_as_it_was() {
    let env = TestEnv::new();
    let (found, before) = older_store(&env);
    // Task a is due: a real tick would claim it.
    env.set_now(env.now() + 3 * 3600 + 60);

    for args in [&["tick", "--dry-run"][..], &["export"]] {
        let out = refused_as_behind(&env, args, 3, found);
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(snapshot(&env), before, "{args:?} changed the older store");
    }

    let out = env.run(&["check"]).ok();
    assert_eq!(
        out.stdout.trim_end(),
        format!(
            "ok: schema {found}, older than this build's {}: fine to go back with \
             (its integrity holds; `agentcron migrate` upgrades it for this build)",
            latest()
        )
    );
    let json = env.json(&["check"]);
    assert_eq!(json["ok"], true, "{json}");
    assert_eq!(json["schema"], found, "{json}");
    assert_eq!(json["latest"], latest(), "{json}");
    assert_eq!(snapshot(&env), before, "check changed the older store");

    // Still older: migrate has everything left to do.
    let plan = env.json(&["migrate", "--dry-run"]);
    assert_eq!(plan["from"], found, "{plan}");
    assert_eq!(
        snapshot(&env),
        before,
        "migrate --dry-run changed the store"
    );
}

#[test]
fn a_backup_of_an_older_store_keeps_its_schema_and_its_printed_check_passes() {
    // On PostgreSQL a backup is pg_dump's (or export's) job.
    let Some((env, found, before)) = older_sqlite_store() else {
        return;
    };
    let copy = env.path("kept for going back.db");
    let out = env.run(&["backup", copy.to_str().unwrap()]).ok();
    assert_eq!(snapshot(&env), before, "backup changed the older store");
    assert_contains(
        &out.stdout,
        &format!(
            "at schema {found} as the store is (older than this build's {})",
            latest()
        ),
    );
    let copy_schema: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(copy_schema, found, "the copy was upgraded");
    let copied = std::fs::read(&copy).unwrap();

    // The printed line, run as a shell would run it (the path has spaces).
    let line = out
        .stdout
        .split('`')
        .nth(1)
        .expect("a command in backticks");
    let words = shell_words::split(line).unwrap();
    assert_eq!(words[0], "agentcron", "{line}");
    let verified = env
        .command(&[])
        .env_remove("AGENTCRON_DB")
        .args(&words[1..])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "`{line}`: {stdout}{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    assert_contains(&stdout, "fine to go back with");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        copied,
        "checking the copy changed it"
    );
}

#[test]
fn migrate_dry_run_reads_a_read_only_file_or_mount() {
    let Some((env, found, before)) = older_sqlite_store() else {
        return;
    };
    // A file its owner may not write (chmod 0444) in a folder they may not
    // write, read by that owner (not root, who may write any file).
    let plan = as_owner_of_a_read_only_file(&env, &["--json", "migrate", "--dry-run"]);
    assert_eq!(plan["from"], found, "{plan}");
    assert_eq!(plan["applied"].as_array().unwrap().len(), 0, "{plan}");
    assert_eq!(snapshot(&env), before);

    let folder = env.db.parent().unwrap().to_path_buf();
    let Some(out) = run_on_read_only(&env, &folder, &["--json", "migrate", "--dry-run"]) else {
        skipped("cannot mount a folder read-only here (needs unshare -m and mount)");
        return;
    };
    let plan = out.ok().json();
    assert_eq!(plan["from"], found, "{plan}");
    assert_eq!(plan["to"], latest(), "{plan}");
    assert_eq!(plan["applied"].as_array().unwrap().len(), 0, "{plan}");
    // The store is no less older: migrating it there says it is read-only.
    let out = run_on_read_only(&env, &folder, &["migrate"]).unwrap();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_contains(&out.stderr, "read-only");
    assert_eq!(snapshot(&env), before);
}

/// Runs `args` as `nobody` owning the store, its file chmod 0444 in a
/// folder chmod 0500: the result as JSON, after asserting success.
fn as_owner_of_a_read_only_file(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    use std::os::unix::fs::PermissionsExt;
    let state = env.db.parent().unwrap();
    let home = state.parent().unwrap();
    // nobody passes through the test's folder and owns the store's.
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o711)).unwrap();
    let nobody = 65534;
    for path in [state.to_path_buf(), env.db.clone()] {
        std::os::unix::fs::chown(&path, Some(nobody), Some(nobody)).unwrap();
    }
    std::fs::set_permissions(&env.db, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Nor may it add a -wal or -shm beside it.
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o500)).unwrap();
    let out = env
        .command_through("setpriv", &AS_NOBODY, args)
        .env("HOME", state)
        .current_dir("/")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?} as nobody: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}
