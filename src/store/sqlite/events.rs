//! SQLite side of the audit trail.

use anyhow::{Context, Result};
use rusqlite::params;

use super::SqliteTx;
use crate::model::{Event, StoredEvent};
use crate::store::EventTx;

impl EventTx for SqliteTx<'_> {
    fn append_event(&mut self, e: &Event) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO events (at, tenant_key, actor, action, task_id, run_id, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                e.at,
                e.tenant_key,
                e.actor,
                e.action,
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
        task_id: Option<&str>,
        limit: u64,
    ) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT event_id, at, tenant_key, actor, action, task_id, run_id, detail
             FROM events
             WHERE tenant_key = ?1 AND (?2 IS NULL OR task_id = ?2)
             ORDER BY event_id DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![tenant_key, task_id, limit as i64], |row| {
            let detail: String = row.get(7)?;
            Ok(StoredEvent {
                event_id: row.get(0)?,
                event: Event {
                    at: row.get(1)?,
                    tenant_key: row.get(2)?,
                    actor: row.get(3)?,
                    action: row.get(4)?,
                    task_id: row.get(5)?,
                    run_id: row.get(6)?,
                    // A damaged detail is shown as text rather than lost.
                    detail: serde_json::from_str(&detail)
                        .unwrap_or(serde_json::Value::String(detail)),
                },
            })
        })?;
        rows.collect::<Result<Vec<_>, _>>()
            .context("reading the audit trail")
    }
}
