//! Operator-driven task state changes: pause, resume, delete. Each is one
//! write transaction holding the compare-and-set transition and its audit
//! event; a stale `--expect-revision` or a wrong state is a Conflict.
//! Pausing a paused task and resuming an active one change nothing and
//! succeed, so that scripts can say what they want without asking first.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError};
use crate::model::{Run, RunEnd, RunState, Task, TaskState};
use crate::ops::access::{check_revision, owned_task, Caller};
use crate::schedule::{self, Schedule};
use crate::store::{Store, TaskTransition, Tx};

/// What a lifecycle command asks for.
pub struct Request<'a> {
    pub caller: Caller<'a>,
    pub task: &'a str,
    pub expect_revision: Option<i64>,
    pub now: i64,
}

/// The task after a pause or resume, and whether that call changed it
/// (false: it was already in the state asked for; no revision, no event).
#[derive(Debug, Clone)]
pub struct Changed {
    pub task: Task,
    pub changed: bool,
}

pub fn pause(store: &mut dyn Store, req: &Request<'_>, reason: Option<&str>) -> Result<Changed> {
    store.write(|tx| {
        let task = owned_task(tx, &req.caller, req.task)?;
        check_revision(&task, req.expect_revision)?;
        if task.state == TaskState::Paused {
            return Ok(Changed {
                task,
                changed: false,
            });
        }
        require_state(&task, TaskState::Active, "pause")?;
        let change = TaskTransition {
            task_id: &task.task_id,
            from: TaskState::Active,
            revision: task.revision,
            to: TaskState::Paused,
            reason,
            next_run_at: None,
            now: req.now,
        };
        let task = apply(
            tx,
            &req.caller.identity[0],
            req.now,
            &task,
            &change,
            AuditAction::Pause,
            json!({"reason": reason}),
        )?;
        Ok(Changed {
            task,
            changed: true,
        })
    })
}

pub fn resume(store: &mut dyn Store, req: &Request<'_>) -> Result<Changed> {
    store.write(|tx| {
        let task = owned_task(tx, &req.caller, req.task)?;
        check_revision(&task, req.expect_revision)?;
        if task.state == TaskState::Active {
            return Ok(Changed {
                task,
                changed: false,
            });
        }
        require_state(&task, TaskState::Paused, "resume")?;
        // No catch-up burst: the next run is the next occurrence after now.
        let next =
            schedule::next_after(&task.payload.schedule, task.zone_in_force, req.now).map(|o| o.at);
        let mut to = TaskState::Active;
        let mut detail = json!({"next_run_at": crate::wire::time(next)});
        if let (Schedule::Once { run_at }, None) = (&task.payload.schedule, next) {
            // Its one time passed while paused: record it missed and finish,
            // unless it was already decided before the pause (it ran, or
            // failed with a retry the pause dropped): one run per occurrence.
            if tx.occurrence_runs(&task.task_id, *run_at)?.is_empty() {
                let run = missed_once(&task, *run_at, req.now);
                tx.insert_run(&run, None, None)?;
                detail = json!({"missed_run_id": run.run_id});
            }
            to = TaskState::Completed;
        } else if next.is_none() {
            to = TaskState::Completed;
        }
        let change = TaskTransition {
            task_id: &task.task_id,
            from: TaskState::Paused,
            revision: task.revision,
            to,
            reason: None,
            next_run_at: next,
            now: req.now,
        };
        let task = apply(
            tx,
            &req.caller.identity[0],
            req.now,
            &task,
            &change,
            AuditAction::Resume,
            detail,
        )?;
        if task.state == TaskState::Active {
            crate::tick::resume_overdue_clock(tx, &task, req.now)?;
        }
        Ok(Changed {
            task,
            changed: true,
        })
    })
}

pub fn delete(store: &mut dyn Store, req: &Request<'_>) -> Result<Task> {
    store.write(|tx| {
        let task = owned_task(tx, &req.caller, req.task)?;
        check_revision(&task, req.expect_revision)?;
        delete_in(tx, &task, &req.caller.identity[0], req.now, json!({}))
    })
}

/// Deletes `task` (already checked as the caller's) in `tx`, as `actor`;
/// `extra` joins the audit event's detail (a plan's hash and file).
pub fn delete_in(
    tx: &mut dyn Tx,
    task: &Task,
    actor: &str,
    now: i64,
    extra: serde_json::Value,
) -> Result<Task> {
    if task.state == TaskState::Deleted {
        return fail(CmdError::conflict(format!(
            "task {} is already deleted",
            task.label()
        )));
    }
    let change = TaskTransition {
        task_id: &task.task_id,
        from: task.state,
        revision: task.revision,
        to: TaskState::Deleted,
        reason: None,
        next_run_at: None,
        now,
    };
    let mut detail = json!({"from": task.state.as_str()});
    if let (Some(detail), serde_json::Value::Object(extra)) = (detail.as_object_mut(), extra) {
        detail.extend(extra);
    }
    let deleted = apply(tx, actor, now, task, &change, AuditAction::Delete, detail)?;
    // A deleted task expects nothing: it leaves `status`'s overdue list.
    if task.payload.expect_success_seconds.is_some() {
        tx.set_success_due(&task.task_id, None)?;
    }
    Ok(deleted)
}

fn require_state(task: &Task, wanted: TaskState, verb: &str) -> Result<()> {
    if task.state != wanted {
        return fail(CmdError::conflict(format!(
            "cannot {verb} task {}: it is {}, not {wanted}",
            task.label(),
            task.state
        )));
    }
    Ok(())
}

fn apply(
    tx: &mut dyn Tx,
    actor: &str,
    now: i64,
    task: &Task,
    change: &TaskTransition<'_>,
    action: AuditAction,
    detail: serde_json::Value,
) -> Result<Task> {
    let revision = tx.transition_task(change)?;
    tx.append_event(&Event::of_task(action, task, actor, now, detail))?;
    let mut updated = task.clone();
    updated.state = change.to;
    updated.state_reason = change.reason.map(str::to_string);
    updated.next_run_at = change.next_run_at;
    updated.revision = revision;
    updated.state_changed_at = now;
    updated.updated_at = now;
    if change.to != TaskState::Active {
        updated.next_retry_at = None;
        updated.retry_run_id = None;
    }
    Ok(updated)
}

fn missed_once(task: &Task, run_at: i64, now: i64) -> Run {
    Run::new(
        task,
        run_at,
        run_at,
        1,
        RunState::not_run(RunEnd::Missed, now),
        now,
        |r| {
            r.reason = Some("its time passed while the task was paused".into());
            r.skipped_occurrences = 1;
        },
    )
}
