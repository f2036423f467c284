//! PostgreSQL side of the audit trail.

use crate::store::sql::events as sql;
use anyhow::{Context, Result};
use postgres::Row;

use super::tasks::owned;
use super::PgTx;
use crate::audit::{Event, StoredEvent};
use crate::store::rows::EVENT_COLUMNS;
use crate::store::EventTx;

/// An event row, by the decoder both stores share.
fn decode_event(row: &Row) -> Result<StoredEvent> {
    crate::store::rows::event(row)
}

impl EventTx for PgTx<'_, '_> {
    fn append_event(&mut self, e: &Event) -> Result<()> {
        self.tx
            .execute(
                sql::APPEND_EVENT,
                &[
                    &e.at,
                    &e.tenant_key,
                    &e.actor,
                    &e.action.as_str(),
                    &e.task_id,
                    &e.run_id,
                    &e.detail.to_string(),
                ],
            )
            .context("appending the audit event")?;
        Ok(())
    }

    fn events(
        &mut self,
        tenant_key: &str,
        owner_keys: &[String],
        task_id: Option<&str>,
        limit: u64,
    ) -> Result<Vec<StoredEvent>> {
        // Drafts are shown to their author, task events to the task's owners.
        let visible = format!(
            "(CASE WHEN e.task_id IS NULL THEN e.action <> 'draft' OR e.actor = ANY($3::text[])
                   ELSE {} END)",
            owned("t", 3)
        );
        let columns = "e.event_id, e.at, e.tenant_key, e.actor, e.action, e.task_id, e.run_id,
                       e.detail FROM events e LEFT JOIN tasks t ON t.task_id = e.task_id";
        // One text per case, each arm read newest first along an index and
        // stopped at the limit, as on SQLite.
        let sql = match task_id {
            Some(_) => format!(
                "SELECT {columns} WHERE e.task_id = $2 AND e.tenant_key IN ($1, '*') AND {visible}
                 ORDER BY e.event_id DESC LIMIT $4"
            ),
            None => format!(
                "(SELECT {columns} WHERE e.tenant_key = $1 AND $2::text IS NULL AND {visible}
                  ORDER BY e.event_id DESC LIMIT $4)
                 UNION ALL
                 (SELECT {columns} WHERE e.tenant_key = '*' AND $1 <> '*' AND {visible}
                  ORDER BY e.event_id DESC LIMIT $4)
                 ORDER BY 1 DESC LIMIT $4"
            ),
        };
        let rows = self
            .tx
            .query(&sql, &[&tenant_key, &task_id, &owner_keys, &(limit as i64)])
            .context("reading the audit trail")?;
        rows.iter().map(decode_event).collect()
    }

    fn last_pause_change(&mut self, task_id: &str, at: i64) -> Result<Option<StoredEvent>> {
        let row = self
            .tx
            .query_opt(&sql::LAST_PAUSE_CHANGE, &[&task_id, &at])?;
        row.map(|r| decode_event(&r)).transpose()
    }

    fn last_scheduler_gap(
        &mut self,
        tenant: Option<&str>,
        since: i64,
    ) -> Result<Option<StoredEvent>> {
        let row = self.tx.query_opt(
            &format!(
                "SELECT {EVENT_COLUMNS} FROM events
             WHERE action = 'scheduler_gap' AND ($1::text IS NULL OR tenant_key IN ($1, '*'))
               AND at >= $2
             ORDER BY at DESC, event_id DESC LIMIT 1"
            ),
            &[&tenant, &since],
        )?;
        row.map(|r| decode_event(&r)).transpose()
    }
}
