//! PostgreSQL side of the claim queue.

use crate::store::sql::queue as sql;
use anyhow::{Context, Result};

use super::{col, expect_one, PgTx};
use crate::store::queue::{Agenda, QueueMark, QueueStats, QueueTx};
use crate::store::DueTask;

/// The advisory lock that serializes the claims counting running runs
/// against `--max-running`, across every host of the database.
const RUNNING_LIMIT_LOCK: i64 = 0x6167_6e74_6372_6e01;

/// (task_id, due instant, is_retry) rows as `DueTask`s.
pub(super) fn due_rows(rows: &[postgres::Row]) -> Result<Vec<DueTask>> {
    rows.iter()
        .map(|r| {
            Ok(DueTask {
                task_id: col(r, 0)?,
                due_at: col(r, 1)?,
                is_retry: col(r, 2)?,
            })
        })
        .collect()
}

impl PgTx<'_, '_> {
    fn count_running(&mut self) -> Result<i64> {
        let row = self
            .tx
            .query_one(sql::RUNNING_COUNT, &[])
            .context("counting running runs")?;
        col(&row, 0)
    }
}

impl QueueTx for PgTx<'_, '_> {
    fn agenda(&mut self, now: i64, give_up_before: i64, tenant: Option<&str>) -> Result<Agenda> {
        // The conditions of the steps' own statements, or looser; each EXISTS
        // is answered from a partial index of rows in a rare state (or of due
        // tasks). No row locks: a claim takes its own.
        let row = self
            .tx
            .query_one(
                "SELECT
                   EXISTS (SELECT 1 FROM runs WHERE status = 'running' AND lease_until < $1
                             AND ($2::text IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'sending' AND deadline < $1
                                AND ($2::text IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'pending' AND created_at < $3
                                AND ($2::text IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM runs
                                WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                                  AND wait_deadline < $1 AND approved_at IS NULL
                                  AND ($2::text IS NULL OR tenant_key = $2)),
                   EXISTS (SELECT 1 FROM tasks WHERE state = 'active' AND next_run_at <= $1
                             AND ($2::text IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM tasks WHERE state = 'active'
                                AND next_retry_at IS NOT NULL AND next_retry_at <= $1
                                AND ($2::text IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM tasks WHERE state = 'active'
                                AND trigger_at IS NOT NULL AND trigger_at <= $1
                                AND ($2::text IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM runs
                                WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                                  AND approved_at IS NOT NULL
                                  AND ($2::text IS NULL OR tenant_key = $2)),
                   EXISTS (SELECT 1 FROM tasks
                             WHERE success_due_at IS NOT NULL AND success_due_at <= $1
                               AND state <> 'paused' AND ($2::text IS NULL OR tenant_key = $2))",
                &[&now, &tenant, &give_up_before],
            )
            .context("looking for due work")?;
        Ok(Agenda {
            expiries: col(&row, 0)?,
            claims: col(&row, 1)?,
            overdue: col(&row, 2)?,
        })
    }

    fn active_tenants(&mut self, tenant: Option<&str>) -> Result<Vec<String>> {
        if let Some(tenant) = tenant {
            return Ok(vec![tenant.to_string()]);
        }
        let rows = self
            .tx
            .query(
                "WITH RECURSIVE t(k) AS (
                     SELECT (SELECT min(tenant_key) FROM tasks WHERE state = 'active')
                     UNION ALL
                     SELECT (SELECT min(tenant_key) FROM tasks
                             WHERE state = 'active' AND tenant_key > t.k)
                     FROM t WHERE t.k IS NOT NULL)
                 SELECT k FROM t WHERE k IS NOT NULL",
                &[],
            )
            .context("listing tenants")?;
        rows.iter().map(|r| col(r, 0)).collect()
    }

    fn earliest_due_in(&mut self, tenant_key: &str, now: i64) -> Result<Option<DueTask>> {
        // Row locks rule out one UNION of the seeks, but not three locking
        // CTEs read by one: one round trip, each seek skipping rows another
        // host is claiming, never waiting on them.
        let rows = self
            .tx
            .query(
                "WITH due AS (
                     SELECT task_id, next_run_at AS at, false AS retry FROM tasks
                     WHERE state = 'active' AND tenant_key = $1 AND next_run_at <= $2
                     ORDER BY next_run_at LIMIT 1 FOR UPDATE SKIP LOCKED),
                 retry AS (
                     SELECT task_id, next_retry_at AS at, true AS retry FROM tasks
                     WHERE state = 'active' AND tenant_key = $1 AND next_retry_at IS NOT NULL
                       AND next_retry_at <= $2
                     ORDER BY next_retry_at LIMIT 1 FOR UPDATE SKIP LOCKED),
                 -- A manual trigger (docs/CONTRACT.md §13); rare, on a small partial index.
                 triggered AS (
                     SELECT task_id, trigger_at AS at, false AS retry FROM tasks
                     WHERE state = 'active' AND tenant_key = $1 AND trigger_at IS NOT NULL
                       AND trigger_at <= $2
                     ORDER BY trigger_at LIMIT 1 FOR UPDATE SKIP LOCKED)
                 SELECT task_id, at, retry FROM due
                 UNION ALL SELECT task_id, at, retry FROM retry
                 UNION ALL SELECT task_id, at, retry FROM triggered",
                &[&tenant_key, &now],
            )
            .context("finding the tenant's next due task")?;
        Ok(due_rows(&rows)?.into_iter().min_by_key(|d| d.due_at))
    }

    fn unmarked_due(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>> {
        let rows = self
            .tx
            .query(
                "SELECT task_id, next_run_at, false FROM tasks
                 WHERE state = 'active' AND next_run_at <= $1 AND ($2::text IS NULL OR tenant_key = $2)
                   AND (queued_for IS NULL OR queued_next <= $1)
                 UNION ALL
                 SELECT task_id, next_retry_at, true FROM tasks
                 WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= $1
                   AND NOT coalesce(next_run_at <= $1, false)
                   AND ($2::text IS NULL OR tenant_key = $2)
                   AND (queued_for IS NULL OR queued_next <= $1)
                 UNION ALL
                 SELECT task_id, trigger_at, false FROM tasks
                 WHERE state = 'active' AND trigger_at IS NOT NULL AND trigger_at <= $1
                   AND NOT coalesce(next_run_at <= $1, false)
                   AND NOT coalesce(next_retry_at <= $1, false)
                   AND ($2::text IS NULL OR tenant_key = $2)
                   AND (queued_for IS NULL OR queued_next <= $1)
                 ORDER BY 2 LIMIT $3",
                &[&now, &tenant, &i64::from(limit)],
            )
            .context("finding due tasks not yet queued")?;
        due_rows(&rows)
    }

    fn queue_mark(&mut self, task_id: &str) -> Result<Option<QueueMark>> {
        let rows = self
            .tx
            .query(
                "SELECT queued_for, queued_since, queued_next FROM tasks
                 WHERE task_id = $1 AND queued_for IS NOT NULL
                 UNION ALL
                 SELECT due_at, seen_at, NULL::bigint FROM seen_due WHERE task_id = $1
                 ORDER BY 1 DESC, 2 LIMIT 1",
                &[&task_id],
            )
            .context("reading the task's queue mark")?;
        rows.first()
            .map(|r| {
                Ok(QueueMark {
                    due_at: col(r, 0)?,
                    seen_at: col::<Option<i64>>(r, 1)?.unwrap_or_default(),
                    superseded_at: col(r, 2)?,
                })
            })
            .transpose()
    }

    fn note_seen(&mut self, task_id: &str, mark: &QueueMark) -> Result<()> {
        self.tx
            .execute(sql::NOTE_SEEN, &[&task_id, &mark.due_at, &mark.seen_at])
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
            .tx
            .execute(
                "UPDATE tasks SET queued_for = $1, queued_since = $2, queued_next = $3
                 WHERE task_id = $4 AND state = 'active'
                   AND next_run_at IS NOT DISTINCT FROM $5
                   AND next_retry_at IS NOT DISTINCT FROM $6",
                &[
                    &mark.due_at,
                    &mark.seen_at,
                    &mark.superseded_at,
                    &task_id,
                    &next_run_at,
                    &next_retry_at,
                ],
            )
            .context("queueing the task")?;
        expect_one(changed, || {
            format!("task {task_id} moved on while it was being queued")
        })
    }

    fn running_count(&mut self) -> Result<i64> {
        // Held to the end of the transaction: the next claim that counts
        // waits for this one's commit, and (READ COMMITTED) then sees it.
        self.tx
            .execute("SELECT pg_advisory_xact_lock($1)", &[&RUNNING_LIMIT_LOCK])
            .context("taking the running-limit lock")?;
        self.count_running()
    }

    fn queue_stats(&mut self, tenant: Option<&str>) -> Result<QueueStats> {
        let row = self
            .tx
            .query_one(
                "SELECT count(*), min(queued_for) FROM tasks
                 WHERE queued_for IS NOT NULL AND state = 'active'
                   AND ($1::text IS NULL OR tenant_key = $1)",
                &[&tenant],
            )
            .context("counting queued tasks")?;
        Ok(QueueStats {
            queued: col(&row, 0)?,
            oldest_queued_due: col(&row, 1)?,
            // A report, not a claim: no need to wait for the limit's lock.
            running_all: self.count_running()?,
        })
    }
}
