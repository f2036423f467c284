//! SQLite side of the owners' zones and of re-timing following tasks.

use super::numbered;
use crate::store::sql::zones as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Row};

use super::tasks::decode_task;
use super::{expect_one, SqliteTx};
use crate::audit::StoredEvent;
use crate::model::Task;
use crate::store::rows::EVENT_COLUMNS;
use crate::store::tasks::TASK_COLUMNS;
use crate::store::zones::{OwnerZone, Retime, ZoneTx};
use crate::store::CorruptRow;

fn decode_zone(row: &Row<'_>) -> rusqlite::Result<OwnerZone> {
    Ok(OwnerZone {
        identity_key: row.get(0)?,
        zone: row.get(1)?,
        set_at: row.get(2)?,
        set_by: row.get(3)?,
    })
}

impl ZoneTx for SqliteTx<'_> {
    fn hold_owner_zone(&mut self, _tenant_key: &str, _identity_key: &str) -> Result<()> {
        // BEGIN IMMEDIATE: no other write transaction runs beside this one.
        Ok(())
    }

    fn owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<Option<OwnerZone>> {
        self.conn
            .prepare_cached(&numbered(sql::OWNER_ZONE))?
            .query_row(params![tenant_key, identity_key], decode_zone)
            .optional()
            .context("reading the owner's zone")
    }

    fn owner_zones(&mut self, tenant_key: &str) -> Result<Vec<OwnerZone>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT identity_key, zone, set_at, set_by FROM zones
             WHERE tenant_key = ?1 ORDER BY identity_key",
        )?;
        let rows = stmt.query_map([tenant_key], decode_zone)?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("reading the owners' zones")
    }

    fn put_owner_zone(
        &mut self,
        tenant_key: &str,
        identity_key: &str,
        from: Option<&str>,
        to: Option<&OwnerZone>,
    ) -> Result<()> {
        let changed = match (from, to) {
            // The primary key is the guard: a key another writer gave a zone
            // meanwhile is not overwritten.
            (None, Some(to)) => self
                .conn
                .prepare_cached(&numbered(sql::INSERT_OWNER_ZONE))?
                .execute(params![
                    tenant_key,
                    identity_key,
                    to.zone,
                    to.set_at,
                    to.set_by
                ]),
            (Some(from), Some(to)) => self
                .conn
                .prepare_cached(&numbered(sql::UPDATE_OWNER_ZONE))?
                .execute(params![
                    to.zone,
                    to.set_at,
                    to.set_by,
                    tenant_key,
                    identity_key,
                    from
                ]),
            (Some(from), None) => self
                .conn
                .prepare_cached(&numbered(sql::DELETE_OWNER_ZONE))?
                .execute(params![tenant_key, identity_key, from]),
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
        // Along tasks_following: an owner's following tasks, not the tenant's.
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks INDEXED BY tasks_following
             WHERE tenant_key = ?1 AND follow_key = ?2 AND state <> 'deleted'
             ORDER BY task_id"
        ))?;
        let rows = stmt.query_map(params![tenant_key, identity_key], decode_task)?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("reading the owner's following tasks")
    }

    fn retime_task(&mut self, c: &Retime<'_>) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE tasks SET zone_in_force = ?1, next_run_at = ?2, updated_at = ?3
                 WHERE task_id = ?4 AND follow_key IS NOT NULL AND zone_in_force = ?5
                   AND next_run_at IS ?6",
            )?
            .execute(params![
                c.to_zone,
                c.next_run_at,
                c.now,
                c.task_id,
                c.from_zone,
                c.expected_next_run_at
            ])
            .context("re-timing the task")?;
        expect_one(changed, || {
            format!("task {} changed while it was being re-timed", c.task_id)
        })
    }

    fn retimes(&mut self, task_id: &str) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events INDEXED BY events_retimes
             WHERE task_id = ?1 AND action = 'retime' ORDER BY event_id"
        ))?;
        let rows = stmt.query_map([task_id], |row| crate::store::rows::event(row))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("reading the task's re-times")
    }
}
