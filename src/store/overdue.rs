//! The success clock of a task that sets `expect_success` (docs/CONTRACT.md
//! §6, §16): `tasks.success_due_at` is when it becomes overdue unless a run
//! succeeds first, and `tasks.overdue_since` since when it is. At most one
//! of them is set: a tick moves the first into the second, once per gap,
//! and a success starts the clock again.
//!
//! Each read walks a partial index (`tasks_success_due`, `tasks_overdue`),
//! so its cost follows the tasks that expect successes, never the history.

use anyhow::Result;

/// A task whose success came due: read by the tick, decided in its own
/// guarded UPDATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuccessDue {
    pub task_id: String,
    pub success_due_at: i64,
    /// Whether the task is active (else it will not run again: completed,
    /// deleted or error, and its clock is dropped).
    pub active: bool,
}

/// One task's clock, as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SuccessClock {
    pub success_due_at: Option<i64>,
    pub overdue_since: Option<i64>,
}

/// A task that expects successes, as `status` and `metrics` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
