//! PostgreSQL side of the owners' zones and of re-timing following tasks.

use crate::store::sql::zones as sql;
use anyhow::{Context, Result};
use postgres::Row;

use super::tasks::decode_task;
use super::{col, expect_one, PgTx};
use crate::audit::StoredEvent;
use crate::model::Task;
use crate::store::rows::EVENT_COLUMNS;
use crate::store::tasks::TASK_COLUMNS;
use crate::store::zones::{OwnerZone, Retime, ZoneTx};
use crate::store::CorruptRow;

fn decode_zone(row: &Row) -> Result<OwnerZone> {
    Ok(OwnerZone {
        identity_key: col(row, 0)?,
        zone: col(row, 1)?,
        set_at: col(row, 2)?,
        set_by: col(row, 3)?,
    })
}

impl ZoneTx for PgTx<'_, '_> {
    fn hold_owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<()> {
        // One lock per (tenant, key), released at commit or rollback; the
        // newline cannot occur in a key (docs/CONTRACT.md §1), so no two
        // pairs share a text.
        let name = format!("agentcron zone\n{tenant_key}\n{identity_key}");
        self.tx
            .execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[&name],
            )
            .context("waiting for the owner's zone")?;
        Ok(())
    }

    fn owner_zone(&mut self, tenant_key: &str, identity_key: &str) -> Result<Option<OwnerZone>> {
        let row = self
            .tx
            .query_opt(sql::OWNER_ZONE, &[&tenant_key, &identity_key])
            .context("reading the owner's zone")?;
        row.map(|r| decode_zone(&r)).transpose()
    }

    fn owner_zones(&mut self, tenant_key: &str) -> Result<Vec<OwnerZone>> {
        self.tx
            .query(
                "SELECT identity_key, zone, set_at, set_by FROM zones
                 WHERE tenant_key = $1 ORDER BY identity_key COLLATE \"C\"",
                &[&tenant_key],
            )
            .context("reading the owners' zones")?
            .iter()
            .map(decode_zone)
            .collect()
    }

    fn put_owner_zone(
        &mut self,
        tenant_key: &str,
        identity_key: &str,
        from: Option<&str>,
        to: Option<&OwnerZone>,
    ) -> Result<()> {
        let changed = match (from, to) {
            (None, Some(to)) => self.tx.execute(
                sql::INSERT_OWNER_ZONE,
                &[&tenant_key, &identity_key, &to.zone, &to.set_at, &to.set_by],
            ),
            (Some(from), Some(to)) => self.tx.execute(
                sql::UPDATE_OWNER_ZONE,
                &[
                    &to.zone,
                    &to.set_at,
                    &to.set_by,
                    &tenant_key,
                    &identity_key,
                    &from,
                ],
            ),
            (Some(from), None) => self
                .tx
                .execute(sql::DELETE_OWNER_ZONE, &[&tenant_key, &identity_key, &from]),
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
        // Locked: a claim on another host skips these rows until the
        // re-time commits, rather than advancing one in the old zone.
        self.tx
            .query(
                &format!(
                    "SELECT {TASK_COLUMNS} FROM tasks
                     WHERE tenant_key = $1 AND follow_key = $2 AND state <> 'deleted'
                     ORDER BY task_id FOR UPDATE"
                ),
                &[&tenant_key, &identity_key],
            )
            .context("reading the owner's following tasks")?
            .iter()
            .map(decode_task)
            .collect()
    }

    fn retime_task(&mut self, c: &Retime<'_>) -> Result<()> {
        let changed = self
            .tx
            .execute(
                "UPDATE tasks SET zone_in_force = $1, next_run_at = $2, updated_at = $3
                 WHERE task_id = $4 AND follow_key IS NOT NULL AND zone_in_force = $5
                   AND next_run_at IS NOT DISTINCT FROM $6",
                &[
                    &c.to_zone,
                    &c.next_run_at,
                    &c.now,
                    &c.task_id,
                    &c.from_zone,
                    &c.expected_next_run_at,
                ],
            )
            .context("re-timing the task")?;
        expect_one(changed, || {
            format!("task {} changed while it was being re-timed", c.task_id)
        })
    }

    fn retimes(&mut self, task_id: &str) -> Result<Vec<StoredEvent>> {
        self.tx
            .query(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events
                     WHERE task_id = $1 AND action = 'retime' ORDER BY event_id"
                ),
                &[&task_id],
            )
            .context("reading the task's re-times")?
            .iter()
            .map(crate::store::rows::event)
            .collect()
    }
}
