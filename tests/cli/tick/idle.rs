//! An idle tick reads no table (docs/CONTRACT.md §6, issue 46 item 6): a
//! tick that found nothing to do leaves a note beside a SQLite store
//! saying until when nothing is due, and the ticks after it end at the note
//! without opening the store — until the clock reaches that instant, or
//! anything at all writes the store. Real processes, the clock pinned.
use crate::support::{assert_contains, on_postgres, orphaned_lease, Rig, Task, TestEnv, T0};

const HOUR: i64 = 3600;

/// What the store itself recorded of the last tick (`meta.last_tick_at`):
/// a tick that ended at the note recorded itself there only. Read through
/// a read-only connection: another one, closing last, would fold the WAL
/// into the file, a change of the files that ends the rest.
fn recorded_tick(env: &TestEnv) -> i64 {
    if on_postgres() {
        return env.sql("SELECT value FROM meta WHERE key = 'last_tick_at'")[0][0]
            .parse()
            .unwrap();
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let conn =
        rusqlite::Connection::open_with_flags(env.path("state/agentcron.db"), flags).unwrap();
    let value: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'last_tick_at'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    value.parse().unwrap()
}

/// The tick's time `status` reports.
fn status_tick(env: &TestEnv) -> String {
    env.json(&["status"])["last_tick_at"]
        .as_str()
        .unwrap()
        .to_string()
}

fn utc(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Two idle ticks a minute apart, then one more: the first records itself
/// in the store and leaves the note, the others end at it.
fn rest_after_an_idle_tick(rig: &Rig) {
    rig.tick(&[]).ok();
    let first = rig.env.now();
    rig.env.advance(60);
    rig.tick(&[]).ok();
    if !on_postgres() {
        assert_eq!(
            recorded_tick(&rig.env),
            first,
            "the second tick read no table"
        );
    }
}

#[test]
fn idle_ticks_after_an_idle_tick_record_themselves_beside_the_store() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("h").confirm(env);
    rest_after_an_idle_tick(&rig);
    env.advance(60);
    let out = rig.tick(&[]).ok();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    // `status`, `metrics` and `explain` know the last tick all the same.
    assert_eq!(status_tick(env), utc(env.now()));
    let metrics = env.run(&["metrics"]).ok().stdout;
    assert_contains(
        &metrics,
        &format!("agentcron_last_tick_timestamp_seconds {}", env.now()),
    );
    let hosts = env.json(&["status"])["hosts"].clone();
    assert_eq!(hosts[0]["last_tick_at"], utc(env.now()), "{hosts}");
    if on_postgres() {
        return;
    }
    assert_eq!(recorded_tick(env), env.now() - 120);
    assert!(env.path("state/agentcron.db-idle").exists());
    // Five quiet minutes are no gap: nothing reported, nothing audited.
    for _ in 0..5 {
        env.advance(60);
        assert_eq!(rig.tick(&[]).ok().stderr, "");
    }
    assert_eq!(
        env.count("SELECT count(*) FROM events WHERE action = 'scheduler_gap'"),
        0
    );
    // A tick after a longer quiet than that opens the store and says so.
    env.advance(301);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stderr, "the host slept or cron was not running");
    assert_eq!(recorded_tick(env), env.now());
}

#[test]
fn an_occurrence_is_run_at_its_instant_after_ticks_that_rested() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("h").confirm(env);
    rest_after_an_idle_tick(&rig);
    // Every minute up to one before 09:00: nothing runs.
    env.set_now(T0 + HOUR - 1);
    rig.tick(&[]).ok();
    assert!(rig.starts().is_empty());
    env.set_now(T0 + HOUR);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "run h for 2026-12-02 09:00 UTC");
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn a_retry_is_run_at_its_instant_after_ticks_that_rested() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("r")
        .every("1d")
        .max_retries("1")
        .flags(&["--retry-backoff", "5m"])
        .confirm(env);
    env.set_env("FIXTURE_MODE", "fail");
    env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    env.set_env("FIXTURE_MODE", "succeed");
    env.advance(60);
    rest_after_an_idle_tick(&rig);
    env.set_now(T0 + 86400 + 299);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "not yet due");
    env.set_now(T0 + 86400 + 300);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 2, "the retry ran at its instant");
}

#[test]
fn an_expired_lease_is_frozen_the_second_after_it_ends() {
    let rig = Rig::new();
    let env = &rig.env;
    // Its tick killed at 09:00: the lease ends at 09:05 and nothing renews it.
    orphaned_lease(&rig, "k", &["--lease", "5m"]);
    let until: i64 = env.sql("SELECT lease_until FROM runs")[0][0]
        .parse()
        .unwrap();
    env.set_now(T0 + HOUR + 60);
    rest_after_an_idle_tick(&rig);
    while env.now() + 60 < until {
        env.advance(60);
        rig.tick(&[]).ok();
    }
    env.set_now(until);
    rig.tick(&[]).ok();
    assert_eq!(
        rig.runs("k")[0]["status"],
        "running",
        "the lease holds to its end"
    );
    env.set_now(until + 1);
    let out = rig.tick(&[]).ok();
    assert_contains(&out.stdout, "lease expired");
    assert_eq!(rig.runs("k")[0]["status"], "unknown");
}

#[test]
fn a_command_that_writes_the_store_ends_the_rest_at_once() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("t").confirm(env);
    rest_after_an_idle_tick(&rig);
    env.run(&["trigger", "t"]).ok();
    env.advance(1);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "the trigger's run was claimed");
}

/// Not only agentcron's writes: the note holds while the store's files
/// are the ones it was read with, and anything that commits changes them.
#[test]
fn a_write_by_another_program_ends_the_rest_at_once() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("s").confirm(env);
    rest_after_an_idle_tick(&rig);
    env.sql(&format!(
        "UPDATE tasks SET next_run_at = {} WHERE name = 's' RETURNING 1",
        env.now()
    ));
    env.advance(1);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "the tick saw the task due");
}

#[test]
fn a_tick_of_another_deployment_records_it() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("d").confirm(env);
    rest_after_an_idle_tick(&rig);
    env.advance(60);
    rig.tick(&["--max-running", "3"]).ok();
    let out = env.run(&["status"]).ok().stdout;
    assert_contains(&out, "at most 3 (--max-running)");
    if !on_postgres() {
        assert_eq!(recorded_tick(env), env.now());
    }
}

#[test]
fn a_note_that_is_not_one_costs_only_the_store_open() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("n").confirm(env);
    rest_after_an_idle_tick(&rig);
    let note = env.path("state/agentcron.db-idle");
    // A note of other files, claiming nothing is due for ever.
    let mut forged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&note).unwrap()).unwrap();
    forged["until"] = serde_json::json!(i64::MAX);
    forged["files"] = serde_json::json!(format!("0{}", forged["files"].as_str().unwrap()));
    std::fs::write(&note, forged.to_string()).unwrap();
    env.advance(60);
    rig.tick(&[]).ok();
    assert_eq!(recorded_tick(env), env.now(), "the tick opened the store");
    // Half a note.
    env.advance(60);
    rig.tick(&[]).ok();
    std::fs::write(&note, "{\"at\":").unwrap();
    env.advance(60);
    rig.tick(&[]).ok();
    assert_eq!(recorded_tick(env), env.now());
    // None at all.
    env.advance(60);
    rig.tick(&[]).ok();
    std::fs::remove_file(&note).unwrap();
    env.advance(60);
    rig.tick(&[]).ok();
    assert_eq!(recorded_tick(env), env.now());
    // And the next occurrence runs on time.
    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn a_notice_held_back_is_sent_when_its_backoff_ends_after_ticks_that_rested() {
    let rig = Rig::new();
    let env = &rig.env;
    rig.with_notifier(75);
    Task::named("b").confirm(env);
    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("b")[0]["delivery_status"], "pending");
    env.set_env("NOTIFIER_EXIT", "0");
    // Its backoff ends a minute after the refusal.
    env.set_now(T0 + HOUR + 1);
    rig.tick(&[]).ok();
    env.set_now(T0 + HOUR + 30);
    rig.tick(&[]).ok();
    if !on_postgres() {
        assert_eq!(recorded_tick(env), T0 + HOUR + 1, "the tick rested");
    }
    assert_eq!(rig.notices().len(), 1, "no attempt within the backoff");
    env.set_now(T0 + HOUR + 62);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("b")[0]["delivery_status"], "delivered");
}

#[test]
fn a_notice_nobody_sends_is_given_up_at_its_instant_after_ticks_that_rested() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("g").confirm(env);
    env.set_now(T0 + HOUR);
    let give_up = ["--delivery-give-up", "5m"];
    let out = rig.tick(&give_up).ok();
    assert_contains(&out.stdout, "no notifier configured");
    // Announced once; then nothing to do until it is given up.
    let created: i64 = env.sql("SELECT created_at FROM deliveries")[0][0]
        .parse()
        .unwrap();
    env.set_now(created + 60);
    rig.tick(&give_up).ok();
    let rested = env.now();
    env.advance(60);
    rig.tick(&give_up).ok();
    if !on_postgres() {
        assert_eq!(recorded_tick(env), rested, "the tick rested");
    }
    for at in [created + 180, created + 240, created + 300] {
        env.set_now(at);
        rig.tick(&give_up).ok();
        assert_eq!(rig.runs("g")[0]["delivery_status"], "pending");
    }
    env.set_now(created + 301);
    rig.tick(&give_up).ok();
    assert_eq!(rig.runs("g")[0]["delivery_status"], "undeliverable");
}

/// A WAL started over keeps its length, and the commits after it write
/// inside that length under the same header: only the WAL index says that
/// another program committed while a connection kept the store open (so
/// that nothing folded the commit into the file at its close).
#[test]
fn a_commit_inside_a_wal_started_over_ends_the_rest() {
    if on_postgres() {
        return;
    }
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("w").confirm(env);
    let db = env.path("state/agentcron.db");
    let wal = env.path("state/agentcron.db-wal");
    let held = rusqlite::Connection::open(&db).unwrap();
    // A long WAL, every frame of it folded: the next commit (the tick's
    // record) starts it over, inside its length.
    for _ in 0..20 {
        held.execute("UPDATE tasks SET updated_at = updated_at", [])
            .unwrap();
    }
    held.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
        .unwrap();
    rest_after_an_idle_tick(&rig);
    let length = std::fs::metadata(&wal).unwrap().len();
    let other = rusqlite::Connection::open(&db).unwrap();
    other
        .execute(
            "UPDATE tasks SET next_run_at = ?1 WHERE name = 'w'",
            [env.now()],
        )
        .unwrap();
    drop(other);
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        length,
        "the commit was written inside the WAL's length"
    );
    env.advance(1);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1, "the tick saw the task due");
    drop(held);
}

/// The store records a tick at least every 4 minutes: a note lost (or
/// unreadable to a later build) never makes its record look like a gap.
#[test]
fn a_lost_note_is_no_gap() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("l").confirm(env);
    for _ in 0..7 {
        rig.tick(&[]).ok();
        env.advance(60);
    }
    let _ = std::fs::remove_file(env.path("state/agentcron.db-idle"));
    let out = rig.tick(&[]).ok();
    assert_eq!(out.stderr, "");
    assert_eq!(
        env.count("SELECT count(*) FROM events WHERE action = 'scheduler_gap'"),
        0
    );
}

/// A resting tick checks no folder, but the folder's mode is part of the
/// files the note holds for: the next tick opens the store and refuses.
#[test]
fn a_folder_others_may_write_is_refused_by_the_next_tick() {
    if on_postgres() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("f").confirm(env);
    rest_after_an_idle_tick(&rig);
    let folder = env.path("state");
    let mode = |m| std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(m));
    mode(0o777).unwrap();
    env.advance(60);
    let out = rig.tick(&[]);
    mode(0o700).unwrap();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_contains(&out.stderr, "0777");
}
