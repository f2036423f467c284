//! PostgreSQL side of drafts, the audit trail, metadata and maintenance.

use anyhow::{Context, Result};
use postgres::Row;

use super::tasks::{decode_task, owned, TASK_COLUMNS};
use super::{col, expect_one, PgTx};
use crate::model::{Draft, Event, Replaces, StoredEvent};
use crate::store::maintenance::{MaintenanceTx, PruneCounts, Stats, Tallies};
use crate::store::{DraftTx, EventTx, MetaTx};

impl DraftTx for PgTx<'_, '_> {
    fn insert_draft(&mut self, d: &Draft) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO drafts (draft_id, tenant_key, payload, payload_hash, created_by, created_at, expires_at,
                                     replaces_task_id, replaces_revision)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[&d.draft_id, &d.tenant_key, &d.payload, &d.payload_hash, &d.created_by, &d.created_at, &d.expires_at,
                  &d.replaces.as_ref().map(|r| r.task_id.as_str()), &d.replaces.as_ref().map(|r| r.revision)],
            )
            .context("saving the draft")?;
        Ok(())
    }

    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>> {
        let row = self.tx.query_opt(
            "SELECT draft_id, tenant_key, payload, payload_hash, created_by, created_at, expires_at,
                    replaces_task_id, replaces_revision
             FROM drafts WHERE draft_id = $1 FOR UPDATE",
            &[&draft_id],
        )?;
        row.map(|r| {
            Ok(Draft {
                draft_id: col(&r, 0)?,
                tenant_key: col(&r, 1)?,
                payload: col(&r, 2)?,
                payload_hash: col(&r, 3)?,
                created_by: col(&r, 4)?,
                created_at: col(&r, 5)?,
                expires_at: col(&r, 6)?,
                replaces: match (col(&r, 7)?, col(&r, 8)?) {
                    (Some(task_id), Some(revision)) => Some(Replaces { task_id, revision }),
                    _ => None,
                },
            })
        })
        .transpose()
    }

    fn consume_draft(&mut self, draft_id: &str) -> Result<()> {
        let changed = self
            .tx
            .execute("DELETE FROM drafts WHERE draft_id = $1", &[&draft_id])?;
        expect_one(changed, || {
            format!("draft {draft_id} was confirmed by someone else")
        })
    }
}

fn decode_event(row: &Row) -> Result<StoredEvent> {
    let detail: String = col(row, 7)?;
    Ok(StoredEvent {
        event_id: col(row, 0)?,
        event: Event {
            at: col(row, 1)?,
            tenant_key: col(row, 2)?,
            actor: col(row, 3)?,
            action: col(row, 4)?,
            task_id: col(row, 5)?,
            run_id: col(row, 6)?,
            detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
        },
    })
}

impl EventTx for PgTx<'_, '_> {
    fn append_event(&mut self, e: &Event) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO events (at, tenant_key, actor, action, task_id, run_id, detail)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &e.at,
                    &e.tenant_key,
                    &e.actor,
                    &e.action,
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
        let row = self.tx.query_opt(
            "SELECT event_id, at, tenant_key, actor, action, task_id, run_id, detail FROM events
             WHERE task_id = $1 AND action IN ('pause', 'resume') AND at <= $2
             ORDER BY event_id DESC LIMIT 1",
            &[&task_id, &at],
        )?;
        row.map(|r| decode_event(&r)).transpose()
    }

    fn last_scheduler_gap(
        &mut self,
        tenant: Option<&str>,
        since: i64,
    ) -> Result<Option<StoredEvent>> {
        let row = self.tx.query_opt(
            "SELECT event_id, at, tenant_key, actor, action, task_id, run_id, detail FROM events
             WHERE action = 'scheduler_gap' AND ($1::text IS NULL OR tenant_key IN ($1, '*'))
               AND at >= $2
             ORDER BY at DESC, event_id DESC LIMIT 1",
            &[&tenant, &since],
        )?;
        row.map(|r| decode_event(&r)).transpose()
    }
}

impl MetaTx for PgTx<'_, '_> {
    fn meta(&mut self, key: &str) -> Result<Option<String>> {
        let row = self
            .tx
            .query_opt("SELECT value FROM meta WHERE key = $1", &[&key])?;
        row.map(|r| col(&r, 0)).transpose()
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
            .context("writing store metadata")?;
        Ok(())
    }
}

/// Turns one offending row into the sentence `check` prints.
type Describe = fn(&Row) -> Result<String>;

const PRUNABLE_RUNS: &str = "
    SELECT r.run_id FROM runs r
    WHERE r.status IN ('succeeded', 'failed', 'delivery_failed', 'missed', 'skipped_overlap')
      AND r.finished_at < $1 AND ($2::text IS NULL OR r.tenant_key = $2)
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.run_id = r.run_id AND d.state <> 'delivered')
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
            stuck: col(&row, 11)?,
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
        Ok(Tallies {
            runs,
            notices,
            scheduler_gaps: col(&row, 0)?,
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

    fn violations(&mut self, now: i64) -> Result<Vec<String>> {
        let mut found = Vec::new();
        let checks: [(&str, Describe); 6] = [
            (
                "SELECT task_id, scheduled_for::text, count(*)::text FROM runs WHERE attempt = 1 AND $1::bigint = $1
                 GROUP BY task_id, scheduled_for HAVING count(*) > 1",
                |r| Ok(format!("task {} has {} first runs for occurrence {}", col::<String>(r, 0)?, col::<String>(r, 2)?, col::<String>(r, 1)?)),
            ),
            (
                "SELECT run_id, lease_until::text FROM runs WHERE status = 'running' AND lease_until < $1",
                |r| Ok(format!("run {} is running with a lease that expired at {} (a tick will mark it unknown)", col::<String>(r, 0)?, col::<String>(r, 1)?)),
            ),
            (
                "SELECT run_id, status FROM runs WHERE status NOT IN ('running', 'awaiting_confirmation', 'awaiting_authorization')
                   AND finished_at IS NULL AND $1::bigint = $1",
                |r| Ok(format!("run {} is {} but has no finish time", col::<String>(r, 0)?, col::<String>(r, 1)?)),
            ),
            (
                "SELECT r.run_id, r.status FROM runs r JOIN reconciliations c ON c.run_id = r.run_id
                 WHERE r.status NOT IN ('succeeded', 'failed') AND $1::bigint = $1",
                |r| Ok(format!("run {} was reconciled but is {}", col::<String>(r, 0)?, col::<String>(r, 1)?)),
            ),
            (
                "SELECT run_id, count(*)::text FROM deliveries WHERE state = 'sending' AND $1::bigint = $1
                 GROUP BY run_id HAVING count(*) > 1",
                |r| Ok(format!("run {} has {} notices being sent at once", col::<String>(r, 0)?, col::<String>(r, 1)?)),
            ),
            (
                // Once per entry into running: the claim and each approval.
                "SELECT r.run_id FROM runs r WHERE r.status <> 'running' AND $1::bigint = $1 AND
                   (SELECT count(*) FROM events e WHERE e.run_id = r.run_id AND e.action = 'finish'
                      AND e.detail::jsonb->>'from' = 'running')
                   > 1 + (SELECT count(*) FROM events e WHERE e.run_id = r.run_id
                            AND e.action = 'approve')",
                |r| Ok(format!("run {} left running more than once", col::<String>(r, 0)?)),
            ),
        ];
        for (sql, describe) in checks {
            for row in self.tx.query(sql, &[&now]).context("checking invariants")? {
                found.push(describe(&row)?);
            }
        }
        for row in self.tx.query(
            "SELECT task_id, retry_run_id FROM tasks t WHERE retry_run_id IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = t.retry_run_id)",
            &[],
        )? {
            found.push(format!(
                "task {} retries run {}, which does not exist",
                col::<String>(&row, 0)?,
                col::<String>(&row, 1)?
            ));
        }
        for row in self.tx.query(
            // Both ways round, as on SQLite.
            "SELECT coalesce(c.tenant_key, k.tenant_key), coalesce(c.state, k.state),
                    coalesce(k.n, 0)::text, coalesce(c.n, 0)::text
               FROM (SELECT state, tenant_key, count(*) AS n FROM tasks GROUP BY state, tenant_key) c
               FULL JOIN task_counts k ON k.state = c.state AND k.tenant_key = c.tenant_key
              WHERE coalesce(k.n, 0) <> coalesce(c.n, 0)
              ORDER BY c.n IS NULL, 2, 1",
            &[],
        )? {
            found.push(format!(
                "tenant {} has {} {} tasks but status counts {}",
                col::<String>(&row, 0)?,
                col::<String>(&row, 3)?,
                col::<String>(&row, 1)?,
                col::<String>(&row, 2)?
            ));
        }
        let tasks = self
            .tx
            .query(
                &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY task_id"),
                &[],
            )
            .context("checking every task against its payload")?;
        for row in &tasks {
            if let Err(bad) = decode_task(row)? {
                found.push(bad.violation());
            }
        }
        Ok(found)
    }
}
