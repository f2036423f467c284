//! `reconcile`: unknown runs listed with the command that settles each,
//! each decision settled once, the refusals, and what a run spent.
use crate::support::{
    assert_contains, assert_starts_with, cell, run_status, unknown_run, Outcome, Rig, Task,
    TestEnv, T0,
};

const HOUR: i64 = 3600;

/// `reconcile RUN --decision abandoned --reason REASON` and `extra`.
fn abandoned(env: &TestEnv, run_id: &str, reason: &str, extra: &[&str]) -> Outcome {
    let mut args = vec![
        "reconcile",
        run_id,
        "--decision",
        "abandoned",
        "--reason",
        reason,
    ];
    args.extend_from_slice(extra);
    env.run(&args)
}

#[test]
fn reconcile_lists_unknown_runs_and_settles_each_decision() {
    for (decision, status) in [
        ("confirmed_succeeded", "succeeded"),
        ("confirmed_failed", "failed"),
        ("abandoned", "failed"),
    ] {
        let rig = Rig::new();
        let run_id = unknown_run(&rig, "u");
        let listed = rig.env.json(&["reconcile"]);
        assert_eq!(listed.as_array().unwrap().len(), 1);
        assert_eq!(listed[0]["run_id"], run_id.as_str());
        assert!(listed[0]["reason"].as_str().unwrap().contains("timed out"));
        let before = rig.starts().len();
        let settled = rig.env.json(&[
            "reconcile",
            &run_id,
            "--decision",
            decision,
            "--reason",
            "checked the logs",
        ]);
        assert_eq!(settled["status"], status, "{decision}");
        assert_eq!(rig.starts().len(), before, "reconcile never runs anything");
        assert_eq!(
            rig.env.json(&["show", "u"])["next_retry_at"],
            serde_json::Value::Null,
            "never retried"
        );
        let row = rig.env.sql(&format!(
            "SELECT actor, decision, reason FROM reconciliations WHERE run_id = '{run_id}'"
        ));
        assert_eq!(
            row,
            vec![vec![
                "unix:tester".to_string(),
                decision.to_string(),
                "checked the logs".to_string()
            ]]
        );
        assert_eq!(rig.env.json(&["reconcile"]).as_array().unwrap().len(), 0);
        // The task is released: its next occurrence runs.
        rig.env.set_now(T0 + 2 * HOUR);
        rig.tick(&[]).ok();
        assert_eq!(rig.runs("u")[0]["status"], "succeeded");
    }
}

#[test]
fn reconciling_another_tenants_run_is_denied_without_naming_its_task() {
    let rig = Rig::new();
    let run_id = unknown_run(&rig, "u");
    let task_id = rig.runs("u")[0]["task_id"].as_str().unwrap().to_string();
    let out = abandoned(&rig.env, &run_id, "x", &["--tenant", "t2"]).fails(4);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!("agentcron: error: run {run_id} belongs to another tenant"),
    );
    assert!(!out.stderr.contains(&task_id[..8]), "{}", out.stderr);
    assert_eq!(rig.runs("u")[0]["status"], "unknown");
}

#[test]
fn reconcile_refuses_other_runs_and_needs_a_reason() {
    let rig = Rig::new();
    let run_id = unknown_run(&rig, "u");
    rig.env
        .run(&["reconcile", &run_id, "--decision", "abandoned"])
        .fails(2);
    rig.env
        .run(&["reconcile", &run_id, "--decision", "maybe", "--reason", "x"])
        .fails(2);
    abandoned(&rig.env, &run_id, "x", &["--as", "bob"]).fails(4);
    rig.env
        .run(&[
            "reconcile",
            "nope",
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ])
        .fails(3);
    abandoned(&rig.env, &run_id, "x", &["--json"]).ok().json();
    let out = abandoned(&rig.env, &run_id, "again", &[]).fails(5);
    assert_contains(&out.stderr, "not unknown");
}

/// Item 2: `status` counts every unknown run of the store, and `reconcile`
/// lists only the caller's in one tenant. They must agree: `status` names
/// where the runs are with the command that reaches them, and `reconcile`
/// with nothing of the caller's says how many wait elsewhere.
#[test]
fn status_and_reconcile_agree_on_where_unknown_runs_are() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("a").tenant("ops").by("unix:alice").confirm(env);
    env.executors_sleep("5");
    env.advance(3600);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    let out = env.run(&["status"]).ok();
    let line = format!(
        "1 unknown run(s) in tenant 'ops' owned by unix:alice: `agentcron --db {} \
         --tenant ops --as unix:alice reconcile`",
        shell_words::quote(&env.db_arg())
    );
    assert_contains(&out.stderr, &line);
    let status = env.json(&["status"]);
    assert_eq!(status["runs"]["unknown"], 1);
    assert_eq!(status["unknown_runs_by"][0]["tenant"], "ops");
    assert_eq!(status["unknown_runs_by"][0]["owner"], "unix:alice");
    // The caller of the default tenant has none, and is told where they are.
    let out = env.run(&["reconcile"]).ok();
    assert_starts_with(
        &out.stdout,
        "No unknown runs of yours (unix:tester) in tenant 'default'; 1 elsewhere:",
    );
    assert_contains(&out.stdout, &line);
    // The command it names lists the run.
    let out = env
        .run(&["--tenant", "ops", "--as", "unix:alice", "reconcile"])
        .ok();
    assert_contains(&out.stdout, "Find out what happened");
}

/// A task spending usd 0.02 a run against `usd=0.05/day`, whose second run
/// is frozen unknown (its executor timed out); that run's id.
fn an_unknown_run_that_spent(rig: &Rig) -> String {
    rig.env.set_env(
        "FIXTURE_MODE",
        r#"json:{"status":"succeeded","summary":"ok","usage":{"usd":0.02}}"#,
    );
    Task::named("t").budget("usd=0.05/day").confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    rig.env.executors_sleep("5");
    rig.env.advance(HOUR);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "unknown", "{run}");
    run["run_id"].as_str().unwrap().to_string()
}

#[test]
fn reconcile_usage_counts_what_an_unknown_run_spent_once() {
    let rig = Rig::new();
    let env = &rig.env;
    let run = an_unknown_run_that_spent(&rig);
    assert_eq!(cell(env, "SELECT spent FROM budget_windows"), "0.02");
    let before = env.db_bytes();

    // Bad usage: one error line, exit 2, nothing written.
    for (usage, says) in [
        (
            &["--usage", "usd=1e400"][..],
            "usd 1e400 is over the limit of 1e15",
        ),
        (&["--usage", "usd=-0.5"], "usd -0.5 is negative"),
        (&["--usage", "usd=NaN"], "usd \"NaN\" is not a number"),
        (
            &["--usage", "usd=1", "--usage", "usd=2"],
            "--usage usd is given twice",
        ),
        (&["--usage", "runs=1"], "'runs' is counted by agentcron"),
        (&["--usage", "usd"], "is not KEY=N"),
    ] {
        let mut args = vec!["reconcile", &run, "--decision", "confirmed_succeeded"];
        args.extend(["--reason", "checked the bill"]);
        args.extend_from_slice(usage);
        let out = env.run(&args).fails(2);
        let line = out.stderr.lines().next().unwrap();
        assert!(
            line.starts_with("agentcron: error: --usage") && line.contains(says),
            "{usage:?}: {line}"
        );
        let after = env.db_bytes();
        for ((name, a), (_, b)) in after.iter().zip(&before) {
            let first = a.iter().zip(b).position(|(x, y)| x != y);
            assert!(
                first.is_none() && a.len() == b.len(),
                "{usage:?} wrote {name} at {first:?} ({} vs {} bytes)",
                a.len(),
                b.len()
            );
        }
    }

    let out = env
        .run(&[
            "reconcile",
            &run,
            "--decision",
            "confirmed_succeeded",
            "--reason",
            "the bill says 0.04",
            "--usage",
            "usd=0.04",
            "--usage",
            "tokens=900",
        ])
        .ok();
    assert_contains(
        &out.stdout,
        "as succeeded (confirmed_succeeded, spending tokens=900 usd=0.04)",
    );
    let check = |env: &TestEnv| {
        assert_eq!(cell(env, "SELECT spent FROM budget_windows"), "0.06");
        assert_eq!(
            env.sql("SELECT usage_key, total FROM usage_totals ORDER BY usage_key"),
            [
                ["tokens".to_string(), "900".to_string()],
                ["usd".to_string(), "0.06".to_string()]
            ]
        );
    };
    check(env);
    let shown = env.json(&["runs", "t"]);
    assert_eq!(shown[0]["usage"]["usd"], 0.04, "{shown}");
    let audit = env.sql("SELECT detail FROM events WHERE action = 'reconcile'");
    assert_eq!(audit.len(), 1, "{audit:?}");
    let detail: serde_json::Value = serde_json::from_str(&audit[0][0]).unwrap();
    assert_eq!(
        detail["usage"],
        serde_json::json!({"tokens": 900.0, "usd": 0.04})
    );

    // Reconciling again is refused, and counts nothing twice.
    let again = env
        .run(&[
            "reconcile",
            &run,
            "--decision",
            "confirmed_succeeded",
            "--reason",
            "again",
            "--usage",
            "usd=0.04",
        ])
        .fails(5);
    assert_contains(&again.stderr, "not unknown");
    check(env);

    // The window counts it: the next run would pass the budget.
    env.set_env(
        "FIXTURE_MODE",
        r#"json:{"status":"succeeded","summary":"ok","usage":{"usd":0.02}}"#,
    );
    env.advance(HOUR);
    rig.tick(&[]).ok();
    let next = &rig.runs("t")[0];
    assert_eq!(next["status"], "skipped_budget", "{next}");
    assert_eq!(rig.starts().len(), 2, "the budget stopped the third run");
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
    assert_contains(&out.stdout, &format!("{line}\n"));
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
