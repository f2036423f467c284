//! What a run may spend (docs/CONTRACT.md §6, SPEC §20), confirmed with the
//! schedule: a task's own `--timeout`. Real processes on the store the suite
//! runs on: the executor fixture sleeps (in a child it starts, for the
//! process group), the tick kills it at the task's limit.
use crate::support::{assert_contains, draft_ids, gone, Rig, Task, TestEnv};

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::RawSession;

const HOUR: i64 = 3600;

/// A task `t` whose executor sleeps 6 s (in a grandchild when `grandchild`),
/// due now; `flags` are its draft's own.
fn sleeping_task(rig: &Rig, grandchild: bool, flags: &[&str]) {
    let mode = if grandchild {
        "spawn-grandchild"
    } else {
        "sleep"
    };
    rig.env.set_env("FIXTURE_MODE", mode);
    rig.env.set_env("FIXTURE_SLEEP", "6");
    Task::named("t").flags(flags).confirm(&rig.env);
    rig.env.advance(HOUR);
}

/// Ticks with `extra` flags; returns how long the tick took.
fn timed_tick(rig: &Rig, extra: &[&str]) -> Duration {
    let started = Instant::now();
    let mut args = vec!["--kill-grace", "1s"];
    args.extend_from_slice(extra);
    rig.tick(&args).ok();
    started.elapsed()
}

#[test]
fn a_read_only_run_past_its_own_timeout_fails_is_retried_and_its_child_is_gone() {
    let rig = Rig::new();
    sleeping_task(&rig, true, &["--timeout", "2s", "--max-retries", "2"]);
    let took = timed_tick(&rig, &[]);
    assert!(took < Duration::from_secs(6), "the tick took {took:?}");
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["summary"], "timed out after 2 s", "{run}");
    assert_eq!(
        run["reason"], "timed out after 2 s; process group killed",
        "{run}"
    );
    let task = rig.env.json(&["show", "t"]);
    assert_eq!(task["consecutive_failures"], 1, "{task}");
    assert!(task["next_retry_at"].is_string(), "retried: {task}");
    let pid: i32 = std::fs::read_to_string(rig.env.path("exec.journal.grandchild"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    crate::support::wait_for_within("the grandchild to be gone", Duration::from_secs(3), || {
        gone(pid)
    });
    // The retry runs, and succeeds, as any failure's would.
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.advance(120);
    rig.tick(&[]).ok();
    let runs = rig.runs("t");
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[0]["attempt"], 2, "{runs:?}");
}

#[test]
fn a_confirm_writes_run_past_its_own_timeout_is_unknown() {
    let rig = Rig::new();
    sleeping_task(
        &rig,
        false,
        &["--timeout", "2s", "--policy", "confirm_writes"],
    );
    let took = timed_tick(&rig, &[]);
    assert!(took < Duration::from_secs(6), "the tick took {took:?}");
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "unknown", "{run}");
    assert_eq!(
        run["reason"], "timed out after 2 s; process group killed",
        "{run}"
    );
    let task = rig.env.json(&["show", "t"]);
    assert!(task["next_retry_at"].is_null(), "never retried: {task}");
}

#[test]
fn the_ticks_shorter_timeout_wins_and_keeps_its_rule() {
    let rig = Rig::new();
    sleeping_task(&rig, false, &["--timeout", "10s"]);
    let took = timed_tick(&rig, &["--timeout", "1s"]);
    assert!(took < Duration::from_secs(6), "the tick took {took:?}");
    let run = &rig.runs("t")[0];
    // The tick's limit: unknown, whatever the policy, as before.
    assert_eq!(run["status"], "unknown", "{run}");
    assert_eq!(
        run["reason"], "timed out after 1 s; process group killed",
        "{run}"
    );
}

#[test]
fn a_run_within_its_timeout_is_untouched() {
    let rig = Rig::new();
    rig.env.executors_sleep("1");
    Task::named("t").timeout("30s").confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("t")[0]["status"], "succeeded");
}

/// The payload `draft` shows for `flags` on a fixed schedule and name, and
/// its hash.
pub fn payload_of(env: &TestEnv, flags: &[&str]) -> (String, String) {
    let draft = Task::named("n")
        .at("2026-12-25 09:00")
        .tz("UTC")
        .default_notify()
        .flags(flags)
        .draft(env);
    (
        draft["payload"].as_str().unwrap().to_string(),
        draft["payload_hash"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_timeout_is_in_the_payload_only_when_set() {
    let env = TestEnv::new();
    let (plain, plain_hash) = payload_of(&env, &[]);
    assert!(!plain.contains("timeout"), "{plain}");
    let (limited, limited_hash) = payload_of(&env, &["--timeout", "1h30m"]);
    assert!(
        limited.contains(r#""tenant_key":"default","timeout_seconds":5400,"timezone":"UTC""#),
        "{limited}"
    );
    assert_ne!(plain_hash, limited_hash);
    // The key is all it adds: without it, the payload is the plain one.
    assert_eq!(limited.replacen(r#""timeout_seconds":5400,"#, "", 1), plain);
}

#[test]
fn a_timeout_out_of_range_is_one_usage_line() {
    let env = TestEnv::new();
    for (value, message) in [
        ("0", "agentcron: error: --timeout: must be from 1 s to 24 h"),
        (
            "25h",
            "agentcron: error: --timeout: must be from 1 s to 24 h",
        ),
        (
            "soon",
            "agentcron: error: --timeout: invalid duration 'soon'",
        ),
    ] {
        let out = Task::new()
            .default_notify()
            .timeout(value)
            .try_draft(&env)
            .fails(2);
        assert_eq!(out.stderr.trim_end(), message, "{value}");
    }
    let out = Task::new().default_notify().timeout("24h").try_draft(&env);
    out.ok();
}

#[test]
fn show_draft_and_replace_say_the_timeout() {
    let env = TestEnv::new();
    let out = Task::new()
        .default_notify()
        .timeout("90s")
        .try_draft(&env)
        .ok();
    assert_contains(
        &out.stdout,
        "timeout      90 s (the tick's --timeout caps it)",
    );
    Task::named("t").confirm(&env);
    let shown = env.run(&["show", "t"]).ok().stdout;
    assert!(!shown.contains("timeout"), "{shown}");
    let replaced = env.draft(&["--replace", "t", "--timeout", "2m"]);
    let diff = replaced["diff"].to_string();
    assert!(diff.contains("timeout_seconds"), "{replaced}");
    let (id, hash) = draft_ids(&replaced);
    env.run(&["confirm", id, "--hash", hash]).ok();
    let shown = env.run(&["show", "t"]).ok().stdout;
    assert_contains(&shown, "timeout       120 s (the tick's --timeout caps it)");
    assert_eq!(env.json(&["show", "t"])["timeout_seconds"], 120);
    // A replacement that does not name it keeps it.
    let kept = env.draft(&["--replace", "t", "--every", "2h"]);
    assert!(kept["payload"]
        .as_str()
        .unwrap()
        .contains(r#""timeout_seconds":120"#));
}

#[test]
fn a_tasks_file_gives_a_timeout_as_draft_does() {
    let env = TestEnv::new();
    let file = env.write(
        "tasks.toml",
        "[digest]\ninstruction = \"x\"\ndaily = \"09:00\"\ntimeout = \"2s\"\n",
    );
    let plan = env.json(&["plan", &file]);
    let hash = plan["plan_hash"].as_str().unwrap().to_string();
    env.json(&["apply", &file, "--hash", &hash]);
    assert_eq!(env.json(&["show", "digest"])["timeout_seconds"], 2);
    std::fs::write(
        &file,
        "[digest]\ninstruction = \"x\"\ndaily = \"09:00\"\ntimeout = \"25h\"\n",
    )
    .unwrap();
    let out = env.run(&["plan", &file]).fails(2);
    assert_contains(
        &out.stderr,
        "task 'digest', key 'timeout': must be from 1 s to 24 h",
    );
}

#[test]
fn the_mcp_draft_tool_takes_a_timeout() {
    let env = TestEnv::new();
    let mut session = RawSession::start(&env, &["mcp"], "host");
    let listed = session.request("tools/list", json!({}));
    let draft: &Value = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "draft")
        .unwrap();
    let property = &draft["inputSchema"]["properties"]["timeout"];
    assert!(property.is_object(), "{draft}");
    let drafted = session.call(
        "draft",
        json!({"instruction": "x", "every": "1h", "timeout": "90s"}),
    );
    assert_eq!(session.finish(), 0);
    assert_eq!(drafted["isError"], false, "{drafted}");
    let payload = drafted["structuredContent"]["payload"].as_str().unwrap();
    assert!(payload.contains(r#""timeout_seconds":90"#), "{payload}");
}
