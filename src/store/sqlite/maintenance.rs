//! SQLite side of status, prune and check.

use super::numbered;
use crate::store::sql::maintenance as sql;
use anyhow::{Context, Result};
use rusqlite::params;
use rusqlite::types::ValueRef;

use super::tasks::decode_task;
use super::SqliteTx;
use crate::model::TaskState;
use crate::store::invariants::{self, Describe};
use crate::store::maintenance::{MaintenanceTx, PruneCounts, Stats, Tallies};

/// Runs `prune` may remove: settled long enough ago, every notice delivered
/// or held back by the policy (or none), not the subject of a pending retry.
const PRUNABLE_RUNS: &str = "
    SELECT r.run_id FROM runs r
    WHERE r.status IN ('succeeded', 'failed', 'delivery_failed', 'missed', 'skipped_overlap',
                       'skipped_gate')
      AND r.finished_at < ?1 AND (?2 IS NULL OR r.tenant_key = ?2)
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.run_id = r.run_id AND d.state NOT IN ('delivered', 'suppressed'))
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.retry_run_id = r.run_id)";

/// Audit events older than the cutoff, except the record of how a task that
/// still exists came to be: its confirm (or replace) events and the draft
/// events they consumed. Those stay as long as the task does; once it is
/// deleted they age out like the rest.
const PRUNABLE_EVENTS: &str = "
    SELECT e.event_id FROM events e
    WHERE e.at < ?1 AND (?2 IS NULL OR e.tenant_key = ?2)
      AND NOT (e.action IN ('confirm', 'replace') AND EXISTS (
          SELECT 1 FROM tasks t WHERE t.task_id = e.task_id AND t.state <> 'deleted'))
      -- IN (subquery) is evaluated once into an index, not once per event.
      AND NOT (e.action = 'draft' AND coalesce(json_extract(e.detail, '$.draft_id') IN (
          SELECT json_extract(c.detail, '$.draft_id') FROM events c
          JOIN tasks t ON t.task_id = c.task_id
          WHERE c.action IN ('confirm', 'replace') AND t.state <> 'deleted'), 0))";

impl MaintenanceTx for SqliteTx<'_> {
    fn stats(&mut self, now: i64, tenant: Option<&str>) -> Result<Stats> {
        let count = |sql: &str, with_now: bool| -> Result<i64> {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let n = if with_now {
                stmt.query_row(params![tenant, now], |r| r.get(0))
            } else {
                stmt.query_row(params![tenant], |r| r.get(0))
            };
            n.context("counting for status")
        };
        // One text per scope rather than `?1 IS NULL OR tenant_key = ?1`,
        // which no index can serve: each count is then a search of an index
        // on its state (the tenant's part of it with --tenant), and the
        // counts over every tenant walk only the small partial indexes of
        // runs in transient states, never all runs.
        let scoped = |sql: &str| match tenant {
            Some(_) => sql.replace("$TENANT", "tenant_key = ?1"),
            None => sql.replace("$TENANT", "?1 IS NULL"),
        };
        let (running, awaiting) = match tenant {
            Some(_) => (
                "SELECT count(*) FROM runs WHERE status = 'running' AND tenant_key = ?1",
                "SELECT count(*) FROM runs WHERE tenant_key = ?1
                   AND status IN ('awaiting_confirmation', 'awaiting_authorization')",
            ),
            None => (
                "SELECT count(*) FROM runs INDEXED BY runs_leased
                 WHERE status = 'running' AND ?1 IS NULL",
                "SELECT count(*) FROM runs INDEXED BY runs_parked
                 WHERE status IN ('awaiting_confirmation', 'awaiting_authorization') AND ?1 IS NULL",
            ),
        };
        // Tasks are not counted but read from the counts the schema's
        // triggers keep (one row per state and tenant).
        let tasks_in = |state: TaskState| {
            let sql = format!(
                "SELECT coalesce(sum(n), 0) FROM task_counts WHERE state = '{}' AND $TENANT",
                state.as_str()
            );
            count(&scoped(&sql), false)
        };
        Ok(Stats {
            tasks_active: tasks_in(TaskState::Active)?,
            tasks_paused: tasks_in(TaskState::Paused)?,
            tasks_error: tasks_in(TaskState::Error)?,
            // Two walks of the small partial due indexes instead of a scan
            // of every active task.
            due: count(
                "SELECT (SELECT count(*) FROM tasks INDEXED BY tasks_due
                         WHERE state = 'active' AND next_run_at <= ?2
                           AND (?1 IS NULL OR tenant_key = ?1))
                      + (SELECT count(*) FROM tasks INDEXED BY tasks_retry_due
                         WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= ?2
                           AND NOT coalesce(next_run_at <= ?2, 0)
                           AND (?1 IS NULL OR tenant_key = ?1))",
                true,
            )?,
            running: count(running, false)?,
            unknown: count(&scoped("SELECT count(*) FROM runs WHERE status = 'unknown' AND $TENANT"), false)?,
            awaiting: count(awaiting, false)?,
            notices_pending: count("SELECT count(*) FROM deliveries WHERE state = 'pending' AND (?1 IS NULL OR tenant_key = ?1)", false)?,
            notices_sending: count("SELECT count(*) FROM deliveries WHERE state = 'sending' AND (?1 IS NULL OR tenant_key = ?1)", false)?,
            notices_unknown: count("SELECT count(*) FROM deliveries WHERE state = 'unknown' AND (?1 IS NULL OR tenant_key = ?1)", false)?,
            notices_undeliverable: count("SELECT count(*) FROM deliveries WHERE state = 'undeliverable' AND (?1 IS NULL OR tenant_key = ?1)", false)?,
            // Kept by triggers: held-back notices grow with the history.
            notices_suppressed: count("SELECT coalesce(sum(n), 0) FROM suppressed_counts WHERE ?1 IS NULL OR tenant_key = ?1", false)?,
            stuck: count(
                "SELECT count(*) FROM runs INDEXED BY runs_leased
                 WHERE status = 'running' AND lease_until < ?2 AND (?1 IS NULL OR tenant_key = ?1)",
                true,
            )?,
        })
    }

    fn tallies(&mut self, tenant: Option<&str>) -> Result<Tallies> {
        let grouped = |sql: &str| -> Result<Vec<(String, i64)>> {
            let mut stmt = self.conn.prepare_cached(sql)?;
            let rows = stmt.query_map(params![tenant], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()
                .context("counting for metrics")
        };
        let runs = grouped(
            "SELECT status, count(*) FROM runs WHERE ?1 IS NULL OR tenant_key = ?1 GROUP BY status",
        )?;
        let notices = grouped(
            "SELECT state, count(*) FROM deliveries WHERE ?1 IS NULL OR tenant_key = ?1 GROUP BY state",
        )?;
        let scheduler_gaps = self
            .conn
            .query_row(
                "SELECT count(*) FROM events WHERE action = 'scheduler_gap'
                   AND (?1 IS NULL OR tenant_key IN (?1, '*'))",
                params![tenant],
                |r| r.get(0),
            )
            .context("counting scheduler gaps")?;
        let finished_totals = grouped(
            "SELECT status, sum(n) FROM run_totals WHERE ?1 IS NULL OR tenant_key = ?1
             GROUP BY status",
        )?;
        Ok(Tallies {
            runs,
            notices,
            scheduler_gaps,
            finished_totals,
        })
    }

    fn prune(&mut self, cutoff: i64, tenant: Option<&str>, apply: bool) -> Result<PruneCounts> {
        let c = &self.conn;
        let count = |sql: &str| -> Result<i64> {
            c.query_row(sql, params![cutoff, tenant], |r| r.get(0))
                .context("counting prunable rows")
        };
        let counts = PruneCounts {
            runs: count(&format!("SELECT count(*) FROM ({PRUNABLE_RUNS})"))?,
            notices: count(&format!("SELECT count(*) FROM deliveries WHERE run_id IN ({PRUNABLE_RUNS})"))?,
            reconciliations: count(&format!("SELECT count(*) FROM reconciliations WHERE run_id IN ({PRUNABLE_RUNS})"))?,
            events: count(&format!("SELECT count(*) FROM ({PRUNABLE_EVENTS})"))?,
            drafts: count("SELECT count(*) FROM drafts WHERE expires_at < ?1 AND (?2 IS NULL OR tenant_key = ?2)")?,
        };
        if apply {
            let run = |sql: &str| -> Result<usize> {
                c.execute(sql, params![cutoff, tenant]).context("pruning")
            };
            // Children first: notices and reconciliations point at runs.
            c.execute_batch("CREATE TEMP TABLE IF NOT EXISTS prune_runs (run_id TEXT PRIMARY KEY); DELETE FROM prune_runs;")?;
            run(&format!("INSERT INTO prune_runs {PRUNABLE_RUNS}"))?;
            c.execute_batch(
                "DELETE FROM deliveries WHERE run_id IN (SELECT run_id FROM prune_runs);
                 DELETE FROM reconciliations WHERE run_id IN (SELECT run_id FROM prune_runs);
                 DELETE FROM runs WHERE run_id IN (SELECT run_id FROM prune_runs);
                 DELETE FROM prune_runs;",
            )?;
            run(&format!(
                "DELETE FROM events WHERE event_id IN ({PRUNABLE_EVENTS})"
            ))?;
            run("DELETE FROM drafts WHERE expires_at < ?1 AND (?2 IS NULL OR tenant_key = ?2)")?;
        }
        Ok(counts)
    }

    fn prune_batch(
        &mut self,
        cutoff: i64,
        tenant: Option<&str>,
        limit: i64,
    ) -> Result<PruneCounts> {
        let c = &self.conn;
        let selected = |sql: &str| -> Result<i64> {
            let n = c
                .execute(sql, params![cutoff, tenant, limit])
                .context("pruning")?;
            Ok(n as i64)
        };
        let chosen = |sql: &str| -> Result<i64> {
            let n = c.execute(sql, []).context("pruning")?;
            Ok(n as i64)
        };
        c.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS prune_runs (run_id TEXT PRIMARY KEY); DELETE FROM prune_runs;",
        )?;
        selected(&format!("INSERT INTO prune_runs {PRUNABLE_RUNS} LIMIT ?3"))?;
        // Children first: notices and reconciliations point at runs.
        let counts = PruneCounts {
            notices: chosen(
                "DELETE FROM deliveries WHERE run_id IN (SELECT run_id FROM prune_runs)",
            )?,
            reconciliations: chosen(
                "DELETE FROM reconciliations WHERE run_id IN (SELECT run_id FROM prune_runs)",
            )?,
            runs: chosen("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM prune_runs)")?,
            events: selected(&format!(
                "DELETE FROM events WHERE event_id IN ({PRUNABLE_EVENTS} LIMIT ?3)"
            ))?,
            drafts: selected(
                "DELETE FROM drafts WHERE draft_id IN (SELECT draft_id FROM drafts
                 WHERE expires_at < ?1 AND (?2 IS NULL OR tenant_key = ?2) LIMIT ?3)",
            )?,
        };
        chosen("DELETE FROM prune_runs")?;
        Ok(counts)
    }

    fn integrity(&mut self) -> Result<Vec<String>> {
        let integrity: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(if integrity == "ok" {
            Vec::new()
        } else {
            vec![format!("integrity_check: {integrity}")]
        })
    }

    fn violations(&mut self, now: i64) -> Result<Vec<String>> {
        let mut found = self.integrity()?;
        for (sql, describe) in INVARIANTS {
            for row in self.rows_as_text(sql, now)? {
                found.push(describe(&row));
            }
        }
        let mut stmt = self.conn.prepare(&numbered(&sql::ALL_TASKS))?;
        let tasks = stmt
            .query_map([], decode_task)?
            .collect::<Result<Vec<_>, _>>()
            .context("checking every task against its payload")?;
        found.extend(
            tasks
                .into_iter()
                .filter_map(|t| t.err())
                .map(|bad| bad.violation()),
        );
        Ok(found)
    }
}

impl SqliteTx<'_> {
    /// The rows of `sql` (given `now` as ?1), every column as text.
    fn rows_as_text(&self, sql: &str, now: i64) -> Result<Vec<Vec<String>>> {
        let mut stmt = self.conn.prepare(sql)?;
        let width = stmt.column_count();
        let rows = stmt.query_map(params![now], |row| {
            (0..width)
                .map(|i| {
                    // By reference: a damaged store may hold text that is
                    // not UTF-8, which rusqlite's owned `Value` panics on.
                    row.get_ref(i).map(|v| match v {
                        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                        ValueRef::Integer(n) => n.to_string(),
                        ValueRef::Real(f) => f.to_string(),
                        ValueRef::Null => "null".into(),
                        ValueRef::Blob(b) => format!("<{} bytes>", b.len()),
                    })
                })
                .collect::<rusqlite::Result<Vec<String>>>()
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// The rules `check` verifies (store/invariants.rs), each with the query
/// that finds the rows breaking it.
const INVARIANTS: [(&str, Describe); 8] = [
    (
        "SELECT task_id, scheduled_for, count(*) FROM runs WHERE attempt = 1 AND ?1 = ?1
         GROUP BY task_id, scheduled_for HAVING count(*) > 1",
        invariants::DUPLICATE_FIRST_RUNS,
    ),
    (
        "SELECT run_id, lease_until FROM runs WHERE status = 'running' AND lease_until < ?1",
        invariants::EXPIRED_LEASE,
    ),
    (
        "SELECT run_id, status FROM runs
         WHERE status NOT IN ('running', 'awaiting_confirmation', 'awaiting_authorization') AND finished_at IS NULL AND ?1 = ?1",
        invariants::UNFINISHED_END,
    ),
    (
        "SELECT r.run_id, r.status FROM runs r JOIN reconciliations c ON c.run_id = r.run_id
         WHERE r.status NOT IN ('succeeded', 'failed') AND ?1 = ?1",
        invariants::RECONCILED_UNSETTLED,
    ),
    (
        "SELECT run_id, count(*) FROM deliveries WHERE state = 'sending' AND ?1 = ?1
         GROUP BY run_id HAVING count(*) > 1",
        invariants::NOTICES_SENT_AT_ONCE,
    ),
    (
        "SELECT r.run_id FROM runs r WHERE r.status <> 'running' AND ?1 = ?1 AND
           (SELECT count(*) FROM events e WHERE e.run_id = r.run_id AND e.action = 'finish'
              AND json_extract(e.detail, '$.from') = 'running')
           > 1 + (SELECT count(*) FROM events e WHERE e.run_id = r.run_id
                    AND e.action = 'approve')",
        invariants::LEFT_RUNNING_TWICE,
    ),
    (
        "SELECT task_id, retry_run_id FROM tasks WHERE retry_run_id IS NOT NULL AND ?1 = ?1
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = tasks.retry_run_id)",
        invariants::RETRY_OF_NOTHING,
    ),
    (
        "SELECT coalesce(c.tenant_key, k.tenant_key), coalesce(c.state, k.state),
                coalesce(k.n, 0), coalesce(c.n, 0)
           FROM (SELECT state, tenant_key, count(*) AS n FROM tasks GROUP BY state, tenant_key) c
           FULL JOIN task_counts k ON k.state = c.state AND k.tenant_key = c.tenant_key
          WHERE coalesce(k.n, 0) <> coalesce(c.n, 0) AND ?1 = ?1
          ORDER BY c.n IS NULL, 2, 1",
        invariants::WRONG_TASK_COUNT,
    ),
];
