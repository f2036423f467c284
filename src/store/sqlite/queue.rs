//! SQLite side of the claim queue.

use super::numbered;
use crate::store::sql::queue as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};

use super::{expect_one, SqliteTx};
use crate::store::queue::{Agenda, QueueMark, QueueStats, QueueTx};
use crate::store::DueTask;

/// A (task_id, due instant, is_retry) row as a `DueTask`.
pub(super) fn due_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<DueTask> {
    Ok(DueTask {
        task_id: row.get(0)?,
        due_at: row.get(1)?,
        is_retry: row.get(2)?,
    })
}

impl QueueTx for SqliteTx<'_> {
    fn agenda(&mut self, now: i64, give_up_before: i64, tenant: Option<&str>) -> Result<Agenda> {
        // Each EXISTS is one seek on a partial index of rows in a rare state
        // (or of due tasks), so an idle tick's read costs the same at any
        // size; the tenant is only a filter on what the seek finds. The
        // conditions are those of the steps' own statements, or looser.
        self.conn
            .prepare_cached(
                "SELECT
                   EXISTS (SELECT 1 FROM runs WHERE status = 'running' AND lease_until < ?1
                             AND (?2 IS NULL OR tenant_key = ?2))
                   OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'sending' AND deadline < ?1
                                AND (?2 IS NULL OR tenant_key = ?2))
                   OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'pending' AND created_at < ?3
                                AND (?2 IS NULL OR tenant_key = ?2))
                   OR EXISTS (SELECT 1 FROM runs INDEXED BY runs_parked
                                WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                                  AND wait_deadline < ?1 AND approved_at IS NULL
                                  AND (?2 IS NULL OR tenant_key = ?2)),
                   EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_due
                             WHERE state = 'active' AND next_run_at <= ?1
                               AND (?2 IS NULL OR tenant_key = ?2))
                   OR EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_retry_due
                                WHERE state = 'active' AND next_retry_at IS NOT NULL
                                  AND next_retry_at <= ?1 AND (?2 IS NULL OR tenant_key = ?2))
                   OR EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_trigger_due
                                WHERE state = 'active' AND trigger_at IS NOT NULL
                                  AND trigger_at <= ?1 AND (?2 IS NULL OR tenant_key = ?2))
                   OR EXISTS (SELECT 1 FROM runs INDEXED BY runs_parked
                                WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                                  AND approved_at IS NOT NULL
                                  AND (?2 IS NULL OR tenant_key = ?2)),
                   EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_success_due
                             WHERE success_due_at IS NOT NULL AND success_due_at <= ?1
                               AND state <> 'paused' AND (?2 IS NULL OR tenant_key = ?2))",
            )?
            .query_row(params![now, tenant, give_up_before], |row| {
                Ok(Agenda {
                    expiries: row.get(0)?,
                    claims: row.get(1)?,
                    overdue: row.get(2)?,
                })
            })
            .context("looking for due work")
    }

    fn active_tenants(&mut self, tenant: Option<&str>) -> Result<Vec<String>> {
        if let Some(tenant) = tenant {
            return Ok(vec![tenant.to_string()]);
        }
        // A skip scan: one index seek per tenant, however many tasks each has.
        let mut stmt = self.conn.prepare_cached(
            "WITH RECURSIVE tenant(k) AS (
                 SELECT (SELECT min(tenant_key) FROM tasks WHERE state = 'active')
                 UNION ALL
                 SELECT (SELECT min(tenant_key) FROM tasks
                         WHERE state = 'active' AND tenant_key > tenant.k)
                 FROM tenant WHERE tenant.k IS NOT NULL)
             SELECT k FROM tenant WHERE k IS NOT NULL",
        )?;
        let tenants = stmt
            .query_map([], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()
            .context("listing tenants")?;
        Ok(tenants)
    }

    fn earliest_due_in(&mut self, tenant_key: &str, now: i64) -> Result<Option<DueTask>> {
        // Each half is one seek on a per-tenant partial index; no tie-break
        // on task_id, which would sort every task due at the same instant.
        self.conn
            .prepare_cached(
                "SELECT * FROM (
                     SELECT task_id, next_run_at, 0 FROM tasks INDEXED BY tasks_due_by_tenant
                     WHERE state = 'active' AND tenant_key = ?1 AND next_run_at <= ?2
                     ORDER BY next_run_at LIMIT 1)
                 UNION ALL
                 SELECT * FROM (
                     SELECT task_id, next_retry_at, 1 FROM tasks INDEXED BY tasks_retry_due_by_tenant
                     WHERE state = 'active' AND tenant_key = ?1 AND next_retry_at IS NOT NULL
                       AND next_retry_at <= ?2
                     ORDER BY next_retry_at LIMIT 1)
                 UNION ALL
                 SELECT * FROM (
                     SELECT task_id, trigger_at, 0 FROM tasks INDEXED BY tasks_trigger_due
                     WHERE state = 'active' AND tenant_key = ?1 AND trigger_at IS NOT NULL
                       AND trigger_at <= ?2
                     ORDER BY trigger_at LIMIT 1)
                 ORDER BY 2 LIMIT 1",
            )?
            .query_row(params![tenant_key, now], due_row)
            .optional()
            .context("finding the tenant's next due task")
    }

    fn unmarked_due(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT task_id, next_run_at, 0 FROM tasks
             WHERE state = 'active' AND next_run_at <= ?1 AND (?2 IS NULL OR tenant_key = ?2)
               AND (queued_for IS NULL OR queued_next <= ?1)
             UNION ALL
             SELECT task_id, next_retry_at, 1 FROM tasks
             WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= ?1
               AND NOT coalesce(next_run_at <= ?1, 0) AND (?2 IS NULL OR tenant_key = ?2)
               AND (queued_for IS NULL OR queued_next <= ?1)
             UNION ALL
             SELECT task_id, trigger_at, 0 FROM tasks
             WHERE state = 'active' AND trigger_at IS NOT NULL AND trigger_at <= ?1
               AND NOT coalesce(next_run_at <= ?1, 0) AND NOT coalesce(next_retry_at <= ?1, 0)
               AND (?2 IS NULL OR tenant_key = ?2)
               AND (queued_for IS NULL OR queued_next <= ?1)
             ORDER BY 2 LIMIT ?3",
        )?;
        let due = stmt
            .query_map(params![now, tenant, limit], due_row)?
            .collect::<Result<Vec<_>, _>>()
            .context("finding due tasks not yet queued")?;
        Ok(due)
    }

    fn queue_mark(&mut self, task_id: &str) -> Result<Option<QueueMark>> {
        let mark = self
            .conn
            .prepare_cached(
                "SELECT queued_for, queued_since, queued_next FROM tasks
                 WHERE task_id = ?1 AND queued_for IS NOT NULL
                 UNION ALL
                 SELECT due_at, seen_at, NULL FROM seen_due WHERE task_id = ?1
                 ORDER BY 1 DESC, 2 LIMIT 1",
            )?
            .query_row(params![task_id], |row| {
                Ok(QueueMark {
                    due_at: row.get(0)?,
                    seen_at: row.get::<_, Option<i64>>(1)?.unwrap_or_default(),
                    superseded_at: row.get(2)?,
                })
            })
            .optional()
            .context("reading the task's queue mark")?;
        Ok(mark)
    }

    fn note_seen(&mut self, task_id: &str, mark: &QueueMark) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::NOTE_SEEN))?
            .execute(params![task_id, mark.due_at, mark.seen_at])
            .context("noting a due task seen")?;
        Ok(())
    }

    fn set_queue_mark(
        &mut self,
        task_id: &str,
        next_run_at: Option<i64>,
        next_retry_at: Option<i64>,
        mark: &QueueMark,
    ) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE tasks SET queued_for = ?1, queued_since = ?2, queued_next = ?3
                 WHERE task_id = ?4 AND state = 'active' AND next_run_at IS ?5
                   AND next_retry_at IS ?6",
            )?
            .execute(params![
                mark.due_at,
                mark.seen_at,
                mark.superseded_at,
                task_id,
                next_run_at,
                next_retry_at
            ])
            .context("queueing the task")?;
        expect_one(changed, || {
            format!("task {task_id} moved on while it was being queued")
        })
    }

    fn running_count(&mut self) -> Result<i64> {
        self.conn
            .prepare_cached(&numbered(sql::RUNNING_COUNT))?
            .query_row([], |row| row.get(0))
            .context("counting running runs")
    }

    fn queue_stats(&mut self, tenant: Option<&str>) -> Result<QueueStats> {
        let (queued, oldest_queued_due) = self
            .conn
            .prepare_cached(
                "SELECT count(*), min(queued_for) FROM tasks INDEXED BY tasks_queued
                 WHERE queued_for IS NOT NULL AND state = 'active'
                   AND (?1 IS NULL OR tenant_key = ?1)",
            )?
            .query_row(params![tenant], |row| Ok((row.get(0)?, row.get(1)?)))
            .context("counting queued tasks")?;
        Ok(QueueStats {
            queued,
            oldest_queued_due,
            running_all: self.running_count()?,
        })
    }
}
