//! What the executor and the notifier are told (docs/CONTRACT.md §6, §7,
//! §16), and that agentcron-executor(7) documents every key of it.
use super::*;
use crate::support::assert_contains;

fn stdin_of(rig: &Rig, run_id: &str) -> Value {
    let text = std::fs::read_to_string(rig.env.path("stdin").join(format!("{run_id}.json")))
        .expect("the executor's stdin was saved");
    serde_json::from_str(&text).unwrap()
}

fn latest_run_id(rig: &Rig) -> String {
    rig.runs("job")[0]["run_id"].as_str().unwrap().to_string()
}

#[test]
fn the_executor_is_told_the_previous_run_and_the_last_success() {
    let rig = rig_with_task(&[]);
    tick_replying(&rig, &succeeded("first digest"));
    let first = latest_run_id(&rig);
    assert!(stdin_of(&rig, &first)["previous"].is_null());
    let first_finished = rig.runs("job")[0]["finished_at"].clone();
    tick_replying(&rig, &failed("feed down"));
    let second = latest_run_id(&rig);
    let previous = &stdin_of(&rig, &second)["previous"];
    assert_eq!(previous["run_id"], first.as_str());
    assert_eq!(previous["status"], "succeeded");
    assert_eq!(previous["summary"], "first digest");
    assert_eq!(previous["finished_at"], first_finished);
    assert_eq!(previous["last_success_at"], first_finished);
    assert_eq!(
        previous["scheduled_for"],
        rig.runs("job")[1]["scheduled_for"]
    );
    tick_replying(&rig, &succeeded("third"));
    let previous = &stdin_of(&rig, &latest_run_id(&rig))["previous"];
    assert_eq!(previous["status"], "failed");
    assert_eq!(previous["summary"], "feed down");
    assert_eq!(
        previous["last_success_at"], first_finished,
        "the last success, not the last run"
    );
}

#[test]
fn a_run_reconciled_as_succeeded_is_the_last_success_the_executor_is_told() {
    // Issue 33 item 13: `reconcile --decision confirmed_succeeded` is a
    // success in the task's memory too.
    let rig = rig_with_task(&[]);
    tick_replying(&rig, &succeeded("first digest"));
    let first_finished = rig.runs("job")[0]["finished_at"].clone();
    rig.env.executors_sleep("5");
    rig.env.advance(STEP);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    let frozen = latest_run_id(&rig);
    assert_eq!(rig.runs("job")[0]["status"], "unknown");
    rig.env.advance(60);
    rig.env
        .run(&[
            "reconcile",
            &frozen,
            "--decision",
            "confirmed_succeeded",
            "--reason",
            "the report was sent",
        ])
        .ok();
    let reconciled = rig.runs("job")[0].clone();
    assert_eq!(reconciled["status"], "succeeded");
    assert_ne!(reconciled["finished_at"], first_finished);
    tick_replying(&rig, &succeeded("third"));
    let previous = &stdin_of(&rig, &latest_run_id(&rig))["previous"];
    assert_eq!(previous["run_id"], frozen.as_str());
    assert_eq!(previous["status"], "succeeded");
    assert_eq!(previous["last_success_at"], reconciled["finished_at"]);
}

#[test]
fn the_manual_documents_every_key_the_executor_and_notifier_receive() {
    let rig = rig_with_task(&["--notify", "always"]);
    tick_replying(&rig, &succeeded("one"));
    let sent = tick_replying(&rig, &succeeded("two"));
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man/agentcron-executor.7"),
    )
    .unwrap();
    let documented = |key: &str| page.contains(&format!("\\fB{key}\\fR"));
    let executor = stdin_of(&rig, &latest_run_id(&rig));
    let mut keys: Vec<String> = executor.as_object().unwrap().keys().cloned().collect();
    keys.extend(executor["previous"].as_object().unwrap().keys().cloned());
    keys.extend(sent[0].as_object().unwrap().keys().cloned());
    let missing: Vec<&String> = keys.iter().filter(|k| !documented(k)).collect();
    assert!(
        missing.is_empty(),
        "undocumented in agentcron-executor(7): {missing:?}"
    );
    assert!(page.contains("RFC 3339"));
    assert!(documented("continuation") && page.contains("\"decision\":\"approved\""));
}

#[test]
fn a_wait_deadline_that_is_not_rfc3339_fails_the_run_saying_so() {
    let rig = rig_with_task(&[]);
    tick_replying(
        &rig,
        r#"{"status":"awaiting_confirmation","wait_id":"w","wait_deadline":"2026-12-04 10:00"}"#,
    );
    let run = &rig.runs("job")[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(
        run["reason"],
        "malformed executor reply: wait_deadline \"2026-12-04 10:00\" is not an RFC 3339 time \
         such as 2026-12-04T10:00:00Z"
    );
}

#[test]
fn metrics_show_held_back_notices_and_count_finished_runs_past_a_prune() {
    let rig = rig_with_task(&["--max-retries", "0"]);
    tick_replying(&rig, &failed("a"));
    tick_replying(&rig, &failed("a"));
    tick_replying(&rig, &succeeded("b"));
    assert_eq!(rig.env.json(&["status"])["notices"]["suppressed"], 1);
    let text = rig.env.run(&["metrics"]).ok().stdout;
    assert_contains(&text, "agentcron_notices{state=\"suppressed\"} 1");
    assert_contains(&text, "# TYPE agentcron_runs_finished_total counter");
    assert_contains(&text, "agentcron_runs_finished_total{status=\"failed\"} 2");
    assert_contains(
        &text,
        "agentcron_runs_finished_total{status=\"succeeded\"} 1",
    );
    // Pruning the history does not lower a counter.
    rig.env.advance(40 * 86400);
    rig.env.run(&["prune", "--older-than", "30d"]).ok();
    assert_eq!(rig.env.count("SELECT count(*) FROM runs"), 0, "pruned");
    // `status` keeps the number of held-back notices, not the history: the
    // pruned one is gone from it too.
    assert_eq!(rig.env.json(&["status"])["notices"]["suppressed"], 0);
    let text = rig.env.run(&["metrics"]).ok().stdout;
    assert_contains(&text, "agentcron_runs_finished_total{status=\"failed\"} 2");
}
