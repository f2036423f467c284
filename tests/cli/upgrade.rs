//! Upgrades without an outage (docs/CONTRACT.md §21): a store written by the
//! previous release (the fixtures under tests/fixtures/upgrade/, dumped from
//! it) is read by no command of this build until `agentcron migrate` runs,
//! which is changed by nothing else on PostgreSQL; and a 0-byte file or an
//! empty PostgreSQL schema is no store at all.
use crate::support::{assert_contains, fixture, on_postgres, texts, Outcome, Rig, Task, TestEnv};

use std::process::Stdio;

/// The schema this build writes on the store the suite runs against.
pub(crate) fn latest() -> i64 {
    if on_postgres() {
        agentcron::store::postgres::schema::LATEST
    } else {
        agentcron::store::sqlite::schema::LATEST
    }
}

/// Runs `args` on an older store (at schema `found`) and asserts it is
/// refused with `code`, its first line saying to migrate.
#[track_caller]
pub(crate) fn refused_as_behind(env: &TestEnv, args: &[&str], code: i32, found: i64) -> Outcome {
    let out = env.run(args).fails(code);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!(
            "agentcron: error: the store is at schema {found}; this build writes schema {}: run `agentcron migrate`",
            latest()
        ),
        "{args:?}"
    );
    out
}

/// Runs `args` (with `--json`) and asserts it exits `code` with an error of
/// `kind` on stderr; returns that error.
#[track_caller]
fn json_refusal(env: &TestEnv, args: &[&str], code: i32, kind: &str) -> serde_json::Value {
    let out = env.run(args);
    assert_eq!(out.code, code, "{}", out.stderr);
    let error = out.stderr_json()["error"].clone();
    assert_eq!(error["kind"], kind, "{}", out.stderr);
    error
}

/// The previous release's store loaded into `env`: the schema it is at,
/// and its snapshot before anything reads it.
pub(crate) fn older_store(env: &TestEnv) -> (i64, Vec<String>) {
    let found = previous_release(env);
    (found, snapshot(env))
}

/// Loads the previous release's store (two tasks, `b` paused, two ticks'
/// runs) into `env`'s store; returns the schema it is at.
pub(crate) fn previous_release(env: &TestEnv) -> i64 {
    if let Some(schema) = env.pg_schema() {
        let sql = std::fs::read_to_string(fixture("upgrade/postgres-schema-15.sql")).unwrap();
        env.sql(&sql.replace("__SCHEMA__", schema));
        return env.count("SELECT max(version) FROM agentcron_schema");
    }
    let sql = std::fs::read_to_string(fixture("upgrade/sqlite-schema-13.sql")).unwrap();
    std::fs::create_dir_all(env.db.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    conn.execute_batch(&sql).unwrap();
    // As the previous release left it: WAL, everything folded into the file.
    let _: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&env.db, std::fs::Permissions::from_mode(0o600)).unwrap();
    env.count("PRAGMA user_version")
}

/// Everything that proves nothing changed: on SQLite the file's bytes and
/// an empty WAL; on PostgreSQL the tables' columns, the indexes, the
/// schema table and every row.
pub(crate) fn snapshot(env: &TestEnv) -> Vec<String> {
    if env.pg_schema().is_some() {
        let mut out = Vec::new();
        for sql in [
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
             WHERE table_schema = current_schema() ORDER BY 1, 2",
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1",
            "SELECT version, applied_at FROM agentcron_schema ORDER BY 1",
        ] {
            out.extend(env.sql(sql).into_iter().map(|row| row.join("|")));
        }
        out.extend(
            env.db_bytes()
                .into_iter()
                .map(|(t, rows)| format!("{t}: {}", String::from_utf8_lossy(&rows))),
        );
        return out;
    }
    let wal = std::fs::metadata(env.db.with_extension("db-wal")).map_or(0, |m| m.len());
    vec![
        format!("{:?}", std::fs::read(&env.db).unwrap()),
        format!("wal bytes: {wal}"),
    ]
}

/// The commands that only read, as an operator would type them.
const READERS: &[&[&str]] = &[
    &["list"],
    &["list", "--all"],
    &["show", "a"],
    &["status"],
    &["runs"],
    &["log"],
    &["explain", "a"],
    &["next", "a"],
    &["upcoming"],
    &["metrics"],
    // `check` verifies an older store as it is (tests/cli/upgrade_reads.rs).
    &["tick", "--dry-run"],
    &["export"],
    &[
        "lease",
        "check",
        "00000000-0000-0000-0000-000000000000",
        "--token",
        "t",
    ],
];

#[test]
fn an_older_store_is_read_by_no_command_until_migrate_and_then_by_every_one() {
    let rig = Rig::new();
    let env = &rig.env;
    let (found, before) = older_store(env);
    assert!(found < latest(), "the fixture stands for an older release");
    for args in READERS {
        refused_as_behind(env, args, 3, found);
    }
    // JSON callers get the same answer, classified.
    json_refusal(env, &["--json", "list"], 3, "not_found");
    assert_eq!(
        snapshot(env),
        before,
        "a command that only reads changed the store"
    );

    // The dry run lists every step with what it does, and changes nothing.
    let plan = env.run(&["--json", "migrate", "--dry-run"]).ok().json();
    assert_eq!(plan["from"], found);
    assert_eq!(plan["to"], latest());
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len() as i64, latest() - found);
    assert_eq!(steps[0]["version"], found + 1);
    assert!(steps
        .iter()
        .all(|s| !s["description"].as_str().unwrap().is_empty()));
    assert_eq!(plan["applied"].as_array().unwrap().len(), 0);
    let text = env.run(&["migrate", "--dry-run"]).ok();
    assert_contains(&text.stdout, "Dry run: nothing changed");
    assert_eq!(snapshot(env), before, "migrate --dry-run changed the store");

    let done = env.run(&["--json", "migrate"]).ok().json();
    let applied: Vec<i64> = done["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(applied.last(), Some(&latest()));
    // Audited with both versions and the build.
    let detail = env.sql("SELECT detail FROM events WHERE action = 'migrate'");
    assert_eq!(detail.len(), 1, "{detail:?}");
    let detail: serde_json::Value = serde_json::from_str(&detail[0][0]).unwrap();
    assert_eq!(detail["from"], found);
    assert_eq!(detail["to"], latest());
    assert!(detail["build"]
        .as_str()
        .unwrap()
        .starts_with(env!("CARGO_PKG_VERSION")));
    // Every command works on the migrated store, which kept its tasks.
    let again = env.run(&["migrate"]).ok();
    assert_contains(&again.stdout, "nothing to migrate");
    for args in READERS.iter().filter(|a| a[0] != "lease") {
        env.run(args).ok();
    }
    let listed = env.json(&["list", "--all"]);
    let names: Vec<&str> = texts(&listed, "name");
    assert_eq!(names.len(), 2, "{listed}");
    assert!(names.contains(&"a") && names.contains(&"b"), "{listed}");
    env.set_now(env.now() + 3 * 3600 + 60);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "task a ran once after the upgrade");
    env.run(&["resume", "b"]).ok();
}

#[test]
fn on_postgres_a_newer_tick_on_an_older_store_claims_nothing_until_migrate() {
    let rig = Rig::new();
    let env = &rig.env;
    if env.pg_schema().is_none() {
        // On one host the writing commands migrate (below).
        return;
    }
    let (found, before) = older_store(env);
    env.set_now(env.now() + 3 * 3600 + 60);
    for args in [
        &["tick"][..],
        &["pause", "a"],
        &["prune", "--older-than", "30d"],
        &["zone", "set", "unix:tester", "Europe/Paris"],
    ] {
        refused_as_behind(env, args, 78, found);
    }
    let error = json_refusal(env, &["--json", "tick"], 78, "schema_behind");
    assert_eq!(error["exit_code"], 78);
    assert!(
        rig.starts().is_empty(),
        "a tick on an older schema ran a task"
    );
    assert_eq!(
        snapshot(env),
        before,
        "a newer tick changed the older store"
    );
    env.run(&["migrate"]).ok();
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn on_sqlite_a_writing_command_migrates_as_before() {
    let rig = Rig::new();
    let env = &rig.env;
    if env.pg_schema().is_some() {
        return;
    }
    previous_release(env);
    env.set_now(env.now() + 3 * 3600 + 60);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(env.count("PRAGMA user_version"), latest());
}

#[test]
fn two_migrates_at_once_apply_each_step_once() {
    let env = TestEnv::new();
    let found = previous_release(&env);
    let children: Vec<_> = (0..2)
        .map(|_| {
            env.command(&["--json", "migrate"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut applied = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        applied.extend(
            json["applied"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap()),
        );
    }
    applied.sort();
    let mut expected: Vec<i64> = (found + 1..=latest()).collect();
    expected.sort();
    assert_eq!(applied, expected, "each step applied exactly once");
    env.run(&["check"]).ok();
}

/// kill -9 at any moment of a migration leaves the store at a whole step:
/// the fixture's (and then unchanged), one in between, or the latest, which
/// every command reads.
#[test]
fn kill_9_during_migrate_leaves_the_store_at_a_whole_step() {
    for delay_ms in [0u64, 2, 5, 10, 20] {
        let env = TestEnv::new();
        let (found, before) = older_store(&env);
        let mut child = env
            .command(&["migrate"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        child.wait().unwrap();
        let at = if env.pg_schema().is_some() {
            env.count("SELECT coalesce(max(version), 0) FROM agentcron_schema")
        } else {
            env.count("PRAGMA user_version")
        };
        assert!(
            (found..=latest()).contains(&at),
            "killed after {delay_ms} ms: schema {at}"
        );
        if at == found && env.pg_schema().is_some() {
            // Not applied: exactly as before (the WAL may hold a rolled-back
            // transaction's frames on SQLite, never a committed one).
            assert_eq!(snapshot(&env), before, "killed after {delay_ms} ms");
        }
        if at < latest() {
            // Before the first step or between two: still an older store.
            let out = env.run(&["list"]).fails(3);
            assert!(
                out.stderr
                    .contains(&format!("the store is at schema {at}; this build writes")),
                "killed after {delay_ms} ms: {}",
                out.stderr
            );
        }
        env.run(&["migrate"]).ok();
        env.run(&["check"]).ok();
        env.run(&["list"]).ok();
    }
}

/// The crash point inside a step's transaction (`--features test-hooks`):
/// the step is never half applied.
#[cfg(feature = "test-hooks")]
#[test]
fn a_migrate_killed_inside_a_step_leaves_the_store_as_it_was() {
    let env = TestEnv::new();
    let (found, before) = older_store(&env);
    env.set_env("AGENTCRON_TEST_HOOK", "migrate_step:abort");
    let out = env.run(&["migrate"]);
    assert_ne!(out.code, 0);
    env.set_env("AGENTCRON_TEST_HOOK", "");
    if env.pg_schema().is_some() {
        assert_eq!(snapshot(&env), before);
    } else {
        assert_eq!(env.count("PRAGMA user_version"), found);
    }
    env.run(&["list"]).fails(3);
    env.run(&["migrate"]).ok();
    env.run(&["list"]).ok();
}

/// Issue 33 item 4: a 0-byte file (what `touch` leaves) and an empty
/// PostgreSQL schema are no store for the commands that do not create one.
#[test]
fn an_empty_file_or_schema_is_no_store() {
    let env = TestEnv::new();
    let tables =
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()";
    if env.pg_schema().is_none() {
        std::fs::create_dir_all(env.db.parent().unwrap()).unwrap();
        std::fs::write(&env.db, b"").unwrap();
    }
    for args in [
        &["tick"][..],
        &["check"],
        &["list"],
        &["status"],
        &["pause", "a"],
        &["zone", "set", "unix:tester", "Europe/Paris"],
        &["migrate"],
    ] {
        let out = env.run(args).fails(3);
        assert!(
            out.stderr.contains("no agentcron store at"),
            "{args:?}: {}",
            out.stderr
        );
    }
    if env.pg_schema().is_some() {
        assert_eq!(env.count(tables), 0, "tables were created");
    } else {
        assert_eq!(
            std::fs::read(&env.db).unwrap(),
            b"",
            "the empty file was written"
        );
        let names: Vec<_> = std::fs::read_dir(env.db.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["agentcron.db"], "files were created beside it");
    }
    // A command that creates stores makes one there.
    Task::new().daily("09:00").default_notify().draft(&env);
    env.run(&["list"]).ok();
}

/// Another program's SQLite database is no store either, and stays as it was.
#[test]
fn another_programs_database_is_no_store_and_is_left_untouched() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.db.parent().unwrap()).unwrap();
    let db = env.path("other.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE notes (x); INSERT INTO notes VALUES (1);")
        .unwrap();
    let bytes = std::fs::read(&db).unwrap();
    let arg = db.display().to_string();
    for args in [&["tick"][..], &["list"], &["check"]] {
        let mut all = vec!["--db", arg.as_str()];
        all.extend_from_slice(args);
        let out = env.run(&all).fails(3);
        assert_contains(&out.stderr, "no agentcron store at");
    }
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
    assert!(!env.path("other.db-wal").exists());
}

#[test]
fn version_names_the_crate_the_schemas_and_the_build() {
    let env = TestEnv::new();
    let out = env.run(&["--version"]).ok();
    let mut lines = out.stdout.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("agentcron {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "schema: SQLite {}, PostgreSQL {}",
            agentcron::store::sqlite::schema::LATEST,
            agentcron::store::postgres::schema::LATEST
        )
    );
    let build = lines.next().unwrap();
    assert!(
        build.starts_with("build: ") && build.len() > "build: ".len(),
        "{build}"
    );
    // The changelog says which schema this version writes.
    let changelog =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/CHANGELOG.md")).unwrap();
    assert!(
        changelog.contains(&format!("## {}", env!("CARGO_PKG_VERSION"))),
        "CHANGELOG.md has no section for this version"
    );
    assert!(changelog.contains(&format!(
        "SQLite schema {}, PostgreSQL schema {}",
        agentcron::store::sqlite::schema::LATEST,
        agentcron::store::postgres::schema::LATEST
    )));
}

#[test]
fn status_shows_the_schema_and_on_postgres_warns_when_hosts_run_different_builds() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::new().daily("09:00").confirm(&rig.env);
    rig.tick(&[]).ok();
    let out = env.run(&["status"]).ok();
    assert_contains(
        &out.stdout,
        &format!("schema     {}, the one this build writes", latest()),
    );
    let json = env.json(&["status"]);
    assert_eq!(json["schema"], latest());
    let hosts = json["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 1, "{json}");
    assert!(hosts[0]["build"]
        .as_str()
        .unwrap()
        .starts_with(env!("CARGO_PKG_VERSION")));
    if env.pg_schema().is_none() {
        return;
    }
    assert!(!out.stderr.contains("different builds"), "{}", out.stderr);
    env.sql(&format!(
        "INSERT INTO hosts (host, build, last_tick_at) VALUES ('old-host', '0.1.0 (abc)', {})",
        env.now()
    ));
    let out = env.run(&["status"]).ok();
    assert_contains(&out.stdout, "host       old-host runs 0.1.0 (abc)");
    assert_contains(&out.stderr, "the hosts' last ticks ran different builds");
}

/// The agent's tools never migrate: each says the one line, and the store
/// is as it was.
#[test]
fn mcp_tools_on_an_older_store_migrate_nothing() {
    use crate::mcp::{text, RawSession};
    let env = TestEnv::new();
    let (found, before) = older_store(&env);
    let mut session = RawSession::start(&env, &["mcp"], "host");
    for (tool, arguments) in [
        ("list", serde_json::json!({})),
        ("upcoming", serde_json::json!({})),
        ("status", serde_json::json!({})),
        (
            "draft",
            serde_json::json!({"instruction": "x", "every": "1h"}),
        ),
    ] {
        let result = session.call(tool, arguments);
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert!(
            text(&result).contains(&format!(
                "the store is at schema {found}; this build writes schema {}",
                latest()
            )),
            "{tool}: {result}"
        );
    }
    assert_eq!(session.finish(), 0);
    assert_eq!(
        snapshot(&env),
        before,
        "an MCP tool changed the older store"
    );
}
