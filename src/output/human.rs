//! Human renderings shared by several commands: task tables, one task in
//! full, run tables. Every stored string passes through `escape`.

use crate::model::{short_id, Run, RunState, Task};
use crate::schedule::Tz;

use crate::text::{clip, escape, relative, wall_time};

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

/// "blocked by run 1a2b3c4d (unknown)": a run that stops the task's next
/// occurrences until a person settles it (`unknown`, or parked awaiting a
/// decision). A `running` run blocks only until it ends: not shown.
pub fn blocked_by(run: Option<&Run>) -> Option<String> {
    let run = run.filter(|r| r.status() != crate::model::RunStatus::Running)?;
    Some(format!(
        "blocked by run {} ({})",
        short_id(&run.run_id),
        run.status()
    ))
}

/// The `blocked_by` JSON field of `list` and `show`.
pub fn blocked_by_json(run: Option<&Run>) -> serde_json::Value {
    match run.filter(|r| r.status() != crate::model::RunStatus::Running) {
        Some(r) => serde_json::json!({"run_id": r.run_id, "status": r.status().as_str()}),
        None => serde_json::Value::Null,
    }
}

/// One `list` row: the task and its latest run, if any.
pub fn task_row(t: &Task, last: Option<&Run>, now: i64) -> Vec<String> {
    let state = match (&t.state, &t.state_reason) {
        (crate::model::TaskState::Paused | crate::model::TaskState::Error, Some(reason)) => {
            clip(&format!("{}: {}", t.state, escape(reason)), 40)
        }
        _ => t.state.to_string(),
    };
    // A pending retry comes before the next occurrence: it is the next run.
    let next = match (t.next_retry_at, t.next_run_at) {
        (Some(retry), next) if next.is_none_or(|n| retry <= n) => {
            format!("{} (retry)", when(Some(retry), t.zone_in_force, now))
        }
        (_, next) => when(next, t.zone_in_force, now),
    };
    vec![
        short_id(&t.task_id).to_string(),
        t.payload
            .name
            .as_deref()
            .map(escape)
            .unwrap_or_else(|| "-".into()),
        state,
        next,
        last.map(|r| {
            relative(
                r.finished_at().or(r.started_at()).unwrap_or(r.created_at),
                now,
            )
        })
        .unwrap_or_else(|| "-".into()),
        last.map(|r| r.status().to_string())
            .unwrap_or_else(|| "-".into()),
        // "…, follows unix:alice" for a task in its owner's zone (§18).
        format!(
            "{} in {}",
            t.payload.schedule.describe(t.zone_in_force),
            zone_words(t)
        ),
        clip(&escape(&t.payload.instruction), 60),
    ]
}

/// The task's zone in force, and for a following task whom it follows
/// (docs/CONTRACT.md §18): "Europe/Berlin, follows unix:alice".
pub fn zone_words(t: &Task) -> String {
    match t.follow_key() {
        Some(key) => format!("{}, follows {}", t.zone_in_force.name(), escape(key)),
        None => t.zone_in_force.name().to_string(),
    }
}

/// One budget's window for people: "usd 1.2 of 1 this day (spent); resets
/// 2026-03-09 00:00 EDT (in 5 h)", the time in the task's zone.
pub fn budget_words(b: &crate::limits::budget::BudgetState, task: &Task, now: i64) -> String {
    budget_words_in(b, task.zone_in_force, now)
}

/// `budget_words`, its time in `zone` (`status` says every time in one).
pub fn budget_words_in(b: &crate::limits::budget::BudgetState, zone: Tz, now: i64) -> String {
    use crate::limits::amount_words;
    format!(
        "{} {} of {} this {}{}; resets {}",
        b.budget.key,
        amount_words(b.spent),
        amount_words(b.budget.limit),
        b.budget.period,
        if b.is_spent() {
            " (spent: runs are skipped)"
        } else {
            ""
        },
        when(Some(b.window.end), zone, now)
    )
}

/// `show`'s line of a task's success clock (`expect_success`): "overdue
/// since 2026-12-03 09:00 UTC (2 h ago): no run succeeded in time; the
/// next success ends it", or when the clock runs out; none without one.
pub fn success_clock_line(
    clock: &crate::store::SuccessClock,
    task: &Task,
    now: i64,
) -> Option<String> {
    let at = |t| when(Some(t), task.zone_in_force, now);
    match (clock.overdue_since, clock.success_due_at) {
        (Some(since), _) => Some(format!(
            "{:<13} since {}: no run succeeded in time; the next success ends it",
            "overdue",
            at(since)
        )),
        (None, Some(due)) => Some(format!(
            "{:<13} {} unless a run succeeds first",
            "overdue at",
            at(due)
        )),
        (None, None) => None,
    }
}

/// The rows of a payload's limits (docs/CONTRACT.md §6) for `show`, `draft`
/// and `show DRAFT`, each only when the payload sets it (older tasks print
/// as they did). The gate is agent-written text: quoted and escaped.
pub fn limit_rows(payload: &crate::payload::Payload) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    if let Some(bound) = &payload.profile {
        rows.push(("profile", bound.describe()));
    }
    if let Some(seconds) = payload.timeout_seconds {
        rows.push((
            "timeout",
            format!("{seconds} s (the tick's --timeout caps it)"),
        ));
    }
    if !payload.budgets.is_empty() {
        let words: Vec<String> = payload.budgets.iter().map(|b| b.describe()).collect();
        rows.push(("budgets", words.join(", ")));
    }
    if let Some(gate) = &payload.gate {
        rows.push((
            "gate",
            // Quoted as an agent's words: its own quotes cannot close ours.
            format!("{} (exit 0 runs, 1 skips)", crate::text::quoted(gate)),
        ));
    }
    if payload.catch_up == crate::limits::CatchUp::Latest {
        rows.push((
            "catch-up",
            "latest (runs the most recent missed occurrence once)".into(),
        ));
    }
    if let Some(seconds) = payload.expect_success_seconds {
        rows.push((
            "expect",
            format!("a success within {}", crate::text::human_duration(seconds)),
        ));
    }
    rows
}

/// The full task, as `show` prints it above its runs.
pub fn task_detail(t: &Task, now: i64) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        ("task", t.task_id.clone()),
        (
            "name",
            t.payload
                .name
                .as_deref()
                .map(escape)
                .unwrap_or_else(|| "-".into()),
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
        rows.push((
            "paused",
            when(Some(t.state_changed_at), t.zone_in_force, now),
        ));
    }
    rows.extend([
        (
            "schedule",
            format!(
                "{} ({})",
                t.payload.schedule.describe(t.zone_in_force),
                zone_words(t)
            ),
        ),
        (
            "next run",
            match t.next_run_at {
                Some(at) if crate::schedule::is_last(&t.payload.schedule, t.zone_in_force, at) => {
                    format!("{} (the last)", when(Some(at), t.zone_in_force, now))
                }
                other => when(other, t.zone_in_force, now),
            },
        ),
        ("instruction", escape(&t.payload.instruction)),
        ("target", escape(&t.payload.target)),
        ("owners", escape(&t.payload.owner_keys.join(", "))),
        ("policy", t.payload.policy.to_string()),
        ("grace", format!("{} s", t.payload.grace_seconds)),
        (
            "retries",
            format!(
                "{} (backoff {} s)",
                t.payload.max_retries, t.payload.retry_backoff_seconds
            ),
        ),
        ("notices", t.payload.notice.describe()),
    ]);
    rows.extend(limit_rows(&t.payload));
    rows.extend([
        ("revision", t.revision.to_string()),
        ("created", when(Some(t.created_at), t.zone_in_force, now)),
        ("payload hash", t.payload_hash.clone()),
    ]);
    if let Some(agent) = &t.payload.drafted_by {
        rows.push(("drafted by", escape(agent)));
    }
    if t.consecutive_failures > 0 {
        rows.push(("failures", format!("{} in a row", t.consecutive_failures)));
    }
    if t.next_retry_at.is_some() {
        rows.push(("next retry", when(t.next_retry_at, t.zone_in_force, now)));
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
    // Without a summary, the executor's last word on stderr says why.
    if let (None, Some(line)) = (&r.summary, stderr_last_line(r)) {
        summary = match summary.is_empty() {
            true => format!("stderr: {line}"),
            false => format!("{summary}; stderr: {line}"),
        };
    }
    // The count, unless the reason says it already ("8 occurrence(s)
    // passed unclaimed").
    if r.skipped_occurrences > 1 && !summary.contains("occurrence") {
        summary = format!("{} occurrences; {summary}", r.skipped_occurrences);
    }
    // How long it waited for a free slot after it was due (not lateness),
    // or, for a catch-up, how late it ran.
    if let Some(wait) = r.queued_seconds().filter(|w| *w > 0 || r.catch_up) {
        let late = crate::text::human_duration(wait);
        let queued = match r.catch_up {
            true => format!("catch-up, started {late} after due"),
            false => format!("started {late} after due"),
        };
        summary = match summary.is_empty() {
            true => queued,
            false => format!("{queued}; {summary}"),
        };
    }
    if let RunState::Awaiting { parking, .. } = &r.state {
        let wait_id = escape(&parking.wait.id);
        let wait = match &parking.approval {
            Some(approval) => format!(
                "wait id {wait_id}, approved by {}: the next tick runs it",
                escape(&approval.by)
            ),
            None => format!("wait id {wait_id}"),
        };
        summary = match summary.is_empty() {
            true => wait,
            false => format!("{wait}; {summary}"),
        };
    }
    summary
}

/// The last non-blank line the executor wrote on stderr, escaped.
pub fn stderr_last_line(r: &Run) -> Option<String> {
    let tail = r.stderr_tail.as_deref()?;
    tail.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| escape(l.trim()))
}

/// The kept end of the run's stderr, one escaped line per line, indented
/// under a heading naming the run; `None` when it wrote nothing.
pub fn stderr_block(r: &Run) -> Option<String> {
    let tail = r.stderr_tail.as_deref()?;
    let mut text = format!("stderr of run {} (its end):", short_id(&r.run_id));
    for line in tail.lines() {
        text.push_str("\n  ");
        text.push_str(&escape(line));
    }
    Some(text)
}

pub fn run_row(r: &Run, zone: Tz, now: i64) -> Vec<String> {
    let summary = run_summary(r);
    vec![
        short_id(&r.run_id).to_string(),
        wall_time(r.scheduled_for, zone),
        r.status().to_string(),
        r.attempt.to_string(),
        r.delivery_status
            .map(|d| d.to_string())
            .unwrap_or_else(|| "-".into()),
        relative(
            r.finished_at().or(r.started_at()).unwrap_or(r.created_at),
            now,
        ),
        clip(&summary, 60),
    ]
}

/// A field's value as a person reads it.
pub fn in_words(
    field: &str,
    payload: &crate::payload::Payload,
    value: &serde_json::Value,
) -> String {
    use serde_json::Value;
    match (field, value) {
        // A following payload's zone is its owner's; it is described here
        // in its default, the one zone the payload itself names.
        ("schedule", _) if payload.zone.follows() => format!(
            "{} (following; default {})",
            payload.schedule.describe(payload.zone.named()),
            payload.zone.named().name()
        ),
        ("schedule", _) => format!(
            "{} ({})",
            payload.schedule.describe(payload.zone.named()),
            payload.zone.named().name()
        ),
        (_, Value::Null) => "-".into(),
        (_, Value::String(s)) => escape(s),
        (f, Value::Number(n)) if f.ends_with("_seconds") => format!("{n} s"),
        (_, other) => escape(&other.to_string()),
    }
}
