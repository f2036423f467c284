//! Replacing a task's payload by a new draft (`draft --replace`, then
//! `confirm`): the diff, the refusals, a run in flight keeping its hash.
use crate::support::{
    assert_contains, daily, draft_ids, events, finished, replace_draft, spawn_tick, wait_for,
    Outcome, Rig, Task, TestEnv, HOUR, T0,
};

use serde_json::Value;

/// `draft --replace TASK --every 2h --as unix:alice` and `extra`.
fn replacing(env: &TestEnv, task: &str, extra: &[&str]) -> Outcome {
    let mut args = vec![
        "draft",
        "--replace",
        task,
        "--every",
        "2h",
        "--as",
        "unix:alice",
    ];
    args.extend_from_slice(extra);
    env.run(&args)
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
    assert_contains(
        &out.stdout,
        "  schedule: every day at 09:00 (UTC) → every day at 10:30 (UTC)\n",
    );
    // Named in words, the durations too (docs/CONTRACT.md §17).
    assert_contains(&out.stdout, "  grace: 1 min 30 s → 5 min\n");
    assert!(
        !out.stdout.contains("instruction:"),
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
        serde_json::json!([{"field": "schedule", "label": "schedule", "step_up": null,
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
    let (id, hash) = draft_ids(&d);
    let out = env.run(&["confirm", id, "--hash", hash]).ok();
    assert_contains(&out.stdout, "revision 1 → 2, hash ");
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

    let replace = &events(&env, &["digest"], "replace")[0];
    assert_eq!(replace["detail"]["old_payload_hash"], old_hash.as_str());
    assert_eq!(replace["detail"]["payload_hash"], hash);
    let words = env.run(&["log", "digest"]).ok().stdout;
    assert_contains(
        &words,
        &format!("hash {}… → {}…", &old_hash[..8], &hash[..8]),
    );
}

#[test]
fn replace_of_an_unchanged_payload_is_a_usage_error() {
    let env = TestEnv::new();
    daily(&env, "same");
    let out = env
        .run(&["draft", "--replace", "same", "--daily", "09:00"])
        .fails(2);
    assert_contains(&out.stderr, "unchanged");
    let out = Task::new()
        .schedule(&[])
        .default_notify()
        .try_draft(&env)
        .fails(2);
    assert_contains(&out.stderr, "required");
}

#[test]
fn replace_is_refused_when_the_task_moved_since_the_draft() {
    let env = TestEnv::new();
    daily(&env, "moving");
    // Paused meanwhile.
    let (id, hash) = replace_draft(&env, &["moving", "--daily", "11:00"]);
    env.run(&["pause", "moving"]).ok();
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(5);
    assert_contains(
        &out.stderr,
        "changed since the draft (revision 1 → 2, now paused)",
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
    assert_contains(&out.stderr, "now deleted");
    assert_eq!(
        env.count("SELECT count(*) FROM events WHERE action = 'replace'"),
        2
    );
}

#[test]
fn replace_refusals_expired_non_owner_other_tenant_deleted() {
    let env = TestEnv::new();
    let task = Task::named("mine").by("unix:alice").confirm(&env);
    let task_id = task.task_id.as_str();

    // Expired draft: exit 6, nothing changes.
    let (id, hash) = replace_draft(
        &env,
        &["mine", "--every", "2h", "--ttl", "1m", "--as", "unix:alice"],
    );
    env.advance(120);
    let out = env
        .run(&["confirm", &id, "--hash", &hash, "--as", "unix:alice"])
        .fails(6);
    assert_contains(&out.stderr, "expired");

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
    assert_contains(&out.stderr, "not an owner");
    let (id, hash) = replace_draft(&env, &["mine", "--every", "2h", "--as", "unix:alice"]);
    env.run(&["confirm", &id, "--hash", &hash, "--as", "unix:mallory"])
        .fails(4);

    // Another tenant: the id is denied, the name is unknown there.
    replacing(&env, task_id, &["--tenant", "other"]).fails(4);
    replacing(&env, "mine", &["--tenant", "other"]).fails(3);
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
    let out = replacing(&env, task_id, &[]).fails(5);
    assert_contains(&out.stderr, "is deleted");
    replacing(&env, "mine", &[]).fails(3);
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
    env.executors_sleep("2");
    let task = Task::named("busy").instruction("old words").confirm(env);
    let old_hash = task["payload_hash"].as_str().unwrap().to_string();
    env.set_now(T0 + HOUR);
    let tick = spawn_tick(&rig, &[]);
    wait_for("the executor to start", || !rig.starts().is_empty());

    let (id, new_hash) = replace_draft(env, &["busy", "--instruction", "new words"]);
    env.run(&["confirm", &id, "--hash", &new_hash]).ok();
    finished(tick, 0);

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

/// "Move the report to 10:00; nothing else changes" (issue 36 item 6):
/// `--daily` keeps a weekday calendar's days, `--days` keeps its time, and an
/// interval's new period keeps its anchor; `--cron` replaces the whole.
#[test]
fn a_replacement_changes_only_the_parts_of_the_schedule_its_flags_name() {
    let env = TestEnv::new();
    Task::named("report")
        .instruction("summarize")
        .daily("09:00")
        .tz("Asia/Shanghai")
        .flags(&["--days", "mon-fri"])
        .confirm(&env);
    let calendar = |d: &Value| {
        let payload: Value = serde_json::from_str(d["payload"].as_str().unwrap()).unwrap();
        (payload["schedule"].clone(), payload["timezone"].clone())
    };

    let moved = env.json(&["draft", "--replace", "report", "--daily", "10:00"]);
    let (schedule, zone) = calendar(&moved);
    assert_eq!(
        schedule,
        serde_json::json!({"kind": "calendar", "hour": 10, "minute": 0,
            "weekdays": [0, 1, 2, 3, 4]}),
        "the weekdays stay"
    );
    assert_eq!(zone, "Asia/Shanghai", "the zone stays");

    let days = env.json(&["draft", "--replace", "report", "--days", "weekends"]);
    assert_eq!(
        calendar(&days).0,
        serde_json::json!({"kind": "calendar", "hour": 9, "minute": 0, "weekdays": [5, 6]}),
        "the time of day stays"
    );

    let cron = env.json(&["draft", "--replace", "report", "--cron", "0 10 * * *"]);
    assert_eq!(
        calendar(&cron).0,
        serde_json::json!({"kind": "cron", "expr": "0 10 * * *"})
    );

    Task::named("poll")
        .instruction("poll")
        .flags(&["--start", "2026-12-01T00:20:00Z"])
        .confirm(&env);
    let every = env.json(&["draft", "--replace", "poll", "--every", "2h"]);
    assert_eq!(
        calendar(&every).0,
        serde_json::json!({"kind": "interval", "seconds": 7200,
            "anchor_at": 1796084400}),
        "the anchor stays"
    );

    // --days still needs a calendar to keep a time from.
    let out = env
        .run(&["draft", "--replace", "poll", "--days", "mon"])
        .fails(2);
    assert_contains(&out.stderr, "--days only goes with --daily");
    let help = env.run(&["draft", "--help"]).ok();
    assert_contains(&help.stdout, "replace it whole");
}
