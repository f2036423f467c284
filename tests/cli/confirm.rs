//! `confirm`: only the exact hash, in time, by an owner, creates a task.
use crate::support::{assert_contains, Task, TestEnv};

fn ids(d: &serde_json::Value) -> (String, String) {
    (
        d["draft_id"].as_str().unwrap().to_string(),
        d["payload_hash"].as_str().unwrap().to_string(),
    )
}

fn task_count(env: &TestEnv) -> i64 {
    env.count("SELECT count(*) FROM tasks")
}

#[test]
fn confirm_creates_an_active_task_at_revision_one_and_removes_the_draft() {
    let env = TestEnv::new();
    let confirmed = Task::named("hourly").default_notify().confirm(&env);
    let (id, hash, task) = (confirmed.draft_id, confirmed.hash, confirmed.json);
    assert_eq!(task["state"], "active");
    assert_eq!(task["revision"], 1);
    assert_eq!(task["name"], "hourly");
    assert_eq!(task["payload_hash"], hash.as_str());
    assert_eq!(task["next_run_at"], "2026-12-02T09:00:00Z");
    for field in [
        "task_id",
        "tenant_key",
        "owner_keys",
        "target",
        "instruction",
        "schedule",
        "timezone",
        "policy",
        "created_at",
        "updated_at",
        "grace_seconds",
        "max_retries",
        "retry_backoff_seconds",
        "consecutive_failures",
        "next_retry_at",
    ] {
        assert!(task.get(field).is_some(), "missing {field}");
    }
    assert_eq!(env.count("SELECT count(*) FROM drafts"), 0);
    // A second confirm of the same draft finds nothing, and says what
    // became of it: drafting again would make a second task.
    let again = env.run(&["confirm", &id, "--hash", &hash]).fails(3);
    let task_id = task["task_id"].as_str().unwrap();
    assert_contains(
        &again.stderr,
        &format!(
            "was confirmed at 2026-12-02 08:00 UTC as task hourly ({})",
            &task_id[..8]
        ),
    );
    assert!(!again.stderr.contains("draft again"), "{}", again.stderr);
    assert_eq!(task_count(&env), 1);
    let events = env.sql("SELECT action FROM events ORDER BY event_id");
    assert_eq!(
        events,
        vec![vec!["draft".to_string()], vec!["confirm".to_string()]]
    );
}

#[test]
fn confirm_with_wrong_hash_creates_nothing() {
    let env = TestEnv::new();
    let (id, hash) = ids(&Task::new().after("1h").default_notify().draft(&env));
    let wrong = format!(
        "{}{}",
        &hash[..63],
        if hash.ends_with('0') { "1" } else { "0" }
    );
    let out = env.run(&["confirm", &id, "--hash", &wrong]).fails(6);
    assert!(out.stderr.contains("hash"));
    assert_eq!(task_count(&env), 0);
    env.run(&["confirm", &id, "--hash", "abc"]).fails(2);
    env.run(&["confirm", &id, "--hash", &hash.to_uppercase()])
        .ok();
}

#[test]
fn confirm_after_expiry_creates_nothing() {
    let env = TestEnv::new();
    let (id, hash) = ids(&Task::new()
        .default_notify()
        .flags(&["--ttl", "10m"])
        .draft(&env));
    env.advance(600);
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(6);
    assert_contains(&out.stderr, "expired");
    assert_eq!(task_count(&env), 0);
}

#[test]
fn confirm_by_another_owner_or_tenant_is_denied() {
    let env = TestEnv::new();
    let (id, hash) = ids(&Task::new()
        .after("1h")
        .default_notify()
        .by("alice")
        .draft(&env));
    let out = env
        .run(&["confirm", &id, "--hash", &hash, "--as", "mallory"])
        .fails(4);
    assert_contains(&out.stderr, "not an owner of this draft");
    env.run(&[
        "confirm", &id, "--hash", &hash, "--as", "alice", "--tenant", "other",
    ])
    .fails(4);
    assert_eq!(task_count(&env), 0);
    env.run(&[
        "confirm", &id, "--hash", &hash, "--as", "bob", "--as", "alice",
    ])
    .ok();
}

#[test]
fn confirm_refuses_a_tampered_draft() {
    let env = TestEnv::new();
    let (id, hash) = ids(&Task::new()
        .instruction("read only")
        .after("1h")
        .default_notify()
        .draft(&env));
    env.sql("UPDATE drafts SET payload = replace(payload, 'read only', 'rm -rf /') RETURNING 1");
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(6);
    assert_contains(&out.stderr, "altered");
    assert_eq!(task_count(&env), 0);
}

#[test]
fn confirm_refuses_a_once_schedule_whose_time_passed() {
    let env = TestEnv::new();
    let (id, hash) = ids(&Task::new()
        .after("5m")
        .default_notify()
        .flags(&["--ttl", "1h"])
        .draft(&env));
    env.advance(600);
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(6);
    assert_contains(&out.stderr, "no occurrence");
}

#[test]
fn confirm_of_an_unknown_draft_is_not_found() {
    let env = TestEnv::new();
    env.run(&["confirm", "no-such-draft", "--hash", &"a".repeat(64)])
        .fails(3);
}

/// Issue 36 item 3: draft ids take unique prefixes, as task and run ids do.
#[test]
fn confirm_takes_a_unique_prefix_of_the_draft_id() {
    let env = TestEnv::new();
    let (id, hash) = ids(&Task::named("p").default_notify().draft(&env));
    env.run(&["confirm", &id[..3], "--hash", &hash]).fails(3);
    let task = env.json(&["confirm", &id[..8], "--hash", &hash]);
    assert_eq!(task["name"], "p");
    // Again by the same prefix: what became of it, not "no draft".
    let again = env.run(&["confirm", &id[..8], "--hash", &hash]).fails(3);
    assert_contains(&again.stderr, "was confirmed at");
}
