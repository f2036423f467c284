//! An approved continuation claimed again (docs/CONTRACT.md §6,
//! Continuations), and what every executor is told of its task's last
//! settled run (`previous`, §16). `approve` without `--here` leaves the
//! continuation to the tick, which has cron's executor and environment;
//! `approve --here` (ops/approve.rs) builds the same stdin from the same
//! two functions. A continuation is not a new start: it counts in no
//! budget and passes no gate again.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::model::{Lease, Run, Start};
use crate::store::{LastSettled, Tx};

use super::{ClaimSettings, Claimed};
use crate::tick::budget;

/// The executor's `previous` (docs/CONTRACT.md §16): the task's last
/// settled run and its last success's time, from the task's memory (one
/// lookup, however long its history); null when it has neither.
pub fn previous_run(tx: &mut dyn Tx, task_id: &str) -> Result<serde_json::Value> {
    Ok(previous_of(tx.last_settled(task_id)?))
}

/// `previous_run` of what `last_settled` read.
pub fn previous_of(memory: Option<LastSettled>) -> serde_json::Value {
    let Some(memory) = memory else {
        return serde_json::Value::Null;
    };
    let last = memory.run;
    if last.is_none() && memory.last_success_at.is_none() {
        return serde_json::Value::Null;
    }
    let time = crate::wire::time;
    json!({
        "run_id": last.as_ref().map(|r| r.run_id.clone()),
        "scheduled_for": time(last.as_ref().map(|r| r.scheduled_for)),
        "status": last.as_ref().map(|r| r.status().as_str()),
        "finished_at": time(last.as_ref().and_then(|r| r.finished_at())),
        "summary": last.as_ref().and_then(|r| r.summary.clone()),
        "last_success_at": time(memory.last_success_at),
    })
}

/// What the executor of an approved parked run is told on stdin
/// (docs/CONTRACT.md §6, executor protocol).
pub fn approved_continuation(run: &Run) -> serde_json::Value {
    let wait = run.wait();
    json!({"kind": wait.map(|w| w.kind.as_str()), "wait_id": wait.map(|w| &w.id),
           "decision": "approved"})
}

/// Claims a continuation an owner approved (docs/CONTRACT.md §6, Continuations;
/// `approve` without `--here` leaves it to the tick, which has cron's
/// executor and environment). None when its task cannot be read (the due
/// path quarantines it) or another tick claimed it first.
pub fn continue_approved(
    tx: &mut dyn Tx,
    mut run: Run,
    s: ClaimSettings,
) -> Result<Option<Claimed>> {
    let Some(Ok(task)) = tx.task(&run.task_id)? else {
        return Ok(None);
    };
    // A continuation is a run of its profile too (docs/CONTRACT.md §22):
    // over `--max-concurrent` it stays approved, for a later claim.
    if let Some(bound) = &task.payload.profile {
        if let Some(limit) = bound.definition.max_concurrent {
            if tx.running_under_profile(&task.payload.tenant_key, &bound.name)? >= limit {
                return Ok(None);
            }
        }
    }
    let wait_id = run.wait().map(|w| w.id.clone()).unwrap_or_default();
    let lease = Lease {
        token: uuid::Uuid::new_v4().to_string(),
        until: s.now + s.lease_seconds,
    };
    let start = Start {
        at: s.now,
        queued_seconds: run.queued_seconds(),
    };
    let Some(running) = run.state.continued(start, lease.clone()) else {
        return Ok(None);
    };
    match tx.reclaim_parked(&run.run_id, &wait_id, &lease.token, lease.until, s.now) {
        Ok(()) => {}
        Err(e) if crate::error::classify(&e).0 == crate::error::ErrorKind::Conflict => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    }
    if let Some(runner) = s.runner {
        tx.mark_runner(&run.run_id, runner)?;
    }
    tx.append_event(&Event::of_run(
        AuditAction::Continue,
        &run,
        "agentcron:tick",
        s.now,
        json!({"wait_id": wait_id, "approved_by": run.approval().map(|a| &a.by),
               "approved_at": run.approval().map(|a| a.at)}),
    ))?;
    let continuation = approved_continuation(&run);
    // The approval stays on this copy (the stored row dropped it) so the
    // tick can say who approved what it runs.
    run.state = running;
    let previous = previous_run(tx, &task.task_id)?;
    // A continuation is not a new start: it counts in no budget.
    let budgets = budget::read(tx, &task, s.now)?;
    Ok(Some(Claimed::Continued {
        task: Box::new(task),
        run: Box::new(run),
        continuation,
        previous,
        budgets,
    }))
}
