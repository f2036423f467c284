//! Silence noticed (docs/CONTRACT.md §6, §16): a task whose payload sets
//! `expect_success_seconds` (DUR) is overdue when no run of it succeeded
//! within DUR of its last success, or of its confirmation.
//!
//! The clock is two columns of the task (`store::overdue`): the instant it
//! runs out (`success_due_at`) and, once a tick decided it ran out, since
//! when the task is overdue (`overdue_since`). Confirming a task starts it
//! at DUR after its first occurrence (a task is never overdue before it
//! could have run: its first occurrence may be weeks away); every success
//! starts it again at DUR after the run finished; a replacement restarts
//! or, without `expect_success`, stops it; `resume` restarts it unless the
//! task is overdue.
//!
//! A tick decides it (`overdue_step::decide`): it reads the tasks whose clock ran out
//! along `tasks_success_due` (a bounded batch, never the run history) and,
//! for each, in one write transaction, moves the clock into
//! `overdue_since` (guarded by the instant read, so a success committed
//! meanwhile wins), writes the audit event and adds one notice of kind
//! `overdue` on the task's latest run. A task with no run yet (cron was
//! down since it was confirmed) is left to the claim that records its
//! first runs, in the same tick (`at_claim`), so its overdue is told
//! too. The clock is then stopped: the task is told once per gap, and
//! again only after a new success and a new gap. An overdue whose latest
//! run was skipped for a spent budget is held back: the budget's one
//! notice says so. A paused task is not decided (its clock waits for
//! `resume`); one that will not run again (completed, deleted,
//! quarantined) has its clock dropped quietly.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::limits::overdue::{self, Silent, BUDGET_SAYS_IT};
use crate::model::{DeliveryState, Notice, NoticeKind, Run, RunStatus, Task};
use crate::store::{SuccessDue, Tx};
use crate::wire::time;

use super::{notice_policy, ACTOR};

/// When the clock of `task`, confirmed, replaced or resumed at `now`,
/// runs out (`limits::overdue::first_due`).
pub fn first_due(task: &Task, now: i64) -> Option<i64> {
    overdue::first_due(task.payload.expect_success_seconds, task.next_run_at, now)
}

/// Starts the clock of a task just confirmed or replaced (`first_due`),
/// or stops it when its payload expects no successes: a replacement
/// starts the task over, overdue or not.
pub fn start(tx: &mut dyn Tx, task: &Task, now: i64) -> Result<()> {
    tx.set_success_due(&task.task_id, first_due(task, now))
}

/// A run of `task` succeeded at `finished_at`: the clock starts again and
/// the task is no longer overdue. Part of the settling transaction.
pub fn succeeded(tx: &mut dyn Tx, task: &Task, finished_at: i64) -> Result<()> {
    match overdue::after_success(task.payload.expect_success_seconds, finished_at) {
        Some(due) => tx.set_success_due(&task.task_id, Some(due)),
        None => Ok(()),
    }
}

/// A resumed task's clock starts again from now (its next occurrence), as
/// at confirmation, unless it is overdue: then it stays overdue, and was
/// told, until a run succeeds.
pub fn resumed(tx: &mut dyn Tx, task: &Task, now: i64) -> Result<()> {
    if task.payload.expect_success_seconds.is_none()
        || tx.success_clock(&task.task_id)?.overdue_since.is_some()
    {
        return Ok(());
    }
    start(tx, task, now)
}

/// In the claim's transaction, once `first` (the first run the claim
/// records) exists: a task whose clock ran out before it had any run (cron
/// was down since it was confirmed) is decided here, so that its overdue
/// is told with the runs that show it. One read of the task's clock, for
/// a task that expects successes only.
pub fn at_claim(tx: &mut dyn Tx, task: &Task, first: &Run, now: i64) -> Result<()> {
    if task.payload.expect_success_seconds.is_none() {
        return Ok(());
    }
    let Some(success_due_at) = tx
        .success_clock(&task.task_id)?
        .success_due_at
        .filter(|at| *at <= now)
    else {
        return Ok(());
    };
    let due = SuccessDue {
        task_id: task.task_id.clone(),
        success_due_at,
        active: true,
    };
    tx.mark_overdue(&due)?;
    tell(tx, task, &due, first, now).map(|_| ())
}

/// The notice on `run` and the audit event of a task just marked overdue.
pub(super) fn tell(
    tx: &mut dyn Tx,
    task: &Task,
    due: &SuccessDue,
    run: &Run,
    now: i64,
) -> Result<(String, Notice)> {
    let last_success_at = tx
        .task_memory(&task.task_id)?
        .and_then(|m| m.last_success_at);
    let message = message(task, last_success_at, now);
    let notice = add_notice(tx, task, run, &message, now)?;
    let detail = json!({
        "success_due_at": time(Some(due.success_due_at)),
        "last_success_at": time(last_success_at),
        "expect_success_seconds": task.payload.expect_success_seconds,
        "run_id": notice.run_id,
        "notice": match (&notice.state, notice.suppressed_reason.as_deref()) {
            (DeliveryState::Suppressed, Some(BUDGET_SAYS_IT)) => "told in the budget notice",
            (DeliveryState::Suppressed, _) => "held back by policy",
            _ => "pending",
        },
    });
    tx.append_event(&Event::of_task(
        AuditAction::Overdue,
        task,
        ACTOR,
        now,
        detail,
    ))?;
    Ok((message, notice))
}

/// The words of `task`'s overdue notice.
pub fn message(task: &Task, last_success_at: Option<i64>, now: i64) -> String {
    let label = task.label();
    let silent = Silent {
        label: &label,
        created_at: task.created_at,
        expect_success_seconds: task.payload.expect_success_seconds,
        zone: task.zone_in_force,
    };
    overdue::message(&silent, last_success_at, now)
}

/// The notice, on `run` (the task's most recent run: a notice is
/// delivered with a run). Held back under `never`, and when that run was
/// skipped for a spent budget: the budget is why, and its notice said so.
fn add_notice(tx: &mut dyn Tx, task: &Task, run: &Run, message: &str, now: i64) -> Result<Notice> {
    let suppressed = match run.status() {
        RunStatus::SkippedBudget => Some(BUDGET_SAYS_IT),
        _ => notice_policy::held_back_by_mode(task.payload.notice),
    };
    let notice = Notice {
        delivery_id: uuid::Uuid::new_v4().to_string(),
        run_id: run.run_id.clone(),
        tenant_key: run.tenant_key.clone(),
        seq: tx.next_notice_seq(&run.run_id)?,
        state: match suppressed {
            Some(_) => DeliveryState::Suppressed,
            None => DeliveryState::Pending,
        },
        target: task.payload.target.clone(),
        message: message.to_string(),
        created_at: now,
        updated_at: now,
        claim_token: None,
        deadline: None,
        attempts: 0,
        last_error: None,
        kind: Some(NoticeKind::Overdue),
        suppressed_since_last: 0,
        suppressed_reason: suppressed.map(str::to_string),
    };
    tx.insert_notice(&notice)?;
    Ok(notice)
}
