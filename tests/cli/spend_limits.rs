//! The spending limits a person confirms with the schedule (docs/CONTRACT.md
//! §3 and §6): `--budget`, `--gate`, `--catch-up`, `--expect-success`, each
//! in the payload only when set, refused in one line when wrong, shown
//! before confirmation, removed from a replacement with `none`, and taken
//! alike by a tasks file and the MCP `draft` tool. What the tick does with
//! each is in budgets.rs, gate.rs, catch_up.rs and overdue.rs.
use crate::support::{assert_contains, Task, TestEnv};

use serde_json::json;

use crate::mcp::RawSession;
use crate::task_limits::payload_of;

#[test]
fn each_limit_is_in_the_payload_only_when_set_in_one_spelling() {
    let env = TestEnv::new();
    let (plain, plain_hash) = payload_of(&env, &[]);
    for key in ["budgets", "gate", "catch_up", "expect_success_seconds"] {
        assert!(!plain.contains(key), "{plain}");
    }
    for (flags, written) in [
        (
            vec!["--budget", "usd=2.50/day", "--budget", "runs=2/day"],
            r#""budgets":["runs=2/day","usd=2.5/day"],"#,
        ),
        // A comma-separated list is the same list.
        (
            vec!["--budget", "usd=2.5/day,runs=2/day"],
            r#""budgets":["runs=2/day","usd=2.5/day"],"#,
        ),
        (vec!["--catch-up", "latest"], r#""catch_up":"latest","#),
        (
            vec!["--expect-success", "1d"],
            r#""expect_success_seconds":86400,"#,
        ),
        (
            vec!["--gate", "test -s '/var/in box'"],
            r#""gate":"test -s '/var/in box'","#,
        ),
    ] {
        let (limited, hash) = payload_of(&env, &flags);
        assert!(limited.contains(written), "{flags:?}: {limited}");
        assert_ne!(hash, plain_hash);
        // The key is all a limit adds.
        assert_eq!(limited.replacen(written, "", 1), plain, "{flags:?}");
    }
    // `none` is no limit: the plain payload.
    let (none, _) = payload_of(&env, &["--catch-up", "none"]);
    assert_eq!(none, plain);
}

#[test]
fn a_wrong_limit_is_one_usage_line() {
    let env = TestEnv::new();
    for (flag, value, says) in [
        (
            "--budget",
            "usd=0/day",
            "--budget: budget limit '0' must be a number above 0",
        ),
        (
            "--budget",
            "USD=1/day",
            "--budget: budget key 'USD' must be 1 to 32 of a-z, 0-9 and _",
        ),
        (
            "--budget",
            "usd=1/year",
            "--budget: budget period 'year' is not one of day, week, month",
        ),
        ("--budget", "usd=5", "--budget: 'usd=5' is not KEY=N/PERIOD"),
        (
            "--budget",
            "usd=1/day,usd=2/day",
            "--budget: two budgets of 'usd' per day",
        ),
        ("--gate", " ", "--gate: the gate command is empty"),
        (
            "--gate",
            "echo 'open",
            "--gate: the gate command does not split into words",
        ),
        (
            "--gate",
            "check\u{1b}[31m",
            "--gate: the gate command has a control character",
        ),
        (
            "--expect-success",
            "30s",
            "--expect-success: must be from 1 min to 366 d",
        ),
        (
            "--expect-success",
            "soon",
            "--expect-success: invalid duration 'soon'",
        ),
    ] {
        let out = env
            .run(&["draft", "--instruction", "x", "--every", "1h", flag, value])
            .fails(2);
        assert_eq!(
            out.stderr.lines().count(),
            1,
            "{flag} {value}: {}",
            out.stderr
        );
        assert!(
            out.stderr.starts_with(&format!("agentcron: error: {says}")),
            "{flag} {value}: {}",
            out.stderr
        );
    }
    let out = Task::new()
        .default_notify()
        .flags(&["--catch-up", "all"])
        .try_draft(&env)
        .fails(2);
    assert_contains(&out.stderr, "--catch-up");
}

#[test]
fn draft_and_show_say_each_limit() {
    let env = TestEnv::new();
    let flags = [
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "t",
        "--budget",
        "usd=5/day",
        "--budget",
        "runs=10/week",
        "--gate",
        "check --inbox 'a b'",
        "--catch-up",
        "latest",
        "--expect-success",
        "2d",
    ];
    let mut args = vec!["draft"];
    args.extend_from_slice(&flags);
    let drafted = env.run(&args).ok().stdout;
    for shown in [
        "budgets      runs 10 a week, usd 5 a day",
        r#"gate         "check --inbox 'a b'" (exit 0 runs, 1 skips)"#,
        "catch-up     latest",
        "expect       a success within 2 d",
    ] {
        assert!(drafted.contains(shown), "{shown}\n{drafted}");
    }
    env.task(&flags[..]);
    let shown = env.run(&["show", "t"]).ok().stdout;
    assert_contains(&shown, "runs 10 a week, usd 5 a day");
    let task = env.json(&["show", "t"]);
    assert_eq!(task["budgets"], json!(["runs=10/week", "usd=5/day"]));
    assert_eq!(task["gate"], "check --inbox 'a b'");
    assert_eq!(task["catch_up"], "latest");
    assert_eq!(task["expect_success_seconds"], 172800);
}

#[test]
fn a_replacement_keeps_changes_or_removes_each_limit_and_flags_step_ups() {
    let env = TestEnv::new();
    Task::named("t")
        .timeout("1m")
        .budget("usd=5/day")
        .flags(&[
            "--gate",
            "true",
            "--catch-up",
            "latest",
            "--expect-success",
            "1d",
        ])
        .confirm(&env);
    // Not named: kept.
    let kept = env.draft(&["--replace", "t", "--every", "2h"]);
    let payload = kept["payload"].as_str().unwrap();
    for key in [
        r#""timeout_seconds":60"#,
        r#""budgets":["usd=5/day"]"#,
        r#""gate":"true""#,
        r#""catch_up":"latest""#,
        r#""expect_success_seconds":86400"#,
    ] {
        assert!(payload.contains(key), "{key}: {payload}");
    }
    // `none`: removed; the payload is the one without limits.
    let removed = env.draft(&[
        "--replace",
        "t",
        "--timeout",
        "none",
        "--budget",
        "none",
        "--gate",
        "none",
        "--catch-up",
        "none",
        "--expect-success",
        "none",
    ]);
    let payload = removed["payload"].as_str().unwrap();
    for key in ["timeout", "budgets", "gate", "catch_up", "expect_success"] {
        assert!(!payload.contains(key), "{key}: {payload}");
    }
    // Removing a timeout, a budget or a gate is a step-up the person reads
    // first.
    let id = removed["draft_id"].as_str().unwrap();
    let shown = env.json(&["show", id]);
    let step_ups: Vec<&str> = shown["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["step_up"].is_null())
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    for field in ["budgets", "gate", "timeout_seconds"] {
        assert!(step_ups.contains(&field), "{field}: {shown}");
    }
    // A longer timeout is one too; a shorter one is not.
    let longer = env.draft(&["--replace", "t", "--timeout", "2m"]);
    let shown = env.json(&["show", longer["draft_id"].as_str().unwrap()]);
    assert!(
        shown["changes"][0]["step_up"]
            .as_str()
            .is_some_and(|s| s.contains("longer")),
        "{shown}"
    );
    let shorter = env.draft(&["--replace", "t", "--timeout", "30s"]);
    let shown = env.json(&["show", shorter["draft_id"].as_str().unwrap()]);
    assert!(shown["changes"][0]["step_up"].is_null(), "{shown}");
}

#[test]
fn a_tasks_file_gives_each_limit_as_draft_does() {
    let env = TestEnv::new();
    let file = env.path("tasks.toml");
    std::fs::write(
        &file,
        "[digest]\ninstruction = \"x\"\ndaily = \"09:00\"\nbudget = [\"usd=5/day\", \"runs=3/day\"]\n\
         gate = \"test -s /tmp/inbox\"\ncatch_up = \"latest\"\nexpect_success = \"26h\"\n\
         [single]\ninstruction = \"y\"\ndaily = \"10:00\"\nbudget = \"runs=1/day\"\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let plan = env.json(&["plan", &file]);
    let hash = plan["plan_hash"].as_str().unwrap().to_string();
    env.json(&["apply", &file, "--hash", &hash]);
    let digest = env.json(&["show", "digest"]);
    assert_eq!(digest["budgets"], json!(["runs=3/day", "usd=5/day"]));
    assert_eq!(digest["gate"], "test -s /tmp/inbox");
    assert_eq!(digest["catch_up"], "latest");
    assert_eq!(digest["expect_success_seconds"], 26 * 3600);
    assert_eq!(
        env.json(&["show", "single"])["budgets"],
        json!(["runs=1/day"])
    );
    // The file applied once plans as no change.
    let again = env.run(&["plan", &file]).ok().stdout;
    assert_contains(&again, "no changes");
    std::fs::write(
        &file,
        "[digest]\ninstruction = \"x\"\ndaily = \"09:00\"\nbudget = [\"usd=5/fortnight\"]\n",
    )
    .unwrap();
    let out = env.run(&["plan", &file]).fails(2);
    assert_contains(
        &out.stderr,
        "task 'digest', key 'budget': budget period 'fortnight' is not one of day, week, month",
    );
}

#[test]
fn the_mcp_draft_tool_takes_every_limit() {
    let env = TestEnv::new();
    let mut session = RawSession::start(&env, &["mcp"], "host");
    let drafted = session.call(
        "draft",
        json!({"instruction": "x", "every": "1h", "budget": ["usd=1/day", "runs=4/day"],
               "gate": "true", "catch_up": "latest", "expect_success": "1d"}),
    );
    let refused = session.call(
        "draft",
        json!({"instruction": "x", "every": "1h", "budget": "usd=-1/day"}),
    );
    assert_eq!(session.finish(), 0);
    assert_eq!(drafted["isError"], false, "{drafted}");
    let payload = drafted["structuredContent"]["payload"].as_str().unwrap();
    for key in [
        r#""budgets":["runs=4/day","usd=1/day"]"#,
        r#""catch_up":"latest""#,
        r#""expect_success_seconds":86400"#,
        r#""gate":"true""#,
    ] {
        assert!(payload.contains(key), "{key}: {payload}");
    }
    assert_eq!(refused["isError"], true, "{refused}");
}
