//! `log`: the audit trail, newest first, to owners only, in words.
use crate::support::{standup_following_shanghai, texts, Rig, Task, TestEnv, T0};

use serde_json::Value;

const HOUR: i64 = 3600;

#[test]
fn log_shows_the_audit_trail_newest_first_to_owners_only() {
    let rig = Rig::new();
    Task::named("l").confirm(&rig.env);
    rig.env.json(&["pause", "l", "--reason", "holiday"]);
    let log = rig.env.json(&["log", "l"]);
    let actions: Vec<&str> = texts(&log, "action");
    assert_eq!(actions, ["pause", "confirm"]);
    assert_eq!(log[0]["actor"], "unix:tester");
    assert_eq!(log[0]["detail"]["reason"], "holiday");
    assert_eq!(
        rig.env
            .json(&["log", "--as", "mallory"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn log_merges_every_tenants_events_with_the_tenants_newest_first_once_each() {
    let rig = Rig::new();
    Task::named("l").confirm(&rig.env);
    rig.tick(&[]).ok();
    // A tick for every tenant after a gap records the gap for every
    // tenant (`*`); the tenant's own log shows it among its events.
    rig.env.set_now(T0 + 3 * HOUR);
    rig.tick(&[]).ok();
    rig.env.json(&["pause", "l"]);
    let log = |args: &[&str]| -> Vec<(i64, String)> {
        let mut all = vec!["log"];
        all.extend_from_slice(args);
        rig.env
            .json(&all)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["event_id"].as_i64().unwrap(),
                    e["action"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let mine = log(&["--limit", "1000"]);
    assert_eq!(mine[0].1, "pause");
    assert!(
        mine.windows(2).all(|w| w[0].0 > w[1].0),
        "newest first, each once: {mine:?}"
    );
    let gaps = |events: &[(i64, String)]| events.iter().filter(|e| e.1 == "scheduler_gap").count();
    assert_eq!(gaps(&mine), 1, "{mine:?}");
    assert!(mine.iter().any(|e| e.1 == "confirm"), "{mine:?}");
    // The all-tenants key itself lists its events once, not once per walk.
    let every = log(&["--tenant", "*", "--limit", "1000"]);
    assert_eq!(gaps(&every), 1, "{every:?}");
    assert_eq!(every.len(), 1, "{every:?}");
    // The limit keeps the newest.
    assert_eq!(log(&["--limit", "1"]).len(), 1);
}

#[test]
fn log_says_zone_moves_applies_and_denials_in_words() {
    let rig = Rig::new();
    let env = &rig.env;
    standup_following_shanghai(env);
    env.run(&["zone", "set", "unix:tester", "Europe/Berlin"])
        .ok();
    env.run(&["zone", "unset", "unix:tester"]).ok();
    let file = env.write(
        "tasks.toml",
        "source = \"ops\"\n[nightly]\ninstruction = \"x\"\ndaily = \"02:00\"\ntz = \"UTC\"\n",
    );
    let plan = env.json(&["plan", &file]);
    env.run(&[
        "apply",
        &file,
        "--hash",
        plan["plan_hash"].as_str().unwrap(),
    ])
    .ok();
    let run_id = crate::support::parked_run(&rig, "p");
    env.run(&["deny", &run_id, "--wait-id", "w1"]).ok();
    let log = env.run(&["log", "--limit", "100"]).ok().stdout;
    for words in [
        "set unix:tester's zone: Asia/Shanghai → Europe/Berlin",
        "unset unix:tester's zone (was Europe/Berlin)",
        "re-timed from Asia/Shanghai to Europe/Berlin",
        "confirmed by apply of source:ops (plan ",
        "denied wait w1: the run is failed",
    ] {
        assert!(log.contains(words), "missing {words:?} in:\n{log}");
    }
    assert!(!log.contains("identity_key="), "{log}");
    assert!(!log.contains("confirmed draft ,"), "{log}");
    let actions: Vec<Value> = env
        .json(&["log", "--limit", "100"])
        .as_array()
        .unwrap()
        .clone();
    assert!(actions.iter().any(|e| e["action"] == "deny"), "{actions:?}");
}

#[test]
fn log_reads_an_action_a_newer_build_wrote_as_its_detail() {
    let env = TestEnv::new();
    standup_following_shanghai(&env);
    let tenant = env.sql("SELECT tenant_key FROM tasks LIMIT 1")[0][0].clone();
    env.sql(&format!(
        "INSERT INTO events (at, tenant_key, actor, action, task_id, run_id, detail)
         VALUES ({T0}, '{tenant}', 'agentcron:tick', 'budget_exceeded', NULL, NULL,
                 '{{\"spent\":3}}')"
    ));
    let log = env.run(&["log", "--limit", "100"]).ok().stdout;
    let line = log.lines().find(|l| l.contains("budget_exceeded"));
    assert!(line.is_some_and(|l| l.contains("spent=3")), "{log}");
    let events = env.json(&["log", "--limit", "100"]);
    let newer = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "budget_exceeded");
    assert_eq!(
        newer.map(|e| e["detail"]["spent"].clone()),
        Some(3.into()),
        "{events}"
    );
}
