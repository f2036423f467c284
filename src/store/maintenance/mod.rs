//! Whole-store questions and chores: health counts, pruning old history
//! (`prune.rs`), and the invariant check (`check.rs`); the operations and
//! their one implementation over `Connection`. The counts keep a statement
//! shape per server: SQLite runs one small count per figure along the
//! index it names, PostgreSQL one statement for all of them.

mod check;
mod prune;

use anyhow::{Context, Result};

use super::connection::{Connection, Dialect};
use crate::model::TaskState;
use crate::store::connection::args;

/// What `status` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub tasks_active: i64,
    pub tasks_paused: i64,
    pub tasks_error: i64,
    pub due: i64,
    pub running: i64,
    pub unknown: i64,
    pub awaiting: i64,
    pub notices_pending: i64,
    pub notices_sending: i64,
    pub notices_unknown: i64,
    /// Never sent: the notifier kept answering "try later" past the give-up age.
    pub notices_undeliverable: i64,
    /// Held back by their task's notice policy (docs/CONTRACT.md §16).
    pub notices_suppressed: i64,
    /// Running runs whose lease has passed: stuck, though no tick froze them yet.
    pub stuck: i64,
}

/// What `metrics` counts beyond `Stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tallies {
    /// (status, count) for every status that has runs.
    pub runs: Vec<(String, i64)>,
    /// (state, count) for every state that has notices.
    pub notices: Vec<(String, i64)>,
    /// `scheduler_gap` events still in the audit log (prune removes old ones).
    pub scheduler_gaps: i64,
    /// (status, count) of runs finished since the store began: counted as
    /// they finish, never decremented, so prune does not lower them.
    pub finished_totals: Vec<(String, i64)>,
}

/// What `prune` removes (or would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneCounts {
    pub runs: i64,
    pub notices: i64,
    pub reconciliations: i64,
    pub events: i64,
    pub drafts: i64,
}

pub trait MaintenanceTx {
    fn stats(&mut self, now: i64, tenant: Option<&str>) -> Result<Stats>;
    /// Runs by status, notices by state, recorded scheduler gaps. A gap is
    /// the host's (recorded under the tick's tenant or `*`), so a tenant
    /// sees its own and the unscoped ones.
    fn tallies(&mut self, tenant: Option<&str>) -> Result<Tallies>;
    /// Counts the settled history older than `cutoff` that `prune_batch`
    /// deletes: runs that finished before it and whose notices are all
    /// delivered, delivered notices, their reconciliations, audit events,
    /// expired drafts. Never unknown, running or parked runs, nor a run a
    /// pending retry refers to, nor the draft and confirm/replace events of
    /// a task that is not deleted.
    fn prunable(&mut self, cutoff: i64, tenant: Option<&str>) -> Result<PruneCounts>;
    /// Deletes at most `limit` of the prunable runs (with their notices and
    /// reconciliations), `limit` events and `limit` drafts, returning what it
    /// deleted: `prune` calls it in a loop of short transactions, so ticks
    /// wait for the write lock for one batch at most, never for the whole.
    fn prune_batch(&mut self, cutoff: i64, tenant: Option<&str>, limit: i64)
        -> Result<PruneCounts>;
    /// Every broken invariant, in words; empty when the store is sound.
    fn violations(&mut self, now: i64) -> Result<Vec<String>>;
    /// What the database itself finds broken, read with no table of any
    /// schema (SQLite's integrity check; PostgreSQL keeps its own): what
    /// `check` verifies of a store at an older schema.
    fn integrity(&mut self) -> Result<Vec<String>>;
}

impl<C: Connection> MaintenanceTx for C {
    fn stats(&mut self, now: i64, tenant: Option<&str>) -> Result<Stats> {
        let counts = match self.dialect() {
            Dialect::Sqlite => sqlite_counts(self, now, tenant)?,
            Dialect::Postgres => {
                let row = self
                    .query_one(POSTGRES_STATS, args![tenant, now])
                    .context("counting for status")?;
                let mut counts = [0; 13];
                for (i, count) in counts.iter_mut().enumerate() {
                    *count = row.get(i)?;
                }
                counts
            }
        };
        let [tasks_active, tasks_paused, tasks_error, due, running, unknown, awaiting, notices_pending, notices_sending, notices_unknown, notices_undeliverable, notices_suppressed, stuck] =
            counts;
        Ok(Stats {
            tasks_active,
            tasks_paused,
            tasks_error,
            due,
            running,
            unknown,
            awaiting,
            notices_pending,
            notices_sending,
            notices_unknown,
            notices_undeliverable,
            notices_suppressed,
            stuck,
        })
    }

    fn tallies(&mut self, tenant: Option<&str>) -> Result<Tallies> {
        let mut grouped = |sql: &str| -> Result<Vec<(String, i64)>> {
            let rows = self
                .query(sql, args![tenant])
                .context("counting for metrics")?;
            rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?))).collect()
        };
        let runs = grouped(
            "SELECT status, count(*) FROM runs
             WHERE CAST($1 AS TEXT) IS NULL OR tenant_key = $1 GROUP BY status",
        )?;
        let notices = grouped(
            "SELECT state, count(*) FROM deliveries
             WHERE CAST($1 AS TEXT) IS NULL OR tenant_key = $1 GROUP BY state",
        )?;
        let finished_totals = grouped(
            "SELECT status, CAST(sum(n) AS BIGINT) FROM run_totals
             WHERE CAST($1 AS TEXT) IS NULL OR tenant_key = $1 GROUP BY status",
        )?;
        let scheduler_gaps = self
            .value(
                "SELECT count(*) FROM events WHERE action = 'scheduler_gap'
                   AND (CAST($1 AS TEXT) IS NULL OR tenant_key IN ($1, '*'))",
                args![tenant],
            )
            .context("counting scheduler gaps")?;
        Ok(Tallies {
            runs,
            notices,
            scheduler_gaps,
            finished_totals,
        })
    }

    fn prunable(&mut self, cutoff: i64, tenant: Option<&str>) -> Result<PruneCounts> {
        prune::prunable(self, cutoff, tenant)
    }

    fn prune_batch(
        &mut self,
        cutoff: i64,
        tenant: Option<&str>,
        limit: i64,
    ) -> Result<PruneCounts> {
        prune::prune_batch(self, cutoff, tenant, limit)
    }

    fn integrity(&mut self) -> Result<Vec<String>> {
        check::integrity(self)
    }

    fn violations(&mut self, now: i64) -> Result<Vec<String>> {
        check::violations(self, now)
    }
}

/// `status`'s figures in `Stats`' order, from SQLite: one statement each.
fn sqlite_counts(tx: &mut impl Connection, now: i64, tenant: Option<&str>) -> Result<[i64; 13]> {
    let mut count = |sql: &str, with_now: bool| -> Result<i64> {
        let n = if with_now {
            tx.value(sql, args![tenant, now])
        } else {
            tx.value(sql, args![tenant])
        };
        n.context("counting for status")
    };
    // One text per scope rather than `$1 IS NULL OR tenant_key = $1`,
    // which no index can serve: each count is then a search of an index
    // on its state (the tenant's part of it with --tenant), and the
    // counts over every tenant walk only the small partial indexes of
    // runs in transient states, never all runs.
    let scoped = |sql: &str| match tenant {
        Some(_) => sql.replace("{TENANT}", "tenant_key = $1"),
        None => sql.replace("{TENANT}", "$1 IS NULL"),
    };
    let (running, awaiting) = sqlite_running_and_parked(tenant);
    // Tasks are not counted but read from the counts the schema's
    // triggers keep (one row per state and tenant).
    let mut tasks_in = |state: TaskState| {
        let sql = format!(
            "SELECT coalesce(sum(n), 0) FROM task_counts WHERE state = '{}' AND {{TENANT}}",
            state.as_str()
        );
        count(&scoped(&sql), false)
    };
    let tasks = [
        tasks_in(TaskState::Active)?,
        tasks_in(TaskState::Paused)?,
        tasks_in(TaskState::Error)?,
    ];
    let notices = |state: &str| {
        format!(
            "SELECT count(*) FROM deliveries WHERE state = '{state}'
             AND ($1 IS NULL OR tenant_key = $1)"
        )
    };
    Ok([
        tasks[0],
        tasks[1],
        tasks[2],
        // Two walks of the small partial due indexes instead of a scan
        // of every active task.
        count(
            "SELECT (SELECT count(*) FROM tasks INDEXED BY tasks_due
                     WHERE state = 'active' AND next_run_at <= $2
                       AND ($1 IS NULL OR tenant_key = $1))
                  + (SELECT count(*) FROM tasks INDEXED BY tasks_retry_due
                     WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= $2
                       AND NOT coalesce(next_run_at <= $2, 0)
                       AND ($1 IS NULL OR tenant_key = $1))",
            true,
        )?,
        count(running, false)?,
        count(
            &scoped("SELECT count(*) FROM runs WHERE status = 'unknown' AND {TENANT}"),
            false,
        )?,
        count(awaiting, false)?,
        count(&notices("pending"), false)?,
        count(&notices("sending"), false)?,
        count(&notices("unknown"), false)?,
        count(&notices("undeliverable"), false)?,
        // Kept by triggers: held-back notices grow with the history.
        count(
            "SELECT coalesce(sum(n), 0) FROM suppressed_counts
             WHERE $1 IS NULL OR tenant_key = $1",
            false,
        )?,
        count(
            "SELECT count(*) FROM runs INDEXED BY runs_leased
             WHERE status = 'running' AND lease_until < $2 AND ($1 IS NULL OR tenant_key = $1)",
            true,
        )?,
    ])
}

/// SQLite's counts of running and of parked runs, for one tenant or all.
fn sqlite_running_and_parked(tenant: Option<&str>) -> (&'static str, &'static str) {
    match tenant {
        Some(_) => (
            "SELECT count(*) FROM runs WHERE status = 'running' AND tenant_key = $1",
            "SELECT count(*) FROM runs WHERE tenant_key = $1
               AND status IN ('awaiting_confirmation', 'awaiting_authorization')",
        ),
        None => (
            "SELECT count(*) FROM runs INDEXED BY runs_leased
             WHERE status = 'running' AND $1 IS NULL",
            "SELECT count(*) FROM runs INDEXED BY runs_parked
             WHERE status IN ('awaiting_confirmation', 'awaiting_authorization') AND $1 IS NULL",
        ),
    }
}

/// `status`'s figures in `Stats`' order, from PostgreSQL: one statement.
const POSTGRES_STATS: &str = "SELECT
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
      AND ($1::text IS NULL OR tenant_key = $1))";
