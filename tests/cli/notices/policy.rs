//! The ten cases of the issue, pause-after, and the policy's place in the
//! payload (draft, show, replace, files, old hashes).
use crate::support::{
    assert_contains, events, spawn_tick, wait_for, write_script, Rig, Task, TestEnv, T0,
};

use super::*;

#[test]
fn a_failure_streak_is_told_once_per_window_and_reason_then_its_recovery_once() {
    // A 20-minute re-alert window, so that it passes within a few ticks.
    let rig = rig_with_task(&["--realert", "20m"]);
    // 1. The first failure is sent.
    let sent = tick_replying(&rig, &failed("timeout"));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["kind"], "failure");
    assert_eq!(sent[0]["suppressed_since_last"], 0);
    // 2. The same failure within the hour is held back, as a ledger row.
    assert!(tick_replying(&rig, &failed("timeout")).is_empty());
    assert_eq!(
        last_notice(&rig),
        ("suppressed".into(), Some("duplicate failure".into()))
    );
    assert!(tick_replying(&rig, &failed("timeout")).is_empty());
    // 3. A failure of another class (here the executor's `error_kind`;
    // the summary alone never makes one: docs/CONTRACT.md §16) is sent.
    let http = r#"{"status":"failed","summary":"HTTP 500","error_kind":"http"}"#;
    let sent = tick_replying(&rig, http);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["suppressed_since_last"], 2);
    assert!(
        sent[0]["message"]
            .as_str()
            .unwrap()
            .ends_with("(2 similar failures since 2026-12-02 08:10 UTC were not sent)"),
        "{}",
        sent[0]["message"]
    );
    // 4. Past the window the same failure is sent again, with the count:
    // 08:20 sent, 08:25-08:35 held back, 08:40 is 20 minutes on.
    for _ in 0..3 {
        assert!(tick_replying(&rig, http).is_empty());
    }
    let sent = tick_replying(&rig, http);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["suppressed_since_last"], 3);
    // A reminder says how many runs it covers, and the last one's words.
    assert_eq!(
        sent[0]["message"],
        "job is still failing: 4 more failed runs since the last notice (2026-12-02 08:20 UTC); \
         the last (2026-12-02 08:40 UTC): error kind: http — HTTP 500"
    );
    // 5. The recovery is sent once; the next identical success is not.
    let sent = tick_replying(&rig, &succeeded("all green"));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["kind"], "recovery");
    assert!(tick_replying(&rig, &succeeded("all green")).is_empty());
    assert_eq!(
        last_notice(&rig),
        ("suppressed".into(), Some("unchanged content".into()))
    );
}

#[test]
fn under_attention_only_changed_content_is_news() {
    let rig = rig_with_task(&[]);
    // 7. New content is sent; 6. the same content again is silent.
    assert_eq!(tick_replying(&rig, &succeeded("3 new tickets")).len(), 1);
    assert!(tick_replying(&rig, &succeeded("3 new tickets")).is_empty());
    let sent = tick_replying(&rig, &succeeded("4 new tickets"));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["kind"], "success");
    assert_eq!(sent[0]["suppressed_since_last"], 1);
    // An empty summary is never news; the executor may force a notice.
    assert!(tick_replying(&rig, r#"{"status":"succeeded"}"#).is_empty());
    let forced = tick_replying(
        &rig,
        r#"{"status":"succeeded","summary":"4 new tickets","notify":true}"#,
    );
    assert_eq!(forced.len(), 1);
    let silenced = tick_replying(
        &rig,
        r#"{"status":"succeeded","summary":"5 new","notify":false}"#,
    );
    assert!(silenced.is_empty());
    assert_eq!(
        last_notice(&rig),
        ("suppressed".into(), Some("executor".into()))
    );
}

#[test]
fn the_executor_cannot_silence_a_failure() {
    // 8. Under `never`, and with the executor asking for silence.
    let rig = rig_with_task(&["--notify", "failures"]);
    let sent = tick_replying(
        &rig,
        r#"{"status":"failed","summary":"boom","notify":false}"#,
    );
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["kind"], "failure");
}

#[test]
fn missed_and_skipped_runs_are_told_under_attention() {
    // 9. A missed occurrence (cron stopped past the grace) and an overlap.
    let rig = rig_with_task(&[]);
    rig.env.advance(3 * STEP + 200);
    rig.env.set_env(
        "FIXTURE_MODE",
        "json:{\"status\":\"succeeded\",\"summary\":\"ok\"}",
    );
    rig.tick(&[]).ok();
    let kinds: Vec<Value> = rig.notices().iter().map(|n| n["kind"].clone()).collect();
    assert!(kinds.contains(&Value::from("missed")), "{kinds:?}");
    // An overlap: the 08:20 run parks, the 08:25 occurrence is skipped.
    rig.env.set_env("FIXTURE_MODE", "awaiting");
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    rig.env.set_now(T0 + 4 * STEP + 5);
    rig.tick(&[]).ok();
    rig.env.set_now(T0 + 5 * STEP + 5);
    rig.tick(&[]).ok();
    let kinds: Vec<Value> = rig.notices().iter().map(|n| n["kind"].clone()).collect();
    assert!(kinds.contains(&Value::from("parked")), "{kinds:?}");
    assert!(kinds.contains(&Value::from("skipped")), "{kinds:?}");
    // Under `failures` neither is sent, but both are in the ledger.
    let quiet = rig_with_task(&["--notify", "failures"]);
    quiet.env.advance(3 * STEP + 200);
    quiet.tick(&[]).ok();
    assert!(quiet.notices().iter().all(|n| n["kind"] != "missed"));
    assert!(
        quiet
            .env
            .count("SELECT count(*) FROM deliveries WHERE state = 'suppressed'")
            >= 1
    );
}

#[test]
fn the_decision_survives_a_restart_and_is_the_ledgers() {
    // 10. Every tick is a new process: the window and the count were read
    // back from the store. A `tick` between the failures that had nothing to
    // do changes nothing either.
    let rig = rig_with_task(&[]);
    assert_eq!(tick_replying(&rig, &failed("disk full")).len(), 1);
    rig.env.advance(10);
    rig.tick(&[]).ok();
    assert!(tick_replying(&rig, &failed("disk full")).is_empty());
    let runs = rig.env.json(&["runs", "job"]);
    let states: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["delivery_status"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(states, ["suppressed", "delivered"], "{runs}");
    let status = rig.env.json(&["status"]);
    assert_eq!(status["notices"]["suppressed"], 1, "{status}");
    let shown = rig.env.json(&["show", "job"]);
    assert_eq!(shown["notices_held_back"]["count"], 1, "{shown}");
    let out = rig.env.run(&["show", "job"]).ok();
    assert_contains(
        &out.stdout,
        "suppressed    1 held back by the notice policy since",
    );
}

#[test]
fn a_failure_sent_while_the_clock_was_ahead_holds_back_nothing_once_it_is_set_right() {
    // Issue 33 item 9: the clock 10 h ahead at one failure, then set right.
    // The same failure, before the last one sent, is new; it is sent and the
    // window restarts from it.
    let rig = rig_with_task(&["--notify", "failures"]);
    rig.env
        .set_env("FIXTURE_MODE", &format!("json:{}", failed("timeout")));
    rig.env.set_now(T0 + 10 * 3600 + 5);
    rig.tick(&[]).ok();
    assert_eq!(rig.notices().len(), 1, "{:?}", rig.notices());
    // Nothing is due before 18:05 now: a person's trigger runs it again.
    let triggered = |at: i64| {
        rig.env.set_now(at);
        rig.env.run(&["trigger", "job"]).ok();
        let before = rig.notices().len();
        rig.tick(&[]).ok();
        rig.notices()[before..].to_vec()
    };
    let sent = triggered(T0 + 2 * STEP);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["kind"], "failure");
    // And the window now runs from 08:10: the next one is held back.
    assert!(triggered(T0 + 3 * STEP).is_empty());
    assert_eq!(rig.starts().len(), 3);
}

#[test]
fn pause_after_n_failures_pauses_the_task_with_one_notice_until_resumed() {
    let rig = rig_with_task(&["--pause-after", "3", "--max-retries", "0"]);
    tick_replying(&rig, &failed("no route"));
    tick_replying(&rig, &failed("no route"));
    let sent = tick_replying(&rig, &failed("no route"));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["kind"], "paused");
    assert_contains(
        sent[0]["message"].as_str().unwrap(),
        "paused after 3 consecutive failures; last: no route",
    );
    let task = rig.env.json(&["show", "job"]);
    assert_eq!(task["state"], "paused");
    assert_eq!(
        task["pause_reason"],
        "paused after 3 consecutive failures; last: no route"
    );
    // Paused: nothing more runs, nothing more is said.
    let starts = rig.starts().len();
    rig.env.advance(3 * STEP);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), starts);
    // Only a person's resume restarts it, and the count starts again.
    rig.env.run(&["resume", "job"]).ok();
    tick_replying(&rig, &failed("no route"));
    assert_eq!(rig.env.json(&["show", "job"])["state"], "active");
    let paused = events(&rig.env, &["job"], "pause");
    assert!(
        paused.iter().any(|e| e["actor"] == "agentcron:tick"),
        "{paused:?}"
    );
}

#[test]
fn a_failure_of_the_replaced_payload_is_not_the_new_payloads_streak() {
    // Issue 33 item 12: a replacement confirmed while a run of the old
    // payload executes; that run then fails. Its failure counts toward
    // neither the new payload's `--pause-after` streak nor a retry.
    replaced_payload_fails(false);
}

#[test]
fn a_failure_of_the_replaced_payload_is_not_the_streak_of_a_paused_task_either() {
    // Item 14i counts a run that settles while the task is paused; item 12
    // holds there too: the old payload's failure is not the new one's.
    replaced_payload_fails(true);
}

/// The old payload's run fails after a replacement (and, with `pause`, a
/// person's pause) was confirmed while it ran.
fn replaced_payload_fails(pause: bool) {
    let rig = rig_with_task(&["--pause-after", "2", "--max-retries", "1"]);
    let env = &rig.env;
    let gate = env.path("go");
    let slow = env.path("slow-failure.sh");
    write_script(
        &slow,
        &format!(
            "#!/bin/sh\ncat >/dev/null\ntouch {started}\n\
             while [ ! -e {gate} ]; do sleep 0.05; done\n\
             echo '{{\"status\":\"failed\",\"summary\":\"old words broke\"}}'\n",
            started = env.path("started").display(),
            gate = gate.display()
        ),
    );
    env.set_env("AGENTCRON_EXECUTOR", slow.to_str().unwrap());
    env.advance(STEP);
    let tick = spawn_tick(&rig, &[]);
    wait_for("the old payload's run to start", || {
        env.path("started").exists()
    });
    let draft = env.json(&["draft", "--replace", "job", "--instruction", "new words"]);
    let hash = draft["payload_hash"].as_str().unwrap();
    env.run(&[
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        hash,
    ])
    .ok();
    if pause {
        env.run(&["pause", "job", "--reason", "looking at the new words"])
            .ok();
    }
    std::fs::write(&gate, "").unwrap();
    let out = tick.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(rig.runs("job")[0]["status"], "failed");
    let task = env.json(&["show", "job"]);
    assert_eq!(task["consecutive_failures"], 0, "{task}");
    assert!(task["next_retry_at"].is_null(), "{task}");
    if pause {
        env.run(&["resume", "job"]).ok();
    }
    // The new payload's first failure is the first of its streak.
    env.set_env(
        "AGENTCRON_EXECUTOR",
        &crate::support::fixture("executor.sh"),
    );
    tick_replying(&rig, &failed("new words broke"));
    let task = env.json(&["show", "job"]);
    assert_eq!(task["state"], "active", "{task}");
    assert_eq!(task["consecutive_failures"], 1, "{task}");
}

#[test]
fn the_policy_is_part_of_what_a_person_confirms() {
    let env = TestEnv::new();
    // New drafts default to attention, with the re-alert window written out.
    let draft = Task::new().default_notify().draft(&env);
    let payload = draft["payload"].as_str().unwrap().to_string();
    assert!(payload.contains(r#""notify":"attention""#), "{payload}");
    assert!(payload.contains(r#""realert_seconds":3600"#), "{payload}");
    assert!(!payload.contains("pause_after"), "{payload}");
    let out = Task::new()
        .notify("failures")
        .flags(&["--realert", "30m", "--pause-after", "5"])
        .try_draft(&env)
        .ok();
    assert_contains(&out.stdout, "notices      failures (failures re-alert after 30 min; pause after 5 consecutive failures)");
    // Bad values: exit 2, nothing drafted.
    for bad in [
        &["--notify", "sometimes"][..],
        &["--pause-after", "0"],
        &["--realert", "soon"],
    ] {
        let mut args = vec!["draft", "--instruction", "x", "--every", "1h"];
        args.extend_from_slice(bad);
        let out = env.run(&args).fails(2);
        assert!(
            out.stderr.contains(bad[0]) || out.stderr.contains(bad[1]),
            "{}",
            out.stderr
        );
    }
    let out = Task::new()
        .default_notify()
        .flags(&["--realert", "soon"])
        .try_draft(&env)
        .fails(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    // show and a replacement carry it; a replacement that says nothing keeps it.
    let task = Task::named("t").notify("never").confirm(&env);
    assert_eq!(task["notify"], "never");
    let replaced = env.draft(&["--replace", "t", "--instruction", "y"]);
    assert!(replaced["payload"]
        .as_str()
        .unwrap()
        .contains(r#""notify":"never""#));
    let replaced = env.draft(&["--replace", "t", "--notify", "always"]);
    assert!(replaced["payload"]
        .as_str()
        .unwrap()
        .contains(r#""notify":"always""#));
    let shown = env.run(&["show", "t"]).ok().stdout;
    assert_contains(&shown, "notices       never");
}

#[test]
fn a_tasks_file_takes_the_policy() {
    let env = TestEnv::new();
    let file = env.write(
        "tasks.toml",
        "[digest]\ninstruction = \"x\"\ndaily = \"09:30\"\nnotify = \"failures\"\nrealert = \"2h\"\npause_after = 4\n",
    );
    let file_arg = file.as_str();
    let plan = env.json(&["plan", file_arg]);
    let notices = plan["actions"][0]["notices"].as_str().unwrap_or_default();
    assert!(
        notices.starts_with("failures (") && notices.contains("pause after 4"),
        "{plan}"
    );
    let shown = env.run(&["plan", file_arg]).ok().stdout;
    assert_contains(&shown, "      notices   failures (");
    let hash = plan["plan_hash"].as_str().unwrap().to_string();
    env.run(&["apply", file_arg, "--hash", &hash]).ok();
    let task = env.json(&["show", "digest"]);
    assert_eq!(task["notify"], "failures", "{task}");
    assert_eq!(task["realert_seconds"], 7200);
    assert_eq!(task["pause_after"], 4);
    env.write(
        "tasks.toml",
        "[digest]\ninstruction = \"x\"\ndaily = \"09:30\"\nnotify = \"loud\"\n",
    );
    let out = env.run(&["plan", &file]).fails(2);
    assert_contains(&out.stderr, "key 'notify': unknown notice mode 'loud'");
}

/// Issue 36 item 5: a task blocked by an `unknown` run is skipped at every
/// occurrence until someone reconciles. The first skip is news; the next
/// ones behind the same run within the re-alert window are held back as
/// `duplicate skip`, and counted into the next notice sent.
#[test]
fn skips_behind_an_unknown_run_are_told_once_per_window() {
    let rig = rig_with_task(&[]);
    // The 08:05 run times out: unknown, its notice sent.
    rig.env.executors_sleep("5");
    rig.env.advance(STEP);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    rig.env.set_env("FIXTURE_MODE", "succeed");
    let unknown = rig.notices().len();
    // Six occurrences behind it, one tick each.
    for _ in 0..6 {
        rig.env.advance(STEP);
        rig.tick(&[]).ok();
    }
    let skipped: Vec<Value> = rig.notices()[unknown..]
        .iter()
        .filter(|n| n["kind"] == "skipped")
        .cloned()
        .collect();
    assert_eq!(skipped.len(), 1, "one piece of news: {skipped:?}");
    let held = rig.env.count(
        "SELECT count(*) FROM deliveries WHERE state = 'suppressed' \
         AND suppressed_reason = 'duplicate skip'",
    );
    assert_eq!(held, 5);
    // An hour after the first (08:10), at 09:10, it is news again, and says
    // what was held back meanwhile (08:15 … 09:05: eleven skips).
    for _ in 0..7 {
        rig.env.advance(STEP);
        rig.tick(&[]).ok();
    }
    let last = rig.notices().last().cloned().unwrap();
    assert_eq!(last["kind"], "skipped", "{last}");
    assert_eq!(last["run"]["scheduled_for"], "2026-12-02T09:10:00Z");
    assert_eq!(last["suppressed_since_last"], 11, "{last}");
    assert_eq!(
        rig.notices()[unknown..]
            .iter()
            .filter(|n| n["kind"] == "skipped")
            .count(),
        2
    );
}

const HOUR: i64 = 3600;

/// (i) A failure that settles while the task is paused (a person paused it
/// while the run was in flight) still counts in its streak, so the
/// `--pause-after` reason counts every failure in a row.
#[test]
fn a_failure_settled_while_paused_counts_in_the_pause_after_reason() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("flaky")
        .max_retries("0")
        .flags(&["--pause-after", "3"])
        .confirm(env);
    env.set_env("FIXTURE_MODE", "fail");
    env.advance(HOUR);
    rig.tick(&[]).ok();
    // The second failure: in flight when the person pauses the task.
    let gate = env.path("gate");
    let started = env.path("started");
    let held = env.path("held-executor");
    crate::support::write_script(
        &held,
        &format!(
            "#!/bin/sh\ncat > /dev/null\ntouch '{}'\n\
             while [ ! -e '{}' ]; do sleep 0.05; done\necho 'it broke'\nexit 3\n",
            started.display(),
            gate.display()
        ),
    );
    env.set_env("AGENTCRON_EXECUTOR", held.to_str().unwrap());
    env.advance(HOUR);
    let tick = spawn_tick(&rig, &[]);
    wait_for("the executor", || started.exists());
    env.run(&["pause", "flaky", "--reason", "looking into it"])
        .ok();
    std::fs::write(&gate, "").unwrap();
    assert!(tick.wait_with_output().unwrap().status.success());
    assert_eq!(env.json(&["show", "flaky"])["consecutive_failures"], 2);
    env.run(&["resume", "flaky"]).ok();
    env.set_env(
        "AGENTCRON_EXECUTOR",
        &crate::support::fixture("executor.sh"),
    );
    env.advance(HOUR);
    rig.tick(&[]).ok();
    let task = env.json(&["show", "flaky"]);
    assert_eq!(task["state"], "paused", "{task}");
    assert_eq!(
        task["pause_reason"],
        "paused after 3 consecutive failures; last: exit status 3 — it broke"
    );
}
