//! `log`'s words for each audit action.

use super::*;
use serde_json::json;

#[test]
fn each_action_reads_as_a_sentence() {
    assert_eq!(
        sentence(&AuditAction::Pause, &json!({"reason": "vacation\n"})),
        "paused: vacation\\n"
    );
    assert_eq!(
        sentence(
            &AuditAction::Confirm,
            &json!({"draft_id": "0123456789", "payload_hash": "abcdef0123456789", "next_run_at": "2026-12-02T09:00:00Z"})
        ),
        "confirmed draft 01234567, hash abcdef01…, next run 2026-12-02T09:00:00Z"
    );
    assert_eq!(
        sentence(
            &AuditAction::Finish,
            &json!({"from": "running", "status": "failed", "reason": "exit status 2", "attempt": 1})
        ),
        "running → failed, exit status 2"
    );
    assert_eq!(
        sentence(
            &AuditAction::Claim,
            &json!({"decision": "missed", "attempt": 1, "skipped_occurrences": 3, "reason": null})
        ),
        "recorded the occurrence as missed, 3 occurrences"
    );
    assert_eq!(
        sentence(
            &AuditAction::SchedulerGap,
            &json!({"seconds": 5400, "due_tasks": 2})
        ),
        "no tick for 1h30m, 2 tasks due"
    );
    assert_eq!(
        sentence(
            &AuditAction::parse("new_thing"),
            &json!({"a": 1, "b": "x", "c": null})
        ),
        "a=1 b=x"
    );
}

#[test]
fn every_action_this_build_writes_has_words() {
    for action in AuditAction::KNOWN {
        let words = sentence(action, &json!({"unknown_field": 1}));
        assert!(!words.is_empty(), "{action} has no words");
        assert!(!words.contains("unknown_field="), "{action}: {words}");
    }
}

#[test]
fn zones_applies_and_denials_read_as_sentences() {
    assert_eq!(
        sentence(
            &AuditAction::ZoneSet,
            &json!({"identity_key": "unix:alice", "old_zone": "Asia/Shanghai", "new_zone": "Europe/Berlin"})
        ),
        "set unix:alice's zone: Asia/Shanghai → Europe/Berlin"
    );
    assert_eq!(
        sentence(
            &AuditAction::ZoneUnset,
            &json!({"identity_key": "unix:alice", "old_zone": "Europe/Berlin", "new_zone": null})
        ),
        "unset unix:alice's zone (was Europe/Berlin)"
    );
    assert_eq!(
        sentence(
            &AuditAction::Retime,
            &json!({"follows": "unix:alice", "from_zone": "Asia/Shanghai", "to_zone": "Europe/Berlin",
                    "old_next_run_at": "2026-12-03T01:30:00Z", "next_run_at": "2026-12-03T08:30:00Z"})
        ),
        "re-timed from Asia/Shanghai to Europe/Berlin, following unix:alice, next run 2026-12-03T08:30:00Z"
    );
    assert_eq!(
        sentence(
            &AuditAction::Confirm,
            &json!({"plan_hash": "abcdef0123456789", "file": "source:ops", "payload_hash": "0011223344556677",
                    "next_run_at": "2026-12-02T09:00:00Z"})
        ),
        "confirmed by apply of source:ops (plan abcdef01…), hash 00112233…, next run 2026-12-02T09:00:00Z"
    );
    assert_eq!(
        sentence(
            &AuditAction::Deny,
            &json!({"wait_id": "w1", "wait_kind": "confirmation"})
        ),
        "denied wait w1: the run is failed"
    );
}
