//! Tasks: confirmed schedules and their lifecycle.

use anyhow::Result;

use crate::model::{Task, TaskState};

/// A stored row that failed validation on read: it is reported (and, by the
/// tick, quarantined) instead of crashing the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRow {
    pub id: String,
    pub tenant_key: String,
    pub problem: String,
}

impl std::fmt::Display for CorruptRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stored row {} cannot be read: {}", self.id, self.problem)
    }
}

impl std::error::Error for CorruptRow {}

/// Which tasks `list` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFilter<'a> {
    pub tenant_key: &'a str,
    /// Only tasks owned by one of these keys.
    pub owner_keys: &'a [String],
    pub include_deleted: bool,
    pub state: Option<TaskState>,
}

/// A compare-and-set change of a task's state. Applies only when the task is
/// still in `from` at `revision`; otherwise the store reports a Conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTransition<'a> {
    pub task_id: &'a str,
    pub from: TaskState,
    pub revision: i64,
    pub to: TaskState,
    pub reason: Option<&'a str>,
    pub next_run_at: Option<i64>,
    pub now: i64,
}

/// A task with an occurrence or a retry due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueTask {
    pub task_id: String,
    pub due_at: i64,
    pub is_retry: bool,
}

/// The scheduler's bookkeeping on a task: its next occurrence, pending
/// retry, failure streak and completion. Guarded by the values read in the
/// same transaction, so a concurrent change is a Conflict, never overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAdvance<'a> {
    pub task_id: &'a str,
    pub expected_state: TaskState,
    pub expected_next_run_at: Option<i64>,
    pub expected_next_retry_at: Option<i64>,
    pub state: TaskState,
    pub next_run_at: Option<i64>,
    pub next_retry_at: Option<i64>,
    pub retry_run_id: Option<&'a str>,
    pub consecutive_failures: i64,
    pub now: i64,
}

pub trait TaskTx {
    fn insert_task(&mut self, task: &Task) -> Result<()>;
    /// One task by exact id, in any tenant (callers check the tenant).
    fn task(&mut self, task_id: &str) -> Result<Option<Result<Task, CorruptRow>>>;
    /// Ids in the tenant starting with `prefix`, at most `limit`.
    fn task_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>>;
    /// The id of the tenant's non-deleted task with this name.
    fn task_id_named(&mut self, tenant_key: &str, name: &str) -> Result<Option<String>>;
    fn list_tasks(&mut self, filter: &TaskFilter<'_>) -> Result<Vec<Result<Task, CorruptRow>>>;
    /// Applies the transition and bumps the revision; Conflict if the guard fails.
    fn transition_task(&mut self, change: &TaskTransition<'_>) -> Result<i64>;
    /// Due occurrences and retries at `now`, earliest first.
    fn due_tasks(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>>;
    /// How many active tasks have something due at `now` (for status and gaps).
    fn due_count(&mut self, now: i64, tenant: Option<&str>) -> Result<i64>;
    /// Scheduler bookkeeping; does not bump the revision (that tracks what
    /// people changed, so `--expect-revision` stays usable on busy tasks).
    fn advance_task(&mut self, advance: &TaskAdvance<'_>) -> Result<()>;
    /// A row that cannot be read becomes `error` and leaves the schedule.
    fn quarantine_task(&mut self, task_id: &str, problem: &str, now: i64) -> Result<()>;
}
