//! How a schedule ends and where it falls: `--count`, `--until`, `--spread`.
use crate::support::{assert_contains, rfc3339, Rig, Task, TestEnv, HOUR, T0};

use serde_json::Value;

#[test]
fn count_ends_a_schedule_and_the_task_completes_after_its_last_run() {
    let rig = Rig::new();
    let env = &rig.env;
    let d = Task::named("two")
        .default_notify()
        .flags(&["--count", "2"])
        .draft(env);
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
    let human = Task::new()
        .default_notify()
        .flags(&["--count", "2"])
        .try_draft(env)
        .ok()
        .stdout;
    assert!(
        human.contains(
            "every 1h from 2026-12-02 08:00 UTC, 2 times (the last at 2026-12-02 10:00 UTC)"
        ),
        "{human}"
    );
    assert_contains(&human, "2026-12-02 10:00 UTC  (in 2 h)  (the last)");
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
    let plain = Task::new()
        .daily("09:00")
        .default_notify()
        .tz("UTC")
        .draft(&env);
    assert!(!plain["payload"].as_str().unwrap().contains("until"));
    let ends = Task::new()
        .daily("09:00")
        .default_notify()
        .tz("UTC")
        .flags(&["--until", "2026-12-04 12:00"])
        .draft(&env);
    assert_ne!(plain["payload_hash"], ends["payload_hash"]);
    assert_eq!(ends["schedule"]["until"], T0 + 2 * 86400 + 4 * HOUR);
    assert_eq!(ends["next_runs"].as_array().unwrap().len(), 3);
    let out = Task::new()
        .daily("09:00")
        .default_notify()
        .flags(&["--until", "2026-12-02 08:30"])
        .try_draft(&env)
        .fails(2);
    assert_contains(&out.stderr, "no occurrence after now");
    Task::new()
        .after("1h")
        .default_notify()
        .flags(&["--count", "2"])
        .try_draft(&env)
        .fails(2);
    Task::new()
        .default_notify()
        .flags(&["--count", "2", "--until", "2026-12-03"])
        .try_draft(&env)
        .fails(2);

    // A replacement keeps the end unless it is given again.
    let task = Task::named("ending")
        .daily("09:00")
        .tz("UTC")
        .flags(&["--until", "2026-12-04 12:00"])
        .confirm(&env);
    assert_eq!(task["schedule"]["until"], T0 + 2 * 86400 + 4 * HOUR);
    let d = env.json(&["draft", "--replace", "ending", "--daily", "10:00"]);
    assert_eq!(d["schedule"]["until"], T0 + 2 * 86400 + 4 * HOUR);
}

#[test]
fn spread_moves_every_occurrence_by_a_fixed_offset_from_the_hash() {
    let rig = Rig::new();
    let env = &rig.env;
    let d = Task::named("s")
        .daily("09:00")
        .default_notify()
        .tz("UTC")
        .flags(&["--spread", "15m"])
        .draft(env);
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
    assert!(Task::new()
        .daily("09:00")
        .default_notify()
        .flags(&["--spread", "15m"])
        .try_draft(env)
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

    Task::new()
        .every("10m")
        .default_notify()
        .flags(&["--spread", "15m"])
        .try_draft(env)
        .fails(2);
    Task::new()
        .daily("09:00")
        .default_notify()
        .flags(&["--spread", "2h"])
        .try_draft(env)
        .fails(2);
    Task::new()
        .after("1h")
        .default_notify()
        .flags(&["--spread", "1m"])
        .try_draft(env)
        .fails(2);
}
