//! Issue 44: under `attention` a task's notices follow its state, not the
//! words of its summary (docs/CONTRACT.md §16, "States, not text"). Real
//! ticks, one process each; the notifier's journal is what a person got.
use crate::support::{assert_contains, Rig, Task};

use super::*;

/// An agent-shaped executor failing every minute for an hour, its
/// summary different each time (a token count): one failure notice, then
/// one reminder when the re-alert window has passed.
#[test]
fn an_agent_failing_every_minute_for_an_hour_is_told_once_then_reminded() {
    let rig = Rig::new();
    rig.with_notifier(0);
    Task::named("agent")
        .every("1m")
        .notify("attention")
        .confirm(&rig.env);
    for minute in 1..=61 {
        let reply = format!(
            r#"{{"status":"failed","summary":"gave up after {} tokens","error_kind":"context_overflow"}}"#,
            1000 + 37 * minute
        );
        rig.env.set_env("FIXTURE_MODE", &format!("json:{reply}"));
        rig.env.advance(60);
        rig.tick(&[]).ok();
    }
    let notices = rig.notices();
    let kinds: Vec<&str> = notices
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["failure", "failure"], "{notices:?}");
    assert!(notices.iter().all(|n| n["state"] == "failing"));
    // 08:01 told; 08:02 … 09:00 held back; 09:01 is the window's end.
    assert_eq!(
        notices[1]["message"],
        "agent is still failing: 60 more failed runs since the last notice (2026-12-02 08:01 UTC); \
         the last (2026-12-02 09:01 UTC): error kind: context_overflow — \
         gave up after 3257 tokens"
    );
    assert_eq!(notices[1]["suppressed_since_last"], 59);
    assert_ne!(notices[0]["notice_id"], notices[1]["notice_id"]);
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM deliveries WHERE suppressed_reason = 'duplicate failure'"),
        59
    );
}

/// A change of state is told at once, window or not: another class of
/// failure, an unknown outcome, an overdue task.
#[test]
fn state_changes_are_told_at_once() {
    let rig = rig_with_task(&["--expect-success", "30m"]);
    // 08:05: failing, as the executor said it: told.
    let sent = tick_replying(&rig, &failed("used 1200 tokens"));
    assert_eq!(
        (sent.len(), &sent[0]["state"]),
        (1, &Value::from("failing"))
    );
    let id = sent[0]["notice_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "{id}");
    // 08:10: the same state in other words: held back.
    assert!(tick_replying(&rig, &failed("used 1300 tokens")).is_empty());
    // 08:15: another exit class (exit status 3): told at once.
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.advance(STEP);
    rig.tick(&[]).ok();
    let sent = rig.notices();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_contains(sent[1]["message"].as_str().unwrap(), "exit status 3");
    // 08:20: unknown (killed at the tick's timeout): told at once.
    rig.env.executors_sleep("5");
    rig.env.advance(STEP);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    let sent = rig.notices();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(
        (&sent[2]["kind"], &sent[2]["state"]),
        (&"unknown".into(), &"unknown".into())
    );
    // 08:40: no success since the 08:05 occurrence and its 30 min: overdue,
    // told at once (beside the first skip behind the unknown run).
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.advance(4 * STEP);
    rig.tick(&[]).ok();
    let sent = rig.notices();
    let overdue: Vec<&Value> = sent.iter().filter(|n| n["kind"] == "overdue").collect();
    assert_eq!(overdue.len(), 1, "{sent:?}");
    assert_eq!(overdue[0]["state"], "overdue");
}
