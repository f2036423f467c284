//! Zones that follow their owner (docs/CONTRACT.md §18): `draft --tz follow`,
//! `zone set|show|unset`, the re-timing of following tasks in the same
//! transaction, and what the tick, `show`, `next` and `explain` make of it.
use crate::support::{
    assert_contains, assert_starts_with, events, texts, write_script, Rig, Task, TestEnv, BIN,
};

use serde_json::Value;

/// 2026-12-03T01:30:00Z: 09:30 in Shanghai the day after T0.
const SHANGHAI_0930: i64 = 1_796_261_400;

fn follow_task(env: &TestEnv, name: &str, daily: &str) -> Value {
    Task::named(name)
        .instruction("stand-up summary")
        .daily(daily)
        .tz("follow")
        .confirm(env)
        .json
}

/// `zone set` never creates a store (a mistyped `--db` is exit 3): a draft
/// does, as a person's first draft would.
fn set_zone_in_new_store(env: &TestEnv, key: &str, zone: &str) {
    Task::new().instruction("first").default_notify().draft(env);
    env.run(&["zone", "set", key, zone]).ok();
}

#[test]
fn a_follow_draft_names_follow_and_its_default_and_says_whom_it_follows() {
    let env = TestEnv::new();
    set_zone_in_new_store(&env, "unix:tester", "Asia/Shanghai");
    let d = Task::new()
        .daily("09:30")
        .default_notify()
        .tz("follow")
        .draft(&env);
    let payload = d["payload"].as_str().unwrap();
    assert!(
        payload.starts_with(r#"{"follow_default":"Asia/Shanghai","#),
        "{payload}"
    );
    assert!(payload.ends_with(r#""timezone":"follow"}"#), "{payload}");
    assert_eq!(d["next_runs"][0], "2026-12-03T01:30:00Z");
    let out = Task::new()
        .daily("09:30")
        .default_notify()
        .tz("follow")
        .try_draft(&env)
        .ok();
    assert_contains(&out.stdout, "follows unix:tester (now Asia/Shanghai)");
    // With no zone for the key, the default is the zone the draft would
    // otherwise have had ($AGENTCRON_TZ here).
    let d = Task::new()
        .cron("0 9 * * *")
        .default_notify()
        .by("unix:bob")
        .tz("follow")
        .draft(&env);
    assert!(d["payload"]
        .as_str()
        .unwrap()
        .starts_with(r#"{"follow_default":"UTC","#));
}

#[test]
fn a_payload_without_follow_hashes_as_before() {
    let env = TestEnv::new();
    let d = Task::new()
        .daily("09:30")
        .default_notify()
        .tz("Asia/Shanghai")
        .draft(&env);
    // Written out by hand and hashed outside agentcron (sha256sum): the
    // payload a fixed-zone draft has, without follow_default (with the
    // notice policy a new draft writes since issue 25).
    assert_eq!(
        d["payload"],
        r#"{"grace_seconds":90,"instruction":"x","max_retries":3,"name":null,"notify":"attention","owner_keys":["unix:tester"],"policy":"read_only","realert_seconds":3600,"retry_backoff_seconds":60,"schedule":{"hour":9,"kind":"calendar","minute":30,"weekdays":[]},"target":"unix:tester","tenant_key":"default","timezone":"Asia/Shanghai"}"#
    );
    assert_eq!(
        d["payload_hash"],
        "62ce3db8d3f7b543d7d03561d1e0b1375389aff1b34c77d945a4688ac682869b"
    );
}

#[test]
fn follow_is_refused_for_once_and_interval_and_an_unknown_zone_is_a_usage_error() {
    let env = TestEnv::new();
    if !crate::support::on_postgres() {
        // No store yet: zone set creates none.
        env.run(&["zone", "set", "unix:tester", "UTC"]).fails(3);
        assert!(!env.db.exists());
    }
    Task::new()
        .instruction("first")
        .default_notify()
        .draft(&env);
    for schedule in [
        &["--every", "1h"][..],
        &["--in", "2h"],
        &["--at", "2026-12-05 10:00"],
    ] {
        let mut args = vec!["draft", "--instruction", "x", "--tz", "follow"];
        args.extend_from_slice(schedule);
        let out = env.run(&args).fails(2);
        assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
        assert_starts_with(
            &out.stderr,
            "agentcron: error: --tz follow needs a --daily or --cron schedule",
        );
    }
    let out = env
        .run(&["zone", "set", "unix:tester", "Mars/Base"])
        .fails(2);
    assert_contains(&out.stderr, "Mars/Base");
    assert!(out.stdout.is_empty());
    env.run(&["zone", "set", "", "UTC"]).fails(2);
    // Nothing was written by the refusals.
    let shown = env.json(&["zone", "show", "unix:tester"]);
    assert_eq!(shown["zone"], Value::Null);
}

#[test]
fn zone_set_retimes_following_tasks_and_never_a_fixed_one() {
    let env = TestEnv::new();
    set_zone_in_new_store(&env, "unix:tester", "Asia/Shanghai");
    follow_task(&env, "standup", "09:30");
    let fixed = Task::named("fixed")
        .instruction("fixed")
        .daily("09:30")
        .tz("Asia/Shanghai")
        .confirm(&env);
    let shown = env.json(&["show", "standup"]);
    assert_eq!(shown["timezone"], "Asia/Shanghai");
    assert_eq!(shown["follows"], "unix:tester");
    assert_eq!(shown["next_run_at"], "2026-12-03T01:30:00Z");

    let moved = env.json(&["zone", "set", "unix:tester", "Europe/Berlin"]);
    assert_eq!(moved["changed"], true);
    assert_eq!(moved["old_zone"], "Asia/Shanghai");
    assert_eq!(moved["zone"], "Europe/Berlin");
    let retimed = moved["retimed"].as_array().unwrap();
    assert_eq!(retimed.len(), 1, "{moved}");
    assert_eq!(retimed[0]["name"], "standup");
    assert_eq!(retimed[0]["old_next_run_at"], "2026-12-03T01:30:00Z");
    // 08:00Z is 09:00 in Berlin: today's 09:30 is still ahead.
    assert_eq!(retimed[0]["next_run_at"], "2026-12-02T08:30:00Z");

    let shown = env.json(&["show", "standup"]);
    assert_eq!(shown["timezone"], "Europe/Berlin");
    assert_eq!(shown["follow_default"], "Asia/Shanghai");
    assert_eq!(shown["next_run_at"], "2026-12-02T08:30:00Z");
    // Re-timing is bookkeeping, not a person's change: same payload, same revision.
    assert_eq!(shown["revision"], 1);
    let still = env.json(&["show", "fixed"]);
    assert_eq!(still["timezone"], "Asia/Shanghai");
    assert_eq!(still["next_run_at"], fixed["next_run_at"]);
    assert_eq!(still["updated_at"], fixed["updated_at"]);
    let out = env.run(&["show", "standup"]).ok();
    assert_contains(&out.stdout, "Europe/Berlin, follows unix:tester");
    env.run(&["check"]).ok();
}

#[test]
fn the_audit_trail_names_actor_zones_and_runs_and_the_same_zone_again_changes_nothing() {
    let env = TestEnv::new();
    follow_task(&env, "standup", "09:30");
    env.run(&[
        "--as",
        "unix:host",
        "zone",
        "set",
        "unix:tester",
        "Asia/Shanghai",
    ])
    .ok();
    let sets = events(&env, &["--limit", "1000"], "zone_set");
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0]["actor"], "unix:host");
    assert_eq!(sets[0]["detail"]["identity_key"], "unix:tester");
    assert_eq!(sets[0]["detail"]["old_zone"], Value::Null);
    assert_eq!(sets[0]["detail"]["new_zone"], "Asia/Shanghai");
    let retimes = events(&env, &["--limit", "1000"], "retime");
    assert_eq!(retimes.len(), 1);
    let detail = &retimes[0]["detail"];
    assert_eq!(detail["from_zone"], "UTC");
    assert_eq!(detail["to_zone"], "Asia/Shanghai");
    assert_eq!(detail["old_next_run_at"], "2026-12-02T09:30:00Z");
    assert_eq!(detail["next_run_at"], "2026-12-03T01:30:00Z");
    assert_eq!(retimes[0]["actor"], "unix:host");

    // The same zone again: no write, no event, no re-time.
    let again = env.json(&["zone", "set", "unix:tester", "Asia/Shanghai"]);
    assert_eq!(again["changed"], false);
    assert_eq!(again["retimed"], serde_json::json!([]));
    let out = env
        .run(&["zone", "set", "unix:tester", "Asia/Shanghai"])
        .ok();
    assert_contains(&out.stdout, "already has zone Asia/Shanghai");
    assert_eq!(events(&env, &["--limit", "1000"], "zone_set").len(), 1);
    assert_eq!(events(&env, &["--limit", "1000"], "retime").len(), 1);

    // Unset: the task falls back on its own default, audited the same way.
    let unset = env.json(&["zone", "unset", "unix:tester"]);
    assert_eq!(unset["zone"], Value::Null);
    assert_eq!(unset["retimed"][0]["to_zone"], "UTC");
    assert_eq!(events(&env, &["--limit", "1000"], "zone_unset").len(), 1);
    assert_eq!(env.json(&["show", "standup"])["timezone"], "UTC");
    assert_eq!(
        env.json(&["zone", "unset", "unix:tester"])["changed"],
        false
    );

    // `zone show`: one key, or all of the tenant's.
    env.run(&["zone", "set", "unix:bob", "Europe/Berlin"]).ok();
    let all = env.json(&["zone", "show"]);
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all[0]["identity_key"], "unix:bob");
    assert_eq!(all[0]["set_by"], "unix:tester");
    let out = env.run(&["zone", "show"]).ok();
    assert_contains(&out.stdout, "Europe/Berlin");
    // Another tenant has its own zones.
    assert_eq!(
        env.json(&["--tenant", "other", "zone", "show", "unix:bob"])["zone"],
        Value::Null
    );
}

#[test]
fn follow_across_a_dst_change_of_the_new_zone() {
    let rig = Rig::new();
    let env = &rig.env;
    // 2027-03-13T12:00Z; New York springs forward on Sunday 2027-03-14.
    env.set_now(1_804_939_200);
    follow_task(env, "night", "02:30");
    env.run(&["zone", "set", "unix:tester", "America/New_York"])
        .ok();
    let next = env.json(&["next", "night", "--count", "3"]);
    assert_eq!(next["timezone"], "America/New_York");
    // 02:30 does not exist on the 14th: it runs at 03:30 EDT, once.
    assert_eq!(next["next"][0]["at"], "2027-03-14T07:30:00Z");
    assert_eq!(next["next"][0]["local"], "2027-03-14T03:30:00-04:00");
    assert_eq!(next["next"][0]["dst_shifted_from"], "02:30");
    assert_eq!(next["next"][1]["local"], "2027-03-15T02:30:00-04:00");
    env.set_now(1_805_009_400 + 5);
    rig.tick(&[]).ok();
    let runs = rig.runs("night");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["scheduled_local"], "2027-03-14T03:30:00-04:00");
    assert_eq!(
        env.json(&["show", "night"])["next_run_at"],
        "2027-03-15T06:30:00Z"
    );
}

#[test]
fn an_occurrence_due_at_the_change_runs_at_the_old_time_and_the_next_in_the_new_zone() {
    let rig = Rig::new();
    let env = &rig.env;
    set_zone_in_new_store(env, "unix:tester", "Asia/Shanghai");
    follow_task(env, "standup", "09:30");
    // The Shanghai 09:30 is due and no tick has claimed it yet.
    env.set_now(SHANGHAI_0930 + 20);
    let moved = env.json(&["zone", "set", "unix:tester", "Europe/Berlin"]);
    // Left to the claim: its next run is not moved.
    assert_eq!(moved["retimed"][0]["next_run_at"], "2026-12-03T01:30:00Z");
    rig.tick(&[]).ok();
    let runs = rig.runs("standup");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["scheduled_for"], "2026-12-03T01:30:00Z");
    assert_eq!(runs[0]["status"], "succeeded");
    // The offset in force when it was claimed.
    assert_eq!(runs[0]["scheduled_local"], "2026-12-03T02:30:00+01:00");
    let run_id = runs[0]["run_id"].as_str().unwrap();
    let stdin: Value = serde_json::from_str(
        &std::fs::read_to_string(env.path("stdin").join(format!("{run_id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(stdin["timezone"], "Europe/Berlin");
    assert_eq!(stdin["task"]["follows"], "unix:tester");
    // The claim computed the next occurrence in Berlin.
    assert_eq!(
        env.json(&["show", "standup"])["next_run_at"],
        "2026-12-03T08:30:00Z"
    );
    let explained = env.json(&["explain", "standup"]);
    let paragraph = explained["explanation"].as_str().unwrap();
    assert!(
        paragraph.contains("re-timed from Asia/Shanghai to Europe/Berlin at 2026-12-03 02:30"),
        "{explained}"
    );
}

#[test]
fn a_zone_change_while_a_run_is_in_flight_lets_it_finish_and_moves_the_next() {
    let rig = Rig::new();
    let env = &rig.env;
    set_zone_in_new_store(env, "unix:tester", "Asia/Shanghai");
    follow_task(env, "standup", "09:30");
    // The host learns the zone while the run holds its lease: the executor
    // says it started and waits for the test to set the zone from outside
    // the run (a run may not change schedules itself, docs/CONTRACT.md §19).
    let executor = env.path("moving-executor.sh");
    let (started, go) = (env.path("inflight.started"), env.path("inflight.go"));
    write_script(
        &executor,
        &format!(
            "#!/bin/sh\ncat > {stdin}\ntouch '{started}'\n\
             i=0; while [ ! -e '{go}' ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done\n\
             '{BIN}' lease check \"$AGENTCRON_RUN_ID\" --token \"$AGENTCRON_LEASE_TOKEN\" \
             && echo '{{\"status\":\"succeeded\",\"summary\":\"done in flight\"}}'\n",
            stdin = env.path("inflight.json").display(),
            started = started.display(),
            go = go.display(),
        ),
    );
    env.set_env("AGENTCRON_EXECUTOR", executor.to_str().unwrap());
    env.set_now(SHANGHAI_0930 + 20);
    let tick = crate::support::spawn_tick(&rig, &[]);
    crate::support::wait_for("the run to start", || started.exists());
    let moved = env.json(&["zone", "set", "unix:tester", "Europe/Berlin"]);
    std::fs::write(&go, "").unwrap();
    let out = tick.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // The claim had moved next_run_at to tomorrow's Shanghai 09:30; the
    // zone change moved it to today's Berlin 09:30.
    assert_eq!(
        moved["retimed"][0]["old_next_run_at"],
        "2026-12-04T01:30:00Z"
    );
    assert_eq!(moved["retimed"][0]["next_run_at"], "2026-12-03T08:30:00Z");
    let runs = rig.runs("standup");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[0]["summary"], "done in flight");
    // The run keeps the zone it started under; the executor was told Shanghai.
    assert_eq!(runs[0]["scheduled_local"], "2026-12-03T09:30:00+08:00");
    let stdin: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("inflight.json")).unwrap()).unwrap();
    assert_eq!(stdin["timezone"], "Asia/Shanghai");
    let shown = env.json(&["show", "standup"]);
    assert_eq!(shown["next_run_at"], "2026-12-03T08:30:00Z");
    assert_eq!(shown["timezone"], "Europe/Berlin");
    // `explain` reads an occurrence before the re-time in the zone then in
    // force: the run's own Shanghai 09:30, not Berlin's 09:30 before it.
    let run_id = runs[0]["run_id"].as_str().unwrap();
    let explained = env.json(&["explain", run_id]);
    assert_eq!(
        explained["occurrence"], "2026-12-03T01:30:00Z",
        "{explained}"
    );
    assert_eq!(explained["run"]["run_id"], run_id, "{explained}");
}

#[test]
fn a_paused_following_task_resumes_in_the_zone_in_force() {
    let env = TestEnv::new();
    follow_task(&env, "standup", "09:30");
    env.run(&["pause", "standup"]).ok();
    let moved = env.json(&["zone", "set", "unix:tester", "Asia/Shanghai"]);
    assert_eq!(moved["retimed"][0]["next_run_at"], Value::Null);
    let resumed = env.json(&["resume", "standup"]);
    assert_eq!(resumed["timezone"], "Asia/Shanghai");
    assert_eq!(resumed["next_run_at"], "2026-12-03T01:30:00Z");
}

#[test]
fn export_and_import_carry_zones_and_verify_following_payloads() {
    let env = TestEnv::new();
    set_zone_in_new_store(&env, "unix:tester", "Asia/Shanghai");
    follow_task(&env, "standup", "09:30");
    let dump = env.run(&["export"]).ok().stdout;
    assert!(dump.contains(r#""table":"zones""#), "{dump}");
    let target = TestEnv::new();
    let file = env.path("dump.jsonl");
    std::fs::write(&file, &dump).unwrap();
    target.run(&["import", file.to_str().unwrap()]).ok();
    let shown = target.json(&["show", "standup"]);
    assert_eq!(shown["timezone"], "Asia/Shanghai");
    assert_eq!(shown["follows"], "unix:tester");
    assert_eq!(
        target.json(&["zone", "show", "unix:tester"])["zone"],
        "Asia/Shanghai"
    );
    // A following task made to follow someone else is not what was confirmed.
    let edited = dump.replace(
        r#""follow_key":"unix:tester""#,
        r#""follow_key":"unix:mallory""#,
    );
    assert_ne!(edited, dump);
    std::fs::write(&file, edited).unwrap();
    let out = TestEnv::new()
        .run(&["import", file.to_str().unwrap()])
        .fails(2);
    assert_contains(&out.stderr, "follow_key");
}

#[test]
fn plan_and_apply_take_tz_follow() {
    let env = TestEnv::new();
    set_zone_in_new_store(&env, "unix:tester", "Asia/Shanghai");
    let file = env.path("tasks.toml");
    std::fs::write(
        &file,
        "[standup]\ninstruction = \"stand-up summary\"\ndaily = \"09:30\"\ntz = \"follow\"\n",
    )
    .unwrap();
    let plan = env.json(&["plan", file.to_str().unwrap()]);
    let hash = plan["plan_hash"].as_str().unwrap().to_string();
    env.run(&["apply", file.to_str().unwrap(), "--hash", &hash])
        .ok();
    let shown = env.json(&["show", "standup"]);
    assert_eq!(shown["timezone"], "Asia/Shanghai");
    assert_eq!(shown["follows"], "unix:tester");
    // The owner moving is no change to the file.
    env.run(&["zone", "set", "unix:tester", "Europe/Berlin"])
        .ok();
    let out = env.run(&["plan", file.to_str().unwrap()]).ok();
    assert_starts_with(&out.stdout, "no changes");
}

#[test]
fn zone_set_completes_the_identity_keys_the_tenant_knows() {
    let env = TestEnv::new();
    set_zone_in_new_store(&env, "unix:zed", "Asia/Tokyo");
    follow_task(&env, "standup", "09:30");
    Task::new()
        .cron("0 9 * * *")
        .by("unix:yan")
        .tz("follow")
        .confirm(&env);
    let complete = |words: &[&str]| -> Vec<String> {
        let out = env
            .command(&[])
            .env("COMPLETE", "fish")
            .arg("--")
            .args(words)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        complete(&["agentcron", "zone", "set", "unix:"]),
        ["unix:tester", "unix:yan", "unix:zed"]
    );
    assert_eq!(
        complete(&["agentcron", "zone", "set", "unix:z"]),
        ["unix:zed"]
    );
    assert!(
        complete(&["agentcron", "zone", "set", "unix:zed", "Europe/Be"])
            .contains(&"Europe/Berlin".to_string())
    );
    assert!(complete(&["agentcron", "draft", "--tz", "fo"]).contains(&"follow".to_string()));
}

#[test]
fn a_replacement_keeps_following_and_its_default_unless_tz_says_otherwise() {
    let env = TestEnv::new();
    set_zone_in_new_store(&env, "unix:tester", "Asia/Shanghai");
    follow_task(&env, "standup", "09:30");
    env.run(&["zone", "set", "unix:tester", "Europe/Berlin"])
        .ok();
    // A new time: still following, the default it was confirmed with kept,
    // the next runs shown in the zone in force.
    let d = env.draft(&["--replace", "standup", "--daily", "10:00"]);
    let payload = d["payload"].as_str().unwrap();
    assert!(
        payload.contains(r#""follow_default":"Asia/Shanghai""#),
        "{payload}"
    );
    assert!(payload.contains(r#""timezone":"follow""#), "{payload}");
    assert_eq!(d["next_runs"][0], "2026-12-02T09:00:00Z");
    let id = d["draft_id"].as_str().unwrap();
    let hash = d["payload_hash"].as_str().unwrap();
    env.run(&["confirm", id, "--hash", hash]).ok();
    let shown = env.json(&["show", "standup"]);
    assert_eq!(shown["timezone"], "Europe/Berlin");
    assert_eq!(shown["next_run_at"], "2026-12-02T09:00:00Z");
    // A fixed zone ends the following: the diff names both fields.
    let d = env.draft(&["--replace", "standup", "--tz", "Asia/Tokyo"]);
    let fields: Vec<&str> = texts(&d["diff"], "field");
    assert_eq!(fields, ["follow_default", "timezone"]);
    let id = d["draft_id"].as_str().unwrap();
    let hash = d["payload_hash"].as_str().unwrap();
    env.run(&["confirm", id, "--hash", hash]).ok();
    let shown = env.json(&["show", "standup"]);
    assert_eq!(shown["timezone"], "Asia/Tokyo");
    assert_eq!(shown.get("follows"), None);
    // No longer following: the next zone change leaves it alone.
    let moved = env.json(&["zone", "set", "unix:tester", "America/New_York"]);
    assert_eq!(moved["retimed"], serde_json::json!([]));
    // And an interval cannot keep following.
    env.run(&[
        "draft",
        "--replace",
        "standup",
        "--tz",
        "follow",
        "--every",
        "1h",
    ])
    .fails(2);
}
