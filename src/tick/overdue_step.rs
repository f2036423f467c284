//! The tick's step that decides the overdue clocks that ran out
//! (docs/CONTRACT.md §6, §16; the clock itself is tick/overdue.rs): every
//! task whose clock ran out by now, up to `BATCH`, each in its own write
//! transaction, moved into `overdue_since` with its audit event and
//! notice, and reported.

use anyhow::Result;

use crate::clock::Clock;
use crate::model::DeliveryState;
use crate::store::{Store, SuccessDue, Tx};

use super::events::TickEvent;
use super::overdue::tell;
use super::{TaskRef, TickOptions};

/// Tasks one tick decides at most; the rest wait for the next tick (the
/// earliest first, so none waits forever).
pub const BATCH: u32 = 100;

/// What deciding changed.
#[derive(Debug, Default)]
pub struct Decided {
    /// Notices were added (to be sent in this tick).
    pub notices_added: bool,
    /// Anything at all was written.
    pub changed: bool,
}

/// The tick's step: every task (of the tick's tenant) whose clock ran out
/// by now, up to `BATCH`, decided in its own transaction and reported.
pub fn decide(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<Decided> {
    let now = clock.now();
    let tenant = options.tenant.as_deref();
    let due = store.read(|tx| tx.successes_due(now, tenant, BATCH))?;
    let mut decided = Decided::default();
    for due in due {
        let Some(event) = store.write(|tx| decide_one(tx, &due, now))? else {
            continue;
        };
        decided.changed = true;
        if let TickEvent::Overdue {
            notice: Some(n), ..
        } = &event
        {
            decided.notices_added |= n.state == DeliveryState::Pending;
        }
        report(&event)?;
    }
    Ok(decided)
}

/// One task: overdue (with its event and notice), or its clock dropped
/// when it will not run again. None when a success or another tick moved
/// it since it was read, or when it has no run yet to carry the notice:
/// the claim that records its first runs decides it (`at_claim`), later
/// in this tick.
fn decide_one(tx: &mut dyn Tx, due: &SuccessDue, now: i64) -> Result<Option<TickEvent>> {
    let task = match tx.task(&due.task_id)? {
        Some(Ok(task)) if due.active => task,
        // Completed, deleted or quarantined (or a row the claim step
        // quarantines): nothing will run, so nothing is expected.
        _ => return settled_quietly(tx.drop_success_due(due)),
    };
    let Some(run) = tx.task_runs(&task.task_id, 1)?.pop() else {
        return Ok(None);
    };
    if let Err(e) = tx.mark_overdue(due) {
        return settled_quietly(Err(e));
    }
    let (message, notice) = tell(tx, &task, due, &run, now)?;
    Ok(Some(TickEvent::Overdue {
        task: TaskRef::of(&task),
        tenant_key: task.payload.tenant_key.clone(),
        since: due.success_due_at,
        message,
        notice: Some(notice),
    }))
}

/// A guarded change that found the task moved on is not an error: the
/// success (or the other tick) that moved it decided it.
fn settled_quietly(change: Result<()>) -> Result<Option<TickEvent>> {
    match change {
        Ok(()) => Ok(None),
        Err(e) if super::deliver::is_conflict(&e) => Ok(None),
        Err(e) => Err(e),
    }
}
