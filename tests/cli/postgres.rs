//! PostgreSQL-only behaviour (docs/CONTRACT.md §12): migrations racing on a new
//! schema, clock skew in status, clear connection errors. Skipped with a note
//! when no server answers, unless the suite runs with AGENTCRON_TEST_STORE=postgres.

use std::process::Stdio;

use crate::support::{on_postgres, TestEnv, BIN, T0};

fn base() -> String {
    std::env::var("AGENTCRON_TEST_PG")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into())
}

fn server() -> Option<postgres::Client> {
    match postgres::Client::connect(&base(), postgres::NoTls) {
        Ok(client) => Some(client),
        Err(e) if !on_postgres() => {
            crate::support::skipped(&format!("no PostgreSQL at {} ({e})", base()));
            None
        }
        Err(e) => panic!("no PostgreSQL at {}: {e}", base()),
    }
}

#[test]
fn hosts_migrating_a_new_schema_at_once_migrate_it_exactly_once() {
    let Some(mut client) = server() else { return };
    let schema = format!("m_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .unwrap();
    let url = format!("{}?options=-csearch_path%3D{schema}", base());
    let children: Vec<_> = (0..6)
        .map(|_| {
            std::process::Command::new(BIN)
                // A command that creates stores (`list` only reads: no store
                // there is "no store", docs/CONTRACT.md §21).
                .args([
                    "--db",
                    &url,
                    "--json",
                    "draft",
                    "--instruction",
                    "x",
                    "--daily",
                    "09:00",
                ])
                .env("AGENTCRON_NOW", T0.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let rows = client
        .query(
            &format!("SELECT version FROM {schema}.agentcron_schema ORDER BY version"),
            &[],
        )
        .unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
    let versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let expected: Vec<i64> = (1..=agentcron::store::postgres::schema::LATEST).collect();
    assert_eq!(versions, expected, "each migration applied exactly once");
}

#[test]
fn status_reports_the_clock_skew_to_the_server() {
    if server().is_none() || !on_postgres() {
        return;
    }
    let env = TestEnv::new();
    env.draft(&["--instruction", "x", "--daily", "09:00"]);
    let status = env.json(&["status"]);
    let skew = status["clock_skew_seconds"]
        .as_i64()
        .expect("a skew on PostgreSQL");
    assert!(
        skew.abs() <= 5,
        "this host and its own server agree: {skew}"
    );
}

#[test]
fn an_unreachable_server_is_one_clear_error() {
    let env = TestEnv::new();
    let out = env
        .run(&["--db", "postgresql://postgres@127.0.0.1:1/test", "list"])
        .fails(1);
    assert!(
        out.stderr
            .contains("cannot connect to PostgreSQL at postgres://postgres@127.0.0.1:1/test"),
        "{}",
        out.stderr
    );
    let out = env
        .run(&[
            "--db",
            "postgresql://postgres@127.0.0.1:5432/test?bogus=1",
            "list",
        ])
        .fails(2);
    assert!(
        out.stderr.contains("not a valid PostgreSQL URL"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_sqlite_store_moves_to_postgresql_and_back_unchanged() {
    let Some(mut client) = server() else { return };
    let env = TestEnv::new();
    let sqlite = env.path("from.db");
    let sqlite = sqlite.to_str().unwrap();
    let draft = env.json(&[
        "--db",
        sqlite,
        "draft",
        "--instruction",
        "move me ü",
        "--every",
        "1h",
        "--name",
        "m",
    ]);
    let (id, hash) = (
        draft["draft_id"].as_str().unwrap(),
        draft["payload_hash"].as_str().unwrap(),
    );
    env.json(&["--db", sqlite, "confirm", id, "--hash", hash]);
    env.set_now(T0 + 3600);
    env.set_env("AGENTCRON_EXECUTOR", "true");
    env.run(&["--db", sqlite, "tick"]).ok();
    let dump = env.run(&["--db", sqlite, "export"]).ok().stdout;
    // The task's memory moves too (the round trip below compares it).
    assert!(dump.contains(r#""table":"task_memory""#), "{dump}");
    let schema = format!("x_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .unwrap();
    let url = format!("{}?options=-csearch_path%3D{schema}", base());
    env.run_with_stdin(&["--db", &url, "import"], dump.as_bytes())
        .ok();
    let back = env.run(&["--db", &url, "export"]).ok().stdout;
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
    assert_eq!(back, dump);
}

/// Restarts the PostgreSQL server while a tick runs three executors. Opt-in
/// (`AGENTCRON_TEST_PG_RESTART=1`, needs `pg_ctlcluster` and root), since it
/// interrupts every other user of the server.
#[test]
fn a_server_restart_mid_tick_leaves_every_run_legal() {
    if std::env::var("AGENTCRON_TEST_PG_RESTART").is_err() || !on_postgres() {
        return;
    }
    let rig = crate::support::Rig::new();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "2");
    for i in 0..3 {
        rig.env
            .task(&["--instruction", &format!("r{i}"), "--every", "1h"]);
    }
    rig.env.set_now(T0 + 3600);
    let tick = rig
        .env
        .command(&["tick", "--lease", "10s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let version = std::fs::read_dir("/etc/postgresql")
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let restarted = std::process::Command::new("pg_ctlcluster")
        .args([
            "--skip-systemctl-redirect",
            version.to_str().unwrap(),
            "main",
            "restart",
        ])
        .status()
        .unwrap();
    assert!(restarted.success());
    tick.wait_with_output().unwrap();
    // Outcomes known to the tick were recorded on a new connection.
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM runs WHERE status = 'succeeded'"),
        3
    );
    assert_eq!(rig.starts().len(), 3);
    assert_eq!(rig.env.json(&["check"])["ok"], true);
}

/// A run never sees the store's URL (docs/CONTRACT.md §19): its `lease
/// check` asks the tick through the run's endpoint, exit 0 while the lease
/// is live, and creates nothing in `public`.
#[test]
fn lease_check_inside_the_executor_asks_the_tick_and_sees_no_url() {
    if server().is_none() || !on_postgres() {
        eprintln!("skipped: runs with AGENTCRON_TEST_STORE=postgres");
        return;
    }
    let public_runs = || {
        let mut client = server().unwrap();
        let row = client
            .query_one("SELECT to_regclass('public.runs') IS NOT NULL", &[])
            .unwrap();
        row.get::<_, bool>(0)
    };
    let public_before = public_runs();
    let rig = crate::support::Rig::new();
    let out = rig.env.path("fence.out");
    let script = rig.env.path("fence.sh");
    crate::support::write_script(
        &script,
        r#"#!/bin/sh
cat > /dev/null
"$FENCE_BIN" lease check "$AGENTCRON_RUN_ID" --token "$AGENTCRON_LEASE_TOKEN" > "$FENCE_OUT.said" 2>&1
echo "check $?" >> "$FENCE_OUT"
printf 'db %s pg %s\n' "${AGENTCRON_DB:-none}" "$(env | grep -c '^PG')" >> "$FENCE_OUT"
"#,
    );
    rig.env
        .set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    rig.env.set_env("FENCE_BIN", BIN);
    rig.env.set_env("FENCE_OUT", out.to_str().unwrap());
    rig.env.set_env("PGPASSWORD", "not-for-runs");
    rig.env
        .task(&["--instruction", "fence", "--every", "1h", "--name", "f"]);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    let said = std::fs::read_to_string(rig.env.path("fence.out.said")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "check 0\ndb none pg 0\n",
        "lease check said: {said}"
    );
    assert_eq!(said, "");
    assert_eq!(rig.runs("f")[0]["status"], "succeeded");
    if !public_before {
        assert!(!public_runs(), "lease check created tables in public");
    }
}

/// A tick's main loop, its executor workers, its lease renewals and its
/// notice deliveries share one connection (issue 16): with four executors
/// running at once the server sees one session for the tick's process.
#[test]
fn a_tick_with_four_executors_running_holds_one_connection() {
    let Some(mut client) = server() else { return };
    if !on_postgres() {
        return;
    }
    let env = TestEnv::new();
    for i in 0..4 {
        env.task(&[
            "--instruction",
            "wait",
            "--name",
            &format!("w{i}"),
            "--in",
            "1m",
        ]);
    }
    env.advance(90);
    let started = env.path("started");
    let release = env.path("release");
    std::fs::create_dir(&started).unwrap();
    let executor = env.path("executor.sh");
    crate::support::write_script(
        &executor,
        &format!(
            "#!/bin/sh\ncat >/dev/null\ntouch {started}/$$\n\
             for _ in $(seq 200); do [ -e {release} ] && break; sleep 0.1; done\n\
             echo '{{\"status\":\"succeeded\"}}'\n",
            started = started.display(),
            release = release.display()
        ),
    );
    let mut tick = env
        .command(&[
            "tick",
            "--jobs",
            "4",
            "--executor",
            executor.to_str().unwrap(),
            "--notifier",
            "cat",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_dir(&started).unwrap().count() < 4 {
        assert!(std::time::Instant::now() < deadline, "four executors start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sessions: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&format!("agentcron/{}", tick.id())],
        )
        .unwrap()
        .get(0);
    std::fs::write(&release, "").unwrap();
    let status = tick.wait().unwrap();
    assert!(status.success(), "the tick exits 0");
    assert_eq!(
        sessions, 1,
        "the tick's connections while four executors ran"
    );
    assert_eq!(
        env.count("SELECT count(*) FROM runs WHERE status = 'succeeded'"),
        4
    );
}

#[test]
fn a_task_row_locked_at_every_tick_of_its_grace_runs_late_instead_of_missed() {
    // Issue 33 item 10: another session (here a person's FOR UPDATE; in the
    // field a `zone set`) holds the task's row at two consecutive ticks,
    // then lets go. The ticks skip the row, but they saw it due in time.
    if !on_postgres() {
        return;
    }
    let rig = crate::support::Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "held"]);
    let mut holder = postgres::Client::connect(&rig.env.db_arg(), postgres::NoTls).unwrap();
    let mut lock = holder.transaction().unwrap();
    lock.query("SELECT 1 FROM tasks WHERE name = 'held' FOR UPDATE", &[])
        .unwrap();
    rig.env.set_now(T0 + 3600 + 5);
    let out = rig.tick(&["--verbose"]).ok();
    assert!(
        out.stdout
            .contains("1 due run(s) queued: their task rows were locked"),
        "{out:?}"
    );
    rig.env.set_now(T0 + 3600 + 65);
    rig.tick(&[]).ok();
    assert!(rig.starts().is_empty());
    lock.rollback().unwrap();
    // Past its grace (90 s) now.
    rig.env.set_now(T0 + 3600 + 125);
    rig.tick(&[]).ok();
    let runs = rig.runs("held");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[0]["queued_seconds"], 125, "{runs:?}");
    assert_eq!(rig.starts().len(), 1);
}
