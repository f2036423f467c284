//! Task management: list, show, pause, resume, delete, next; addressing by
//! id, prefix and name; tenants, owners and revisions.
use crate::support::{
    assert_contains, assert_starts_with, standup_following_shanghai, texts, Rig, Task, TestEnv,
    SHANGHAI_0930,
};

fn id(task: &serde_json::Value) -> String {
    task["task_id"].as_str().unwrap().to_string()
}

#[test]
fn tasks_are_addressed_by_id_prefix_and_name() {
    let env = TestEnv::new();
    let task = Task::named("report").confirm(&env);
    let full = id(&task.json);
    for arg in [full.as_str(), &full[..4], &full[..8], "report"] {
        assert_eq!(env.json(&["show", arg])["task_id"], full.as_str(), "{arg}");
    }
    let out = env.run(&["show", &full[..3]]).fails(3);
    assert_contains(&out.stderr, "at least 4");
    env.run(&["show", "nope"]).fails(3);
}

/// `list` prints tasks as the store yields them, a page of rows at a time on
/// PostgreSQL: past several pages, every task comes once, in the listing's
/// order (next to run first, those that will not run again last, then by
/// age and id), and the JSON is the pretty document it always was.
#[test]
fn list_streams_every_task_in_order_past_a_page() {
    let env = TestEnv::new();
    let first = Task::new().confirm(&env);
    // 600 copies of its row (the payload does not hold the id), at seven
    // different next runs, a tenth of them paused with no next run.
    env.sql(
        "INSERT INTO tasks (task_id, tenant_key, name, owner_keys, target, instruction, schedule,
             timezone, policy, grace_seconds, max_retries, retry_backoff_seconds, payload,
             payload_hash, state, state_reason, state_changed_at, next_run_at, revision,
             created_at, updated_at)
         WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 600)
         SELECT task_id || '-' || n, tenant_key, name, owner_keys, target, instruction, schedule,
             timezone, policy, grace_seconds, max_retries, retry_backoff_seconds, payload,
             payload_hash, CASE WHEN n % 10 = 0 THEN 'paused' ELSE state END, state_reason,
             state_changed_at, CASE WHEN n % 10 = 0 THEN NULL ELSE next_run_at + (n % 7) * 3600 END,
             revision, created_at - n % 3, updated_at
         FROM tasks, g",
    );
    let out = env.run(&["--json", "list"]).ok();
    let list = out.json();
    assert_eq!(
        out.stdout,
        format!("{}\n", serde_json::to_string_pretty(&list).unwrap()),
        "the streamed array is the document printed at once"
    );
    let tasks = list.as_array().unwrap();
    assert_eq!(tasks.len(), 601);
    let mut ids: Vec<&str> = tasks
        .iter()
        .map(|t| t["task_id"].as_str().unwrap())
        .collect();
    let key = |t: &serde_json::Value| {
        (
            t["next_run_at"].is_null(),
            t["next_run_at"].as_str().unwrap_or("").to_string(),
            t["created_at"].as_str().unwrap().to_string(),
            t["task_id"].as_str().unwrap().to_string(),
        )
    };
    let keys: Vec<_> = tasks.iter().map(key).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "in the listing's order");
    assert_eq!(keys.iter().filter(|k| k.0).count(), 60, "paused ones last");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 601, "each task once");
    assert!(ids.contains(&id(&first.json).as_str()));
    // The table has every row too (after its header).
    assert_eq!(env.run(&["list"]).ok().stdout.lines().count(), 602);
}

#[test]
fn list_shows_only_the_callers_tasks_in_the_tenant() {
    let env = TestEnv::new();
    Task::new().instruction("mine").by("alice").confirm(&env);
    Task::new().instruction("theirs").by("bob").confirm(&env);
    Task::new()
        .instruction("elsewhere")
        .by("alice")
        .tenant("t2")
        .confirm(&env);
    let list = env.json(&["list", "--as", "alice"]);
    let instructions: Vec<&str> = texts(&list, "instruction");
    assert_eq!(instructions, ["mine"]);
    assert_eq!(
        env.json(&["list", "--as", "alice", "--tenant", "t2"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        env.json(&["list", "--as", "carol"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    // Human output: a table with a header, and nothing at all when empty.
    let out = env.run(&["list", "--as", "alice"]).ok();
    assert_starts_with(&out.stdout, "ID");
    assert!(out.stdout.contains("mine"));
    assert!(env.run(&["list", "--as", "carol"]).ok().stdout.is_empty());
}

#[test]
fn another_owner_or_tenant_cannot_see_or_change_a_task() {
    let env = TestEnv::new();
    let task = Task::named("a1").by("alice").confirm(&env);
    let full = id(&task.json);
    let out = env.run(&["pause", &full, "--as", "bob"]).fails(4);
    assert_contains(&out.stderr, "not an owner");
    env.run(&["show", &full, "--as", "bob"]).fails(4);
    env.run(&["show", &full, "--as", "alice", "--tenant", "t2"])
        .fails(4);
    // By name or prefix, another tenant's task is invisible.
    env.run(&["show", "a1", "--as", "alice", "--tenant", "t2"])
        .fails(3);
    env.run(&["show", &full[..8], "--as", "alice", "--tenant", "t2"])
        .fails(3);
    assert_eq!(
        env.json(&["show", "a1", "--as", "alice"])["state"],
        "active"
    );
}

#[test]
fn pause_resume_delete_bump_the_revision_and_are_audited() {
    let env = TestEnv::new();
    let task = Task::named("p").confirm(&env);
    let paused = env.json(&["pause", "p", "--reason", "vacation"]);
    assert_eq!(paused["state"], "paused");
    assert_eq!(paused["revision"], 2);
    assert_eq!(paused["pause_reason"], "vacation");
    assert_eq!(paused["next_run_at"], serde_json::Value::Null);
    let shown = env.run(&["show", "p"]).ok();
    assert_contains(&shown.stdout, "vacation");
    // Resuming three and a half hours later does not catch up.
    env.advance(3 * 3600 + 1800);
    let resumed = env.json(&["resume", "p"]);
    assert_eq!(resumed["state"], "active");
    assert_eq!(resumed["revision"], 3);
    assert_eq!(resumed["next_run_at"], "2026-12-02T12:00:00Z");
    let deleted = env.json(&["delete", &id(&task.json)]);
    assert_eq!(deleted["state"], "deleted");
    assert_eq!(env.json(&["list"]).as_array().unwrap().len(), 0);
    assert_eq!(env.json(&["list", "--all"]).as_array().unwrap().len(), 1);
    let actions = env.sql("SELECT action FROM events ORDER BY event_id");
    let actions: Vec<&str> = actions.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(actions, ["draft", "confirm", "pause", "resume", "delete"]);
    // The name is free again after delete.
    Task::named("p").instruction("y").confirm(&env);
}

#[test]
fn wrong_state_and_stale_revision_are_conflicts_that_change_nothing() {
    let env = TestEnv::new();
    let gone = Task::named("gone").confirm(&env);
    let gone = gone.task_id.as_str();
    env.json(&["delete", gone]);
    Task::named("c").confirm(&env);
    env.json(&["pause", "c"]);
    let before = env.db_bytes();
    let out = env.run(&["pause", gone]).fails(5);
    assert_contains(&out.stderr, "deleted");
    let out = env.run(&["resume", gone]).fails(5);
    assert_contains(&out.stderr, "deleted");
    // Pausing a paused task is not a conflict, and writes nothing either.
    assert!(env
        .run(&["pause", "c"])
        .ok()
        .stdout
        .contains("already paused"));
    let out = env.run(&["resume", "c", "--expect-revision", "1"]).fails(5);
    assert_contains(&out.stderr, "revision");
    assert_eq!(env.db_bytes(), before);
    assert_eq!(
        env.json(&["resume", "c", "--expect-revision", "2"])["revision"],
        3
    );
}

#[test]
fn resuming_a_once_task_after_its_time_records_one_missed_run_and_completes() {
    let env = TestEnv::new();
    Task::named("o").after("1h").confirm(&env);
    env.json(&["pause", "o"]);
    env.advance(7200);
    let resumed = env.json(&["resume", "o"]);
    assert_eq!(resumed["state"], "completed");
    let shown = env.json(&["show", "o"]);
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "missed");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T09:00:00Z");
}

#[test]
fn resuming_a_once_task_whose_run_already_happened_completes_without_a_second_run() {
    // Found by the model-based store test: the resume recorded a second
    // `missed` run for the occurrence and failed on the unique key (exit 1),
    // leaving the task paused for good.
    let env = TestEnv::new();
    Task::named("o").after("1h").confirm(&env);
    env.advance(3600);
    // An executor that fails: a retry is pending, so the task stays active.
    env.set_env("AGENTCRON_EXECUTOR", "false");
    env.run(&["tick"]);
    assert_eq!(env.json(&["show", "o"])["state"], "active");
    env.json(&["pause", "o"]);
    let resumed = env.json(&["resume", "o"]);
    assert_eq!(resumed["state"], "completed");
    let runs = env.json(&["runs", "o"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "failed");
}

#[test]
fn next_lists_occurrences_in_the_task_zone_with_dst_marks() {
    let env = TestEnv::new();
    env.set_now(1_772_900_000); // 2026-03-07, before the US spring-forward
    Task::named("n")
        .daily("02:30")
        .tz("America/New_York")
        .confirm(&env);
    let next = env.json(&["next", "n", "--count", "3"]);
    let items = next["next"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["at"], "2026-03-08T07:30:00Z");
    assert_eq!(items[0]["local"], "2026-03-08T03:30:00-04:00");
    assert!(items[0]["dst_shifted_from"].is_string());
    assert!(items[1]["dst_shifted_from"].is_null());
    let out = env.run(&["next", "n", "--count", "3"]).ok();
    assert_contains(&out.stdout, "DST");
}

#[test]
fn control_characters_in_stored_text_are_escaped_for_people() {
    let env = TestEnv::new();
    Task::named("e")
        .instruction("evil \u{1b}[31mred\u{1b}[0m \u{202e}txt")
        .confirm(&env);
    let out = env.run(&["show", "e"]).ok();
    assert!(!out.stdout.contains('\u{1b}'), "raw ESC in output");
    assert!(
        !out.stdout.contains('\u{202e}'),
        "raw bidi override in output"
    );
    assert_contains(&out.stdout, "\\x1b[31m");
    // JSON keeps the exact text (escaped by JSON itself).
    assert_eq!(
        env.json(&["show", "e"])["instruction"],
        "evil \u{1b}[31mred\u{1b}[0m \u{202e}txt"
    );
}

#[test]
fn no_hint_tells_a_caller_to_declare_an_owners_key() {
    let env = TestEnv::new();
    Task::named("h").confirm(&env);
    let out = env.run(&["--as", "unix:mallory", "pause", "h", "--reason", "r"]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(!text.contains("--as KEY"), "{text}");
    let readme = include_str!("../../README.md");
    assert!(readme.contains("`--as` is a declared label, not authentication"));
}

const HOUR: i64 = 3600;

#[test]
fn show_says_an_approved_run_waits_for_the_tick_not_for_a_person() {
    let rig = Rig::new();
    let run_id = crate::support::parked_run(&rig, "p");
    let out = rig.env.run(&["show", "p"]).ok();
    assert_contains(&out.stdout, "waits for `agentcron approve`");
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    let out = rig.env.run(&["show", "p"]).ok();
    assert_contains(
        &out.stdout,
        "approved by unix:tester; the next tick runs it",
    );
    assert!(
        !out.stdout.contains("waits for `agentcron approve`"),
        "{}",
        out.stdout
    );
}

#[test]
fn list_and_upcoming_show_a_pending_retry_as_the_next_run() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("daily")
        .flags(&["--retry-backoff", "5m"])
        .confirm(env);
    env.set_env("FIXTURE_MODE", "fail");
    env.advance(HOUR);
    rig.tick(&[]).ok();
    let task = env.json(&["show", "daily"]);
    assert!(task["next_retry_at"].is_string(), "{task}");
    let list = env.run(&["list"]).ok().stdout;
    assert_contains(&list, "(retry)");
    let upcoming = env.run(&["upcoming"]).ok().stdout;
    assert_contains(&upcoming, "(retry)");
    let rows = env.json(&["upcoming"]);
    assert_eq!(rows[0]["retry"], true, "{rows}");
    assert_eq!(rows[0]["at"], task["next_retry_at"], "{rows}");
}

#[test]
fn empty_results_say_so_and_name_the_tenants_the_caller_has() {
    let env = TestEnv::new();
    Task::named("h").tenant("acme").confirm(&env);
    let out = env.run(&["--tenant", "acm", "list"]).ok();
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("No tasks in tenant 'acm'")
            && out.stderr.contains("you have tasks in tenant 'acme' (1)"),
        "{}",
        out.stderr
    );
    let out = env
        .run(&["--tenant", "acme", "upcoming", "--within", "10m"])
        .ok();
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Nothing due within 10 min in tenant 'acme'");
}

#[test]
fn a_time_in_the_future_is_never_now_and_list_says_who_a_task_follows() {
    let env = TestEnv::new();
    standup_following_shanghai(&env);
    env.set_now(SHANGHAI_0930 - 30);
    let list = env.run(&["list"]).ok().stdout;
    assert_contains(&list, "(in 30 s)");
    assert!(!list.contains("(now)"), "{list}");
    assert_contains(&list, "follows unix:tester");
}

#[test]
fn pausing_a_paused_task_and_resuming_an_active_one_change_nothing() {
    let env = TestEnv::new();
    Task::named("p").confirm(&env);
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
    assert_contains(
        &out.stdout,
        ") is already paused; nothing changed (revision 2).",
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
