//! Zones that follow their owner (docs/CONTRACT.md §18): the zone a payload
//! is read in, and `zone set` / `zone unset` with the re-timing of every
//! task that follows the key, in one write transaction.
//!
//! Invariant: a following task's zone in force is its key's current zone, or
//! its own `follow_default` while the key has none; a fixed-zone task is
//! never touched. An occurrence already due (`next_run_at <= now`) is left
//! to the claim, which runs or misses it and computes the next one in the
//! new zone; only future occurrences move.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::CmdError;
use crate::model::{Task, TaskState};
use crate::payload::Payload;
use crate::schedule::{self, Tz};
use crate::store::zones::{OwnerZone, Retime, ZoneWrite};
use crate::store::{Store, Tx};
use crate::wire::time;

/// A key's current zone in the tenant, when it has one.
pub fn current_zone(tx: &mut dyn Tx, tenant_key: &str, identity_key: &str) -> Result<Option<Tz>> {
    tx.owner_zone(tenant_key, identity_key)?
        .map(|z| stored_zone(&z))
        .transpose()
}

/// The zone a payload's schedule is read in now, for a write that creates
/// or replaces its task: its own, or for a following payload its key's
/// current zone, else its `follow_default`. Holds the key's zone until the
/// transaction ends, so a concurrent `zone set` cannot miss the task.
pub fn zone_in_force(tx: &mut dyn Tx, payload: &Payload) -> Result<Tz> {
    Ok(match payload.follow_key() {
        Some(key) => {
            tx.hold_owner_zone(&payload.tenant_key, key)?;
            current_zone(tx, &payload.tenant_key, key)?.unwrap_or(payload.zone.named())
        }
        None => payload.zone.named(),
    })
}

fn stored_zone(z: &OwnerZone) -> Result<Tz> {
    schedule::parse_zone(&z.zone)
        .map_err(|e| anyhow::anyhow!("the stored zone of {} cannot be read: {e}", z.identity_key))
}

/// What `zone set` / `zone unset` did.
pub struct ZoneChange {
    pub identity_key: String,
    pub old: Option<String>,
    pub new: Option<String>,
    /// False when the key already had that zone: nothing was written.
    pub changed: bool,
    pub retimed: Vec<Retimed>,
}

/// One following task moved to another zone.
pub struct Retimed {
    pub task: Task,
    pub from: Tz,
    pub old_next_run_at: Option<i64>,
}

/// Sets (`zone` Some) or removes (None) `identity_key`'s zone in the tenant
/// and re-times the tasks that follow it, each with a `retime` audit event,
/// in one write transaction: no tick sees the key's new zone with a task
/// not yet moved to it.
pub fn set_zone(
    store: &mut dyn Store,
    tenant_key: &str,
    identity_key: &str,
    zone: Option<Tz>,
    actor: &str,
    now: i64,
) -> Result<ZoneChange> {
    store.write(|tx| change_in(tx, tenant_key, identity_key, zone, actor, now))
}

fn change_in(
    tx: &mut dyn Tx,
    tenant_key: &str,
    identity_key: &str,
    zone: Option<Tz>,
    actor: &str,
    now: i64,
) -> Result<ZoneChange> {
    tx.hold_owner_zone(tenant_key, identity_key)?;
    let old = tx.owner_zone(tenant_key, identity_key)?;
    let old_name = old.as_ref().map(|z| z.zone.clone());
    let new_name = zone.map(|z| z.name().to_string());
    let mut change = ZoneChange {
        identity_key: identity_key.to_string(),
        old: old_name.clone(),
        new: new_name.clone(),
        changed: old_name != new_name,
        retimed: Vec::new(),
    };
    if !change.changed {
        return Ok(change);
    }
    let stored = zone.map(|z| OwnerZone {
        identity_key: identity_key.to_string(),
        zone: z.name().to_string(),
        set_at: now,
        set_by: actor.to_string(),
    });
    tx.put_owner_zone(&ZoneWrite {
        tenant_key,
        identity_key,
        from: old_name.as_deref(),
        to: stored.as_ref(),
    })?;
    let action = if zone.is_some() {
        AuditAction::ZoneSet
    } else {
        AuditAction::ZoneUnset
    };
    tx.append_event(&Event::of_tenant(
        action,
        tenant_key,
        actor,
        now,
        json!({"identity_key": identity_key, "old_zone": old_name, "new_zone": new_name}),
    ))?;
    for task in tx.following_tasks(tenant_key, identity_key)? {
        // A row that cannot be read is the tick's to quarantine; it never
        // runs, so there is nothing of it to re-time.
        let Ok(task) = task else { continue };
        if let Some(retimed) = retime(tx, task, zone, actor, now)? {
            change.retimed.push(retimed);
        }
    }
    Ok(change)
}

/// Moves one following task to its new zone in force, when that differs.
fn retime(
    tx: &mut dyn Tx,
    mut task: Task,
    owner_zone: Option<Tz>,
    actor: &str,
    now: i64,
) -> Result<Option<Retimed>> {
    let Some(default) = task.payload.zone.fallback() else {
        return Ok(None);
    };
    let to = owner_zone.unwrap_or(default);
    let from = task.zone_in_force;
    if to == from || task.state == TaskState::Error {
        return Ok(None);
    }
    let old_next = task.next_run_at;
    let next = match old_next {
        // Only an active task's future occurrence moves: a due one belongs
        // to the claim, a paused task picks its next run when resumed (in
        // the zone then in force). A schedule whose end leaves no occurrence
        // in the new zone keeps the one it had; the claim then completes it.
        Some(at) if task.state == TaskState::Active && at > now => {
            schedule::next_after(&task.payload.schedule, to, now).map_or(Some(at), |o| Some(o.at))
        }
        other => other,
    };
    tx.retime_task(&Retime {
        task_id: &task.task_id,
        from_zone: from.name(),
        to_zone: to.name(),
        expected_next_run_at: old_next,
        next_run_at: next,
        now,
    })
    .map_err(|e| match e.downcast::<CmdError>() {
        Ok(conflict) => conflict
            .with_hint("a tick moved the task meanwhile; run the same `zone set` again")
            .into(),
        Err(other) => other,
    })?;
    tx.append_event(&Event::of_task(
        AuditAction::Retime,
        &task,
        actor,
        now,
        json!({"follows": task.follow_key(), "from_zone": from.name(),
               "to_zone": to.name(), "old_next_run_at": time(old_next),
               "next_run_at": time(next)}),
    ))?;
    task.zone_in_force = to;
    task.next_run_at = next;
    task.updated_at = now;
    Ok(Some(Retimed {
        task,
        from,
        old_next_run_at: old_next,
    }))
}
