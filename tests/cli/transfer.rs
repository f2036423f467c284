//! export / import: the whole store moves between databases unchanged.
use crate::reliability::bad_input::assert_one_line;
use crate::support::{assert_contains, assert_starts_with, Rig, Task, TestEnv, T0};

fn populated() -> Rig {
    let rig = Rig::new();
    rig.with_notifier(0);
    Task::named("a")
        .instruction("naïve \"quoted\"\n值班")
        .confirm(&rig.env);
    Task::new()
        .instruction("y")
        .daily("09:30")
        .tz("Asia/Shanghai")
        .confirm(&rig.env);
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
    assert_starts_with(&out.stdout, "Imported");
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
    assert_contains(&out.stderr, "unknown column");
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

/// The executor's saved stdin for `run_id`.
fn stdin_of(rig: &Rig, run_id: &str) -> serde_json::Value {
    let path = rig.env.path("stdin").join(format!("{run_id}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_tasks_memory_survives_export_and_import() {
    // Issue 33 item 8: the previous run, the failure streak, the last
    // success and the held-back count move with the store.
    let rig = Rig::new();
    rig.with_notifier(0);
    let env = &rig.env;
    Task::named("a")
        .notify("attention")
        .max_retries("0")
        .flags(&["--realert", "1d"])
        .confirm(env);
    let reply = |at: i64, line: &str| {
        env.set_now(at);
        env.set_env("FIXTURE_MODE", &format!("json:{line}"));
    };
    reply(T0 + 3600, r#"{"status":"succeeded","summary":"digest"}"#);
    rig.tick(&[]).ok();
    let first_finished = rig.runs("a")[0]["finished_at"].clone();
    for hour in [2, 3] {
        reply(
            T0 + hour * 3600,
            r#"{"status":"failed","summary":"feed down"}"#,
        );
        rig.tick(&[]).ok();
    }
    let last = rig.runs("a")[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(env.json(&["show", "a"])["notices_held_back"]["count"], 1);
    let dump = export(&rig, None);
    assert!(dump.contains(r#""table":"task_memory""#), "{dump}");

    let target = env.path("copy.db");
    let target = target.to_str().unwrap();
    env.run_with_stdin(&["--db", target, "import"], dump.as_bytes())
        .ok();
    assert_eq!(
        export(&rig, Some(target)),
        dump,
        "a round trip changes nothing"
    );
    let shown = env.json(&["--db", target, "show", "a"]);
    assert_eq!(shown["notices_held_back"]["count"], 1, "{shown}");
    // The copy's next run knows the past, and the same failure is still
    // the streak's duplicate (a store without memory would send it).
    let notices = rig.notices().len();
    reply(
        T0 + 4 * 3600,
        r#"{"status":"failed","summary":"feed down"}"#,
    );
    env.run(&["--db", target, "tick"]).ok();
    let runs = env.json(&["--db", target, "show", "a"])["runs"].clone();
    let next = runs[0]["run_id"].as_str().unwrap();
    let previous = &stdin_of(&rig, next)["previous"];
    assert_eq!(previous["run_id"], last.as_str(), "{previous}");
    assert_eq!(previous["status"], "failed");
    assert_eq!(previous["last_success_at"], first_finished);
    assert_eq!(rig.notices().len(), notices, "{:?}", rig.notices());

    // An export from before the memory was exported: the runs tell the
    // last settled run and the last success.
    let old: String = dump
        .lines()
        .filter(|l| !l.contains(r#""table":"task_memory""#))
        .map(|l| format!("{l}\n"))
        .collect();
    let older = env.path("older.db");
    let older = older.to_str().unwrap();
    env.run_with_stdin(&["--db", older, "import"], old.as_bytes())
        .ok();
    let rebuilt = export(&rig, Some(older));
    let memory = rebuilt
        .lines()
        .find(|l| l.contains(r#""table":"task_memory""#))
        .expect("memory rebuilt");
    let memory: serde_json::Value = serde_json::from_str(memory).unwrap();
    assert_eq!(memory["last_settled_run_id"], last.as_str());
    assert!(memory["last_success_at"].is_i64(), "{memory}");
    // A memory line whose task is not in the import is refused.
    let orphan = format!(
        "{old}{{\"table\":\"task_memory\",\"task_id\":\"nobody\",\"suppressed_count\":0,\"suppressed_failures\":0}}\n"
    );
    let out = env
        .run_with_stdin(
            &[
                "--db",
                &env.path("orphan.db").display().to_string(),
                "import",
            ],
            orphan.as_bytes(),
        )
        .fails(2);
    assert_contains(&out.stderr, "orphan task_memory row");
}

/// What a run may spend moves with the store (docs/CONTRACT.md §6): the
/// budget's current window (a copy must not let the task spend its day
/// again), the usage totals of `metrics`, each run's usage and catch-up
/// mark; an export made before them (no `catch_up` key) still imports.
#[test]
fn what_runs_spent_survives_export_and_import() {
    let rig = Rig::new();
    rig.env.set_env(
        "FIXTURE_MODE",
        r#"json:{"status":"succeeded","summary":"ok","usage":{"usd":0.75}}"#,
    );
    Task::named("b")
        .budget("usd=1/day")
        .flags(&["--catch-up", "latest"])
        .confirm(&rig.env);
    // Three hours without a tick: the latest occurrence catches up.
    rig.env.set_now(T0 + 3 * 3600 + 600);
    rig.tick(&[]).ok();
    let dump = export(&rig, None);
    for table in ["budget_windows", "usage_totals"] {
        assert!(
            dump.contains(&format!(r#""table":"{table}""#)),
            "{table}: {dump}"
        );
    }
    assert!(dump.contains(r#""catch_up":1"#), "{dump}");
    assert!(dump.contains(r#""usage":"{\"usd\":0.75}""#), "{dump}");
    let target = rig.env.path("spent.db");
    let target = target.to_str().unwrap();
    rig.env
        .run_with_stdin(&["--db", target, "import"], dump.as_bytes())
        .ok();
    assert_eq!(
        export(&rig, Some(target)),
        dump,
        "a round trip changes nothing"
    );
    let windows = |db: Option<&str>| {
        let mut args = vec!["show", "b"];
        if let Some(db) = db {
            args = vec!["--db", db, "show", "b"];
        }
        rig.env.json(&args)["budget_windows"].clone()
    };
    assert_eq!(windows(Some(target)), windows(None));
    assert_eq!(windows(None)[0]["spent"], 0.75);
    let metrics = rig.env.run(&["--db", target, "metrics"]).ok().stdout;
    assert!(
        metrics.contains(r#"agentcron_usage_total{key="usd"} 0.75"#),
        "{metrics}"
    );

    // An export from before these columns: no catch_up key on its runs.
    let old: String = dump
        .lines()
        .filter(|l| {
            !l.contains(r#""table":"budget_windows""#) && !l.contains(r#""table":"usage_totals""#)
        })
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            if let Some(object) = row.as_object_mut() {
                object.remove("catch_up");
                object.remove("usage");
            }
            format!("{row}\n")
        })
        .collect();
    let older = rig.env.path("older.db");
    let older = older.to_str().unwrap();
    rig.env
        .run_with_stdin(&["--db", older, "import"], old.as_bytes())
        .ok();
    let runs = rig.env.json(&["--db", older, "runs", "b"]);
    assert!(runs[0].get("catch_up").is_none(), "{runs}");
}

// The import line cap (1 MiB) is tested in `bounded_input.rs`.

// ---- 8a. import of rows the store cannot take -----------------------------

/// An export of a store with one task and one run, as lines.
fn exported() -> Vec<String> {
    let rig = Rig::new();
    Task::named("h").confirm(&rig.env);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    let dump = rig.env.run(&["export"]).ok().stdout;
    dump.lines().map(str::to_string).collect()
}

fn import(lines: &[String]) -> crate::support::Outcome {
    let target = TestEnv::new();
    let mut text = lines.join("\n");
    text.push('\n');
    let out = target.run_with_stdin(&["import"], text.as_bytes());
    assert_eq!(
        target.count("SELECT count(*) FROM tasks"),
        0,
        "a refused import imports nothing"
    );
    out
}

#[test]
fn import_of_a_duplicate_or_orphan_row_names_its_line_with_2() {
    let lines = exported();
    let task = lines
        .iter()
        .position(|l| l.contains("\"table\":\"tasks\""))
        .expect("a task line");
    let mut duplicate = lines.clone();
    duplicate.push(lines[task].clone());
    let out = import(&duplicate).fails(2);
    let at = format!("line {}: ", duplicate.len());
    assert_one_line(&out.stderr, &[&at, "duplicate", "tasks"]);

    let mut orphan = lines.clone();
    orphan.remove(task);
    let run = orphan
        .iter()
        .position(|l| l.contains("\"table\":\"runs\""))
        .expect("a run line");
    let out = import(&orphan).fails(2);
    let at = format!("line {}: ", run + 1);
    assert_one_line(&out.stderr, &[&at, "runs", "not in the import"]);
}
