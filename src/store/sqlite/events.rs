//! SQLite side of the audit trail.

use super::numbered;
use crate::store::sql::events as sql;
use anyhow::{Context, Result};
use rusqlite::params;

use super::SqliteTx;
use crate::audit::{Event, StoredEvent};
use crate::store::rows::EVENT_COLUMNS;
use crate::store::EventTx;

/// Drafts are shown to their author, task events to the task's owners (?3,
/// a JSON array of keys).
macro_rules! visible_event {
    () => {
        "(CASE WHEN e.task_id IS NULL
               THEN e.action <> 'draft' OR e.actor IN (SELECT value FROM json_each(?3))
               ELSE EXISTS (SELECT 1 FROM json_each(t.owner_keys) AS o
                            WHERE o.value IN (SELECT value FROM json_each(?3))) END)"
    };
}

macro_rules! event_columns {
    () => {
        "e.event_id, e.at, e.tenant_key, e.actor, e.action, e.task_id, e.run_id, e.detail
         FROM events e LEFT JOIN tasks t ON t.task_id = e.task_id"
    };
}

/// The tenant's events and those of every tenant (`*`), newest first: two
/// walks down `events_by_tenant`, merged (?2 is unused; the second walk is
/// skipped when the tenant is `*` itself, which would list its events twice).
const TENANT_EVENTS: &str = concat!(
    "SELECT ",
    event_columns!(),
    " WHERE e.tenant_key = ?1 AND ",
    visible_event!(),
    " UNION ALL SELECT ",
    event_columns!(),
    " WHERE e.tenant_key = '*' AND ?1 <> '*' AND ",
    visible_event!(),
    " ORDER BY 1 DESC LIMIT ?4"
);

/// One task's events, newest first, down `events_by_task`.
const TASK_EVENTS: &str = concat!(
    "SELECT ",
    event_columns!(),
    " WHERE e.task_id = ?2 AND e.tenant_key IN (?1, '*') AND ",
    visible_event!(),
    " ORDER BY e.event_id DESC LIMIT ?4"
);

impl EventTx for SqliteTx<'_> {
    fn append_event(&mut self, e: &Event) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::APPEND_EVENT))?
            .execute(params![
                e.at,
                e.tenant_key,
                e.actor,
                e.action.as_str(),
                e.task_id,
                e.run_id,
                e.detail.to_string()
            ])
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
        let keys = serde_json::to_string(owner_keys)?;
        // One text per case, each read newest first along an index and
        // stopped at the limit: `tenant_key IN (?1, '*')` with `(?2 IS NULL
        // OR task_id = ?2)` made SQLite sort every event of the tenant.
        let sql = match task_id {
            Some(_) => TASK_EVENTS,
            None => TENANT_EVENTS,
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let rows = stmt.query_map(
            params![tenant_key, task_id, keys, limit as i64],
            decode_event,
        )?;
        rows.collect::<Result<Vec<_>, _>>()
            .context("reading the audit trail")
    }

    fn last_pause_change(&mut self, task_id: &str, at: i64) -> Result<Option<StoredEvent>> {
        use rusqlite::OptionalExtension;
        self.conn
            .prepare_cached(&numbered(&sql::LAST_PAUSE_CHANGE))?
            .query_row(params![task_id, at], decode_event)
            .optional()
            .context("reading the task's pauses")
    }

    fn last_scheduler_gap(
        &mut self,
        tenant: Option<&str>,
        since: i64,
    ) -> Result<Option<StoredEvent>> {
        use rusqlite::OptionalExtension;
        // Along the partial index of gap events (one per cron outage).
        self.conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS}
                 FROM events INDEXED BY events_scheduler_gaps
                 WHERE action = 'scheduler_gap' AND (?1 IS NULL OR tenant_key IN (?1, '*'))
                   AND at >= ?2
                 ORDER BY at DESC, event_id DESC LIMIT 1"
            ))?
            .query_row(params![tenant, since], decode_event)
            .optional()
            .context("reading the last scheduler gap")
    }
}

/// An event row, by the decoder both stores share.
fn decode_event(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    crate::store::rows::event(row)
}
