//! One notice per wake for the occurrences missed in it (docs/CONTRACT.md
//! §16, "States, not text"): when the host slept or cron stopped, every
//! task without a catch-up records a coalesced `missed` run at the next
//! tick. Under `attention` the first such claim of the tick tells them all
//! in one notice of kind `gap` (on its own missed run, naming each task of
//! the same tenant and target with its count), and the claims after it in
//! the same tick hold theirs back (`told in the gap notice`). A missed run
//! alone in its tick keeps its own `missed` notice.
//!
//! The tick is known by what it recorded of itself (`last_tick_at`, written
//! before any claim), and the gap told by a meta row per tenant and target
//! holding that instant: two reads by key per missed run, and one read of
//! the due tasks for the first missed run of a wake. Nothing lives in the
//! tick process: a claim in another process of the same tick reads the same.

use anyhow::Result;

use super::{plan, ClaimSettings};
use crate::model::{Run, RunStatus, Task, TaskState};
use crate::store::Tx;

/// Tasks one gap notice names at most (the rest are counted).
const NAMED_AT_MOST: usize = 20;

/// What a missed run's claim makes of its notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InGap {
    /// The only task that missed occurrences in this wake: its own notice.
    Alone,
    /// The first of several: its notice, of kind `gap`, says this.
    Carrier(String),
    /// A gap notice of this tick named it already.
    Told,
}

/// Decides, in the claim's transaction, what `run` (a `missed` run of
/// `task` under `attention`, whose catch-up did not run) is in its wake.
pub fn place(tx: &mut dyn Tx, task: &Task, run: &Run, s: ClaimSettings) -> Result<InGap> {
    let tick = tx.meta("last_tick_at")?.unwrap_or_default();
    let key = format!(
        "gap_told:{}:{}",
        task.payload.tenant_key, task.payload.target
    );
    if !tick.is_empty() && tx.meta(&key)?.as_deref() == Some(tick.as_str()) {
        return Ok(InGap::Told);
    }
    let others = others_missing(tx, task, s)?;
    tx.set_meta(&key, &tick)?;
    if others.is_empty() {
        return Ok(InGap::Alone);
    }
    let mut named = vec![(task.label(), run.skipped_occurrences.max(1))];
    named.extend(others);
    Ok(InGap::Carrier(message(&named)))
}

/// The other tasks of the same tenant and target, under `attention`, whose
/// claim in this tick will record a missed run with no catch-up: what
/// `plan` (pure) decides for them now, with their count of occurrences.
fn others_missing(tx: &mut dyn Tx, task: &Task, s: ClaimSettings) -> Result<Vec<(String, i64)>> {
    let due = tx.due_tasks(s.now, Some(&task.payload.tenant_key), 1000)?;
    let mut missing = Vec::new();
    for due in due.iter().filter(|d| d.task_id != task.task_id) {
        let Some(Ok(other)) = tx.task(&due.task_id)? else {
            continue;
        };
        let same_reader = other.payload.target == task.payload.target;
        let attention = other.payload.notice.mode() == crate::model::NotifyMode::Attention;
        if !same_reader || !attention || other.state != TaskState::Active {
            continue;
        }
        let decided = plan(&other, None, None, None, None, s);
        if decided.runs.iter().any(|r| r.catch_up) {
            continue;
        }
        let missed: i64 = (decided.runs.iter())
            .filter(|r| r.status() == RunStatus::Missed)
            .map(|r| r.skipped_occurrences.max(1))
            .sum();
        if missed > 0 {
            missing.push((other.label(), missed));
        }
    }
    Ok(missing)
}

/// "3 tasks missed occurrences while no tick ran (the host slept or cron
/// was not running): inbox 27, digest 1, backup 1".
pub fn message(named: &[(String, i64)]) -> String {
    let mut parts: Vec<String> = (named.iter().take(NAMED_AT_MOST))
        .map(|(label, count)| format!("{label} {count}"))
        .collect();
    if named.len() > NAMED_AT_MOST {
        parts.push(format!("and {} more", named.len() - NAMED_AT_MOST));
    }
    format!(
        "{} tasks missed occurrences while no tick ran (the host slept or cron was not running): {}",
        named.len(),
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn a_gap_notice_names_each_task_with_its_count() {
        let named = [("inbox".to_string(), 27), ("digest".to_string(), 1)];
        assert_eq!(
            message(&named),
            "2 tasks missed occurrences while no tick ran (the host slept or cron was not \
             running): inbox 27, digest 1"
        );
        let many: Vec<(String, i64)> = (0..25).map(|i| (format!("t{i}"), 1)).collect();
        assert!(
            message(&many).ends_with("t19 1, and 5 more"),
            "{}",
            message(&many)
        );
    }
}
