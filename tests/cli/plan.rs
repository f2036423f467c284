//! Declarative tasks (docs/CONTRACT.md §14): `plan FILE` and `apply FILE --hash`.
use crate::support::{assert_contains, assert_starts_with, texts, Task, TestEnv};
use serde_json::Value;

use crate::reliability::bad_input::assert_one_line;

const TWO: &str = r#"
[digest]
instruction = "summarize the inbox"
daily = "09:00"
tz = "UTC"

[backup]
instruction = "back up the notes"
every = "6h"
start = "2026-01-01T00:00:00Z"
grace = "5m"
"#;

fn write(env: &TestEnv, text: &str) -> String {
    env.write("tasks.toml", text)
}

/// A tasks file with a key no task has (line 4: `retries`).
const UNKNOWN_KEY: &str = "[digest]\ninstruction = \"x\"\ndaily = \"09:00\"\nretries = 3\n";

/// A tasks file that names its source, as `--prune` requires.
fn write_source(env: &TestEnv, text: &str) -> String {
    write(env, &format!("source = \"tests/plan\"\n{text}"))
}

fn plan(env: &TestEnv, file: &str, extra: &[&str]) -> Value {
    let mut args = vec!["plan", file];
    args.extend_from_slice(extra);
    env.json(&args)
}

fn apply(env: &TestEnv, file: &str, extra: &[&str]) -> Value {
    let p = plan(env, file, extra);
    let hash = p["plan_hash"].as_str().unwrap().to_string();
    let mut args = vec!["apply", file, "--hash", hash.as_str()];
    args.extend_from_slice(extra);
    env.json(&args)
}

fn actions(plan: &Value) -> Vec<(String, String)> {
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_string(),
                a["action"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `plan ARGS` says there is nothing to change.
#[track_caller]
fn assert_plans_no_changes(env: &TestEnv, args: &[&str]) {
    let mut all = vec!["plan"];
    all.extend_from_slice(args);
    let out = env.run(&all).ok();
    assert_starts_with(&out.stdout, "no changes");
}

#[test]
fn create_replace_and_prune_round_trip() {
    let env = TestEnv::new();
    let file = write_source(&env, TWO);

    let out = env.run(&["plan", &file]).ok();
    assert_contains(&out.stdout, "+ create backup");
    assert_contains(&out.stdout, "+ create digest");
    assert!(out
        .stdout
        .contains("2 to create, 0 to replace, 0 to delete, 0 unchanged."));
    assert_contains(&out.stdout, "next run  ");
    assert_contains(&out.stdout, "Plan hash: ");
    assert_contains(&out.stdout, "agentcron apply ");
    assert_eq!(out.stderr, "");
    // Planning changes nothing.
    assert_eq!(env.json(&["list"]).as_array().unwrap().len(), 0);

    // Each payload is the one `draft` builds from the same flags.
    let d = Task::named("digest")
        .instruction("summarize the inbox")
        .daily("09:00")
        .default_notify()
        .tz("UTC")
        .draft(&env);
    let p = plan(&env, &file, &[]);
    let digest = p["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "digest")
        .unwrap();
    assert_eq!(digest["payload_hash"], d["payload_hash"]);

    let applied = apply(&env, &file, &[]);
    assert_eq!(applied["applied"].as_array().unwrap().len(), 2);
    assert_eq!(env.json(&["list"]).as_array().unwrap().len(), 2);

    // Change one task, drop the other: replace with a diff, and prune.
    let file = write_source(
        &env,
        r#"
[digest]
instruction = "summarize the inbox"
daily = "10:30"
tz = "UTC"
"#,
    );
    let out = env.run(&["plan", &file]).ok();
    assert_contains(&out.stdout, "~ replace digest");
    assert_contains(
        &out.stdout,
        "schedule               every day at 09:00 (UTC) → every day at 10:30 (UTC)",
    );
    assert!(!out.stdout.contains("- delete"), "{}", out.stdout);
    let p = plan(&env, &file, &["--prune"]);
    assert_eq!(
        actions(&p),
        vec![
            ("digest".to_string(), "replace".to_string()),
            ("backup".to_string(), "delete".to_string())
        ]
    );
    // The hash of a plan with --prune is not the one without.
    assert_ne!(p["plan_hash"], plan(&env, &file, &[])["plan_hash"]);
    apply(&env, &file, &["--prune"]);
    let list = env.json(&["list"]);
    let names: Vec<&str> = texts(&list, "name");
    assert_eq!(names, vec!["digest"]);
    assert_eq!(list[0]["revision"], 2);

    let log = env.run(&["--json", "log"]).ok().stdout;
    assert!(
        log.contains("\"replace\"") && log.contains("\"delete\""),
        "{}",
        log
    );
    assert!(log.contains(p["plan_hash"].as_str().unwrap()), "{log}");
}

#[test]
fn prune_leaves_tasks_the_file_did_not_create() {
    let env = TestEnv::new();
    Task::named("manual").instruction("by hand").confirm(&env);
    let file = write_source(&env, TWO);
    apply(&env, &file, &["--prune"]);
    let file = write_source(&env, "");
    let p = plan(&env, &file, &["--prune"]);
    let mut got = actions(&p);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("backup".to_string(), "delete".to_string()),
            ("digest".to_string(), "delete".to_string())
        ]
    );
}

#[test]
fn a_plan_applied_twice_is_no_changes_the_second_time() {
    let env = TestEnv::new();
    let file = write(&env, TWO);
    let p = plan(&env, &file, &[]);
    let hash = p["plan_hash"].as_str().unwrap();
    env.run(&["apply", &file, "--hash", hash]).ok();

    let out = env.run(&["plan", &file]).ok();
    assert_eq!(
        out.stdout.trim(),
        format!("no changes: the 2 tasks of {file} match the store")
    );
    let out = env.run(&["plan", &file, "--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Applied again, the plan has nothing left to do, and says so.
    let out = env.run(&["apply", &file, "--hash", hash]).ok();
    assert_eq!(out.stdout.trim(), "already applied: nothing to do");
    assert_eq!(env.json(&["list"]).as_array().unwrap().len(), 2);
}

#[test]
fn detailed_exitcode_says_whether_there_are_changes() {
    let env = TestEnv::new();
    let file = write(&env, TWO);
    let out = env.run(&["plan", &file, "--detailed-exitcode"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.contains("Plan hash: "));
    let bad = write(&env, "[x]\ninstruction = 1\n");
    env.run(&["plan", &bad, "--detailed-exitcode"]).fails(1);
}

/// Terraform's contract: with --detailed-exitcode every error exits 1 (2
/// would read as "changes"), also the ones that exit 2 without it: a bad
/// file or key, a bad command line, a bad global value.
#[test]
fn detailed_exitcode_makes_every_error_exit_1() {
    let env = TestEnv::new();
    let unknown = write(&env, UNKNOWN_KEY);
    let missing = env.path("missing.toml").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["plan", &unknown],
        vec!["plan", &missing],
        vec!["plan", &unknown, "--no-such-flag"],
        vec!["plan"],
        vec!["--now", "soon", "plan", &unknown],
    ];
    for case in cases {
        let out = env.run(&case).fails(2);
        assert!(out.stderr.contains("error: "), "{case:?}: {}", out.stderr);
        let mut detailed = case.clone();
        detailed.push("--detailed-exitcode");
        let out = env.run(&detailed).fails(1);
        assert_eq!(out.stderr.lines().count(), 2, "{case:?}: {}", out.stderr);
        detailed.insert(0, "--json");
        let out = env.run(&detailed);
        assert_eq!(out.code, 1, "{case:?}: {}", out.stderr);
        let error = out.stderr_json();
        assert_eq!(error["error"]["exit_code"], 1, "{case:?}: {error}");
    }
    let out = env.run(&["plan", "--detailed-exitcode"]).fails(1);
    assert_starts_with(
        &out.stderr,
        "agentcron: error: the following required arguments were not provided: <FILE>\n",
    );
}

#[test]
fn a_store_changed_between_plan_and_apply_is_refused_and_nothing_changes() {
    let env = TestEnv::new();
    let file = write_source(&env, TWO);
    apply(&env, &file, &[]);
    let file = write_source(
        &env,
        &TWO.replace("09:00", "11:00")
            .replace("[backup]", "[backup2]"),
    );
    let p = plan(&env, &file, &["--prune"]);
    let hash = p["plan_hash"].as_str().unwrap().to_string();
    // Someone pauses the task the plan replaces.
    env.run(&["pause", "digest"]).ok();
    let before = env.run(&["export"]).ok().stdout;
    let out = env
        .run(&["apply", &file, "--hash", &hash, "--prune"])
        .fails(6);
    assert_contains(&out.stderr, "the plan changed since it was made");
    assert_eq!(env.run(&["export"]).ok().stdout, before);

    // The file changing is refused the same way.
    let p = plan(&env, &file, &["--prune"]);
    let hash = p["plan_hash"].as_str().unwrap().to_string();
    write_source(&env, &TWO.replace("09:00", "12:00"));
    env.run(&["apply", &file, "--hash", &hash, "--prune"])
        .fails(6);
    assert_eq!(env.run(&["export"]).ok().stdout, before);
}

#[test]
fn a_file_with_an_unknown_key_is_refused_naming_line_and_key() {
    let env = TestEnv::new();
    let file = write(&env, UNKNOWN_KEY);
    for cmd in ["plan", "apply"] {
        let mut args = vec![cmd, file.as_str()];
        let zeros = "0".repeat(64);
        if cmd == "apply" {
            args.extend(["--hash", zeros.as_str()]);
        }
        let out = env.run(&args).fails(2);
        assert_contains(
            &out.stderr,
            "tasks.toml:4: task 'digest', key 'retries': unknown field `retries`",
        );
    }
    // Other faults of a file are named the same way: line, task and key.
    for (text, says) in [
        (
            "[digest]\ninstruction = \"x\"\ndaily = \"09:00\"\n\n[b]\ninstruction = \"y\"\ndaily = \"09:00\"\ncron = \"0 9 * * *\"\n",
            "tasks.toml:8: task 'b', key 'cron': two schedules for one task (daily and cron)",
        ),
        (
            "[digest]\ninstruction = \"x\"\ngrace = \"soon\"\ndaily = \"09:00\"\n",
            "tasks.toml:3: task 'digest', key 'grace': ",
        ),
    ] {
        let file = write(&env, text);
        let out = env.run(&["plan", &file]).fails(2);
        assert_contains(&out.stderr, says);
    }
}

#[test]
fn tasks_the_caller_does_not_own_are_refused_with_4() {
    let env = TestEnv::new();
    Task::named("digest")
        .instruction("theirs")
        .daily("09:00")
        .by("bob")
        .confirm(&env);
    let file = write(&env, TWO);
    env.run(&["plan", &file, "--as", "alice"]).fails(4);
    let zeros = "0".repeat(64);
    let before = env.run(&["export"]).ok().stdout;
    env.run(&["apply", &file, "--hash", &zeros, "--as", "alice"])
        .fails(4);
    assert_eq!(env.run(&["export"]).ok().stdout, before);
}

/// `apply` aborted halfway through its transaction (as `kill -9` there
/// would: `--features test-hooks`) leaves the store exactly as before.
#[cfg(feature = "test-hooks")]
#[test]
fn an_apply_killed_mid_transaction_leaves_the_store_as_before() {
    let env = TestEnv::new();
    let file = write_source(&env, TWO);
    apply(&env, &file, &[]);
    let mut text = TWO
        .replace("09:00", "10:00")
        .replace("[backup]", "[backup-2]");
    for i in 0..20 {
        text.push_str(&format!(
            "\n[t{i}]\ninstruction = \"task {i}\"\ncron = \"{i} * * * *\"\n"
        ));
    }
    let file = write_source(&env, &text);
    let hash = plan(&env, &file, &["--prune"])["plan_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let before = env.run(&["export"]).ok().stdout;
    env.set_env("AGENTCRON_TEST_HOOK", "apply_midway:abort");
    let out = env.run(&["apply", &file, "--hash", &hash, "--prune"]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    env.set_env("AGENTCRON_TEST_HOOK", "");
    assert_eq!(env.run(&["export"]).ok().stdout, before);
    // The same plan still applies, in full.
    env.run(&["apply", &file, "--hash", &hash, "--prune"]).ok();
    assert_eq!(env.json(&["list"]).as_array().unwrap().len(), 22);
    assert_plans_no_changes(&env, &[&file, "--prune"]);
}

/// `count` (and a spread with it) resolves its end from "now"; a file
/// applied once still plans as "no changes" a day later, after ticks ran
/// some of its occurrences.
#[test]
fn a_counted_task_applied_once_plans_as_no_changes_after_the_clock_moves_on() {
    let rig = crate::support::Rig::new();
    let env = &rig.env;
    let file = write_source(
        env,
        r#"
[counted]
instruction = "three digests"
daily = "09:00"
tz = "UTC"
count = 3

[spread-counted]
instruction = "five checks"
every = "6h"
start = "2026-01-01T00:00:00Z"
spread = "30m"
count = 5
"#,
    );
    apply(env, &file, &[]);
    let no_changes = "no changes: the 2 tasks of";
    assert!(env
        .run(&["plan", &file])
        .ok()
        .stdout
        .starts_with(no_changes));

    // 09:00: the daily task runs its first occurrence; then a day passes.
    env.advance(3600);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "the tick ran no occurrence");
    env.advance(86_400);
    rig.tick(&[]).ok();
    let out = env.run(&["plan", &file, "--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_starts_with(&out.stdout, no_changes);
    let p = plan(env, &file, &["--prune"]);
    assert_eq!(p["changes"], false, "{p}");

    // A changed value is a change again, its diff in draft's words.
    let changed = std::fs::read_to_string(&file)
        .unwrap()
        .replace("three digests", "three summaries");
    std::fs::write(&file, changed).unwrap();
    let p = plan(env, &file, &[]);
    assert_eq!(
        actions(&p),
        vec![
            ("counted".to_string(), "replace".to_string()),
            ("spread-counted".to_string(), "unchanged".to_string())
        ]
    );

    // A task replaced by hand no longer matches what the file declared.
    let draft = env.json(&[
        "draft",
        "--replace",
        "spread-counted",
        "--instruction",
        "by hand",
    ]);
    env.run(&[
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        draft["payload_hash"].as_str().unwrap(),
    ])
    .ok();
    let p = plan(env, &file, &[]);
    assert_eq!(p["actions"][1]["action"], "replace", "{p}");
}

/// An unchanged one-shot task whose time has passed (it ran) plans as "no
/// changes"; only a new or changed task with a past `at` is refused.
#[test]
fn a_one_shot_task_whose_time_passed_plans_as_no_changes() {
    let rig = crate::support::Rig::new();
    let env = &rig.env;
    let text = r#"
[once]
instruction = "remind me"
at = "2026-12-02T09:00:00Z"

[daily]
instruction = "summarize"
daily = "09:00"
tz = "UTC"
"#;
    let file = write_source(env, text);
    apply(env, &file, &[]);
    env.advance(3600);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 2, "both tasks ran");
    env.advance(86_400);
    let out = env.run(&["plan", &file, "--detailed-exitcode"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout.trim(),
        format!("no changes: the 2 tasks of {file} match the store")
    );
    let p = plan(env, &file, &["--prune"]);
    assert_eq!(p["changes"], false, "{p}");

    // Changed, the past `at` is refused, naming the file, line and key.
    let file = write_source(env, &text.replace("remind me", "remind me again"));
    let out = env.run(&["plan", &file]).fails(2);
    assert_contains(&out.stderr, "tasks.toml:5: task 'once', key 'at': ");
    // And so is a new task with one.
    let file = write_source(
        env,
        &format!("{text}\n[later]\ninstruction = \"x\"\nat = \"2026-12-02T09:30:00Z\"\n"),
    );
    let out = env.run(&["plan", &file]).fails(2);
    assert_contains(&out.stderr, "tasks.toml:14: task 'later', key 'at': ");
}

/// Whether another process holds the store's write transaction open: on
/// SQLite its `BEGIN IMMEDIATE` lock (ours is refused at once), on
/// PostgreSQL the row lock its first write in `tasks` took.
fn write_transaction_open(env: &TestEnv) -> bool {
    if crate::support::on_postgres() {
        return env.count(
            "SELECT count(*) FROM pg_locks WHERE relation = 'tasks'::regclass \
             AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid()",
        ) > 0;
    }
    let conn = rusqlite::Connection::open_with_flags(
        &env.db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open the store to probe its lock");
    conn.busy_timeout(std::time::Duration::ZERO).unwrap();
    match conn.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => {
            conn.execute_batch("ROLLBACK").unwrap();
            false
        }
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::DatabaseBusy =>
        {
            true
        }
        Err(e) => panic!("probing the store's lock: {e}"),
    }
}

/// A real `kill -9` of `apply` while its one transaction is open (no test
/// hook): the store is exactly as before, or, when the kill came after the
/// commit, exactly the applied plan. Each attempt waits until the apply
/// holds the write transaction, then kills it after a growing delay; at
/// least one kill must land inside the transaction, so the test cannot pass
/// without testing it.
#[test]
fn an_apply_sigkilled_mid_transaction_leaves_the_store_as_before() {
    // PostgreSQL pays a round trip per statement: fewer tasks keep its
    // transaction as long, and the test within seconds.
    let tasks: usize = if crate::support::on_postgres() {
        300
    } else {
        1000
    };
    let env = TestEnv::new();
    let file = write_source(&env, TWO);
    apply(&env, &file, &[]);
    // One replace, one delete (--prune) and `tasks` creates, in one transaction.
    let mut text = TWO
        .replace("09:00", "10:00")
        .replace("[backup]", "[backup-2]");
    for i in 0..tasks {
        text.push_str(&format!(
            "\n[t{i}]\ninstruction = \"task {i}\"\nevery = \"{}h\"\nstart = \"2026-01-01T00:00:00Z\"\n",
            i % 48 + 1
        ));
    }
    let file = write_source(&env, &text);
    let hash = plan(&env, &file, &["--prune"])["plan_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let before = env.run(&["export"]).ok().stdout;
    let apply_args = ["apply", file.as_str(), "--hash", hash.as_str(), "--prune"];

    let (mut killed_inside, mut applied) = (0, false);
    for delay_ms in [0, 20, 100, 400] {
        let mut child = env
            .command(&apply_args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn apply");
        let began = std::time::Instant::now();
        let open = loop {
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            if write_transaction_open(&env) {
                break true;
            }
            assert!(
                began.elapsed() < std::time::Duration::from_secs(30),
                "the apply never opened its transaction"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if open {
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        }
        child.kill().ok(); // SIGKILL
        let status = child.wait().unwrap();
        let after = env.run(&["export"]).ok().stdout;
        if after == before {
            // Killed (or it would have exited 0 and changed the store).
            assert!(!status.success(), "an apply that exited 0 changed nothing");
            if open {
                killed_inside += 1;
            }
            continue;
        }
        // Past the commit: exactly the plan, all of it.
        applied = true;
        break;
    }
    eprintln!(
        "apply SIGKILLed inside its transaction {killed_inside} times; committed first: {applied}"
    );
    assert!(
        killed_inside >= 1,
        "no kill landed inside the apply's transaction"
    );
    if !applied {
        // The same plan still applies, in full.
        env.run(&apply_args).ok();
    }
    assert_eq!(
        env.json(&["list"]).as_array().unwrap().len(),
        tasks + 2,
        "digest, backup-2 and every created task"
    );
    assert_plans_no_changes(&env, &[&file, "--prune"]);
}

/// Issue 36 item 7: a file whose `source` differs does not silently take
/// over a task another file created; `--adopt` does, and every replace and
/// delete names the source that created the task.
#[test]
fn a_task_another_source_created_is_replaced_only_with_adopt() {
    let env = TestEnv::new();
    let first = env.write("first.toml", "source = \"team/a\"\n[digest]\ninstruction = \"a's words\"\nevery = \"1h\"\nstart = \"2026-01-01T00:00:00Z\"\n");
    apply(&env, &first, &[]);
    let second = env.write("second.toml", "source = \"team/b\"\n[digest]\ninstruction = \"b's words\"\nevery = \"1h\"\nstart = \"2026-01-01T00:00:00Z\"\n");

    let out = env.run(&["plan", &second]).fails(5);
    assert_contains(
        &out.stderr,
        "task digest was created by source:team/a, not by this file (source:team/b)",
    );
    assert_contains(&out.stderr, "--adopt");
    let hash = plan(&env, &second, &["--adopt"])["plan_hash"]
        .as_str()
        .unwrap()
        .to_string();
    env.run(&["apply", &second, "--hash", &hash]).fails(5);
    assert_eq!(
        env.json(&["show", "digest"])["instruction"],
        "a's words",
        "nothing changed"
    );

    let shown = env.run(&["plan", &second, "--adopt"]).ok().stdout;
    assert_contains(&shown, "created by source:team/a (adopted by this file)");
    let p = apply(&env, &second, &["--adopt"]);
    assert_eq!(
        env.json(&["show", "digest"])["instruction"],
        "b's words",
        "{p}"
    );
    // Now b's: a replace names it, and a's file is the one refused.
    std::fs::write(
        env.path("second.toml"),
        "source = \"team/b\"\n[digest]\ninstruction = \"b again\"\nevery = \"1h\"\nstart = \"2026-01-01T00:00:00Z\"\n",
    )
    .unwrap();
    let p = plan(&env, &second, &[]);
    assert_eq!(p["actions"][0]["created_by"], "source:team/b");
    assert!(env
        .run(&["plan", &second])
        .ok()
        .stdout
        .contains("created by source:team/b\n"));
    env.run(&["plan", &first]).fails(5);
}

// ---- 8c. tasks file type errors name the task and the key ------------------

#[test]
fn a_tasks_file_value_of_the_wrong_type_names_its_task_and_key() {
    let env = TestEnv::new();
    let path = env.path("tasks.toml");
    let shown = path.display().to_string();
    for (body, expected) in [
        (
            "[backup]\ninstruction = \"x\"\ndaily = \"09:00\"\nmax_retries = \"three\"\n",
            "tasks.toml:4: task 'backup', key 'max_retries': expected a whole number, got string \"three\"",
        ),
        (
            "[backup]\ninstruction = 5\ndaily = \"09:00\"\n",
            "tasks.toml:2: task 'backup', key 'instruction': expected a string (in quotes), got integer `5`",
        ),
        (
            "backup = { instruction = \"x\", daily = \"09:00\", count = -1 }\n",
            "tasks.toml:1: task 'backup', key 'count': expected a whole number, got integer `-1`",
        ),
    ] {
        std::fs::write(&path, body).unwrap();
        let out = env.run(&["plan", &shown]).fails(2);
        assert_one_line(&out.stderr, &[expected]);
    }
}
