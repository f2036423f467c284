//! Steps 1–3 of a tick: what expired since the last one. Expired leases
//! freeze their runs `unknown` (the outcome is uncertain, never retried);
//! delivery attempts past their deadline become `unknown` (maybe sent,
//! never resent) and notices never taken past `--delivery-give-up`
//! `undeliverable`; continuations past their deadline fail. Each step is
//! its own IMMEDIATE transaction, and reported once it committed.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::clock::Clock;
use crate::model::{Notice, Run, RunStatus, Task};
use crate::store::{Store, Tx};

use super::events::{delivery_event, TickEvent, ACTOR};
use super::{settle, TaskRef, TickOptions};

/// What steps 1–3 changed.
pub struct Expired {
    /// Runs were settled: their notices wait to be sent.
    pub notices_added: bool,
    /// Anything at all was written.
    pub changed: bool,
}

/// Freezes as `unknown` every running run (of `tenant`, or all) whose lease
/// has passed, with its event and notice, in the caller's transaction: the
/// tick's first step, and `reconcile`'s before it lists or settles, so runs
/// left `running` by a restored copy can be settled before ticks restart.
pub fn freeze_expired_leases(
    tx: &mut dyn Tx,
    now: i64,
    tenant: Option<&str>,
) -> Result<Vec<(Run, Option<Task>)>> {
    let runs = tx.expire_leases(now, tenant)?;
    let mut out = Vec::new();
    for (run, lease_until) in runs {
        let task = tx.task(&run.task_id)?.and_then(Result::ok);
        tx.append_event(&Event::of_run(
            AuditAction::LeaseExpired,
            &run,
            ACTOR,
            now,
            json!({"lease_until": lease_until}),
        ))?;
        settle::add_notice(tx, &run, task.as_ref(), now, None)?;
        out.push((run, task));
    }
    Ok(out)
}

/// Steps 1–3: what expired since the last tick.
pub fn expire(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<Expired> {
    let leases = expire_leases(store, options, clock, report)?;
    let deliveries = expire_deliveries(store, options, clock, report)?;
    let continuations = expire_continuations(store, options, clock, report)?;
    Ok(Expired {
        notices_added: leases || continuations,
        changed: leases || deliveries || continuations,
    })
}

/// Step 1, expired leases: the outcome is uncertain, so the run is
/// frozen. Whether any was.
fn expire_leases(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<bool> {
    let tenant = options.tenant.as_deref();
    let now = clock.now();
    let expired = store.write(|tx| freeze_expired_leases(tx, now, tenant))?;
    let any = !expired.is_empty();
    for (run, task) in expired {
        report(&TickEvent::LeaseExpired {
            run,
            task: task.map(Box::new),
        })?;
    }
    Ok(any)
}

/// Step 2, delivery attempts past their deadline: maybe sent, never
/// resent; notices the notifier never took past the give-up age: never
/// sent. Whether any notice changed.
fn expire_deliveries(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<bool> {
    let tenant = options.tenant.as_deref();
    let now = clock.now();
    let give_up_before = now - options.delivery_give_up.as_secs() as i64;
    let (expired, abandoned) = store.write(|tx| {
        let expired = tx.expire_notices(now, tenant)?;
        for n in &expired {
            tx.append_event(&delivery_event(
                now,
                n,
                json!({"delivery_id": n.delivery_id, "state": "unknown",
                       "error": "delivery deadline passed"}),
            ))?;
        }
        let abandoned = tx.give_up_notices(give_up_before, now, tenant)?;
        for n in &abandoned {
            tx.append_event(&delivery_event(
                now,
                n,
                json!({"delivery_id": n.delivery_id, "state": "undeliverable",
                       "error": n.last_error, "attempts": n.attempts}),
            ))?;
        }
        Ok((named(tx, expired)?, named(tx, abandoned)?))
    })?;
    let any = !expired.is_empty() || !abandoned.is_empty();
    for (task, notice) in expired {
        report(&TickEvent::NoticeExpired { notice, task })?;
    }
    for (task, notice) in abandoned {
        report(&TickEvent::NoticeUndeliverable { notice, task })?;
    }
    Ok(any)
}

/// Each notice with the task of its run, for the report.
fn named(tx: &mut dyn Tx, notices: Vec<Notice>) -> Result<Vec<(Option<TaskRef>, Notice)>> {
    notices
        .into_iter()
        .map(|n| Ok((TaskRef::of_run(tx, &n.run_id)?, n)))
        .collect()
}

/// Step 3, continuations past their deadline fail; their notices go out
/// with the others. Whether any did.
fn expire_continuations(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<bool> {
    let tenant = options.tenant.as_deref();
    let now = clock.now();
    let parked = store.write(|tx| {
        let runs = tx.expired_continuations(now, tenant)?;
        for run in &runs {
            let outcome = settle::Outcome::settled(
                RunStatus::Failed,
                None,
                Some("continuation expired".into()),
            );
            settle::settle(tx, run, run.status(), None, &outcome, ACTOR, now, None)?;
        }
        runs.into_iter()
            .map(|run| Ok((TaskRef::of_run(tx, &run.run_id)?, run)))
            .collect::<Result<Vec<_>>>()
    })?;
    let any = !parked.is_empty();
    for (task, run) in parked {
        report(&TickEvent::ContinuationExpired { run, task })?;
    }
    Ok(any)
}
