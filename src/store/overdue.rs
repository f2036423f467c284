//! The success clock of a task that sets `expect_success` (docs/CONTRACT.md
//! §6, §16): `tasks.success_due_at` is when it becomes overdue unless a run
//! succeeds first, and `tasks.overdue_since` since when it is. At most one
//! of them is set: a tick moves the first into the second, once per gap,
//! and a success starts the clock again.
//!
//! Each read walks a partial index (`tasks_success_due`, `tasks_overdue`),
//! so its cost follows the tasks that expect successes, never the history:
//! SQLite's statements name the index, so the plan is the index whatever
//! the statistics say. The operations and their one implementation over
//! `Connection`.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::connection::Row;
use super::connection::{Connection, Dialect};
use crate::store::connection::args;

/// A task whose success came due: read by the tick, decided in its own
/// guarded UPDATE.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SuccessDue {
    pub task_id: String,
    pub success_due_at: i64,
    /// Whether the task is active (else it will not run again: completed,
    /// deleted or error, and its clock is dropped).
    pub active: bool,
}

/// One task's clock, as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct SuccessClock {
    pub success_due_at: Option<i64>,
    pub overdue_since: Option<i64>,
}

/// A task that expects successes, as `status` and `metrics` show it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Expecting {
    pub task_id: String,
    pub tenant_key: String,
    pub name: Option<String>,
    pub overdue_since: Option<i64>,
    /// From the task's memory; None when no run of it ever succeeded.
    pub last_success_at: Option<i64>,
}

pub trait OverdueTx {
    /// Starts the task's clock (`due_at` Some) or stops it (None); either
    /// way the task is no longer overdue.
    fn set_success_due(&mut self, task_id: &str, due_at: Option<i64>) -> Result<()>;
    /// The task's clock; the default when no such task.
    fn success_clock(&mut self, task_id: &str) -> Result<SuccessClock>;
    /// Tasks (of `tenant`, or all) whose success was due at or before
    /// `now`, paused ones aside, earliest first, at most `limit`: along
    /// `tasks_success_due`.
    fn successes_due(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SuccessDue>>;
    /// The active task becomes overdue since its due instant, which it
    /// must still have (`due.success_due_at`); Conflict when a success or
    /// another tick moved it meanwhile.
    fn mark_overdue(&mut self, due: &SuccessDue) -> Result<()>;
    /// Drops the clock of a task that will not run again, guarded by its
    /// due instant.
    fn drop_success_due(&mut self, due: &SuccessDue) -> Result<()>;
    /// Active and paused tasks (of `tenant`, or all) that are overdue,
    /// longest overdue first: along `tasks_overdue`.
    fn overdue_tasks(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>>;
    /// Active and paused tasks (of `tenant`, or all) whose clock runs or
    /// that are overdue, with their last success (`metrics`).
    fn expecting_success(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>>;
}

/// The columns `Expecting` is read from, in order (tasks `t`, memory `m`).
const EXPECTING_COLUMNS: &str =
    "t.task_id, t.tenant_key, t.name, t.overdue_since, m.last_success_at";

/// The tasks `query` finds ($1 the tenant or null), as `Expecting`.
fn expecting(
    tx: &mut impl Connection,
    query: &str,
    tenant: Option<&str>,
) -> Result<Vec<Expecting>> {
    tx.query(query, args![tenant])
        .context("reading the tasks that expect successes")?
        .iter()
        .map(Row::decode)
        .collect()
}

/// The active and paused tasks (of `$1`'s tenant, or all) matching `condition`, as
/// `Expecting`s, along `index`.
fn expecting_where(index: &str, condition: &str) -> String {
    format!(
        "SELECT {EXPECTING_COLUMNS} FROM tasks t{index}
         LEFT JOIN task_memory m ON m.task_id = t.task_id
         WHERE {condition} AND t.state IN ('active', 'paused')
           AND (CAST($1 AS TEXT) IS NULL OR t.tenant_key = $1)"
    )
}

impl<C: Connection> OverdueTx for C {
    fn set_success_due(&mut self, task_id: &str, due_at: Option<i64>) -> Result<()> {
        self.guarded(
            "UPDATE tasks SET success_due_at = $1, overdue_since = NULL WHERE task_id = $2",
            args![due_at, task_id],
            "setting the task's success clock",
            || format!("task {task_id} vanished"),
        )
    }

    fn success_clock(&mut self, task_id: &str) -> Result<SuccessClock> {
        let row = self
            .query_opt(
                "SELECT success_due_at, overdue_since FROM tasks WHERE task_id = $1",
                args![task_id],
            )
            .context("reading the task's success clock")?;
        row.map_or(Ok(SuccessClock::default()), |row| row.decode())
    }

    fn successes_due(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SuccessDue>> {
        // Along tasks_success_due. On PostgreSQL, SKIP LOCKED: a row another
        // session holds (a claim, a settle) is decided by a later tick.
        let (index, lock) = match self.dialect() {
            Dialect::Sqlite => (" INDEXED BY tasks_success_due", ""),
            Dialect::Postgres => ("", " FOR UPDATE SKIP LOCKED"),
        };
        self.query(
            &format!(
                "SELECT task_id, success_due_at, state = 'active' FROM tasks{index}
                 WHERE success_due_at IS NOT NULL AND success_due_at <= $1
                   AND state <> 'paused' AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                 ORDER BY success_due_at LIMIT $3{lock}"
            ),
            args![now, tenant, limit],
        )
        .context("reading the tasks whose success is due")?
        .iter()
        .map(Row::decode)
        .collect()
    }

    fn mark_overdue(&mut self, due: &SuccessDue) -> Result<()> {
        // Guarded by the due instant read, so a success committed meanwhile
        // (which moved it) wins.
        self.guarded(
            "UPDATE tasks SET overdue_since = success_due_at, success_due_at = NULL
             WHERE task_id = $1 AND success_due_at = $2 AND state = 'active'",
            args![&due.task_id, due.success_due_at],
            "marking the task overdue",
            || format!("task {} changed while it was decided overdue", due.task_id),
        )
    }

    fn drop_success_due(&mut self, due: &SuccessDue) -> Result<()> {
        self.guarded(
            "UPDATE tasks SET success_due_at = NULL WHERE task_id = $1 AND success_due_at = $2",
            args![&due.task_id, due.success_due_at],
            "dropping the task's success clock",
            || format!("task {} changed while its clock was dropped", due.task_id),
        )
    }

    fn overdue_tasks(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        let (index, collate) = match self.dialect() {
            Dialect::Sqlite => (" INDEXED BY tasks_overdue", ""),
            Dialect::Postgres => ("", " COLLATE \"C\""),
        };
        let overdue = expecting_where(index, "t.overdue_since IS NOT NULL");
        let query = format!("{overdue} ORDER BY t.overdue_since, t.task_id{collate}");
        expecting(self, &query, tenant)
    }

    fn expecting_success(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        // At most one of the two is set: the halves never share a task.
        let (due_index, overdue_index) = match self.dialect() {
            Dialect::Sqlite => (" INDEXED BY tasks_success_due", " INDEXED BY tasks_overdue"),
            Dialect::Postgres => ("", ""),
        };
        let halves = format!(
            "{} UNION ALL {}",
            expecting_where(due_index, "t.success_due_at IS NOT NULL"),
            expecting_where(
                overdue_index,
                "t.overdue_since IS NOT NULL AND t.success_due_at IS NULL"
            ),
        );
        // By task id, byte by byte on both servers.
        let query = match self.dialect() {
            Dialect::Sqlite => format!("{halves} ORDER BY 1"),
            Dialect::Postgres => {
                format!("SELECT * FROM ({halves}) e ORDER BY e.task_id COLLATE \"C\"")
            }
        };
        expecting(self, &query, tenant)
    }
}
