//! The operator's panel (issue 14): read-only commands that create nothing,
//! short run ids, help and man pages, tables in pipes, completion.

use crate::support::TestEnv;
use crate::support::{parked_run, unknown_run, Rig};

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
                 plan/apply, import and `zone set --create-store` create a store\n"
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

const HOUR: i64 = 3600;

#[test]
fn approve_deny_and_lease_check_take_a_run_id_prefix() {
    let rig = Rig::new();
    let first = parked_run(&rig, "a");
    let second = parked_run(&rig, "b");
    // runs and show name the wait id a parked run needs.
    let out = rig.env.run(&["runs"]).ok();
    assert_eq!(
        out.stdout.matches("wait id w1; may I?").count(),
        2,
        "{}",
        out.stdout
    );
    let out = rig.env.run(&["show", "a"]).ok();
    assert!(out.stdout.contains("wait id w1; may I?"), "{}", out.stdout);
    // Three characters are not enough, even when they match.
    let out = rig
        .env
        .run(&["approve", &first[..3], "--wait-id", "w1"])
        .fails(3);
    assert!(
        out.stderr.contains("at least 4 characters"),
        "{}",
        out.stderr
    );
    let out = rig
        .env
        .run(&["approve", &first[..8], "--wait-id", "w1", "--here"])
        .ok();
    assert!(out.stdout.contains("succeeded"), "{}", out.stdout);
    assert_eq!(run_status(&rig, "a", &first), "succeeded");
    let out = rig.env.run(&["deny", &second[..6], "--wait-id", "w1"]).ok();
    assert_eq!(
        out.stdout,
        format!("Denied; run {} failed.\n", &second[..8])
    );
    assert_eq!(run_status(&rig, "b", &second), "failed");
    // lease check resolves the prefix too (and the settled run holds no lease).
    let out = rig
        .env
        .run(&["--json", "lease", "check", &first[..5], "--token", "t"]);
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert_eq!(
        out.json(),
        serde_json::json!({"run_id": first, "lease_holds": false})
    );
}

#[test]
fn a_run_prefix_never_reaches_into_another_tenant() {
    let rig = Rig::new();
    let run = parked_run(&rig, "secret-task");
    for args in [
        vec!["approve", &run[..8], "--wait-id", "w1"],
        vec!["deny", &run[..8], "--wait-id", "w1"],
        vec![
            "reconcile",
            &run[..8],
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ],
        vec!["explain", &run[..8]],
    ] {
        let mut all = vec!["--tenant", "other"];
        all.extend_from_slice(&args);
        let out = rig.env.run(&all).fails(3);
        assert_eq!(
            out.stderr.lines().next().unwrap(),
            format!(
                "agentcron: error: no {} '{}' in tenant 'other'",
                if args[0] == "explain" { "task" } else { "run" },
                &run[..8]
            ),
            "{args:?}"
        );
    }
    // The full id is denied without a word about the task it belongs to.
    let mut all = vec!["--tenant", "other"];
    all.extend_from_slice(&["approve", &run, "--wait-id", "w1"]);
    let out = rig.env.run(&all).fails(4);
    assert!(!out.stderr.contains("secret-task"), "{}", out.stderr);
    let task_id = rig.env.json(&["show", "secret-task"])["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!out.stderr.contains(&task_id), "{}", out.stderr);
    assert_eq!(
        rig.runs("secret-task")[0]["status"],
        "awaiting_confirmation"
    );
}

#[test]
fn an_ambiguous_run_prefix_lists_the_candidates() {
    let rig = Rig::new();
    let first = unknown_run(&rig, "u");
    let second = parked_run(&rig, "p");
    // Give both runs one prefix, everywhere their ids are kept.
    let mut renames = String::new();
    for (old, new) in [(&first, "abcd1111"), (&second, "abcd2222")] {
        let renamed = format!("{new}{}", &old[8..]);
        for (table, column) in [
            ("runs", "run_id"),
            ("runs", "blocked_by"),
            ("deliveries", "run_id"),
            ("events", "run_id"),
        ] {
            renames.push_str(&format!(
                "UPDATE {table} SET {column} = '{renamed}' WHERE {column} = '{old}';\n"
            ));
        }
    }
    rename_runs(&rig.env, &renames);
    let out = rig
        .env
        .run(&[
            "reconcile",
            "abcd",
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ])
        .fails(2);
    assert!(
        out.stderr.starts_with(&format!(
            "agentcron: error: 'abcd' matches several runs: abcd1111{}, abcd2222{}\n",
            &first[8..],
            &second[8..]
        )),
        "{}",
        out.stderr
    );
    rig.env
        .run(&[
            "reconcile",
            "abcd1",
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ])
        .ok();
    let renamed = format!("abcd1111{}", &first[8..]);
    assert_eq!(run_status(&rig, "u", &renamed), "failed");
}

#[test]
fn reconcile_lists_the_complete_command_that_settles_each_run() {
    let rig = Rig::new();
    let run = unknown_run(&rig, "u");
    let out = rig.env.run(&["--as", "unix:tester", "reconcile"]).ok();
    let line = format!(
        "  agentcron reconcile {run} --decision DECISION --reason 'WHAT YOU FOUND' --db {} --as unix:tester",
        shell_words::quote(&rig.env.db_arg())
    );
    assert!(out.stdout.contains(&format!("{line}\n")), "{}", out.stdout);
    assert!(out
        .stdout
        .contains("confirmed_succeeded, confirmed_failed or abandoned"));
    assert_eq!(out.stderr, "");
    // The line, with a decision and a reason filled in, settles the run.
    let filled = line
        .trim()
        .replace("DECISION", "confirmed_failed")
        .replace("'WHAT YOU FOUND'", "checked");
    let words = shell_words::split(&filled).unwrap();
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    rig.env.run(&args).ok();
    assert_eq!(run_status(&rig, "u", &run), "failed");
}

#[test]
fn explain_takes_a_run_and_explains_its_occurrence() {
    let rig = Rig::new();
    let run = parked_run(&rig, "a");
    rig.env.advance(5 * HOUR);
    let by_run = rig.env.json(&["explain", &run[..8]]);
    assert_eq!(by_run["run"]["run_id"], run.as_str());
    assert_eq!(by_run["occurrence"], by_run["run"]["scheduled_for"]);
    rig.env
        .run(&["explain", &run[..8], "--at", "2026-12-02 09:00"])
        .fails(2);
}

/// Runs `updates` with foreign keys unchecked, for renaming a run's id in
/// every table at once.
fn rename_runs(env: &TestEnv, updates: &str) {
    if crate::support::on_postgres() {
        env.sql(&format!(
            "SET session_replication_role = replica;\n{updates}"
        ));
        return;
    }
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    conn.execute_batch(&format!("PRAGMA foreign_keys = OFF;\n{updates}"))
        .unwrap();
}

/// The run with this id, as `show` reports it.
fn run_status(rig: &Rig, task: &str, run_id: &str) -> String {
    let runs = rig.runs(task);
    let run = runs
        .iter()
        .find(|r| r["run_id"] == run_id)
        .expect("the run");
    run["status"].as_str().unwrap().to_string()
}

/// Every subcommand path (`["lease", "check"]` included) the binary has.
fn subcommand_paths() -> Vec<Vec<String>> {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&agentcron::cli::Cli::command(), &[], &mut out);
    out
}

#[test]
fn every_subcommand_help_puts_the_global_options_under_their_own_heading() {
    let env = TestEnv::new();
    let paths = subcommand_paths();
    assert!(paths.iter().any(|p| p == &["lease", "check"]));
    for path in paths {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let out = env.run(&args).ok();
            assert_eq!(out.stderr, "");
            let (own, global) = out
                .stdout
                .split_once("\nGlobal options:\n")
                .unwrap_or_else(|| panic!("{path:?} {flag}: no heading:\n{}", out.stdout));
            for name in ["--db <PATH>", "--tenant <KEY>", "--as <KEY>", "--json"] {
                assert!(global.contains(name), "{path:?} {flag}: {name} missing");
                assert!(!own.contains(name), "{path:?} {flag}: {name} among its own");
            }
            assert!(!out.stdout.contains("--now"), "{path:?}: --now is hidden");
        }
    }
}

#[test]
fn pausing_a_paused_task_and_resuming_an_active_one_change_nothing() {
    let env = TestEnv::new();
    env.task(&["--instruction", "x", "--every", "1h", "--name", "p"]);
    let events = || env.count("SELECT count(*) FROM events");
    let out = env.run(&["resume", "p"]).ok();
    assert_eq!(out.stdout.lines().count(), 1);
    assert!(out
        .stdout
        .contains(") is already active; nothing changed (revision 1)."));
    assert_eq!(out.stderr, "");
    let before = events();
    let paused = env.json(&["pause", "p", "--reason", "vacation"]);
    assert_eq!(
        (paused["revision"].as_i64(), paused["changed"].as_bool()),
        (Some(2), Some(true))
    );
    assert_eq!(events(), before + 1);
    let out = env.run(&["pause", "p", "--reason", "other"]).ok();
    assert!(
        out.stdout
            .contains(") is already paused; nothing changed (revision 2)."),
        "{}",
        out.stdout
    );
    let again = env.json(&["pause", "p", "--expect-revision", "2"]);
    assert_eq!(again["changed"], false);
    assert_eq!(again["revision"], 2);
    assert_eq!(again["pause_reason"], "vacation", "the first reason stays");
    assert_eq!(
        events(),
        before + 1,
        "no event for a pause that changed nothing"
    );
    // A stale revision is still a conflict; a deleted task cannot be paused.
    env.run(&["pause", "p", "--expect-revision", "1"]).fails(5);
    env.json(&["resume", "p"]);
    assert_eq!(env.json(&["resume", "p"])["changed"], false);
    env.json(&["delete", "p"]);
    env.run(&["pause", "p"]).fails(3);
}

#[test]
fn prune_keeps_how_a_live_task_came_to_be() {
    let env = TestEnv::new();
    let kept = env.task(&["--instruction", "x", "--every", "1h", "--name", "kept"]);
    let kept = kept["task_id"].as_str().unwrap().to_string();
    let gone = env.task(&["--instruction", "x", "--every", "1h", "--name", "gone"]);
    let gone = gone["task_id"].as_str().unwrap().to_string();
    env.draft(&["--instruction", "never confirmed", "--in", "1h"]);
    env.json(&["pause", "kept"]);
    env.json(&["delete", &gone]);
    let actions =
        |sql: &str| -> Vec<String> { env.sql(sql).into_iter().map(|r| r[0].clone()).collect() };
    assert_eq!(env.count("SELECT count(*) FROM events"), 7);
    env.advance(100 * 86400);
    let dry = env.json(&["prune", "--older-than", "30d", "--dry-run"]);
    assert_eq!(dry["events"], 5, "{dry}");
    let done = env.json(&["prune", "--older-than", "30d"]);
    assert_eq!(done["events"], 5, "{done}");
    // The live task keeps its draft and confirm events; the deleted task's
    // trail, the unconfirmed draft and the pause age out.
    let left = actions("SELECT action FROM events ORDER BY event_id");
    assert_eq!(left, ["draft", "confirm"]);
    let confirm = env.sql("SELECT task_id FROM events WHERE action = 'confirm'");
    assert_eq!(confirm[0][0], kept);
    let log = env.json(&["log", "kept"]);
    assert_eq!(log[0]["action"], "confirm");
    // Nothing changes on a second prune; once the task is deleted, its
    // record ages out like the rest.
    assert_eq!(env.json(&["prune", "--older-than", "30d"])["events"], 0);
    env.json(&["delete", "kept"]);
    env.advance(100 * 86400);
    assert_eq!(env.json(&["prune", "--older-than", "30d"])["events"], 3);
    assert_eq!(env.count("SELECT count(*) FROM events"), 0);
}

#[test]
fn tables_in_a_pipe_keep_one_row_per_line_and_list_reads_like_a_panel() {
    let rig = Rig::new();
    rig.env.set_env("COLUMNS", "40");
    let long = "summarize the on-call channel and every open incident ".repeat(4);
    rig.env
        .task(&["--instruction", &long, "--every", "3h", "--name", "later"]);
    rig.env.task(&[
        "--instruction",
        "x",
        "--cron",
        "*/15 9-17 * * 1-5",
        "--tz",
        "Asia/Shanghai",
        "--name",
        "office",
    ]);
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "hourly"]);
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "resting"]);
    rig.env
        .json(&["pause", "resting", "--reason", "on vacation until Monday"]);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let out = rig.env.run(&["list"]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "one line per row:\n{}", out.stdout);
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "ID",
            "NAME",
            "STATE",
            "NEXT",
            "RUN",
            "LAST",
            "RUN",
            "RESULT",
            "SCHEDULE",
            "INSTRUCTION"
        ]
    );
    // Soonest first (office runs every 15 min in Shanghai's office hours,
    // 17:00 there now), the paused task last.
    let names: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        names,
        ["office", "hourly", "later", "resting"],
        "{}",
        out.stdout
    );
    assert!(
        lines[1].contains("every 15 min, 09:00–17:59, Mon–Fri"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("in Asia/Shanghai"), "{}", lines[1]);
    assert!(
        lines[2].contains("now") && lines[2].contains("succeeded"),
        "{}",
        lines[2]
    );
    assert!(
        lines[4].contains("paused: on vacation until Monday"),
        "{}",
        lines[4]
    );
    assert!(
        lines[3].contains('…'),
        "a long instruction is clipped: {}",
        lines[3]
    );
    // The audit trail says what happened in words, one event per line.
    let out = rig.env.run(&["log"]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    let events = rig.env.count("SELECT count(*) FROM events");
    assert_eq!(lines.len() as i64, events + 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("paused: on vacation until Monday"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("running → succeeded"), "{}", out.stdout);
    assert!(out.stdout.contains("confirmed draft "), "{}", out.stdout);
    assert!(
        !out.stdout.contains('{'),
        "no JSON in the human log: {}",
        out.stdout
    );
    let out = rig.env.run(&["runs"]).ok();
    assert_eq!(out.stdout.lines().count(), 1 + 3, "{}", out.stdout);
}
