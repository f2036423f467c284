//! Issue 43 items 2 and 3 (docs/CONTRACT.md §20): a usage value that cannot
//! be a number is ignored with its reason and the status stands, even one
//! JSON itself cannot hold as a number (`1e400`); and `reconcile RUN
//! --usage KEY=N` records what an unknown run spent, once.

use crate::support::{Rig, TestEnv};

const HOUR: i64 = 3600;

/// What SQL says, one cell.
fn cell(env: &TestEnv, sql: &str) -> String {
    env.sql(sql)
        .first()
        .and_then(|row| row.first().cloned())
        .unwrap_or_default()
}

#[test]
fn usage_that_cannot_be_a_number_is_ignored_and_the_success_stands_once() {
    let rig = Rig::new();
    rig.env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "t",
        "--budget",
        "usd=5/day",
    ]);
    for (round, (usd, says)) in [
        ("1e400", "usd 1e400 is over the limit of 1e15"),
        ("1.8e308", "usd 1.8e308 is over the limit of 1e15"),
        ("\"NaN\"", "usd \"NaN\" is not a number"),
        ("-1", "usd -1 is negative"),
    ]
    .into_iter()
    .enumerate()
    {
        rig.env.set_env(
            "FIXTURE_MODE",
            &format!(
                r#"json:{{"status":"succeeded","summary":"ok","usage":{{"usd":{usd},"tokens":7}}}}"#
            ),
        );
        rig.env.advance(HOUR);
        rig.tick(&[]).ok();
        // One execution per occurrence: no failure, so no retry either.
        assert_eq!(rig.starts().len(), round + 1, "usd {usd}");
        let run = &rig.runs("t")[0];
        assert_eq!(run["status"], "succeeded", "usd {usd}: {run}");
        assert_eq!(run["attempt"], 1, "usd {usd}: {run}");
        assert_eq!(
            run["summary"].as_str().unwrap(),
            format!("ok (usage ignored: {says})"),
            "usd {usd}"
        );
    }
    // What was a number was counted; nothing of usd was.
    let totals = rig
        .env
        .sql("SELECT usage_key, total FROM usage_totals ORDER BY usage_key");
    assert_eq!(totals, [["tokens".to_string(), "28".to_string()]]);
    assert_eq!(
        cell(
            &rig.env,
            "SELECT count(*) FROM budget_windows WHERE spent > 0"
        ),
        "0"
    );
}

/// A task spending usd 0.02 a run against `usd=0.05/day`, whose second run
/// is frozen unknown (its executor timed out); that run's id.
fn an_unknown_run_that_spent(rig: &Rig) -> String {
    rig.env.set_env(
        "FIXTURE_MODE",
        r#"json:{"status":"succeeded","summary":"ok","usage":{"usd":0.02}}"#,
    );
    rig.env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "t",
        "--budget",
        "usd=0.05/day",
    ]);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    rig.env.set_env("FIXTURE_MODE", "sleep");
    rig.env.set_env("FIXTURE_SLEEP", "5");
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
    assert!(
        out.stdout
            .contains("as succeeded (confirmed_succeeded, spending tokens=900 usd=0.04)"),
        "{}",
        out.stdout
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
    assert!(again.stderr.contains("not unknown"), "{}", again.stderr);
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
