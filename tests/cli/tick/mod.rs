//! `tick` with real processes: the executor and notifier fixtures journal
//! every invocation, and the journal is the ground truth for how many times
//! a side effect happened.
use crate::support::{assert_contains, Rig, Task, TestEnv, T0};

mod claims;
mod idle;
mod leases;
mod replies;
mod signals;

const HOUR: i64 = 3600;

#[test]
fn a_due_task_runs_once_and_a_second_tick_is_silent() {
    let rig = Rig::new();
    Task::named("h").confirm(&rig.env);
    // Nothing due yet: silence.
    let out = rig.tick(&[]).ok();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    rig.env.set_now(T0 + HOUR);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "run h for 2026-12-02 09:00 UTC");
    assert_contains(&out.stdout, "succeeded");
    assert_eq!(rig.starts().len(), 1);
    rig.env.advance(10);
    let out = rig.tick(&[]).ok();
    assert_eq!(out.stdout, "");
    assert_eq!(rig.starts().len(), 1);
    let runs = rig.runs("h");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["scheduled_for"], "2026-12-02T09:00:00Z");
    assert_eq!(
        rig.env.json(&["show", "h"])["next_run_at"],
        "2026-12-02T10:00:00Z"
    );
}

#[test]
fn the_executor_gets_the_protocol_on_stdin_and_in_its_environment() {
    let rig = Rig::new();
    let task = Task::new()
        .instruction("it's $(rm -rf /); `x` | ; \"q\" ü")
        .policy("confirm_writes")
        .tz("Europe/Berlin")
        .confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let start = &rig.starts()[0];
    let parts: Vec<&str> = start.split(' ').collect();
    let (run_id, token) = (parts[1], parts[2]);
    let stdin: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(rig.env.path("stdin").join(format!("{run_id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(stdin["instruction"], "it's $(rm -rf /); `x` | ; \"q\" ü");
    assert_eq!(stdin["policy"], "confirm_writes");
    assert_eq!(stdin["timezone"], "Europe/Berlin");
    assert_eq!(stdin["lease_token"], token);
    assert_eq!(stdin["payload_hash"], task["payload_hash"]);
    assert_eq!(stdin["continuation"], serde_json::Value::Null);
    assert_eq!(stdin["task"]["task_id"], task["task_id"]);
    assert_eq!(stdin["run"]["run_id"], run_id);
    assert_eq!(stdin["run"]["status"], "running");
    assert_eq!(stdin["run"]["scheduled_local"], "2026-12-02T10:00:00+01:00");
}

#[test]
fn a_run_later_than_grace_is_missed_and_does_not_execute() {
    let rig = Rig::new();
    Task::named("g").flags(&["--grace", "2m"]).confirm(&rig.env);
    rig.env.set_now(T0 + HOUR + 121);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "missed");
    assert!(rig.starts().is_empty());
    let run = &rig.runs("g")[0];
    assert_eq!(run["status"], "missed");
    assert_eq!(run["skipped_occurrences"], 1);
}

#[test]
fn downtime_coalesces_missed_occurrences_into_one_run_and_runs_the_latest() {
    let rig = Rig::new();
    Task::named("c").confirm(&rig.env);
    // Five occurrences (09:00 … 13:00) passed; the last is 30 s old.
    rig.env.set_now(T0 + 5 * HOUR + 30);
    rig.tick(&[]).ok();
    let runs = rig.runs("c");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let missed = runs.iter().find(|r| r["status"] == "missed").unwrap();
    assert_eq!(missed["skipped_occurrences"], 4);
    assert_eq!(missed["scheduled_for"], "2026-12-02T09:00:00Z");
    let ran = runs.iter().find(|r| r["status"] == "succeeded").unwrap();
    assert_eq!(ran["scheduled_for"], "2026-12-02T13:00:00Z");
    assert_eq!(rig.starts().len(), 1);
    // All of them late: one missed run for all five, nothing executed.
    let rig = Rig::new();
    Task::named("c").confirm(&rig.env);
    rig.env.set_now(T0 + 5 * HOUR + 600);
    rig.tick(&[]).ok();
    let runs = rig.runs("c");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["skipped_occurrences"], 5);
    assert!(rig.starts().is_empty());
    assert_eq!(
        rig.env.json(&["show", "c"])["next_run_at"],
        "2026-12-02T14:00:00Z"
    );
}

#[test]
fn a_once_task_is_retried_after_its_only_run_failed() {
    // Found by the model-based store test: on PostgreSQL the due query
    // produced a NULL "is retry" flag for a task with no next occurrence,
    // and every tick failed while such a retry was due.
    let rig = Rig::new();
    Task::named("o")
        .after("1h")
        .max_retries("1")
        .flags(&["--retry-backoff", "1m"])
        .confirm(&rig.env);
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.advance(3600);
    rig.tick(&[]).ok();
    assert_eq!(
        rig.env.json(&["show", "o"])["next_retry_at"],
        "2026-12-02T09:01:00Z"
    );
    rig.env.advance(60);
    rig.tick(&[]).ok();
    let attempts: Vec<i64> = rig
        .runs("o")
        .iter()
        .map(|r| r["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [2, 1]);
    assert_eq!(rig.env.json(&["show", "o"])["state"], "completed");
}

#[test]
fn failed_runs_are_retried_with_capped_exponential_backoff() {
    let rig = Rig::new();
    Task::named("r")
        .every("1d")
        .max_retries("2")
        .flags(&["--retry-backoff", "1m"])
        .confirm(&rig.env);
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    let task = rig.env.json(&["show", "r"]);
    assert_eq!(task["consecutive_failures"], 1);
    assert_eq!(task["next_retry_at"], "2026-12-03T08:01:00Z");
    // The schedule's own clock is untouched by the retry.
    assert_eq!(task["next_run_at"], "2026-12-04T08:00:00Z");
    rig.env.advance(59);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "not yet due");
    rig.env.advance(1);
    rig.tick(&[]).ok();
    let task = rig.env.json(&["show", "r"]);
    assert_eq!(
        task["next_retry_at"], "2026-12-03T08:03:00Z",
        "second retry after 2 × backoff"
    );
    rig.env.advance(120);
    rig.tick(&[]).ok();
    let task = rig.env.json(&["show", "r"]);
    assert_eq!(task["consecutive_failures"], 3);
    assert_eq!(
        task["next_retry_at"],
        serde_json::Value::Null,
        "max_retries reached"
    );
    let runs = rig.runs("r");
    let attempts: Vec<i64> = runs
        .iter()
        .map(|r| r["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [3, 2, 1]);
    assert!(runs
        .iter()
        .all(|r| r["scheduled_for"] == "2026-12-03T08:00:00Z"));
    assert_eq!(rig.starts().len(), 3);
    // A success resets the streak.
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.set_now(T0 + 2 * 86400);
    rig.tick(&[]).ok();
    assert_eq!(rig.env.json(&["show", "r"])["consecutive_failures"], 0);
}

#[test]
fn notices_are_delivered_once_with_the_outcome() {
    let rig = Rig::new();
    rig.with_notifier(0);
    Task::named("n")
        .flags(&["--target", "chat:42"])
        .confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "delivered to chat:42");
    let notices = rig.notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0]["target"], "chat:42");
    assert!(notices[0]["message"]
        .as_str()
        .unwrap()
        .contains("succeeded"));
    assert_eq!(notices[0]["run"]["status"], "succeeded");
    rig.env.advance(30);
    rig.tick(&[]).ok();
    assert_eq!(rig.notices().len(), 1, "never sent twice");
    assert_eq!(rig.runs("n")[0]["delivery_status"], "delivered");
}

#[test]
fn notifier_exit_75_means_retry_later_and_other_failures_are_never_resent() {
    let rig = Rig::new();
    rig.with_notifier(75);
    Task::named("t").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("t")[0]["delivery_status"], "pending");
    rig.env.set_env("NOTIFIER_EXIT", "0");
    // Backed off: not tried again before 60 s have passed.
    rig.env.advance(30);
    rig.tick(&[]).ok();
    assert_eq!(rig.notices().len(), 1, "no attempt within the backoff");
    assert_eq!(rig.runs("t")[0]["delivery_status"], "pending");
    rig.env.advance(31);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("t")[0]["delivery_status"], "delivered");
    assert_eq!(
        rig.notices().len(),
        2,
        "one temp-failed attempt, one delivery"
    );

    let rig = Rig::new();
    rig.with_notifier(1);
    Task::named("u").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("u")[0]["delivery_status"], "unknown");
    rig.env.set_env("NOTIFIER_EXIT", "0");
    rig.env.advance(30);
    rig.tick(&[]).ok();
    assert_eq!(rig.notices().len(), 1, "an unknown notice is never resent");
}

#[test]
fn without_a_notifier_notices_wait_and_tick_says_so_once() {
    let rig = Rig::new();
    Task::named("w").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stdout, "1 notice(s) pending: no notifier configured");
    rig.env.advance(30);
    assert_eq!(rig.tick(&[]).ok().stdout, "");
    rig.with_notifier(0);
    rig.tick(&[]).ok();
    assert_eq!(rig.notices().len(), 1);
}

#[test]
fn a_missing_executor_fails_the_run_and_the_tick() {
    let rig = Rig::new();
    rig.env
        .set_env("AGENTCRON_EXECUTOR", "/nonexistent/executor --flag");
    Task::named("m").max_retries("0").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    let out = rig.tick(&[]);
    assert_eq!(out.code, 1, "{} {}", out.stdout, out.stderr);
    let run = &rig.runs("m")[0];
    assert_eq!(run["status"], "failed");
    assert!(
        run["reason"].as_str().unwrap().contains("could not start"),
        "{run}"
    );
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let rig = Rig::new();
    Task::named("d").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    let before = rig.env.db_bytes();
    let out = rig.tick(&["--dry-run"]).ok();
    assert_contains(&out.stdout, "would run d");
    assert_eq!(rig.env.db_bytes(), before);
    assert!(rig.starts().is_empty());
}

#[test]
fn a_gap_between_ticks_is_reported_and_audited() {
    let rig = Rig::new();
    Task::named("s").confirm(&rig.env);
    rig.tick(&[]).ok();
    rig.env.advance(301);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stderr, "the host slept or cron was not running");
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM events WHERE action = 'scheduler_gap'"),
        1
    );
}

#[test]
fn an_unreadable_task_is_quarantined_and_others_still_run() {
    let rig = Rig::new();
    Task::named("bad").instruction("bad").confirm(&rig.env);
    Task::named("good").instruction("good").confirm(&rig.env);
    rig.env.sql(
        "UPDATE tasks SET schedule = '{\"kind\":\"sometimes\"}' WHERE name = 'bad' RETURNING 1",
    );
    rig.env.set_now(T0 + HOUR);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stdout, "quarantined");
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(
        rig.env.sql("SELECT state FROM tasks WHERE name = 'bad'")[0][0],
        "error"
    );
    assert_eq!(rig.runs("good")[0]["status"], "succeeded");
}

/// Every invocation's first connection reads every valid WAL frame to
/// rebuild the WAL index, so a WAL that only grows makes every later command
/// slower (issue 16: 18 MiB and ~4,900 preads per idle tick after 200 tasks).
#[test]
fn a_store_aged_by_many_invocations_keeps_its_wal_small() {
    if crate::support::on_postgres() {
        return;
    }
    let env = TestEnv::new();
    for i in 0..40 {
        Task::named(&format!("aged-{i}")).every("30d").confirm(&env);
    }
    env.advance(60);
    env.run(&["tick", "--executor", "true"]).ok();
    let wal = std::fs::metadata(env.path("state/agentcron.db-wal")).map_or(0, |m| m.len());
    assert!(wal <= 3 << 19, "the WAL grew to {wal} bytes");
    assert_eq!(env.count("SELECT count(*) FROM tasks"), 40);
}

/// Idle ticks alone grow the WAL too (each heartbeat is two frames, and no
/// checkpoint is owed for it), and every process reads the whole WAL as it
/// opens the store: past 256 KiB an idle tick folds and truncates it
/// (issue 46), keeping its heartbeat.
#[test]
fn idle_ticks_keep_the_wal_small() {
    if crate::support::on_postgres() {
        return;
    }
    let env = TestEnv::new();
    Task::named("monthly").every("30d").confirm(&env);
    let wal = || std::fs::metadata(env.path("state/agentcron.db-wal")).map_or(0, |m| m.len());
    let mut largest = 0;
    for _ in 0..48 {
        env.advance(60);
        env.run(&["tick", "--executor", "true"]).ok();
        largest = largest.max(wal());
    }
    // 48 heartbeats of 8 KiB would be 386 KiB.
    assert!(largest < 272 << 10, "the WAL grew to {largest} bytes");
    // The heartbeat is kept: in the store, or (an idle tick after an idle
    // tick) in the note beside it (`tick::idle`).
    let status = env.json(&["status"]);
    let last = chrono::DateTime::parse_from_rfc3339(status["last_tick_at"].as_str().unwrap());
    assert_eq!(last.unwrap().timestamp(), env.now(), "{status}");
}

const MINUTE: i64 = 60;

/// Item 5: an `--every` task drafted at :11 keeps cron's phase (its runs
/// fall on whole minutes), and its default grace covers a per-minute tick.
#[test]
fn an_interval_task_runs_in_phase_with_a_per_minute_cron() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_now(T0 + 11);
    let task = Task::named("m").every("1m").confirm(env);
    assert_eq!(task["next_run_at"], "2026-12-02T08:01:00Z", "{task}");
    assert_eq!(task["grace_seconds"], 90);
    // Cron's ticks at the top of each minute, each a few seconds in.
    for minute in 1..=3 {
        env.set_now(T0 + minute * MINUTE + 2);
        rig.tick(&[]).ok();
    }
    let statuses: Vec<String> = rig
        .runs("m")
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["succeeded"; 3], "none missed, none late");
    let late: Vec<i64> = env
        .sql("SELECT started_at - scheduled_for FROM runs")
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert!(
        late.iter().all(|s| *s <= 2),
        "started within the tick's 2 s: {late:?}"
    );
}
