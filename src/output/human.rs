//! Human renderings shared by several commands: task tables, one task in
//! full, run tables. Every stored string passes through `escape`.

use crate::model::{short_id, Run, Task};
use crate::schedule::Tz;

use super::text::{escape, relative, wall_time};

/// "2026-12-03 09:30 CST (in 19 h)", or "-".
pub fn when(at: Option<i64>, zone: Tz, now: i64) -> String {
    match at {
        Some(t) => format!("{} ({})", wall_time(t, zone), relative(t, now)),
        None => "-".to_string(),
    }
}

pub const TASK_HEADER: [&str; 8] = [
    "id",
    "name",
    "state",
    "next run",
    "last run",
    "result",
    "schedule",
    "instruction",
];

/// One `list` row: the task and its latest run, if any.
pub fn task_row(t: &Task, last: Option<&Run>, now: i64) -> Vec<String> {
    let state = match (&t.state, &t.state_reason) {
        (crate::model::TaskState::Paused | crate::model::TaskState::Error, Some(reason)) => {
            clip(&format!("{}: {}", t.state, escape(reason)), 40)
        }
        _ => t.state.to_string(),
    };
    vec![
        short_id(&t.task_id).to_string(),
        t.name.as_deref().map(escape).unwrap_or_else(|| "-".into()),
        state,
        when(t.next_run_at, t.timezone, now),
        last.map(|r| relative(r.finished_at.or(r.started_at).unwrap_or(r.created_at), now))
            .unwrap_or_else(|| "-".into()),
        last.map(|r| r.status.to_string())
            .unwrap_or_else(|| "-".into()),
        format!(
            "{} in {}",
            t.schedule.describe(t.timezone),
            t.timezone.name()
        ),
        clip(&escape(&t.instruction), 60),
    ]
}

/// The full task, as `show` prints it above its runs.
pub fn task_detail(t: &Task, now: i64) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        ("task", t.task_id.clone()),
        (
            "name",
            t.name.as_deref().map(escape).unwrap_or_else(|| "-".into()),
        ),
        ("state", t.state.to_string()),
    ];
    if let Some(reason) = &t.state_reason {
        let label = if t.state == crate::model::TaskState::Error {
            "error"
        } else {
            "reason"
        };
        rows.push((label, escape(reason)));
    }
    if t.state == crate::model::TaskState::Paused {
        rows.push(("paused", when(Some(t.state_changed_at), t.timezone, now)));
    }
    rows.extend([
        (
            "schedule",
            format!(
                "{} ({})",
                t.schedule.describe(t.timezone),
                t.timezone.name()
            ),
        ),
        (
            "next run",
            match t.next_run_at {
                Some(at) if crate::schedule::is_last(&t.schedule, t.timezone, at) => {
                    format!("{} (the last)", when(Some(at), t.timezone, now))
                }
                other => when(other, t.timezone, now),
            },
        ),
        ("instruction", escape(&t.instruction)),
        ("target", escape(&t.target)),
        ("owners", escape(&t.owner_keys.join(", "))),
        ("policy", t.policy.to_string()),
        ("grace", format!("{} s", t.grace_seconds)),
        (
            "retries",
            format!("{} (backoff {} s)", t.max_retries, t.retry_backoff_seconds),
        ),
        ("revision", t.revision.to_string()),
        ("created", when(Some(t.created_at), t.timezone, now)),
        ("payload hash", t.payload_hash.clone()),
    ]);
    if t.consecutive_failures > 0 {
        rows.push(("failures", format!("{} in a row", t.consecutive_failures)));
    }
    if t.next_retry_at.is_some() {
        rows.push(("next retry", when(t.next_retry_at, t.timezone, now)));
    }
    rows.iter()
        .map(|(k, v)| format!("{k:<13} {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub const RUN_HEADER: [&str; 7] = [
    "run",
    "occurrence",
    "status",
    "attempt",
    "delivery",
    "when",
    "summary",
];

/// The SUMMARY cell: what the run reported or why it ended, with the wait
/// id a parked run needs for `approve`/`deny` first, so no cut hides it.
pub fn run_summary(r: &Run) -> String {
    let mut summary = r
        .summary
        .as_deref()
        .or(r.reason.as_deref())
        .map(escape)
        .unwrap_or_default();
    if r.skipped_occurrences > 1 {
        summary = format!("{} occurrences; {summary}", r.skipped_occurrences);
    }
    if let (true, Some(wait_id)) = (r.status.is_awaiting(), &r.wait_id) {
        summary = match summary.is_empty() {
            true => format!("wait id {}", escape(wait_id)),
            false => format!("wait id {}; {summary}", escape(wait_id)),
        };
    }
    summary
}

pub fn run_row(r: &Run, zone: Tz, now: i64) -> Vec<String> {
    let summary = run_summary(r);
    vec![
        short_id(&r.run_id).to_string(),
        wall_time(r.scheduled_for, zone),
        r.status.to_string(),
        r.attempt.to_string(),
        r.delivery_status
            .map(|d| d.to_string())
            .unwrap_or_else(|| "-".into()),
        relative(r.finished_at.or(r.started_at).unwrap_or(r.created_at), now),
        clip(&summary, 60),
    ]
}

/// Shortens for a table cell, marking the cut.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}
