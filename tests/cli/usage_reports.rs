//! Usage reported while a run goes (docs/CONTRACT.md §20): `lease check
//! --usage KEY=N` tells the tick the run's total so far through the run's
//! lease channel; the tick records it when it arrives, counts it once with
//! the final reply, and stops a run whose report takes a budget past its
//! limit. Real ticks and executors, both stores.
use crate::support::{
    assert_contains, cell, kill, wait_for, write_script, Rig, Task, TestEnv, BIN, T0,
};
use std::process::Stdio;

const HOUR: i64 = 3600;

/// The budget window's spent amount, as the store holds it.
fn spent(env: &TestEnv) -> f64 {
    env.sql("SELECT spent FROM budget_windows")
        .first()
        .and_then(|row| row.first())
        .and_then(|cell| cell.parse().ok())
        .unwrap_or(0.0)
}

/// An executor that reports each of `totals` in turn (journaling each
/// answer to `answers`), then does what `then` says.
fn reporting_executor(env: &TestEnv, totals: &[&str], then: &str) -> String {
    let answers = env.path("answers");
    let mut body = String::from("#!/bin/sh\ncat >/dev/null\n");
    for total in totals {
        body.push_str(&format!(
            "'{BIN}' lease check \"$AGENTCRON_RUN_ID\" --token \"$AGENTCRON_LEASE_TOKEN\" \
             --usage usd={total} >/dev/null 2>&1\necho \"{total} $?\" >> '{}'\nsleep 0.3\n",
            answers.display()
        ));
    }
    body.push_str(then);
    let path = env.path("reporter.sh");
    write_script(&path, &body);
    path.display().to_string()
}

fn budgeted_task(env: &TestEnv, executor: &str, policy: &str) {
    env.set_env("AGENTCRON_EXECUTOR", executor);
    Task::named("t")
        .instruction("agent")
        .budget("usd=0.05/day")
        .policy(policy)
        .confirm(env);
    env.set_now(T0 + HOUR);
}

/// Reported 0.02 then 0.04, then the tick is killed with -9 mid-run: the
/// window holds 0.04, what the run told before the crash.
#[test]
fn usage_reported_mid_run_survives_a_kill_9_of_the_tick() {
    let env = TestEnv::new();
    let started = env.path("started");
    let executor = reporting_executor(
        &env,
        &["0.02", "0.04"],
        &format!("touch '{}'\nsleep 30\n", started.display()),
    );
    budgeted_task(&env, &executor, "read_only");
    let mut tick = env
        .command(&["tick", "--kill-grace", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the reports", || started.exists());
    wait_for("the second report recorded", || spent(&env) >= 0.04);
    kill(tick.id() as i32, libc::SIGKILL);
    let _ = tick.wait();
    assert_eq!(spent(&env), 0.04);
    assert_eq!(
        std::fs::read_to_string(env.path("answers")).unwrap(),
        "0.02 0\n0.04 0\n"
    );
    // Its lease runs out; the person reconciles it with what the bill says
    // it spent in all, 0.08: the window counts 0.08, not 0.04 + 0.08.
    env.advance(HOUR);
    env.run(&["reconcile"]).ok();
    let run = env.json(&["runs", "t"])[0].clone();
    assert_eq!(run["status"], "unknown", "{run}");
    env.run(&[
        "reconcile",
        run["run_id"].as_str().unwrap(),
        "--decision",
        "confirmed_succeeded",
        "--reason",
        "the bill says 0.08",
        "--usage",
        "usd=0.08",
    ])
    .ok();
    assert!((spent(&env) - 0.08).abs() < 1e-9, "{}", spent(&env));
}

/// A report that takes the window past its limit: the lease check answers
/// 5 from then on, the run is stopped and ends `failed` (read_only) or
/// `unknown` (confirm_writes), saying which budget.
#[test]
fn a_budget_passed_mid_run_stops_the_run() {
    for (policy, status) in [("read_only", "failed"), ("confirm_writes", "unknown")] {
        let env = TestEnv::new();
        let executor =
            reporting_executor(&env, &["0.02", "0.06", "0.07"], "trap '' TERM\nsleep 30\n");
        budgeted_task(&env, &executor, policy);
        env.run(&["tick", "--kill-grace", "1s"]).ok();
        let answers = std::fs::read_to_string(env.path("answers")).unwrap_or_default();
        // The third report may or may not be made before the stop.
        assert!(answers.starts_with("0.02 0\n0.06 "), "{policy}: {answers}");
        assert!(
            !answers.contains("0.07 0"),
            "{policy}: answered 0 after the budget was spent: {answers}"
        );
        let run = &env.json(&["runs", "t"])[0];
        assert_eq!(run["status"], status, "{policy}: {run}");
        let words = format!("{} {}", run["summary"], run["reason"]);
        assert!(
            words.contains("budget usd=0.05/day spent during the run (0.06 of 0.05)"),
            "{policy}: {words}"
        );
        assert!(spent(&env) >= 0.06, "{policy}");
    }
}

/// Reported 0.02 while running, then a final reply of 0.03 in all: the
/// window counts 0.03, not 0.05; a final reply below the report counts
/// nothing more.
#[test]
fn usage_reported_and_replied_is_counted_once() {
    for (reply, counted) in [("0.03", 0.03), ("0.01", 0.02)] {
        let env = TestEnv::new();
        let executor = reporting_executor(
            &env,
            &["0.02"],
            &format!(
                "sleep 0.3\necho '{{\"status\":\"succeeded\",\"summary\":\"ok\",\"usage\":{{\"usd\":{reply}}}}}'\n"
            ),
        );
        budgeted_task(&env, &executor, "read_only");
        env.run(&["tick"]).ok();
        assert_eq!(env.json(&["runs", "t"])[0]["status"], "succeeded");
        let total = spent(&env);
        assert!((total - counted).abs() < 1e-9, "reply {reply}: {total}");
    }
}

#[test]
fn usage_outside_a_run_is_refused() {
    let env = TestEnv::new();
    let out = env
        .run(&["lease", "check", "abcd", "--token", "t", "--usage", "usd=1"])
        .fails(2);
    assert_contains(&out.stderr, "works only inside a run");
    let out = env
        .run(&[
            "lease", "check", "abcd", "--token", "t", "--usage", "usd=-1",
        ])
        .fails(2);
    assert_contains(&out.stderr, "not a finite number");
}

#[test]
fn usage_that_cannot_be_a_number_is_ignored_and_the_success_stands_once() {
    let rig = Rig::new();
    Task::named("t").budget("usd=5/day").confirm(&rig.env);
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
