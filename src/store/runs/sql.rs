//! The one implementation of `RunTx` over `Connection`: each operation's
//! statement, guard, message and decoding, with the two dialects' spellings
//! side by side where the servers differ (SQLite's index hints against
//! PostgreSQL's row locks).

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use anyhow::{Context, Result};

use super::leases;
use super::{Reconciliation, RunFilter, RunFinish, RunTx, UnknownPlace, RUN_COLUMNS};
use crate::model::Run;
use crate::store::connection::args;
use crate::store::connection::{expect_one, Connection, Dialect, LaterInsert, Row};
use crate::store::{owners, rows};

/// A new run: read back only through statements naming `runs` (whether
/// one blocks the next, the dashboard), so on PostgreSQL it may go to the
/// server with the rest of its claim's rows.
static RUN_ROW: LaterInsert = LaterInsert {
    table: "runs",
    read_by: None,
    column_names: "run_id, task_id, tenant_key, scheduled_for, scheduled_local,
       attempt, due_at, status, payload_hash, created_at, started_at, finished_at,
       lease_token, lease_until, summary, reason, skipped_occurrences, blocked_by,
       wait_kind, wait_id, wait_deadline, queued_seconds, trigger, runner, catch_up, profile",
    then: "",
    key_columns: 0,
};

/// `run_and_task`'s statement: the run's columns, then its task's.
static RUN_AND_TASK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, {} FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id
         WHERE r.run_id = $1",
        rows::qualified("t", crate::store::tasks::TASK_COLUMNS)
    )
});

/// The runs of rows selecting `RUN_COLUMNS`.
fn runs(found: &[Row]) -> Result<Vec<Run>> {
    found.iter().map(rows::run).collect()
}

/// The first run of rows selecting `RUN_COLUMNS`, if any.
fn first_run(found: &[Row]) -> Result<Option<Run>> {
    found.first().map(rows::run).transpose()
}

/// Unknown runs one row each, counted by place: the largest first, ties in
/// tenant, then owner order, at most `limit`.
fn count_places(found: &[Row], limit: u32) -> Result<Vec<UnknownPlace>> {
    let mut counted: BTreeMap<(String, String), i64> = BTreeMap::new();
    for row in found {
        *counted.entry((row.get(0)?, row.get(1)?)).or_default() += 1;
    }
    let mut places: Vec<UnknownPlace> = counted
        .into_iter()
        .map(|((tenant_key, owner_key), count)| UnknownPlace {
            tenant_key,
            owner_key,
            count,
        })
        .collect();
    places.sort_by_key(|p| std::cmp::Reverse(p.count));
    places.truncate(limit as usize);
    Ok(places)
}

impl<C: Connection> RunTx for C {
    fn unknown_places(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<UnknownPlace>> {
        let counting = "counting unknown runs by tenant and owner";
        match self.dialect() {
            Dialect::Sqlite => {
                // One row per unknown run, along their partial index (few:
                // each one blocks its task until someone reconciles it),
                // counted here rather than sorted by SQLite.
                let rows = self
                    .query(
                        "SELECT r.tenant_key, coalesce(json_extract(t.owner_keys, '$[0]'), '')
                         FROM runs r INDEXED BY runs_unknown JOIN tasks t ON t.task_id = r.task_id
                         WHERE r.status = 'unknown' AND ($1 IS NULL OR r.tenant_key = $1)",
                        args![tenant],
                    )
                    .context(counting)?;
                count_places(&rows, limit)
            }
            Dialect::Postgres => {
                let rows = self
                    .query(
                        "SELECT r.tenant_key, coalesce((t.owner_keys::jsonb) ->> 0, ''), count(*)
                         FROM runs r JOIN tasks t ON t.task_id = r.task_id
                         WHERE r.status = 'unknown'
                           AND (CAST($1 AS TEXT) IS NULL OR r.tenant_key = $1)
                         GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT $2",
                        args![tenant, limit],
                    )
                    .context(counting)?;
                rows.iter().map(Row::decode).collect()
            }
        }
    }

    fn insert_run(&mut self, r: &Run, runner: Option<&str>, profile: Option<&str>) -> Result<()> {
        let state = r.state.columns();
        self.insert_later(
            &RUN_ROW,
            args![
                &r.run_id,
                &r.task_id,
                &r.tenant_key,
                r.scheduled_for,
                &r.scheduled_local,
                r.attempt,
                r.due_at,
                state.status.as_str(),
                &r.payload_hash,
                r.created_at,
                &state.started_at,
                &state.finished_at,
                &state.lease_token,
                &state.lease_until,
                &r.summary,
                &r.reason,
                r.skipped_occurrences,
                &state.blocked_by,
                &state.wait_kind,
                &state.wait_id,
                &state.wait_deadline,
                &state.queued_seconds,
                r.trigger.as_str(),
                runner,
                i64::from(r.catch_up),
                profile,
            ],
        )
        .context("recording the run")?;
        Ok(())
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        let rows = self
            .query(
                &format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.run_id = $1"),
                args![run_id],
            )
            .context("reading the run")?;
        first_run(&rows)
    }

    fn run_and_task(&mut self, run_id: &str) -> Result<Option<super::RunAndTask>> {
        let row = self
            .query_opt(&RUN_AND_TASK, args![run_id])
            .context("reading the run and its task")?;
        let Some(row) = row else { return Ok(None) };
        let run = rows::run(&row)?;
        let by = rows::count(RUN_COLUMNS);
        let task = match row.get::<Option<String>>(by)? {
            Some(_) => Some(crate::store::tasks::decode_task(&rows::Shifted {
                row: &row,
                by,
            })?),
            None => None,
        };
        Ok(Some((run, task)))
    }

    fn each_run(
        &mut self,
        f: &RunFilter<'_>,
        each: &mut dyn FnMut(Run) -> Result<()>,
    ) -> Result<()> {
        let dialect = self.dialect();
        let keys = serde_json::to_string(f.owner_keys)?;
        let (scope, tie) = match dialect {
            // Two texts rather than `$2 IS NULL OR …`, so that each can walk
            // its index newest first and stop at the limit instead of sorting
            // all runs. (`+` keeps SQLite from picking the tenant index for
            // one task's runs.)
            Dialect::Sqlite if f.task_id.is_some() => ("r.task_id = $2 AND +r.tenant_key = $1", ""),
            Dialect::Sqlite => ("r.tenant_key = $1 AND $2 IS NULL", ""),
            Dialect::Postgres => (
                "r.tenant_key = $1 AND (CAST($2 AS TEXT) IS NULL OR r.task_id = $2)",
                ", r.created_at DESC",
            ),
        };
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs r JOIN tasks t ON t.task_id = r.task_id
             WHERE {scope}
               AND (CAST($3 AS TEXT) IS NULL OR r.status = $3) AND {owned}
             ORDER BY r.scheduled_for DESC, r.attempt DESC{tie} LIMIT $5",
            owned = owners::owned(dialect, "t", 4),
        );
        // An error of `each` (the output closed) is handed back as it is,
        // without the context of a failed read.
        let mut failed = None;
        self.each_row(
            &sql,
            args![
                f.tenant_key,
                f.task_id,
                f.status.map(|s| s.as_str()),
                &keys,
                f.limit as i64
            ],
            &mut |_, row| {
                let run = rows::run(row).context("listing runs")?;
                Ok(match each(run) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failed = Some(e);
                        ControlFlow::Break(())
                    }
                })
            },
        )
        .context("listing runs")?;
        failed.map_or(Ok(()), Err)
    }

    fn occurrence_runs(&mut self, task_id: &str, scheduled_for: i64) -> Result<Vec<Run>> {
        let rows = self
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r WHERE r.task_id = $1 AND r.scheduled_for = $2
                     ORDER BY r.attempt"
                ),
                args![task_id, scheduled_for],
            )
            .context("reading the occurrence's runs")?;
        runs(&rows)
    }

    fn run_at_or_before(&mut self, task_id: &str, at: i64) -> Result<Option<Run>> {
        let rows = self
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r WHERE r.task_id = $1 AND r.scheduled_for <= $2
                     ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT 1"
                ),
                args![task_id, at],
            )
            .context("reading the run before the occurrence")?;
        first_run(&rows)
    }

    fn insert_reconciliation(&mut self, r: &Reconciliation) -> Result<()> {
        self.execute(
            "INSERT INTO reconciliations
                 (run_id, tenant_key, actor, decision, reason, prior_reason, decided_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            args![
                &r.run_id,
                &r.tenant_key,
                &r.actor,
                &r.decision,
                &r.reason,
                &r.prior_reason,
                r.decided_at
            ],
        )
        .context("recording the reconciliation")?;
        Ok(())
    }

    fn task_runs(&mut self, task_id: &str, limit: u64) -> Result<Vec<Run>> {
        let rows = self
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r WHERE r.task_id = $1
                     ORDER BY r.scheduled_for DESC, r.attempt DESC LIMIT $2"
                ),
                args![task_id, limit as i64],
            )
            .context("reading the task's runs")?;
        runs(&rows)
    }

    fn blocking_run(&mut self, task_id: &str) -> Result<Option<Run>> {
        // INDEXED BY: without statistics SQLite preferred `runs_by_task` and
        // walked every run the task ever had (5 s for `list` of 10k tasks
        // with 1,000 runs each); the partial index holds only the few runs
        // in these states.
        let hint = self.dialect().pick(" INDEXED BY runs_blocking", "");
        let rows = self
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r{hint}
                     WHERE r.task_id = $1 AND r.status IN
                         ('running', 'awaiting_confirmation', 'awaiting_authorization', 'unknown')
                     ORDER BY r.scheduled_for LIMIT 1"
                ),
                args![task_id],
            )
            .context("looking for a blocking run")?;
        first_run(&rows)
    }

    fn expire_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<(Run, i64)>> {
        let expired = self
            .query(
                "UPDATE runs
                 SET status = 'unknown', reason = 'execution lease expired', finished_at = $1
                 WHERE status = 'running' AND lease_until < $1
                   AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                 RETURNING run_id, lease_until",
                args![now, tenant],
            )
            .context("expiring leases")?;
        let mut runs = Vec::with_capacity(expired.len());
        for row in &expired {
            let until: i64 = row.get(1)?;
            runs.extend(self.run(&row.get::<String>(0)?)?.map(|run| (run, until)));
        }
        Ok(runs)
    }

    fn expired_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        let rows = self
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r
                     WHERE r.status = 'running' AND r.lease_until < $1
                       AND (CAST($2 AS TEXT) IS NULL OR r.tenant_key = $2)
                     ORDER BY r.lease_until"
                ),
                args![now, tenant],
            )
            .context("finding expired leases")?;
        runs(&rows)
    }

    fn renew_lease(&mut self, run_id: &str, token: &str, until: i64, now: i64) -> Result<bool> {
        leases::renew_lease(self, run_id, token, until, now)
    }

    fn finish_run(&mut self, f: &RunFinish<'_>) -> Result<()> {
        leases::finish_run(self, f)
    }

    fn release_unstarted(&mut self, run_id: &str, token: &str, now: i64) -> Result<()> {
        leases::release_unstarted(self, run_id, token, now)
    }

    fn lease_holds(&mut self, run_id: &str, token: &str, now: i64) -> Result<bool> {
        leases::lease_holds(self, run_id, token, now)
    }

    fn expired_continuations(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>> {
        // On a shared server another tick may be deciding a row: pass it over.
        let lock = self.dialect().pick("", " FOR UPDATE OF r SKIP LOCKED");
        let rows = self
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs r
                     WHERE r.status IN ('awaiting_confirmation', 'awaiting_authorization')
                       AND r.wait_deadline < $1 AND (CAST($2 AS TEXT) IS NULL OR r.tenant_key = $2)
                       AND r.approved_at IS NULL
                     ORDER BY r.wait_deadline{lock}"
                ),
                args![now, tenant],
            )
            .context("finding expired continuations")?;
        runs(&rows)
    }

    fn approve_parked(&mut self, run_id: &str, wait_id: &str, actor: &str, now: i64) -> Result<()> {
        let changed = self
            .execute(
                "UPDATE runs SET approved_at = $1, approved_by = $2
                 WHERE run_id = $3 AND wait_id = $4 AND approved_at IS NULL
                   AND status IN ('awaiting_confirmation', 'awaiting_authorization')",
                args![now, actor, run_id, wait_id],
            )
            .context("approving the continuation")?;
        expect_one(changed, || {
            format!("run {run_id} is already approved; the next tick continues it")
        })
    }

    fn approved_continuations(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Run>> {
        let rows = self
            .query(&continuations_sql(self.dialect()), args![tenant, limit])
            .context("finding approved continuations")?;
        runs(&rows)
    }

    fn mark_runner(&mut self, run_id: &str, runner: &str) -> Result<()> {
        self.execute(
            "UPDATE runs SET runner = $1 WHERE run_id = $2 AND status = 'running'",
            args![runner, run_id],
        )
        .context("recording who runs the run")?;
        Ok(())
    }

    fn running_runners(&mut self) -> Result<Vec<(String, String)>> {
        // Along runs_leased (partial on status = 'running'): the few running
        // rows, whatever the history.
        let hint = self.dialect().pick(" INDEXED BY runs_leased", "");
        let rows = self
            .query(
                &format!(
                    "SELECT run_id, runner FROM runs{hint}
                     WHERE status = 'running' AND runner IS NOT NULL"
                ),
                args![],
            )
            .context("reading who runs the running runs")?;
        rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?))).collect()
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
            .execute(
                "UPDATE runs SET status = 'running', lease_token = $1, lease_until = $2,
                     started_at = $3, approved_at = NULL, approved_by = NULL
                 WHERE run_id = $4 AND wait_id = $5
                   AND status IN ('awaiting_confirmation', 'awaiting_authorization')",
                args![token, lease_until, now, run_id, wait_id],
            )
            .context("claiming the continuation")?;
        expect_one(changed, || {
            format!("run {run_id} is not waiting on '{wait_id}' (already claimed?)")
        })
    }
}

/// `approved_continuations`' statement.
pub(in crate::store) fn continuations_sql(dialect: Dialect) -> String {
    let (from, lock) = match dialect {
        // From the parked runs (a rare state), then their tasks: left to
        // itself the planner walked every active task (tasks_by_state)
        // and looked up its runs, 23 ms a claim at 100k tasks.
        Dialect::Sqlite => ("runs r INDEXED BY runs_parked CROSS JOIN tasks t", ""),
        // Rows another tick holds are passed over.
        Dialect::Postgres => ("runs r JOIN tasks t", " FOR UPDATE OF r SKIP LOCKED"),
    };
    format!(
        "SELECT {RUN_COLUMNS} FROM {from} ON t.task_id = r.task_id
         WHERE r.approved_at IS NOT NULL
           AND r.status IN ('awaiting_confirmation', 'awaiting_authorization')
           AND t.state IN ('active', 'completed')
           AND (CAST($1 AS TEXT) IS NULL OR r.tenant_key = $1)
         ORDER BY r.approved_at, r.run_id LIMIT $2{lock}"
    )
}
