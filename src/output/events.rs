//! Audit events in words: one short sentence per action for `log`, built
//! from the event's JSON detail. A field that is missing is left out rather
//! than guessed, and an action this binary does not know falls back to its
//! detail as `key=value` pairs, so a newer writer never breaks `log`.

use serde_json::Value;

use crate::model::short_id;

use crate::text::escape;

/// "confirmed draft 1a2b3c4d (hash 9f86d081…), next run 2026-12-02T09:00:00Z".
pub fn sentence(action: &str, detail: &Value) -> String {
    let text = |key: &str| detail.get(key).and_then(Value::as_str).map(escape);
    let number = |key: &str| detail.get(key).and_then(Value::as_i64);
    let id = |key: &str| text(key).map(|s| short_id(&s).to_string());
    let hash = |key: &str| text(key).map(|s| format!("{}…", s.get(..8).unwrap_or(&s)));
    let mut words: Vec<String> = Vec::new();
    match action {
        "draft" => {
            words.push(format!("drafted {}", id("draft_id").unwrap_or_default()));
            words.extend(hash("payload_hash").map(|h| format!("hash {h}")));
            words.extend(text("expires_at").map(|t| format!("expires {t}")));
            words.extend(text("drafted_by").map(|agent| format!("by {agent}")));
        }
        "confirm" | "replace" => {
            let verb = if action == "confirm" {
                "confirmed"
            } else {
                "replaced with"
            };
            // A draft confirmed by a person, or a file's plan applied.
            words.push(match (id("draft_id"), text("file"), hash("plan_hash")) {
                (Some(draft), _, _) => format!("{verb} draft {draft}"),
                (None, Some(file), plan) => format!(
                    "{verb} by apply of {file}{}",
                    plan.map(|p| format!(" (plan {p})")).unwrap_or_default()
                ),
                (None, None, _) => verb.to_string(),
            });
            words.extend(match (hash("old_payload_hash"), hash("payload_hash")) {
                (Some(old), Some(new)) => Some(format!("hash {old} → {new}")),
                (_, new) => new.map(|h| format!("hash {h}")),
            });
            words.extend(text("next_run_at").map(|t| format!("next run {t}")));
            words.extend(text("drafted_by").map(|agent| format!("drafted by {agent}")));
        }
        "confirm_code" => {
            words.push(format!(
                "one-time code for draft {} to {}: {}",
                id("draft_id").unwrap_or_default(),
                text("target").unwrap_or_default(),
                text("state").unwrap_or_default()
            ));
            words.extend(text("error"));
        }
        "wrong_code" | "void" => {
            words.push(format!(
                "wrong code for draft {} ({} so far)",
                id("draft_id").unwrap_or_default(),
                number("wrong_codes").unwrap_or_default()
            ));
            if action == "void" {
                words.push("the draft is void".into());
            }
        }
        "trigger" => words.push(match text("reason") {
            Some(reason) => format!("triggered a run: {reason}"),
            None => "triggered a run".into(),
        }),
        "pause" => words.push(match text("reason") {
            Some(reason) => format!("paused: {reason}"),
            None => "paused".into(),
        }),
        "resume" => {
            words.push("resumed".into());
            words.extend(text("next_run_at").map(|t| format!("next run {t}")));
            words.extend(
                id("missed_run_id").map(|r| format!("its time had passed: run {r} missed")),
            );
        }
        "delete" => {
            words.push(match text("from") {
                Some(from) => format!("deleted (was {from})"),
                None => "deleted".into(),
            });
            words.extend(text("file").map(|file| format!("by apply of {file} --prune")));
        }
        "deny" => words.push(format!(
            "denied wait {}: the run is failed",
            text("wait_id").unwrap_or_default()
        )),
        "zone_set" | "zone_unset" => {
            let key = text("identity_key").unwrap_or_default();
            let old = text("old_zone").unwrap_or_else(|| "none".into());
            words.push(match text("new_zone") {
                Some(new) if action == "zone_set" => format!("set {key}'s zone: {old} → {new}"),
                _ => format!("unset {key}'s zone (was {old})"),
            });
        }
        "retime" => {
            words.push(format!(
                "re-timed from {} to {}",
                text("from_zone").unwrap_or_default(),
                text("to_zone").unwrap_or_default()
            ));
            words.extend(text("follows").map(|key| format!("following {key}")));
            words.extend(text("next_run_at").map(|t| format!("next run {t}")));
        }
        "claim" => {
            let decision = text("decision").unwrap_or_default();
            words.push(match decision.as_str() {
                "running" => "claimed the run".to_string(),
                other => format!("recorded the occurrence as {other}"),
            });
            if let Some(n) = number("attempt").filter(|n| *n > 1) {
                words.push(format!("attempt {n}"));
            }
            if let Some(n) = number("skipped_occurrences").filter(|n| *n > 1) {
                words.push(format!("{n} occurrences"));
            }
            words.extend(text("reason"));
        }
        "finish" => {
            words.push(format!(
                "{} → {}",
                text("from").unwrap_or_default(),
                text("status").unwrap_or_default()
            ));
            words.extend(text("reason"));
        }
        "lease_expired" => {
            words.push("lease expired: outcome unknown, the task waits for reconcile".into())
        }
        "release" => {
            words.push("took back the run it had claimed: its executor never started".into());
            words.extend(text("reason"));
        }
        "outcome_discarded" => {
            words.push("lease lost: the executor's result was discarded".into());
            words.extend(text("summary"));
        }
        "delivery" => {
            words.push(format!("notice {}", text("state").unwrap_or_default()));
            words.extend(text("error"));
        }
        "reconcile" => {
            words.push(format!(
                "reconciled as {}",
                text("decision").unwrap_or_default()
            ));
            words.extend(text("reason").map(|r| format!("because: {r}")));
        }
        "approve" => {
            words.push(format!(
                "approved wait {}",
                text("wait_id").unwrap_or_default()
            ));
            if text("ran").as_deref() == Some("next_tick") {
                words.push("the next tick runs it".into());
            }
        }
        "continue" => {
            words.push(format!(
                "ran the approved continuation (wait {})",
                text("wait_id").unwrap_or_default()
            ));
            words.extend(text("approved_by").map(|by| format!("approved by {by}")));
        }
        "quarantine" => {
            words.push("quarantined".into());
            words.extend(text("problem"));
        }
        "scheduler_gap" => {
            let gap = number("seconds").map(crate::schedule::describe::duration_words);
            words.push(format!("no tick for {}", gap.unwrap_or_default()));
            if let Some(n) = number("due_tasks") {
                words.push(format!("{n} tasks due"));
            }
        }
        "migrate" => {
            words.push(format!(
                "migrated the schema from {} to {}",
                number("from").unwrap_or_default(),
                number("to").unwrap_or_default()
            ));
            words.extend(text("build").map(|b| format!("build {b}")));
        }
        _ => return pairs(detail),
    }
    words.retain(|w| !w.is_empty());
    words.join(", ")
}

/// `key=value` for an action without a sentence.
fn pairs(detail: &Value) -> String {
    match detail.as_object() {
        Some(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={}", escape(s)),
                other => format!("{k}={}", escape(&other.to_string())),
            })
            .collect::<Vec<_>>()
            .join(" "),
        None => escape(&detail.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_action_reads_as_a_sentence() {
        assert_eq!(
            sentence("pause", &json!({"reason": "vacation\n"})),
            "paused: vacation\\n"
        );
        assert_eq!(
            sentence(
                "confirm",
                &json!({"draft_id": "0123456789", "payload_hash": "abcdef0123456789", "next_run_at": "2026-12-02T09:00:00Z"})
            ),
            "confirmed draft 01234567, hash abcdef01…, next run 2026-12-02T09:00:00Z"
        );
        assert_eq!(
            sentence(
                "finish",
                &json!({"from": "running", "status": "failed", "reason": "exit status 2", "attempt": 1})
            ),
            "running → failed, exit status 2"
        );
        assert_eq!(
            sentence(
                "claim",
                &json!({"decision": "missed", "attempt": 1, "skipped_occurrences": 3, "reason": null})
            ),
            "recorded the occurrence as missed, 3 occurrences"
        );
        assert_eq!(
            sentence("scheduler_gap", &json!({"seconds": 5400, "due_tasks": 2})),
            "no tick for 1h30m, 2 tasks due"
        );
        assert_eq!(
            sentence("new_thing", &json!({"a": 1, "b": "x", "c": null})),
            "a=1 b=x"
        );
    }

    #[test]
    fn zones_applies_and_denials_read_as_sentences() {
        assert_eq!(
            sentence(
                "zone_set",
                &json!({"identity_key": "unix:alice", "old_zone": "Asia/Shanghai", "new_zone": "Europe/Berlin"})
            ),
            "set unix:alice's zone: Asia/Shanghai → Europe/Berlin"
        );
        assert_eq!(
            sentence(
                "zone_unset",
                &json!({"identity_key": "unix:alice", "old_zone": "Europe/Berlin", "new_zone": null})
            ),
            "unset unix:alice's zone (was Europe/Berlin)"
        );
        assert_eq!(
            sentence(
                "retime",
                &json!({"follows": "unix:alice", "from_zone": "Asia/Shanghai", "to_zone": "Europe/Berlin",
                        "old_next_run_at": "2026-12-03T01:30:00Z", "next_run_at": "2026-12-03T08:30:00Z"})
            ),
            "re-timed from Asia/Shanghai to Europe/Berlin, following unix:alice, next run 2026-12-03T08:30:00Z"
        );
        assert_eq!(
            sentence(
                "confirm",
                &json!({"plan_hash": "abcdef0123456789", "file": "source:ops", "payload_hash": "0011223344556677",
                        "next_run_at": "2026-12-02T09:00:00Z"})
            ),
            "confirmed by apply of source:ops (plan abcdef01…), hash 00112233…, next run 2026-12-02T09:00:00Z"
        );
        assert_eq!(
            sentence(
                "deny",
                &json!({"wait_id": "w1", "wait_kind": "confirmation"})
            ),
            "denied wait w1: the run is failed"
        );
    }
}
