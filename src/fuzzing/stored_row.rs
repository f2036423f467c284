//! The stored-row decoder, `RawTask::decode`: any row either decodes or is
//! reported as corrupt (never a panic), and a decoded task encoded again
//! with `RawTask::encode` (the columns both stores' `insert_task` write)
//! decodes to the same task.
//!
//! Input: one column per line, in `RawTask`'s field order (task_id,
//! tenant_key, name, owner_keys, target, instruction, schedule, timezone,
//! policy, grace_seconds, max_retries, retry_backoff_seconds, payload_hash,
//! state, state_reason, state_changed_at, next_run_at, revision, created_at,
//! updated_at, consecutive_failures, next_retry_at, retry_run_id, payload,
//! follow_key, zone_in_force).
//! `\N` (or, in the last two, an empty line) is NULL in a nullable column; an integer that does not parse is 0;
//! missing lines are empty (or 0, or NULL). A payload_hash of `\H` is the
//! SHA-256 of the payload line, so mutations can reach the comparison of
//! the columns with the payload instead of stopping at the hash.

use crate::model::{DeliveryState, Policy, RunStatus, Task, TaskState};
use crate::payload::{hash_hex, Payload};
use crate::schedule;
use crate::store::tasks::RawTask;

pub fn check_stored_row(data: &[u8]) {
    let raw = raw_row(data);
    spellings_hold(&raw.state);
    let decoded = raw.clone().decode();
    match decoded {
        Err(corrupt) => {
            assert_eq!(
                (&corrupt.id, &corrupt.tenant_key),
                (&raw.task_id, &raw.tenant_key),
                "{corrupt:?}"
            );
            assert!(!corrupt.problem.is_empty(), "{corrupt:?}");
        }
        Ok(task) => {
            decoded_holds(&raw, &task);
            let written = RawTask::encode(&task);
            assert_eq!(written.clone().decode(), Ok(task.clone()), "{written:?}");
            let payload = task.payload.clone();
            let canonical = payload.canonical();
            let read_back = Payload::from_canonical(&canonical).map_err(|e| e.to_string());
            assert_eq!(read_back, Ok(payload), "{canonical}");
        }
    }
}

/// The row the input describes (format in the module comment).
fn raw_row(data: &[u8]) -> RawTask {
    let lines = super::lines(data);
    let text = |i: usize| lines.get(i).cloned().unwrap_or_default();
    let nullable = |i: usize| lines.get(i).filter(|l| *l != "\\N").cloned();
    let int = |i: usize| text(i).trim().parse::<i64>().unwrap_or(0);
    let nullable_int = |i: usize| nullable(i).map(|l| l.trim().parse::<i64>().unwrap_or(0));
    RawTask {
        task_id: text(0),
        tenant_key: text(1),
        name: nullable(2),
        owner_keys: text(3),
        target: text(4),
        instruction: text(5),
        schedule: text(6),
        timezone: text(7),
        policy: text(8),
        grace_seconds: int(9),
        max_retries: int(10),
        retry_backoff_seconds: int(11),
        payload_hash: match text(12).as_str() {
            "\\H" => hash_hex(text(23).as_bytes()),
            other => other.to_string(),
        },
        state: text(13),
        state_reason: nullable(14),
        state_changed_at: int(15),
        next_run_at: nullable_int(16),
        revision: int(17),
        created_at: int(18),
        updated_at: int(19),
        consecutive_failures: int(20),
        next_retry_at: nullable_int(21),
        retry_run_id: nullable(22),
        payload: text(23),
        // The last columns: a seed's final newline leaves an empty line,
        // which for these (added later) is NULL.
        follow_key: nullable(24).filter(|l| !l.is_empty()),
        zone_in_force: nullable(25).filter(|l| !l.is_empty()),
    }
}

/// What decode promises about a row it accepts.
fn decoded_holds(raw: &RawTask, task: &Task) {
    let context = format!("{raw:?} decoded to {task:?}");
    assert!(!task.payload.owner_keys.is_empty(), "{context}");
    assert_eq!(task.payload.schedule.validate(), Ok(()), "{context}");
    // A following task is read in the zone its last re-time recorded.
    let zone_column = match task.payload.zone.fallback() {
        Some(_) => raw.zone_in_force.clone().unwrap_or_default(),
        None => raw.timezone.clone(),
    };
    assert_eq!(
        schedule::parse_zone(&zone_column),
        Ok(task.zone_in_force),
        "{context}"
    );
    assert_eq!(task.payload.policy.as_str(), raw.policy, "{context}");
    assert_eq!(task.state.as_str(), raw.state, "{context}");
    for value in [
        task.payload.grace_seconds,
        task.payload.max_retries,
        task.payload.retry_backoff_seconds,
        task.consecutive_failures,
    ] {
        assert!(value >= 0, "{context}");
    }
    // What runs is what was confirmed: the payload, which the columns repeat.
    assert_eq!(
        hash_hex(raw.payload.as_bytes()),
        task.payload_hash,
        "{context}"
    );
    assert_eq!(
        Payload::from_canonical(&raw.payload).ok(),
        Some(task.payload.clone()),
        "{context}"
    );
    // The other columns pass through untouched.
    assert_eq!(
        (
            &task.task_id,
            &task.payload.tenant_key,
            &task.payload.name,
            &task.payload.target,
            &task.payload.instruction
        ),
        (
            &raw.task_id,
            &raw.tenant_key,
            &raw.name,
            &raw.target,
            &raw.instruction
        ),
        "{context}"
    );
    assert_eq!(
        (
            task.next_run_at,
            task.next_retry_at,
            &task.retry_run_id,
            &task.state_reason
        ),
        (
            raw.next_run_at,
            raw.next_retry_at,
            &raw.retry_run_id,
            &raw.state_reason
        ),
        "{context}"
    );
}

/// Stored spellings are strict: one text per value, read back exactly.
fn spellings_hold(text: &str) {
    if let Some(state) = TaskState::parse(text) {
        assert_eq!(state.as_str(), text);
    }
    if let Some(policy) = Policy::parse(text) {
        assert_eq!(policy.as_str(), text);
    }
    if let Some(status) = RunStatus::parse(text) {
        assert_eq!(status.as_str(), text);
    }
    if let Some(delivery) = DeliveryState::parse(text) {
        assert_eq!(delivery.as_str(), text);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The seeds say what they are: `valid-*` rows decode, `corrupt-*` rows
    /// do not, so the corpus keeps probing both sides of the payload check.
    #[test]
    fn seeds_decode_as_their_names_say() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/stored_row");
        for entry in std::fs::read_dir(&dir).expect("the stored_row corpus") {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let data = std::fs::read(&path).expect("a readable seed");
            let decoded = super::raw_row(&data).decode();
            if name.starts_with("valid-") {
                assert!(decoded.is_ok(), "{name}: {decoded:?}");
            } else if name.starts_with("corrupt-") {
                assert!(decoded.is_err(), "{name} decoded");
            }
        }
    }
}
