//! Owners' current zones and the re-timing of the tasks that follow them
//! (docs/CONTRACT.md §18): one zone per identity key and tenant, written by
//! the host; a following task keeps its zone in force beside its
//! `next_run_at`, and both change together, in the transaction that
//! changes the owner's zone. The operations and their one implementation
//! over `Connection`.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::connection::{expect_one, Connection, Dialect, Row};
use crate::audit::StoredEvent;
use crate::model::Task;
use crate::store::connection::args;
use crate::store::rows::EVENT_COLUMNS;
use crate::store::tasks::TASK_COLUMNS;
use crate::store::CorruptRow;

/// One identity key's current zone, as stored (the zone an IANA name the
/// reader checks).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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

/// A key's zone set (`to` Some) or removed (None), guarded by the zone
/// read in the same transaction (`from`, None when it had none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneWrite<'a> {
    pub tenant_key: &'a str,
    pub identity_key: &'a str,
    pub from: Option<&'a str>,
    pub to: Option<&'a OwnerZone>,
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
    /// Sets or removes the key's zone, guarded by the zone read in this
    /// transaction: Conflict when another writer changed it meanwhile.
    fn put_owner_zone(&mut self, change: &ZoneWrite<'_>) -> Result<()>;
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

impl<C: Connection> ZoneTx for C {
    fn hold_owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<()> {
        // The newline cannot occur in a key (docs/CONTRACT.md §1), so no two
        // pairs share a text.
        self.hold_until_end(&format!("agentcron zone\n{tenant_key}\n{identity_key}"))
            .context("waiting for the owner's zone")
    }

    fn owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<Option<OwnerZone>> {
        let row = self
            .query_opt(
                "SELECT identity_key, zone, set_at, set_by FROM zones
                 WHERE tenant_key = $1 AND identity_key = $2",
                args![tenant_key, identity_key],
            )
            .context("reading the owner's zone")?;
        row.as_ref().map(Row::decode).transpose()
    }

    fn owner_zones(&mut self, tenant_key: &str) -> Result<Vec<OwnerZone>> {
        // By key, byte by byte on both servers.
        let collate = self.dialect().pick("", " COLLATE \"C\"");
        self.query(
            &format!(
                "SELECT identity_key, zone, set_at, set_by FROM zones
                 WHERE tenant_key = $1 ORDER BY identity_key{collate}"
            ),
            args![tenant_key],
        )
        .context("reading the owners' zones")?
        .iter()
        .map(Row::decode)
        .collect()
    }

    fn put_owner_zone(&mut self, change: &ZoneWrite<'_>) -> Result<()> {
        let ZoneWrite {
            tenant_key,
            identity_key,
            from,
            to,
        } = *change;
        let changed = match (from, to) {
            // The primary key is the guard: a key another writer gave a zone
            // meanwhile is not overwritten.
            (None, Some(to)) => self.execute(
                "INSERT INTO zones (tenant_key, identity_key, zone, set_at, set_by)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                args![tenant_key, identity_key, &to.zone, to.set_at, &to.set_by],
            ),
            (Some(from), Some(to)) => self.execute(
                "UPDATE zones SET zone = $1, set_at = $2, set_by = $3
                 WHERE tenant_key = $4 AND identity_key = $5 AND zone = $6",
                args![
                    &to.zone,
                    to.set_at,
                    &to.set_by,
                    tenant_key,
                    identity_key,
                    from
                ],
            ),
            (Some(from), None) => self.execute(
                "DELETE FROM zones WHERE tenant_key = $1 AND identity_key = $2 AND zone = $3",
                args![tenant_key, identity_key, from],
            ),
            (None, None) => return Ok(()),
        }
        .context("writing the owner's zone")?;
        expect_one(changed, || {
            format!("the zone of {identity_key} changed meanwhile")
        })
    }

    fn following_tasks(
        &mut self,
        tenant_key: &str,
        identity_key: &str,
    ) -> Result<Vec<Result<Task, CorruptRow>>> {
        // SQLite walks tasks_following: an owner's following tasks, not the
        // tenant's. PostgreSQL locks them: a claim on another host skips
        // these rows until the re-time commits, rather than advancing one in
        // the old zone.
        let (index, lock) = match self.dialect() {
            Dialect::Sqlite => (" INDEXED BY tasks_following", ""),
            Dialect::Postgres => ("", " FOR UPDATE"),
        };
        self.query(
            &format!(
                "SELECT {TASK_COLUMNS} FROM tasks{index}
                 WHERE tenant_key = $1 AND follow_key = $2 AND state <> 'deleted'
                 ORDER BY task_id{lock}"
            ),
            args![tenant_key, identity_key],
        )
        .context("reading the owner's following tasks")?
        .iter()
        .map(crate::store::tasks::decode_task)
        .collect()
    }

    fn retime_task(&mut self, c: &Retime<'_>) -> Result<()> {
        self.guarded(
            "UPDATE tasks SET zone_in_force = $1, next_run_at = $2, updated_at = $3
                 WHERE task_id = $4 AND follow_key IS NOT NULL AND zone_in_force = $5
                   AND next_run_at IS NOT DISTINCT FROM $6",
            args![
                c.to_zone,
                c.next_run_at,
                c.now,
                c.task_id,
                c.from_zone,
                c.expected_next_run_at
            ],
            "re-timing the task",
            || format!("task {} changed while it was being re-timed", c.task_id),
        )
    }

    fn retimes(&mut self, task_id: &str) -> Result<Vec<StoredEvent>> {
        let index = self.dialect().pick(" INDEXED BY events_retimes", "");
        self.query(
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events{index}
                 WHERE task_id = $1 AND action = 'retime' ORDER BY event_id"
            ),
            args![task_id],
        )
        .context("reading the task's re-times")?
        .iter()
        .map(crate::store::rows::event)
        .collect()
    }
}
