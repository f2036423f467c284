//! Day-2 operations (docs/CONTRACT.md §13): replacing a task's payload by a new
//! draft, triggering a run now, end conditions, spread and `upcoming`.

use std::process::Child;

use serde_json::Value;

use crate::support::{spawn_tick, wait_for, Rig};
use crate::support::{TestEnv, T0};

const HOUR: i64 = 3600;

fn daily(env: &TestEnv, name: &str) -> Value {
    env.task(&[
        "--instruction",
        "summarize",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--name",
        name,
    ])
}

/// Drafts a replacement; returns (draft_id, payload_hash).
fn replace_draft(env: &TestEnv, args: &[&str]) -> (String, String) {
    let mut all = vec!["draft", "--replace"];
    all.extend_from_slice(args);
    let d = env.json(&all);
    (
        d["draft_id"].as_str().unwrap().to_string(),
        d["payload_hash"].as_str().unwrap().to_string(),
    )
}

#[test]
fn replace_shows_a_diff_and_confirm_swaps_the_payload_in_place() {
    let env = TestEnv::new();
    let task = daily(&env, "digest");
    let old_hash = task["payload_hash"].as_str().unwrap().to_string();

    let out = env
        .run(&[
            "draft",
            "--replace",
            "digest",
            "--daily",
            "10:30",
            "--grace",
            "5m",
        ])
        .ok();
    assert!(
        out.stdout
            .contains("schedule               every day at 09:00 (UTC) → every day at 10:30 (UTC)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("grace_seconds          90 s → 300 s"));
    assert!(
        !out.stdout.contains("instruction "),
        "unchanged fields are not listed"
    );
    assert!(out
        .stdout
        .contains("Next runs now:\n  2026-12-02 09:00 UTC"));
    assert!(out
        .stdout
        .contains("Next runs after:\n  2026-12-02 10:30 UTC"));
    assert!(out
        .stdout
        .contains(&format!("Old payload hash: {old_hash}")));
    assert!(out
        .stdout
        .contains("To confirm, run:\n  agentcron confirm "));

    let d = env.json(&["draft", "--replace", "digest", "--daily", "10:30"]);
    assert_eq!(
        d["diff"],
        serde_json::json!([{"field": "schedule",
            "old": {"hour": 9, "kind": "calendar", "minute": 0, "weekdays": []},
            "new": {"hour": 10, "kind": "calendar", "minute": 30, "weekdays": []}}])
    );
    assert_eq!(d["replaces"]["revision"], 1);
    assert_eq!(d["replaces"]["payload_hash"], old_hash.as_str());
    assert_eq!(d["replaces"]["next_runs"][0], "2026-12-02T09:00:00Z");
    assert_eq!(d["next_runs"][0], "2026-12-02T10:30:00Z");
    let payload: Value = serde_json::from_str(d["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["instruction"], "summarize", "the rest is kept");
    assert_eq!(payload["name"], "digest");

    env.advance(60);
    let (id, hash) = (
        d["draft_id"].as_str().unwrap(),
        d["payload_hash"].as_str().unwrap(),
    );
    let out = env.run(&["confirm", id, "--hash", hash]).ok();
    assert!(
        out.stdout.contains("revision 1 → 2, hash "),
        "{}",
        out.stdout
    );
    let shown = env.json(&["show", "digest"]);
    assert_eq!(shown["task_id"], task["task_id"], "same task id");
    assert_eq!(shown["revision"], 2);
    assert_eq!(shown["payload_hash"], hash);
    assert_eq!(shown["next_run_at"], "2026-12-02T10:30:00Z");
    assert_eq!(shown["owner_keys"], task["owner_keys"]);
    assert_eq!(env.count("SELECT count(*) FROM tasks"), 1);
    assert_eq!(
        env.count(&format!(
            "SELECT count(*) FROM drafts WHERE draft_id = '{id}'"
        )),
        0
    );

    let log = env.json(&["log", "digest"]);
    let replace = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "replace")
        .expect("a replace event");
    assert_eq!(replace["detail"]["old_payload_hash"], old_hash.as_str());
    assert_eq!(replace["detail"]["payload_hash"], hash);
    let words = env.run(&["log", "digest"]).ok().stdout;
    assert!(
        words.contains(&format!("hash {}… → {}…", &old_hash[..8], &hash[..8])),
        "{words}"
    );
}

#[test]
fn replace_of_an_unchanged_payload_is_a_usage_error() {
    let env = TestEnv::new();
    daily(&env, "same");
    let out = env
        .run(&["draft", "--replace", "same", "--daily", "09:00"])
        .fails(2);
    assert!(out.stderr.contains("unchanged"), "{}", out.stderr);
    let out = env.run(&["draft", "--instruction", "x"]).fails(2);
    assert!(out.stderr.contains("required"), "{}", out.stderr);
}

#[test]
fn replace_is_refused_when_the_task_moved_since_the_draft() {
    let env = TestEnv::new();
    daily(&env, "moving");
    // Paused meanwhile.
    let (id, hash) = replace_draft(&env, &["moving", "--daily", "11:00"]);
    env.run(&["pause", "moving"]).ok();
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(5);
    assert!(
        out.stderr
            .contains("changed since the draft (revision 1 → 2, now paused)"),
        "{}",
        out.stderr
    );
    // A paused task can be replaced, and stays paused.
    let (id, hash) = replace_draft(&env, &["moving", "--daily", "11:00"]);
    env.run(&["confirm", &id, "--hash", &hash]).ok();
    let shown = env.json(&["show", "moving"]);
    assert_eq!(shown["state"], "paused");
    assert_eq!(shown["revision"], 3);
    assert_eq!(shown["next_run_at"], Value::Null);
    env.run(&["resume", "moving"]).ok();
    assert_eq!(
        env.json(&["show", "moving"])["next_run_at"],
        "2026-12-02T11:00:00Z"
    );

    // Replaced by someone else meanwhile: the first confirm wins.
    let (a, ha) = replace_draft(&env, &["moving", "--daily", "12:00"]);
    let (b, hb) = replace_draft(&env, &["moving", "--daily", "13:00"]);
    env.run(&["confirm", &a, "--hash", &ha]).ok();
    env.run(&["confirm", &b, "--hash", &hb]).fails(5);
    assert_eq!(env.json(&["show", "moving"])["payload_hash"], ha);

    // Deleted meanwhile.
    let (id, hash) = replace_draft(&env, &["moving", "--instruction", "other"]);
    env.run(&["delete", "moving"]).ok();
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(5);
    assert!(out.stderr.contains("now deleted"), "{}", out.stderr);
    assert_eq!(
        env.count("SELECT count(*) FROM events WHERE action = 'replace'"),
        2
    );
}

#[test]
fn replace_refusals_expired_non_owner_other_tenant_deleted() {
    let env = TestEnv::new();
    let task = env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "mine",
        "--as",
        "unix:alice",
    ]);
    let task_id = task["task_id"].as_str().unwrap();

    // Expired draft: exit 6, nothing changes.
    let (id, hash) = replace_draft(
        &env,
        &["mine", "--every", "2h", "--ttl", "1m", "--as", "unix:alice"],
    );
    env.advance(120);
    let out = env
        .run(&["confirm", &id, "--hash", &hash, "--as", "unix:alice"])
        .fails(6);
    assert!(out.stderr.contains("expired"), "{}", out.stderr);

    // Not an owner: neither the draft nor a confirm by someone else.
    let out = env
        .run(&[
            "draft",
            "--replace",
            "mine",
            "--every",
            "2h",
            "--as",
            "unix:mallory",
        ])
        .fails(4);
    assert!(out.stderr.contains("not an owner"), "{}", out.stderr);
    let (id, hash) = replace_draft(&env, &["mine", "--every", "2h", "--as", "unix:alice"]);
    env.run(&["confirm", &id, "--hash", &hash, "--as", "unix:mallory"])
        .fails(4);

    // Another tenant: the id is denied, the name is unknown there.
    env.run(&[
        "draft",
        "--replace",
        task_id,
        "--every",
        "2h",
        "--as",
        "unix:alice",
        "--tenant",
        "other",
    ])
    .fails(4);
    env.run(&[
        "draft",
        "--replace",
        "mine",
        "--every",
        "2h",
        "--as",
        "unix:alice",
        "--tenant",
        "other",
    ])
    .fails(3);
    env.run(&[
        "confirm",
        &id,
        "--hash",
        &hash,
        "--as",
        "unix:alice",
        "--tenant",
        "other",
    ])
    .fails(4);

    // A deleted task cannot be replaced: by id a conflict, by name not found.
    env.run(&["delete", "mine", "--as", "unix:alice"]).ok();
    let out = env
        .run(&[
            "draft",
            "--replace",
            task_id,
            "--every",
            "2h",
            "--as",
            "unix:alice",
        ])
        .fails(5);
    assert!(out.stderr.contains("is deleted"), "{}", out.stderr);
    env.run(&[
        "draft",
        "--replace",
        "mine",
        "--every",
        "2h",
        "--as",
        "unix:alice",
    ])
    .fails(3);
    env.run(&["confirm", &id, "--hash", &hash, "--as", "unix:alice"])
        .fails(5);

    let shown = env.json(&["show", task_id, "--as", "unix:alice"]);
    assert_eq!(shown["schedule"]["seconds"], 3600, "never replaced");
    assert_eq!(
        env.count("SELECT count(*) FROM events WHERE action = 'replace'"),
        0
    );
}

#[test]
fn a_run_in_flight_finishes_under_its_old_payload_hash() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "2");
    let task = env.task(&[
        "--instruction",
        "old words",
        "--every",
        "1h",
        "--name",
        "busy",
    ]);
    let old_hash = task["payload_hash"].as_str().unwrap().to_string();
    env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &[]);
    wait_for("the executor to start", || !rig.starts().is_empty());

    let (id, new_hash) = replace_draft(env, &["busy", "--instruction", "new words"]);
    env.run(&["confirm", &id, "--hash", &new_hash]).ok();
    let out = tick.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let runs = rig.runs("busy");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["payload_hash"], old_hash.as_str());
    let stdin = std::fs::read_dir(env.path("stdin")).unwrap().count();
    assert_eq!(stdin, 1);

    env.set_now(T0 + 2 * HOUR);
    env.set_env("FIXTURE_MODE", "succeed");
    rig.tick(&[]).ok();
    let runs = rig.runs("busy");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["payload_hash"], new_hash.as_str());
    let listed = env.run(&["runs", "busy"]).ok().stdout;
    assert!(listed.contains(&old_hash[..8]), "{listed}");
    assert!(listed.contains(&new_hash[..8]), "{listed}");
}

fn manual_runs(runs: &[Value]) -> Vec<&Value> {
    runs.iter().filter(|r| r["trigger"] == "manual").collect()
}

#[test]
fn trigger_runs_once_at_the_next_tick_without_moving_the_schedule() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "t"]);
    env.advance(600);
    let out = env
        .run(&["trigger", "t", "--reason", "testing the report"])
        .ok();
    assert!(out.stdout.contains("one extra run due"), "{}", out.stdout);
    assert_eq!(
        env.json(&["show", "t"])["next_run_at"],
        "2026-12-02T09:00:00Z",
        "the schedule does not move"
    );
    rig.tick(&[]).ok();
    let runs = rig.runs("t");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["trigger"], "manual");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T08:10:00Z");
    assert_eq!(rig.starts().len(), 1);
    let stdin = std::fs::read_dir(env.path("stdin"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let sent: Value =
        serde_json::from_str(&std::fs::read_to_string(stdin.path()).unwrap()).unwrap();
    assert_eq!(sent["run"]["trigger"], "manual");

    // At most once: another tick finds nothing.
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(
        env.json(&["show", "t"])["next_run_at"],
        "2026-12-02T09:00:00Z"
    );

    let log = env.run(&["log", "t"]).ok().stdout;
    assert!(log.contains("triggered a run: testing the report"), "{log}");
    let events = env.json(&["log", "t"]);
    let trigger = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "trigger")
        .unwrap();
    assert_eq!(trigger["actor"], "unix:tester");

    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let runs = rig.runs("t");
    assert_eq!(runs[0]["trigger"], "schedule");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T09:00:00Z");
}

#[test]
fn trigger_refusals_paused_pending_non_owner() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "p"]);
    env.run(&["pause", "p"]).ok();
    let out = env.run(&["trigger", "p"]).fails(5);
    assert!(out.stderr.contains("is paused"), "{}", out.stderr);
    env.run(&["resume", "p"]).ok();
    env.run(&["trigger", "p", "--as", "unix:mallory"]).fails(4);
    env.run(&["trigger", "p", "--tenant", "other"]).fails(3);
    env.run(&["trigger", "p"]).ok();
    let out = env.run(&["trigger", "p"]).fails(5);
    assert!(
        out.stderr.contains("already has a run triggered"),
        "{}",
        out.stderr
    );
    // Pausing drops the pending trigger: nothing runs while paused, nor after.
    env.run(&["pause", "p"]).ok();
    env.run(&["resume", "p"]).ok();
    rig.tick(&[]).ok();
    assert!(rig.starts().is_empty());
}

#[test]
fn a_trigger_not_claimed_within_grace_is_missed() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "g",
        "--grace",
        "60s",
    ]);
    env.run(&["trigger", "g"]).ok();
    env.advance(120);
    rig.tick(&[]).ok();
    let runs = rig.runs("g");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "missed");
    assert_eq!(runs[0]["trigger"], "manual");
    assert!(
        runs[0]["reason"]
            .as_str()
            .unwrap()
            .contains("after the trigger"),
        "{}",
        runs[0]["reason"]
    );
    assert!(rig.starts().is_empty());
}

#[test]
fn a_trigger_while_a_run_is_active_is_skipped_overlap() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "2");
    env.task(&["--instruction", "x", "--every", "1h", "--name", "o"]);
    env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &[]);
    wait_for("the executor to start", || !rig.starts().is_empty());
    env.advance(5);
    env.run(&["trigger", "o"]).ok();
    rig.tick(&[]).ok();
    let out = tick.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let runs = rig.runs("o");
    let manual = manual_runs(&runs);
    assert_eq!(manual.len(), 1);
    assert_eq!(manual[0]["status"], "skipped_overlap");
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn a_trigger_at_an_occurrence_second_takes_the_second_before() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "c"]);
    env.set_now(T0 + HOUR);
    env.run(&["trigger", "c"]).ok();
    rig.tick(&[]).ok();
    let runs = rig.runs("c");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let manual = manual_runs(&runs);
    assert_eq!(manual.len(), 1);
    assert_eq!(manual[0]["scheduled_for"], "2026-12-02T08:59:59Z");
    let scheduled: Vec<_> = runs.iter().filter(|r| r["trigger"] == "schedule").collect();
    assert_eq!(scheduled[0]["scheduled_for"], "2026-12-02T09:00:00Z");
}

#[test]
fn overlapping_ticks_run_a_trigger_at_most_once() {
    let rig = Rig::new();
    let env = &rig.env;
    for i in 0..5 {
        env.task(&[
            "--instruction",
            "x",
            "--every",
            "1h",
            "--name",
            &format!("m{i}"),
        ]);
        env.run(&["trigger", &format!("m{i}")]).ok();
    }
    let ticks: Vec<Child> = (0..4).map(|_| spawn_tick(&rig, &[])).collect();
    for child in ticks {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{:?} {} {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(rig.starts().len(), 5);
    assert_eq!(
        env.count("SELECT count(*) FROM runs WHERE trigger = 'manual'"),
        5
    );
    assert_eq!(
        env.count("SELECT count(*) FROM tasks WHERE trigger_at IS NOT NULL"),
        0
    );
}

#[test]
fn upcoming_merges_every_tasks_occurrences_in_time_order() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "hourly"]);
    env.task(&[
        "--instruction",
        "y",
        "--daily",
        "09:30",
        "--tz",
        "UTC",
        "--name",
        "daily",
    ]);
    env.task(&["--instruction", "z", "--every", "1h", "--name", "paused"]);
    env.run(&["pause", "paused"]).ok();
    env.task(&[
        "--instruction",
        "w",
        "--every",
        "1h",
        "--name",
        "theirs",
        "--as",
        "unix:bob",
    ]);
    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();

    let out = env.run(&["upcoming", "--within", "3h"]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    assert!(lines[0].starts_with("NEXT"), "{}", out.stdout);
    for (line, (next, task)) in lines[1..].iter().zip([
        ("2026-12-02 09:30 UTC", "daily"),
        ("2026-12-02 10:00 UTC", "hourly"),
        ("2026-12-02 11:00 UTC", "hourly"),
        ("2026-12-02 12:00 UTC", "hourly"),
    ]) {
        assert!(line.starts_with(next), "{line}");
        assert!(line.trim_end().ends_with(task), "{line}");
    }
    assert!(lines[2].contains("2026-12-02 09:00 UTC") && lines[2].contains("succeeded"));
    assert!(lines[1].contains(" -  "), "no run yet: {}", lines[1]);

    let rows = env.json(&["upcoming", "--within", "3h", "--limit", "2"]);
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert_eq!(rows[0]["name"], "daily");
    assert_eq!(rows[0]["left_seconds"], 1800);
    assert_eq!(rows[0]["last_status"], Value::Null);
    assert_eq!(rows[1]["at"], "2026-12-02T10:00:00Z");
    assert_eq!(rows[1]["last_status"], "succeeded");
    env.run(&["upcoming", "--within", "0s"]).fails(2);
}

#[test]
fn count_ends_a_schedule_and_the_task_completes_after_its_last_run() {
    let rig = Rig::new();
    let env = &rig.env;
    let d = env.draft(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--count",
        "2",
        "--name",
        "two",
    ]);
    assert_eq!(
        d["schedule"],
        serde_json::json!({"kind": "interval", "seconds": 3600, "anchor_at": T0,
                           "until": T0 + 2 * HOUR, "count": 2})
    );
    assert_eq!(
        d["next_runs"].as_array().unwrap().len(),
        2,
        "only two occurrences"
    );
    assert_eq!(d["next_runs_local"][1]["last"], true);
    assert_eq!(d["next_runs_local"][0]["last"], false);
    let human = env
        .run(&[
            "draft",
            "--instruction",
            "x",
            "--every",
            "1h",
            "--count",
            "2",
        ])
        .ok()
        .stdout;
    assert!(
        human.contains(
            "every 1h from 2026-12-02 08:00 UTC, 2 times (the last at 2026-12-02 10:00 UTC)"
        ),
        "{human}"
    );
    assert!(
        human.contains("2026-12-02 10:00 UTC  (in 2 h)  (the last)"),
        "{human}"
    );
    let id = d["draft_id"].as_str().unwrap();
    let hash = d["payload_hash"].as_str().unwrap();
    env.run(&["confirm", id, "--hash", hash]).ok();

    let next = env.json(&["next", "two"]);
    assert_eq!(next["next"].as_array().unwrap().len(), 2);
    assert_eq!(next["next"][1]["last"], true);
    assert!(env.run(&["next", "two"]).ok().stdout.contains("the last"));

    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert!(env.run(&["show", "two"]).ok().stdout.contains("(the last)"));
    assert_eq!(env.json(&["show", "two"])["state"], "active");
    env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    let shown = env.json(&["show", "two"]);
    assert_eq!(shown["state"], "completed");
    assert_eq!(shown["next_run_at"], Value::Null);
    assert_eq!(rig.starts().len(), 2);
    env.set_now(T0 + 5 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 2, "nothing after the last");
}

#[test]
fn until_is_in_the_hash_and_an_end_that_leaves_nothing_is_refused() {
    let env = TestEnv::new();
    let plain = env.draft(&["--instruction", "x", "--daily", "09:00", "--tz", "UTC"]);
    assert!(!plain["payload"].as_str().unwrap().contains("until"));
    let ends = env.draft(&[
        "--instruction",
        "x",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--until",
        "2026-12-04 12:00",
    ]);
    assert_ne!(plain["payload_hash"], ends["payload_hash"]);
    assert_eq!(ends["schedule"]["until"], T0 + 2 * 86400 + 4 * HOUR);
    assert_eq!(ends["next_runs"].as_array().unwrap().len(), 3);
    let out = env
        .run(&[
            "draft",
            "--instruction",
            "x",
            "--daily",
            "09:00",
            "--until",
            "2026-12-02 08:30",
        ])
        .fails(2);
    assert!(
        out.stderr.contains("no occurrence after now"),
        "{}",
        out.stderr
    );
    env.run(&["draft", "--instruction", "x", "--in", "1h", "--count", "2"])
        .fails(2);
    env.run(&[
        "draft",
        "--instruction",
        "x",
        "--every",
        "1h",
        "--count",
        "2",
        "--until",
        "2026-12-03",
    ])
    .fails(2);

    // A replacement keeps the end unless it is given again.
    let task = env.task(&[
        "--instruction",
        "x",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--until",
        "2026-12-04 12:00",
        "--name",
        "ending",
    ]);
    assert_eq!(task["schedule"]["until"], T0 + 2 * 86400 + 4 * HOUR);
    let d = env.json(&["draft", "--replace", "ending", "--daily", "10:00"]);
    assert_eq!(d["schedule"]["until"], T0 + 2 * 86400 + 4 * HOUR);
}

#[test]
fn spread_moves_every_occurrence_by_a_fixed_offset_from_the_hash() {
    let rig = Rig::new();
    let env = &rig.env;
    let d = env.draft(&[
        "--instruction",
        "x",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--spread",
        "15m",
        "--name",
        "s",
    ]);
    let offset = d["schedule"]["offset"].as_i64().unwrap();
    assert!((0..900).contains(&offset), "{offset}");
    assert_eq!(d["schedule"]["spread"], 900);
    // Anyone can recompute it: the payload's SHA-256 with the offset at 0.
    let payload = d["payload"].as_str().unwrap();
    let zeroed = payload.replacen(&format!(r#""offset":{offset}"#), r#""offset":0"#, 1);
    let digest = <sha2::Sha256 as sha2::Digest>::digest(zeroed.as_bytes());
    let first = u64::from_be_bytes(digest[..8].try_into().unwrap());
    assert_eq!((first % 900) as i64, offset);
    let first_run = T0 + HOUR + offset;
    assert_eq!(d["next_runs"][0], rfc3339(first_run));
    assert!(env
        .run(&[
            "draft",
            "--instruction",
            "x",
            "--daily",
            "09:00",
            "--spread",
            "15m"
        ])
        .ok()
        .stdout
        .contains("later (spread 15 min)"));
    let id = d["draft_id"].as_str().unwrap();
    let hash = d["payload_hash"].as_str().unwrap();
    env.run(&["confirm", id, "--hash", hash]).ok();
    let next = env.json(&["next", "s", "--count", "2"]);
    assert_eq!(next["next"][0]["at"], rfc3339(first_run));
    assert_eq!(next["next"][1]["at"], rfc3339(first_run + 86400));

    // Not before its moved time; at it, it runs.
    env.set_now(first_run - 1);
    rig.tick(&[]).ok();
    assert!(rig.starts().is_empty());
    env.set_now(first_run);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(rig.runs("s")[0]["scheduled_for"], rfc3339(first_run));

    env.run(&[
        "draft",
        "--instruction",
        "x",
        "--every",
        "10m",
        "--spread",
        "15m",
    ])
    .fails(2);
    env.run(&[
        "draft",
        "--instruction",
        "x",
        "--daily",
        "09:00",
        "--spread",
        "2h",
    ])
    .fails(2);
    env.run(&[
        "draft",
        "--instruction",
        "x",
        "--in",
        "1h",
        "--spread",
        "1m",
    ])
    .fails(2);
}

fn rfc3339(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[test]
fn upcoming_is_the_first_occurrences_of_all_tasks_whatever_the_limit() {
    // Interval tasks with prime periods: their occurrences interleave and tie
    // (7 x 11 minutes). `upcoming` stops reading tasks once the rest start
    // too late to make the list; whatever --limit, its rows must be the
    // first N of every task's occurrences merged by time, then in the order
    // tasks are listed (next run, then creation, then id).
    let env = TestEnv::new();
    let mut tasks = Vec::new();
    for minutes in [7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 120, 600] {
        let task = env.task(&[
            "--instruction",
            "x",
            "--every",
            &format!("{minutes}m"),
            "--name",
            &format!("every-{minutes}m"),
        ]);
        tasks.push((task["task_id"].as_str().unwrap().to_string(), minutes * 60));
    }
    // Half an hour on, no tick has run: the shorter tasks are overdue, and
    // upcoming lists them from their next run on, as before.
    let now = T0 + 1800;
    env.set_now(now);
    let end = now + 2 * HOUR;
    // (time, the task's next run, its id): all were created at T0.
    let mut all: Vec<(i64, i64, String)> = Vec::new();
    for (id, period) in &tasks {
        let mut at = T0 + period;
        while at <= end {
            all.push((at, T0 + period, id.clone()));
            at += period;
        }
    }
    all.sort();
    let all: Vec<(i64, String)> = all.into_iter().map(|(at, _, id)| (at, id)).collect();
    for limit in [1, 2, 5, 13, 40, all.len(), all.len() + 10] {
        let rows = env.json(&["upcoming", "--within", "2h", "--limit", &limit.to_string()]);
        let got: Vec<(i64, String)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    now + r["left_seconds"].as_i64().unwrap(),
                    r["task_id"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(i64, String)> = all.iter().take(limit).cloned().collect();
        assert_eq!(got, want, "--limit {limit}");
    }
}

#[test]
fn upcoming_lists_tasks_that_run_at_one_instant_in_the_order_list_shows_them() {
    // Five tasks at 09:00 (a morning burst) and an hourly one, created a
    // minute apart: at one instant, the task listed first (next run, then
    // the older) comes first, and `upcoming` stops reading once the rest
    // cannot make the list.
    let env = TestEnv::new();
    let mut created = Vec::new();
    let hourly = env.task(&["--instruction", "h", "--every", "1h", "--name", "hourly"]);
    created.push(hourly["task_id"].as_str().unwrap().to_string());
    for i in 1..=5 {
        env.set_now(T0 + 60 * i);
        let task = env.task(&[
            "--instruction",
            "d",
            "--daily",
            "09:00",
            "--tz",
            "UTC",
            "--name",
            &format!("burst-{i}"),
        ]);
        created.push(task["task_id"].as_str().unwrap().to_string());
    }
    let at_nine: Vec<(i64, String)> = created.iter().map(|id| (0, id.clone())).collect();
    let later: Vec<(i64, String)> = (1..=3).map(|h| (h * HOUR, created[0].clone())).collect();
    let all: Vec<(i64, String)> = at_nine.into_iter().chain(later).collect();
    for limit in 1..=all.len() {
        let rows = env.json(&["upcoming", "--within", "4h", "--limit", &limit.to_string()]);
        let got: Vec<(i64, String)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    // Seconds after 09:00 (T0 is 08:00, now five minutes on).
                    T0 + 300 + r["left_seconds"].as_i64().unwrap() - (T0 + HOUR),
                    r["task_id"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, all[..limit].to_vec(), "--limit {limit}");
    }
}
