//! The JSON shapes of tasks and runs (docs/CONTRACT.md §9), the one
//! definition shared by `--json`, the executor's and notifier's standard
//! input and audit details. Times are RFC 3339 UTC strings; the field lists
//! are the contract scripts and executors rely on.

use serde_json::{json, Value};

use crate::model::{Run, Task};
use crate::schedule::format_utc;

pub fn time(at: Option<i64>) -> Value {
    match at {
        Some(t) => Value::String(format_utc(t)),
        None => Value::Null,
    }
}

pub fn task(t: &Task) -> Value {
    let mut value = json!({
        "task_id": t.task_id,
        "name": t.payload.name,
        "tenant_key": t.payload.tenant_key,
        "owner_keys": t.payload.owner_keys,
        "target": t.payload.target,
        "instruction": t.payload.instruction,
        "schedule": t.payload.schedule.to_json(),
        "timezone": t.zone_in_force.name(),
        "policy": t.payload.policy.as_str(),
        "state": t.state.as_str(),
        "next_run_at": time(t.next_run_at),
        "revision": t.revision,
        "created_at": time(Some(t.created_at)),
        "updated_at": time(Some(t.updated_at)),
        "grace_seconds": t.payload.grace_seconds,
        "max_retries": t.payload.max_retries,
        "retry_backoff_seconds": t.payload.retry_backoff_seconds,
        "notify": t.payload.notice.mode().as_str(),
        "realert_seconds": t.payload.notice.realert(),
        "pause_after": t.payload.notice.pause_after,
        "consecutive_failures": t.consecutive_failures,
        "next_retry_at": time(t.next_retry_at),
        "payload_hash": t.payload_hash,
    });
    if t.state == crate::model::TaskState::Paused {
        value["pause_reason"] = json!(t.state_reason);
        value["paused_at"] = time(Some(t.state_changed_at));
    }
    if t.state == crate::model::TaskState::Error {
        value["error_reason"] = json!(t.state_reason);
    }
    // Only an agent's draft names its drafter (docs/CONTRACT.md §17).
    if let Some(agent) = &t.payload.drafted_by {
        value["drafted_by"] = json!(agent);
    }
    // Only a task with a profile names it (docs/CONTRACT.md §22): its
    // definition and hash as confirmed.
    if let Some(profile) = &t.payload.profile {
        value["profile"] = profile.to_value();
    }
    // Only a task with a limit of its own names it (docs/CONTRACT.md §6).
    if let Some(seconds) = t.payload.timeout_seconds {
        value["timeout_seconds"] = json!(seconds);
    }
    if !t.payload.budgets.is_empty() {
        let spelled: Vec<String> = t.payload.budgets.iter().map(|b| b.spelling()).collect();
        value["budgets"] = json!(spelled);
    }
    if let Some(gate) = &t.payload.gate {
        value["gate"] = json!(gate);
    }
    if t.payload.catch_up == crate::limits::CatchUp::Latest {
        value["catch_up"] = json!("latest");
    }
    if let Some(seconds) = t.payload.expect_success_seconds {
        value["expect_success_seconds"] = json!(seconds);
    }
    // `timezone` is the zone in force; a following task says whom it
    // follows and its fallback (docs/CONTRACT.md §18).
    if let (Some(key), Some(default)) = (t.follow_key(), t.payload.zone.fallback()) {
        value["follows"] = json!(key);
        value["follow_default"] = json!(default.name());
    }
    value
}

pub fn run(r: &Run) -> Value {
    let mut value = json!({
        "run_id": r.run_id,
        "task_id": r.task_id,
        "scheduled_for": time(Some(r.scheduled_for)),
        "scheduled_local": r.scheduled_local,
        "status": r.status().as_str(),
        "started_at": time(r.started_at()),
        "finished_at": time(r.finished_at()),
        "summary": r.summary,
        "reason": r.reason,
        "attempt": r.attempt,
        "payload_hash": r.payload_hash,
        "delivery_status": r.delivery_status.map(|d| d.as_str()),
        "wait_kind": r.wait().map(|w| w.kind.as_str()),
        "wait_id": r.wait().map(|w| &w.id),
        "wait_deadline": time(r.wait().map(|w| w.deadline)),
        "skipped_occurrences": r.skipped_occurrences,
        "queued_seconds": r.queued_seconds(),
        "stderr": r.stderr_tail,
        "trigger": r.trigger.as_str(),
        "approved_at": time(r.approval().map(|a| a.at)),
        "approved_by": r.approval().map(|a| &a.by),
    });
    // Only when true (docs/CONTRACT.md §9): most runs never catch up.
    if r.catch_up {
        value["catch_up"] = json!(true);
    }
    // Only when its executor reported any (docs/CONTRACT.md §6).
    if let Some(usage) = &r.usage {
        value["usage"] = usage.clone();
    }
    value
}
