//! Taking back a claim whose executor never started (docs/CONTRACT.md §6,
//! "Stop signals"): the tick was told to stop between the claim's commit
//! and the spawn. Nothing ran, so freezing the run `unknown` would ask a
//! person to reconcile a run that certainly did nothing, and block its task
//! until then. Instead the run row goes and what it was claimed for — the
//! occurrence, the retry or the manual trigger — is due again, marked as
//! seen in time (a tick did see it due, as for capacity), so the next tick
//! runs it whatever the wait. All in the caller's one transaction, guarded
//! by the run's lease: a run another tick already froze is not touched.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::CmdError;
use crate::model::{Run, RunTrigger, Task, TaskState};
use crate::store::queue::TaskMark;
use crate::store::{QueueMark, TaskAdvance, Trigger, Tx};

/// Why a claimed run was taken back; its audit event says so.
pub const NOT_STARTED: &str = "the tick was stopped before its executor started";

/// Takes back `run`, claimed under `token` from `claimed_from` (the task as
/// the claim read it) and never started.
pub fn take_back(
    tx: &mut dyn Tx,
    claimed_from: &Task,
    run: &Run,
    token: &str,
    now: i64,
) -> Result<()> {
    tx.release_unstarted(&run.run_id, token, now)?;
    tx.append_event(&Event::of_run(
        AuditAction::Release,
        run,
        "agentcron:tick",
        now,
        json!({"reason": NOT_STARTED, "scheduled_for": run.scheduled_for,
               "attempt": run.attempt, "trigger": run.trigger.as_str()}),
    ))?;
    // Paused, deleted or replaced meanwhile: what is due is the task's
    // business now, as for any occurrence not yet claimed.
    let task = match tx.task(&run.task_id)? {
        Some(Ok(task)) if task.state == TaskState::Active => task,
        _ => return Ok(()),
    };
    let (mut next_run_at, mut next_retry_at) = (task.next_run_at, task.next_retry_at);
    let mut retry_run_id = task.retry_run_id.clone();
    match run.trigger {
        RunTrigger::Schedule => {
            next_run_at = Some(next_run_at.map_or(run.scheduled_for, |n| n.min(run.scheduled_for)));
        }
        RunTrigger::Retry => {
            next_retry_at = Some(run.due_at);
            retry_run_id = claimed_from.retry_run_id.clone();
        }
        RunTrigger::Manual => {
            if tx.pending_trigger(&task.task_id)?.is_none() {
                tx.set_trigger(
                    &task.task_id,
                    task.revision,
                    &Trigger {
                        at: run.due_at,
                        actor: "agentcron:tick".into(),
                        reason: Some(format!("again: {NOT_STARTED}")),
                    },
                )?;
            }
        }
    }
    tx.advance_task(&TaskAdvance {
        task_id: &task.task_id,
        expected_state: task.state,
        expected_next_run_at: task.next_run_at,
        expected_next_retry_at: task.next_retry_at,
        state: TaskState::Active,
        next_run_at,
        next_retry_at,
        retry_run_id: retry_run_id.as_deref(),
        consecutive_failures: task.consecutive_failures,
        now,
    })?;
    // Seen due in time by the tick that claimed it: the next claim runs it
    // whatever the wait, unless a newer due instant overtakes it.
    // A manual trigger is never superseded: it runs once.
    let after = match run.trigger {
        RunTrigger::Manual => None,
        _ => task.next_run_at.filter(|at| *at > run.due_at),
    };
    let marked = tx.set_queue_marks(&[TaskMark {
        task_id: &task.task_id,
        next_run_at,
        next_retry_at,
        mark: QueueMark {
            due_at: run.due_at,
            seen_at: run.created_at,
            superseded_at: after,
        },
    }])?;
    if marked != 1 {
        return Err(CmdError::conflict(format!(
            "task {} moved on while it was being queued",
            task.task_id
        ))
        .into());
    }
    Ok(())
}
