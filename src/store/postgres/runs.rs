//! PostgreSQL side of the runs and reconciliations tables.

use crate::store::runs::RUN_COLUMNS;
use crate::store::sql::runs as sql;
use std::ops::ControlFlow;

use anyhow::{Context, Result};
use postgres::Row;

use super::tasks::owned;
use super::{col, expect_one, PgTx};
use crate::model::Run;
use crate::store::{Reconciliation, RunFilter, RunFinish, RunTx};

/// A run row, by the decoder both stores share.
fn decode_run(row: &Row) -> Result<Run> {
    crate::store::rows::run(row)
}

/// Seconds this transaction has lasted so far, on the server's clock. The
/// caller read `now` when the transaction began; a lease guard adds this so
/// that time spent waiting for a row lock cannot let an expired lease pass.
const WAITED: &str =
    "floor(extract(epoch FROM clock_timestamp() - transaction_timestamp()))::bigint";

impl PgTx<'_, '_> {
    /// Waits for the run's row lock before a lease guard is judged. An UPDATE
    /// that waits for a lock held by a `SELECT … FOR UPDATE` (which changes no
    /// row) does not re-evaluate its WHERE afterwards, so it would judge the
    /// lease by the clock of before the wait.
    fn lock_run(&mut self, run_id: &str) -> Result<()> {
        self.tx
            .execute(
                "SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE",
                &[&run_id],
            )
            .context("locking the run")?;
        Ok(())
    }

    fn runs_where(
        &mut self,
        tail: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Run>> {
        let rows = self
            .tx
            .query(&format!("SELECT {RUN_COLUMNS} FROM runs r {tail}"), params)
            .context("reading runs")?;
        rows.iter().map(decode_run).collect()
    }
}

impl RunTx for PgTx<'_, '_> {
    fn unknown_places(
        &mut self,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<crate::store::UnknownPlace>> {
        let rows = self
            .tx
            .query(
                "SELECT r.tenant_key, coalesce((t.owner_keys::jsonb) ->> 0, ''), count(*)
                 FROM runs r JOIN tasks t ON t.task_id = r.task_id
                 WHERE r.status = 'unknown' AND ($1::text IS NULL OR r.tenant_key = $1)
                 GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT $2",
                &[&tenant, &i64::from(limit)],
            )
            .context("counting unknown runs by tenant and owner")?;
        rows.iter()
            .map(|r| {
                Ok(crate::store::UnknownPlace {
                    tenant_key: col(r, 0)?,
                    owner_key: col(r, 1)?,
                    count: col(r, 2)?,
                })
            })
            .collect()
    }

    fn insert_run(&mut self, r: &Run) -> Result<()> {
        self.tx
            .execute(
                sql::INSERT_RUN,
                &[
                    &r.run_id,
                    &r.task_id,
                    &r.tenant_key,
                    &r.scheduled_for,
                    &r.scheduled_local,
                    &r.attempt,
                    &r.due_at,
                    &r.status.as_str(),
                    &r.payload_hash,
                    &r.created_at,
                    &r.started_at,
                    &r.finished_at,
                    &r.lease_token,
                    &r.lease_until,
                    &r.summary,
                    &r.reason,
                    &r.skipped_occurrences,
                    &r.blocked_by,
                    &r.wait_kind,
                    &r.wait_id,
                    &r.wait_deadline,
                    &r.queued_seconds,
                    &r.trigger.as_str(),
                    &r.runner,
                    &i64::from(r.catch_up),
                ],
            )
            .context("recording the run")?;
        Ok(())
    }

    fn each_run(
        &mut self,
        f: &RunFilter<'_>,
        each: &mut dyn FnMut(Run) -> Result<()>,
    ) -> Result<()> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs r JOIN tasks t ON t.task_id = r.task_id
             WHERE r.tenant_key = $1 AND ($2::text IS NULL OR r.task_id = $2)
               AND ($3::text IS NULL OR r.status = $3) AND {}
             ORDER BY r.scheduled_for DESC, r.attempt DESC, r.created_at DESC LIMIT $5",
            owned("t", 4)
        );
        self.each_pg_row(
            &sql,
            &[
                &f.tenant_key,
                &f.task_id,
                &f.status.map(|s| s.as_str()),
                &f.owner_keys,
                &(f.limit as i64),
            ],
            &mut |_, row| {
                each(decode_run(row).context("listing runs")?)?;
                Ok(ControlFlow::Continue(()))
            },
        )
    }

    fn occurrence_runs(&mut self, task_id: &str, scheduled_for: i64) -> Result<Vec<Run>> {
        self.runs_where(
            "WHERE r.task_id = $1 AND r.scheduled_for = $2 ORDER BY r.attempt",
            &[&task_id, &scheduled_for],
        )
    }

    fn run_at_or_before(&mut self, task_id: &str, at: i64) -> Result<Option<Run>> {
        Ok(self
            .runs_where(
                "WHERE r.task_id = $1 AND r.scheduled_for <= $2 ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT 1",
                &[&task_id, &at],
            )?
            .into_iter()
            .next())
    }

    fn insert_reconciliation(&mut self, r: &Reconciliation) -> Result<()> {
        self.tx
            .execute(
                sql::INSERT_RECONCILIATION,
                &[
                    &r.run_id,
                    &r.tenant_key,
                    &r.actor,
                    &r.decision,
                    &r.reason,
                    &r.prior_reason,
                    &r.decided_at,
                ],
            )
            .context("recording the reconciliation")?;
        Ok(())
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        Ok(self
            .runs_where("WHERE r.run_id = $1", &[&run_id])?
            .into_iter()
            .next())
    }

    fn run_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>> {
        self.ids_with_prefix(
            "SELECT run_id FROM runs
             WHERE run_id >= $1 AND run_id < $2 AND starts_with(run_id, $1)
               AND tenant_key = $3
             ORDER BY run_id LIMIT $4",
            tenant_key,
            prefix,
            limit,
        )
        .context("looking up runs by id prefix")
    }

    fn task_runs(&mut self, task_id: &str, limit: u64) -> Result<Vec<Run>> {
        self.runs_where(
            "WHERE r.task_id = $1 ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT $2",
            &[&task_id, &(limit as i64)],
        )
    }

    fn blocking_run(&mut self, task_id: &str) -> Result<Option<Run>> {
        Ok(self
            .runs_where(
                "WHERE r.task_id = $1 AND r.status IN
                     ('running', 'awaiting_confirmation', 'awaiting_authorization', 'unknown')
                 ORDER BY r.scheduled_for LIMIT 1",
                &[&task_id],
            )?
            .into_iter()
            .next())
    }

    fn expire_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        let rows = self
            .tx
            .query(
                "UPDATE runs SET status = 'unknown', reason = 'execution lease expired', finished_at = $1
                 WHERE status = 'running' AND lease_until < $1 AND ($2::text IS NULL OR tenant_key = $2)
                 RETURNING run_id",
                &[&now, &tenant],
            )
            .context("expiring leases")?;
        let ids: Vec<String> = rows.iter().map(|r| col(r, 0)).collect::<Result<_>>()?;
        ids.iter()
            .filter_map(|id| self.run(id).transpose())
            .collect()
    }

    fn expired_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        self.runs_where(
            "WHERE r.status = 'running' AND r.lease_until < $1
               AND ($2::text IS NULL OR r.tenant_key = $2)
             ORDER BY r.lease_until",
            &[&now, &tenant],
        )
    }

    fn renew_lease(&mut self, run_id: &str, token: &str, until: i64, now: i64) -> Result<bool> {
        self.lock_run(run_id)?;
        let changed = self
            .tx
            .execute(
                &format!(
                    "UPDATE runs SET lease_until = greatest(lease_until, $1)
                     WHERE run_id = $2 AND lease_token = $3 AND status = 'running'
                       AND lease_until >= $4::bigint + {WAITED}"
                ),
                &[&until, &run_id, &token, &now],
            )
            .context("renewing the lease")?;
        Ok(changed == 1)
    }

    fn lease_holds(&mut self, run_id: &str, token: &str, now: i64) -> Result<bool> {
        let row = self
            .tx
            .query_one(sql::LEASE_HOLDS, &[&run_id, &token, &now])?;
        Ok(col::<i64>(&row, 0)? == 1)
    }

    fn finish_run(&mut self, f: &RunFinish<'_>) -> Result<()> {
        if f.token.is_some() {
            self.lock_run(f.run_id)?;
        }
        let changed = self
            .tx
            .execute(
                &format!(
                    "UPDATE runs
                 SET status = $1, summary = coalesce($2, summary), reason = $3,
                     wait_kind = $4, wait_id = $5, wait_deadline = $6, lease_until = NULL,
                     stderr_tail = coalesce($11, stderr_tail), approved_at = NULL, approved_by = NULL,
                     finished_at = CASE WHEN $1 IN ('awaiting_confirmation', 'awaiting_authorization')
                                        THEN NULL ELSE $7::bigint END
                 WHERE run_id = $8 AND status = $9
                   AND ($10::text IS NULL OR (lease_token = $10 AND lease_until >= $7::bigint + {WAITED}))"
                ),
                &[
                    &f.to.as_str(),
                    &f.summary,
                    &f.reason,
                    &f.wait_kind,
                    &f.wait_id,
                    &f.wait_deadline,
                    &f.now,
                    &f.run_id,
                    &f.from.as_str(),
                    &f.token,
                    &f.stderr,
                ],
            )
            .context("recording the run's outcome")?;
        expect_one(changed, || {
            format!(
                "run {} is no longer {} under this lease; its outcome was not recorded",
                f.run_id, f.from
            )
        })
    }

    fn release_unstarted(&mut self, run_id: &str, token: &str, now: i64) -> Result<()> {
        self.lock_run(run_id)?;
        let changed = self
            .tx
            .execute(
                &format!(
                    "DELETE FROM runs
                     WHERE run_id = $1 AND status = 'running' AND lease_token = $2
                       AND lease_until >= $3::bigint + {WAITED}"
                ),
                &[&run_id, &token, &now],
            )
            .context("taking back a run that never started")?;
        expect_one(changed, || {
            format!("run {run_id} is no longer running under this lease")
        })
    }

    fn expired_continuations(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        self.runs_where(
            "WHERE r.status IN ('awaiting_confirmation', 'awaiting_authorization')
               AND r.wait_deadline < $1 AND ($2::text IS NULL OR r.tenant_key = $2)
               AND r.approved_at IS NULL
             ORDER BY r.wait_deadline FOR UPDATE OF r SKIP LOCKED",
            &[&now, &tenant],
        )
    }

    fn approve_parked(&mut self, run_id: &str, wait_id: &str, actor: &str, now: i64) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::APPROVE_PARKED, &[&now, &actor, &run_id, &wait_id])
            .context("approving the continuation")?;
        expect_one(changed, || {
            format!("run {run_id} is already approved; the next tick continues it")
        })
    }

    fn approved_continuations(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Run>> {
        self.runs_where(
            "JOIN tasks t ON t.task_id = r.task_id
             WHERE r.approved_at IS NOT NULL
               AND r.status IN ('awaiting_confirmation', 'awaiting_authorization')
               AND t.state IN ('active', 'completed') AND ($1::text IS NULL OR r.tenant_key = $1)
             ORDER BY r.approved_at, r.run_id LIMIT $2 FOR UPDATE OF r SKIP LOCKED",
            &[&tenant, &i64::from(limit)],
        )
    }

    fn mark_runner(&mut self, run_id: &str, runner: &str) -> Result<()> {
        self.tx
            .execute(sql::MARK_RUNNER, &[&runner, &run_id])
            .context("recording who runs the run")?;
        Ok(())
    }

    fn running_runners(&mut self) -> Result<Vec<(String, String)>> {
        let rows = self
            .tx
            .query(
                // runs_leased is partial on status = 'running'.
                "SELECT run_id, runner FROM runs WHERE status = 'running' AND runner IS NOT NULL",
                &[],
            )
            .context("reading who runs the running runs")?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
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
            .tx
            .execute(
                sql::RECLAIM_PARKED,
                &[&token, &lease_until, &now, &run_id, &wait_id],
            )
            .context("claiming the continuation")?;
        expect_one(changed, || {
            format!("run {run_id} is not waiting on '{wait_id}' (already claimed?)")
        })
    }
}
