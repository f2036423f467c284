//! Owners' current zones and the re-timing of the tasks that follow them
//! (docs/CONTRACT.md §18): one zone per identity key and tenant, written by
//! the host; a following task keeps its zone in force beside its
//! `next_run_at`, and both change together, in the transaction that
//! changes the owner's zone.

use anyhow::Result;

use crate::audit::StoredEvent;
use crate::model::Task;
use crate::store::CorruptRow;

/// One identity key's current zone, as stored (the zone an IANA name the
/// reader checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerZone {
    pub identity_key: String,
    pub zone: String,
    pub set_at: i64,
    /// The caller's first identity key when it was set.
    pub set_by: String,
}

/// A following task moved to another zone: its zone in force, and its next
/// occurrence recomputed there. Guarded by the zone and next run read in
/// the same transaction: a claim that moved the task meanwhile is a
/// Conflict, never overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retime<'a> {
    pub task_id: &'a str,
    pub from_zone: &'a str,
    pub to_zone: &'a str,
    pub expected_next_run_at: Option<i64>,
    pub next_run_at: Option<i64>,
    pub now: i64,
}

pub trait ZoneTx {
    /// Serializes this write transaction with every other one that reads
    /// or changes the key's zone, until it ends: a task confirmed while the
    /// key's zone changes starts in the new zone or is re-timed by the
    /// change, never left in the old one. SQLite's write transactions are
    /// serial already; PostgreSQL takes a transaction-scoped advisory lock
    /// on the (tenant, key), which a row lock could not give before the
    /// key's first zone exists.
    fn hold_owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<()>;
    fn owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<Option<OwnerZone>>;
    /// Every key's zone in the tenant, by key.
    fn owner_zones(&mut self, tenant_key: &str) -> Result<Vec<OwnerZone>>;
    /// Sets (`to` Some) or removes (None) the key's zone, guarded by the zone
    /// read in this transaction (`from`): Conflict when another writer
    /// changed it meanwhile.
    fn put_owner_zone(
        &mut self,
        tenant_key: &str,
        identity_key: &str,
        from: Option<&str>,
        to: Option<&OwnerZone>,
    ) -> Result<()>;
    /// The tenant's tasks, deleted ones aside, that follow `identity_key`.
    /// PostgreSQL locks them until the transaction ends, so a tick on
    /// another host skips them (SKIP LOCKED) instead of claiming a task
    /// whose zone is changing.
    fn following_tasks(
        &mut self,
        tenant_key: &str,
        identity_key: &str,
    ) -> Result<Vec<Result<Task, CorruptRow>>>;
    /// Moves a following task to another zone (does not bump the revision:
    /// the confirmed payload did not change, only where its owner is).
    fn retime_task(&mut self, change: &Retime<'_>) -> Result<()>;
    /// The task's `retime` events, oldest first (one per move of its owner).
    fn retimes(&mut self, task_id: &str) -> Result<Vec<StoredEvent>>;
}
