//! SQLite side of the runs table.

use super::numbered;
use crate::store::runs::RUN_COLUMNS;
use crate::store::sql::runs as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Row};

use super::{expect_one, SqliteTx};
use crate::model::Run;
use crate::store::{Reconciliation, RunFilter, RunFinish, RunTx};

/// A run row, by the decoder both stores share.
pub(super) fn decode_run(row: &Row<'_>) -> rusqlite::Result<Run> {
    crate::store::rows::run(row)
}

impl RunTx for SqliteTx<'_> {
    fn unknown_places(
        &mut self,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<crate::store::UnknownPlace>> {
        // One row per unknown run, along their partial index (few: each one
        // blocks its task until someone reconciles it), counted here rather
        // than sorted by SQLite.
        let mut stmt = self.conn.prepare_cached(
            "SELECT r.tenant_key, coalesce(json_extract(t.owner_keys, '$[0]'), '')
             FROM runs r INDEXED BY runs_unknown JOIN tasks t ON t.task_id = r.task_id
             WHERE r.status = 'unknown' AND (?1 IS NULL OR r.tenant_key = ?1)",
        )?;
        let rows = stmt
            .query_map(params![tenant], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
            .context("counting unknown runs by tenant and owner")?;
        let mut counted: std::collections::BTreeMap<(String, String), i64> = Default::default();
        for place in rows {
            *counted.entry(place).or_default() += 1;
        }
        let mut places: Vec<crate::store::UnknownPlace> = counted
            .into_iter()
            .map(
                |((tenant_key, owner_key), count)| crate::store::UnknownPlace {
                    tenant_key,
                    owner_key,
                    count,
                },
            )
            .collect();
        // The largest first; ties in tenant, then owner order.
        places.sort_by_key(|p| std::cmp::Reverse(p.count));
        places.truncate(limit as usize);
        Ok(places)
    }

    fn insert_run(&mut self, r: &Run) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::INSERT_RUN))?
            .execute(params![
                r.run_id,
                r.task_id,
                r.tenant_key,
                r.scheduled_for,
                r.scheduled_local,
                r.attempt,
                r.due_at,
                r.status.as_str(),
                r.payload_hash,
                r.created_at,
                r.started_at,
                r.finished_at,
                r.lease_token,
                r.lease_until,
                r.summary,
                r.reason,
                r.skipped_occurrences,
                r.blocked_by,
                r.wait_kind,
                r.wait_id,
                r.wait_deadline,
                r.queued_seconds,
                r.trigger.as_str(),
                r.runner,
                i64::from(r.catch_up)
            ])
            .context("recording the run")?;
        Ok(())
    }

    fn task_runs(&mut self, task_id: &str, limit: u64) -> Result<Vec<Run>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r WHERE r.task_id = ?1
             ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT ?2"
        ))?;
        let runs = stmt
            .query_map(params![task_id, limit as i64], decode_run)?
            .collect::<Result<Vec<_>, _>>()
            .context("reading the task's runs")?;
        Ok(runs)
    }

    fn each_run(
        &mut self,
        f: &RunFilter<'_>,
        each: &mut dyn FnMut(Run) -> Result<()>,
    ) -> Result<()> {
        let keys = serde_json::to_string(f.owner_keys)?;
        // Two texts rather than `?2 IS NULL OR …`, so that each can walk its
        // index newest first and stop at the limit instead of sorting all runs.
        // (`+` keeps SQLite from picking the tenant index for one task's runs.)
        let scope = if f.task_id.is_some() {
            "r.task_id = ?2 AND +r.tenant_key = ?1"
        } else {
            "r.tenant_key = ?1 AND ?2 IS NULL"
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r JOIN tasks t ON t.task_id = r.task_id
             WHERE {scope}
               AND (?3 IS NULL OR r.status = ?3)
               AND EXISTS (SELECT 1 FROM json_each(t.owner_keys) AS o
                           WHERE o.value IN (SELECT value FROM json_each(?4)))
             ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT ?5"
        ))?;
        let mut rows = stmt
            .query(params![
                f.tenant_key,
                f.task_id,
                f.status.map(|s| s.as_str()),
                keys,
                f.limit as i64
            ])
            .context("listing runs")?;
        while let Some(row) = rows.next().context("listing runs")? {
            each(decode_run(row).context("listing runs")?)?;
        }
        Ok(())
    }

    fn occurrence_runs(&mut self, task_id: &str, scheduled_for: i64) -> Result<Vec<Run>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r WHERE r.task_id = ?1 AND r.scheduled_for = ?2
             ORDER BY r.attempt"
        ))?;
        let runs = stmt
            .query_map(params![task_id, scheduled_for], decode_run)?
            .collect::<Result<Vec<_>, _>>()
            .context("reading the occurrence's runs")?;
        Ok(runs)
    }

    fn run_at_or_before(&mut self, task_id: &str, at: i64) -> Result<Option<Run>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs r WHERE r.task_id = ?1 AND r.scheduled_for <= ?2
                 ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT 1"
            ))?
            .query_row(params![task_id, at], decode_run)
            .optional()
            .context("reading the run before the occurrence")
    }

    fn insert_reconciliation(&mut self, r: &Reconciliation) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::INSERT_RECONCILIATION))?
            .execute(params![
                r.run_id,
                r.tenant_key,
                r.actor,
                r.decision,
                r.reason,
                r.prior_reason,
                r.decided_at
            ])
            .context("recording the reconciliation")?;
        Ok(())
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs r WHERE r.run_id = ?1"
            ))?
            .query_row([run_id], decode_run)
            .optional()
            .context("reading the run")
    }

    fn run_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>> {
        self.ids_with_prefix(
            // `+tenant_key`: walk the id range, not every run of the tenant
            // sorted by id (which SQLite chose without the `+`).
            "SELECT run_id FROM runs
             WHERE run_id >= ?1 AND run_id < ?2 AND +tenant_key = ?3
             ORDER BY run_id LIMIT ?4",
            tenant_key,
            prefix,
            limit,
        )
        .context("looking up runs by id prefix")
    }

    fn blocking_run(&mut self, task_id: &str) -> Result<Option<Run>> {
        self.conn
            .prepare_cached(&format!(
                // INDEXED BY: without statistics SQLite preferred
                // `runs_by_task` and walked every run the task ever had (5 s
                // for `list` of 10k tasks with 1,000 runs each); the partial
                // index holds only the few runs in these states.
                "SELECT {RUN_COLUMNS} FROM runs r INDEXED BY runs_blocking
                 WHERE r.task_id = ?1 AND r.status IN
                     ('running', 'awaiting_confirmation', 'awaiting_authorization', 'unknown')
                 ORDER BY r.scheduled_for LIMIT 1"
            ))?
            .query_row([task_id], decode_run)
            .optional()
            .context("looking for a blocking run")
    }

    fn expire_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        let ids: Vec<String> = self
            .conn
            .prepare_cached(
                "UPDATE runs
                 SET status = 'unknown', reason = 'execution lease expired', finished_at = ?1
                 WHERE status = 'running' AND lease_until < ?1 AND (?2 IS NULL OR tenant_key = ?2)
                 RETURNING run_id",
            )?
            .query_map(params![now, tenant], |row| row.get(0))?
            .collect::<Result<_, _>>()
            .context("expiring leases")?;
        self.runs_by_id(&ids)
    }

    fn expired_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r
             WHERE r.status = 'running' AND r.lease_until < ?1
               AND (?2 IS NULL OR r.tenant_key = ?2)
             ORDER BY r.lease_until"
        ))?;
        let runs = stmt
            .query_map(params![now, tenant], decode_run)?
            .collect::<Result<Vec<_>, _>>()
            .context("finding expired leases")?;
        Ok(runs)
    }

    fn renew_lease(&mut self, run_id: &str, token: &str, until: i64, now: i64) -> Result<bool> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE runs SET lease_until = max(lease_until, ?1)
                 WHERE run_id = ?2 AND lease_token = ?3 AND status = 'running'
                   AND lease_until >= ?4",
            )?
            .execute(params![until, run_id, token, now])
            .context("renewing the lease")?;
        Ok(changed == 1)
    }

    fn finish_run(&mut self, f: &RunFinish<'_>) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE runs
                 SET status = ?1, summary = coalesce(?2, summary), reason = ?3,
                     wait_kind = ?4, wait_id = ?5, wait_deadline = ?6,
                     lease_until = NULL, stderr_tail = coalesce(?11, stderr_tail),
                     approved_at = NULL, approved_by = NULL,
                     finished_at = CASE WHEN ?1 IN ('awaiting_confirmation', 'awaiting_authorization')
                                        THEN NULL ELSE ?7 END
                 WHERE run_id = ?8 AND status = ?9
                   AND (?10 IS NULL OR (lease_token = ?10 AND lease_until >= ?7))",
            )?
            .execute(params![
                f.to.as_str(),
                f.summary,
                f.reason,
                f.wait_kind,
                f.wait_id,
                f.wait_deadline,
                f.now,
                f.run_id,
                f.from.as_str(),
                f.token,
                f.stderr
            ])
            .context("recording the run's outcome")?;
        expect_one(changed, || {
            format!(
                "run {} is no longer {} under this lease; its outcome was not recorded",
                f.run_id, f.from
            )
        })
    }

    fn release_unstarted(&mut self, run_id: &str, token: &str, now: i64) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "DELETE FROM runs
                 WHERE run_id = ?1 AND status = 'running' AND lease_token = ?2 AND lease_until >= ?3",
            )?
            .execute(params![run_id, token, now])
            .context("taking back a run that never started")?;
        expect_one(changed, || {
            format!("run {run_id} is no longer running under this lease")
        })
    }

    fn lease_holds(&mut self, run_id: &str, token: &str, now: i64) -> Result<bool> {
        self.conn
            .prepare_cached(&numbered(sql::LEASE_HOLDS))?
            .query_row(params![run_id, token, now], |row| row.get::<_, i64>(0))
            .map(|n| n == 1)
            .context("checking the lease")
    }

    fn expired_continuations(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r
             WHERE r.status IN ('awaiting_confirmation', 'awaiting_authorization')
               AND r.wait_deadline < ?1 AND (?2 IS NULL OR r.tenant_key = ?2)
               AND r.approved_at IS NULL
             ORDER BY r.wait_deadline"
        ))?;
        let runs = stmt
            .query_map(params![now, tenant], decode_run)?
            .collect::<Result<Vec<_>, _>>()
            .context("finding expired continuations")?;
        Ok(runs)
    }

    fn approve_parked(&mut self, run_id: &str, wait_id: &str, actor: &str, now: i64) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::APPROVE_PARKED))?
            .execute(params![now, actor, run_id, wait_id])
            .context("approving the continuation")?;
        expect_one(changed, || {
            format!("run {run_id} is already approved; the next tick continues it")
        })
    }

    fn approved_continuations(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Run>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            // From the parked runs (a rare state), then their tasks: left
            // to itself the planner walked every active task (tasks_by_state)
            // and looked up its runs, 23 ms a claim at 100k tasks.
            "SELECT {RUN_COLUMNS} FROM runs r INDEXED BY runs_parked
             CROSS JOIN tasks t ON t.task_id = r.task_id
             WHERE r.approved_at IS NOT NULL
               AND r.status IN ('awaiting_confirmation', 'awaiting_authorization')
               AND t.state IN ('active', 'completed') AND (?1 IS NULL OR r.tenant_key = ?1)
             ORDER BY r.approved_at, r.run_id LIMIT ?2"
        ))?;
        let runs = stmt
            .query_map(params![tenant, limit], decode_run)?
            .collect::<Result<Vec<_>, _>>()
            .context("finding approved continuations")?;
        Ok(runs)
    }

    fn mark_runner(&mut self, run_id: &str, runner: &str) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::MARK_RUNNER))?
            .execute(params![runner, run_id])
            .context("recording who runs the run")?;
        Ok(())
    }

    fn running_runners(&mut self) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare_cached(
            // Along runs_leased (partial on status = 'running'): the few
            // running rows, whatever the history.
            "SELECT run_id, runner FROM runs INDEXED BY runs_leased
             WHERE status = 'running' AND runner IS NOT NULL",
        )?;
        let rows = stmt
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()
            .context("reading who runs the running runs")?;
        Ok(rows)
    }

    fn reclaim_parked(
        &mut self,
        run_id: &str,
        wait_id: &str,
        token: &str,
        lease_until: i64,
        now: i64,
    ) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::RECLAIM_PARKED))?
            .execute(params![token, lease_until, now, run_id, wait_id])
            .context("claiming the continuation")?;
        expect_one(changed, || {
            format!("run {run_id} is not waiting on '{wait_id}' (already claimed?)")
        })
    }
}

impl SqliteTx<'_> {
    fn runs_by_id(&mut self, ids: &[String]) -> Result<Vec<Run>> {
        ids.iter()
            .filter_map(|id| self.run(id).transpose())
            .collect()
    }
}
