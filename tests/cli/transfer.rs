//! export / import: the whole store moves between databases unchanged.

use crate::support::Rig;
use crate::support::T0;

fn populated() -> Rig {
    let rig = Rig::new();
    rig.with_notifier(0);
    rig.env.task(&[
        "--instruction",
        "naïve \"quoted\"\n值班",
        "--every",
        "1h",
        "--name",
        "a",
    ]);
    rig.env.task(&[
        "--instruction",
        "y",
        "--daily",
        "09:30",
        "--tz",
        "Asia/Shanghai",
    ]);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    rig.env.json(&["pause", "a", "--reason", "moving"]);
    rig
}

fn export(rig: &Rig, db: Option<&str>) -> String {
    let mut args = vec!["export"];
    if let Some(db) = db {
        args = vec!["--db", db, "export"];
    }
    rig.env.run(&args).ok().stdout
}

#[test]
fn an_export_imports_into_an_empty_store_unchanged() {
    let rig = populated();
    let dump = export(&rig, None);
    let tables: Vec<String> = dump
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["table"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for table in ["tasks", "runs", "deliveries", "events", "meta"] {
        assert!(tables.iter().any(|t| t == table), "{table} missing");
    }
    let target = rig.env.path("copy.db");
    let target = target.to_str().unwrap();
    let out = rig
        .env
        .run_with_stdin(&["--db", target, "import"], dump.as_bytes())
        .ok();
    assert!(out.stdout.starts_with("Imported"), "{}", out.stdout);
    assert_eq!(
        export(&rig, Some(target)),
        dump,
        "a round trip changes nothing"
    );
    // The copy works: same task, same state, same history.
    let shown = rig.env.json(&["--db", target, "show", "a"]);
    assert_eq!(shown["state"], "paused");
    assert_eq!(shown["runs"][0]["status"], "succeeded");
    // Importing twice is refused, and writes nothing.
    rig.env
        .run_with_stdin(&["--db", target, "import"], dump.as_bytes())
        .fails(5);
}

#[test]
fn a_malformed_export_imports_nothing() {
    let rig = populated();
    let mut dump = export(&rig, None);
    dump.push_str("{\"table\":\"tasks\",\"task_id\":\"x\",\"evil); DROP TABLE runs; --\":1}\n");
    let target = rig.env.path("copy.db");
    let target = target.to_str().unwrap();
    let out = rig
        .env
        .run_with_stdin(&["--db", target, "import"], dump.as_bytes())
        .fails(2);
    assert!(out.stderr.contains("unknown column"), "{}", out.stderr);
    // Nothing imported, not even a database file.
    rig.env.run(&["--db", target, "export"]).fails(3);
    rig.env
        .run_with_stdin(&["--db", target, "import"], b"not json\n")
        .fails(2);
    rig.env
        .run_with_stdin(&["--db", target, "import"], b"{\"table\":\"drafts\"}\n")
        .fails(2);
}

#[test]
fn a_store_holding_text_that_is_not_utf8_fails_export_and_check_with_an_error_not_a_panic() {
    if crate::support::on_postgres() {
        return; // PostgreSQL refuses such text on the way in.
    }
    let rig = populated();
    // What a damaged page can leave: a byte no UTF-8 text holds.
    rig.env.sql(
        "UPDATE tasks SET tenant_key = CAST(X'64656661FF6C74' AS TEXT) WHERE name = 'a' RETURNING 1",
    );
    let out = rig.env.run(&["export"]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("agentcron: error: exporting tasks: ")
            && out.stderr.contains("invalid utf-8")
            && out.stderr.lines().count() == 1,
        "{}",
        out.stderr
    );
    assert_eq!(out.code, 1);
    let out = rig.env.run(&["check"]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
}
