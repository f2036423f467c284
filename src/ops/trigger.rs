//! One extra run of a confirmed task, due now (docs/CONTRACT.md §13): a
//! pending request on the task that the next tick claims under the same
//! rules as an occurrence; the schedule does not move. Only an active task
//! is triggered, and only one trigger is pending at a time: both are checked
//! in the transaction that sets it.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError};
use crate::model::{Task, TaskState};
use crate::ops::access::{owned_task, Caller};
use crate::store::{Store, Trigger};
use crate::text::escape;
use crate::wire::time;

/// Sets `trigger` on the task `task` names (id, unique prefix or name) and
/// records who asked and why; returns the task as it was found.
pub fn trigger(
    store: &mut dyn Store,
    caller: &Caller<'_>,
    task: &str,
    trigger: &Trigger,
) -> Result<Task> {
    store.write(|tx| {
        let task = owned_task(tx, caller, task)?;
        if task.state != TaskState::Active {
            return fail(
                CmdError::conflict(format!(
                    "task {} is {}; only an active task can be triggered",
                    escape(&task.label()),
                    task.state
                ))
                .with_hint(if task.state == TaskState::Paused {
                    "resume it first with `agentcron resume`"
                } else {
                    "draft a new task instead"
                }),
            );
        }
        if let Some(pending) = tx.pending_trigger(&task.task_id)? {
            return fail(
                CmdError::conflict(format!(
                    "task {} already has a run triggered at {} by {}",
                    escape(&task.label()),
                    crate::schedule::format_utc(pending.at),
                    escape(&pending.actor)
                ))
                .with_hint("`agentcron tick` runs it; trigger again after it ran"),
            );
        }
        tx.set_trigger(&task.task_id, task.revision, trigger)?;
        tx.append_event(&Event::of_task(
            AuditAction::Trigger,
            &task,
            &trigger.actor,
            trigger.at,
            json!({"trigger_at": time(Some(trigger.at)), "reason": trigger.reason}),
        ))?;
        Ok(task)
    })
}
