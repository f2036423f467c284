//! PostgreSQL side of status, prune and check.

use crate::store::sql::maintenance as sql;
use anyhow::{Context, Result};

use super::tasks::decode_task;
use super::{col, PgTx};
use crate::store::invariants::{self, Describe};
use crate::store::maintenance::{MaintenanceTx, PruneCounts, Stats, Tallies};

const PRUNABLE_RUNS: &str = "
    SELECT r.run_id FROM runs r
    WHERE r.status IN ('succeeded', 'failed', 'delivery_failed', 'missed', 'skipped_overlap',
                       'skipped_gate')
      AND r.finished_at < $1 AND ($2::text IS NULL OR r.tenant_key = $2)
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.run_id = r.run_id AND d.state NOT IN ('delivered', 'suppressed'))
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.retry_run_id = r.run_id)";

/// Audit events older than the cutoff, except the record of how a task that
/// still exists came to be: its confirm (or replace) events and the draft
/// events they consumed (as on SQLite).
const PRUNABLE_EVENTS: &str = "
    SELECT e.event_id FROM events e
    WHERE e.at < $1 AND ($2::text IS NULL OR e.tenant_key = $2)
      AND NOT (e.action IN ('confirm', 'replace') AND EXISTS (
          SELECT 1 FROM tasks t WHERE t.task_id = e.task_id AND t.state <> 'deleted'))
      AND NOT (e.action = 'draft' AND coalesce((e.detail::jsonb ->> 'draft_id') IN (
          SELECT c.detail::jsonb ->> 'draft_id' FROM events c
          JOIN tasks t ON t.task_id = c.task_id
          WHERE c.action IN ('confirm', 'replace') AND t.state <> 'deleted'), false))";

impl MaintenanceTx for PgTx<'_, '_> {
    fn stats(&mut self, now: i64, tenant: Option<&str>) -> Result<Stats> {
        let row = self
            .tx
            .query_one(
                "SELECT
                   -- The tasks are not counted: a trigger keeps their counts.
                   (SELECT coalesce(sum(n), 0)::bigint FROM task_counts WHERE state = 'active' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT coalesce(sum(n), 0)::bigint FROM task_counts WHERE state = 'paused' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT coalesce(sum(n), 0)::bigint FROM task_counts WHERE state = 'error' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM tasks WHERE state = 'active' AND ($1::text IS NULL OR tenant_key = $1)
                      AND (next_run_at <= $2 OR next_retry_at <= $2)),
                   (SELECT count(*) FROM runs WHERE status = 'running' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM runs WHERE status = 'unknown' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM runs WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                      AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM deliveries WHERE state = 'pending' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM deliveries WHERE state = 'sending' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM deliveries WHERE state = 'unknown' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT count(*) FROM deliveries WHERE state = 'undeliverable' AND ($1::text IS NULL OR tenant_key = $1)),
                   (SELECT coalesce(sum(n), 0)::bigint FROM suppressed_counts WHERE $1::text IS NULL OR tenant_key = $1),
                   (SELECT count(*) FROM runs WHERE status = 'running' AND lease_until < $2
                      AND ($1::text IS NULL OR tenant_key = $1))",
                &[&tenant, &now],
            )
            .context("counting for status")?;
        Ok(Stats {
            tasks_active: col(&row, 0)?,
            tasks_paused: col(&row, 1)?,
            tasks_error: col(&row, 2)?,
            due: col(&row, 3)?,
            running: col(&row, 4)?,
            unknown: col(&row, 5)?,
            awaiting: col(&row, 6)?,
            notices_pending: col(&row, 7)?,
            notices_sending: col(&row, 8)?,
            notices_unknown: col(&row, 9)?,
            notices_undeliverable: col(&row, 10)?,
            notices_suppressed: col(&row, 11)?,
            stuck: col(&row, 12)?,
        })
    }

    fn tallies(&mut self, tenant: Option<&str>) -> Result<Tallies> {
        let mut grouped = |sql: &str| -> Result<Vec<(String, i64)>> {
            let rows = self
                .tx
                .query(sql, &[&tenant])
                .context("counting for metrics")?;
            rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
        };
        let runs = grouped(
            "SELECT status, count(*) FROM runs WHERE $1::text IS NULL OR tenant_key = $1 GROUP BY status",
        )?;
        let notices = grouped(
            "SELECT state, count(*) FROM deliveries WHERE $1::text IS NULL OR tenant_key = $1 GROUP BY state",
        )?;
        let row = self
            .tx
            .query_one(
                "SELECT count(*) FROM events WHERE action = 'scheduler_gap'
                   AND ($1::text IS NULL OR tenant_key IN ($1, '*'))",
                &[&tenant],
            )
            .context("counting scheduler gaps")?;
        let finished_totals = self
            .tx
            .query(
                "SELECT status, sum(n)::BIGINT FROM run_totals
                 WHERE $1::text IS NULL OR tenant_key = $1 GROUP BY status",
                &[&tenant],
            )
            .context("reading the runs-finished counters")?
            .iter()
            .map(|r| Ok((col(r, 0)?, col(r, 1)?)))
            .collect::<Result<Vec<(String, i64)>>>()?;
        Ok(Tallies {
            runs,
            notices,
            scheduler_gaps: col(&row, 0)?,
            finished_totals,
        })
    }

    fn prune(&mut self, cutoff: i64, tenant: Option<&str>, apply: bool) -> Result<PruneCounts> {
        let mut count = |sql: String| -> Result<i64> {
            let row = self
                .tx
                .query_one(&sql, &[&cutoff, &tenant])
                .context("counting prunable rows")?;
            col(&row, 0)
        };
        let counts = PruneCounts {
            runs: count(format!("SELECT count(*) FROM ({PRUNABLE_RUNS}) p"))?,
            notices: count(format!("SELECT count(*) FROM deliveries WHERE run_id IN ({PRUNABLE_RUNS})"))?,
            reconciliations: count(format!("SELECT count(*) FROM reconciliations WHERE run_id IN ({PRUNABLE_RUNS})"))?,
            events: count(format!("SELECT count(*) FROM ({PRUNABLE_EVENTS}) p"))?,
            drafts: count("SELECT count(*) FROM drafts WHERE expires_at < $1 AND ($2::text IS NULL OR tenant_key = $2)".into())?,
        };
        if apply {
            for sql in [
                format!("DELETE FROM deliveries WHERE run_id IN ({PRUNABLE_RUNS})"),
                format!("DELETE FROM reconciliations WHERE run_id IN ({PRUNABLE_RUNS})"),
                format!("DELETE FROM runs WHERE run_id IN ({PRUNABLE_RUNS})"),
                format!("DELETE FROM events WHERE event_id IN ({PRUNABLE_EVENTS})"),
                "DELETE FROM drafts WHERE expires_at < $1 AND ($2::text IS NULL OR tenant_key = $2)".into(),
            ] {
                self.tx.execute(&sql, &[&cutoff, &tenant]).context("pruning")?;
            }
        }
        Ok(counts)
    }

    fn prune_batch(
        &mut self,
        cutoff: i64,
        tenant: Option<&str>,
        limit: i64,
    ) -> Result<PruneCounts> {
        // The batch's runs are chosen once, so that notices, reconciliations
        // and runs are deleted for exactly the same set.
        let ids: Vec<String> = self
            .tx
            .query(
                &format!("SELECT run_id FROM ({PRUNABLE_RUNS}) p LIMIT $3"),
                &[&cutoff, &tenant, &limit],
            )
            .context("choosing runs to prune")?
            .iter()
            .map(|r| col(r, 0))
            .collect::<Result<_>>()?;
        let mut by_ids = |sql: &str| -> Result<i64> {
            let n = self.tx.execute(sql, &[&ids]).context("pruning")?;
            Ok(n as i64)
        };
        let notices = by_ids("DELETE FROM deliveries WHERE run_id = ANY($1)")?;
        let reconciliations = by_ids("DELETE FROM reconciliations WHERE run_id = ANY($1)")?;
        let runs = by_ids("DELETE FROM runs WHERE run_id = ANY($1)")?;
        let mut limited = |sql: String| -> Result<i64> {
            let n = self
                .tx
                .execute(&sql, &[&cutoff, &tenant, &limit])
                .context("pruning")?;
            Ok(n as i64)
        };
        let events = limited(format!(
            "DELETE FROM events WHERE event_id IN (SELECT event_id FROM ({PRUNABLE_EVENTS}) p LIMIT $3)"
        ))?;
        let drafts = limited(
            "DELETE FROM drafts WHERE draft_id IN (SELECT draft_id FROM drafts
             WHERE expires_at < $1 AND ($2::text IS NULL OR tenant_key = $2) LIMIT $3)"
                .into(),
        )?;
        Ok(PruneCounts {
            runs,
            notices,
            reconciliations,
            events,
            drafts,
        })
    }

    fn integrity(&mut self) -> Result<Vec<String>> {
        // The server checks its own pages; reading the schema table proves
        // the store answers.
        self.tx
            .query("SELECT version FROM agentcron_schema", &[])
            .context("reading the schema table")?;
        Ok(Vec::new())
    }

    fn violations(&mut self, now: i64) -> Result<Vec<String>> {
        let mut found = Vec::new();
        for (sql, describe) in INVARIANTS {
            for row in self.tx.query(sql, &[&now]).context("checking invariants")? {
                let row = (0..row.len())
                    .map(|i| col::<String>(&row, i))
                    .collect::<Result<Vec<_>>>()?;
                found.push(describe(&row));
            }
        }
        let tasks = self
            .tx
            .query(&sql::ALL_TASKS, &[])
            .context("checking every task against its payload")?;
        for row in &tasks {
            if let Err(bad) = decode_task(row)? {
                found.push(bad.violation());
            }
        }
        Ok(found)
    }
}

/// The rules `check` verifies (store/invariants.rs), each with the query
/// that finds the rows breaking it, every column cast to text.
const INVARIANTS: [(&str, Describe); 8] = [
    (
        "SELECT task_id, scheduled_for::text, count(*)::text FROM runs WHERE attempt = 1 AND $1::bigint = $1
         GROUP BY task_id, scheduled_for HAVING count(*) > 1",
        invariants::DUPLICATE_FIRST_RUNS,
    ),
    (
        "SELECT run_id, lease_until::text FROM runs WHERE status = 'running' AND lease_until < $1",
        invariants::EXPIRED_LEASE,
    ),
    (
        "SELECT run_id, status FROM runs WHERE status NOT IN ('running', 'awaiting_confirmation', 'awaiting_authorization')
           AND finished_at IS NULL AND $1::bigint = $1",
        invariants::UNFINISHED_END,
    ),
    (
        "SELECT r.run_id, r.status FROM runs r JOIN reconciliations c ON c.run_id = r.run_id
         WHERE r.status NOT IN ('succeeded', 'failed') AND $1::bigint = $1",
        invariants::RECONCILED_UNSETTLED,
    ),
    (
        "SELECT run_id, count(*)::text FROM deliveries WHERE state = 'sending' AND $1::bigint = $1
         GROUP BY run_id HAVING count(*) > 1",
        invariants::NOTICES_SENT_AT_ONCE,
    ),
    (
        "SELECT r.run_id FROM runs r WHERE r.status <> 'running' AND $1::bigint = $1 AND
           (SELECT count(*) FROM events e WHERE e.run_id = r.run_id AND e.action = 'finish'
              AND e.detail::jsonb->>'from' = 'running')
           > 1 + (SELECT count(*) FROM events e WHERE e.run_id = r.run_id
                    AND e.action = 'approve')",
        invariants::LEFT_RUNNING_TWICE,
    ),
    (
        "SELECT task_id, retry_run_id FROM tasks t WHERE retry_run_id IS NOT NULL AND $1::bigint = $1
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = t.retry_run_id)",
        invariants::RETRY_OF_NOTHING,
    ),
    (
        "SELECT coalesce(c.tenant_key, k.tenant_key), coalesce(c.state, k.state),
                coalesce(k.n, 0)::text, coalesce(c.n, 0)::text
           FROM (SELECT state, tenant_key, count(*) AS n FROM tasks GROUP BY state, tenant_key) c
           FULL JOIN task_counts k ON k.state = c.state AND k.tenant_key = c.tenant_key
          WHERE coalesce(k.n, 0) <> coalesce(c.n, 0) AND $1::bigint = $1
          ORDER BY c.n IS NULL, 2, 1",
        invariants::WRONG_TASK_COUNT,
    ),
];
