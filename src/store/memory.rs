//! What agentcron remembers of a task's past, one row a task
//! (docs/CONTRACT.md §16): what the notice policy compares a new outcome
//! with, and what the executor is told of the previous run. Written in the
//! transaction that settles each run, so a restart changes no decision.
//! The operations and their one implementation over `Connection`.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::connection::Row;
use super::connection::{Connection, LaterInsert};
use super::runs::RUN_COLUMNS;
use crate::store::connection::args;

/// The columns of a memory row, in the order both stores read them.
pub const MEMORY_COLUMNS: &str = "task_id, last_failure_reason, last_failure_sent_at,
    last_success_fingerprint, suppressed_count, suppressed_failures, suppressed_since,
    last_settled_run_id, last_success_at";

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct TaskMemory {
    pub task_id: String,
    /// The reason of the last failure notice sent, while the failure streak
    /// lasts (a success clears it): the streak's dedup key.
    pub last_failure_reason: Option<String>,
    pub last_failure_sent_at: Option<i64>,
    /// SHA-256 of the summary of the last success notice sent.
    pub last_success_fingerprint: Option<String>,
    /// Notices held back since the last one sent, how many of them were
    /// failures, and when the first was.
    pub suppressed_count: i64,
    pub suppressed_failures: i64,
    pub suppressed_since: Option<i64>,
    /// The last run that ended (any outcome but running or parked).
    pub last_settled_run_id: Option<String>,
    pub last_success_at: Option<i64>,
}

impl TaskMemory {
    pub fn new(task_id: &str) -> TaskMemory {
        TaskMemory {
            task_id: task_id.to_string(),
            ..TaskMemory::default()
        }
    }
}

/// What `last_settled` reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LastSettled {
    pub run: Option<crate::model::Run>,
    pub last_success_at: Option<i64>,
}

/// `last_settled`'s statement: the last settled run's columns (null when it
/// is gone), then the last success's time.
static LAST_SETTLED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, m.last_success_at FROM task_memory m
         LEFT JOIN runs r ON r.run_id = m.last_settled_run_id
         WHERE m.task_id = $1"
    )
});

/// A task's memory, written whole (insert or replace): read back only
/// through statements naming `task_memory`, so it may wait for the commit.
static MEMORY_ROW: LaterInsert = LaterInsert {
    table: "task_memory",
    read_by: Some(0),
    column_names: MEMORY_COLUMNS,
    then: " ON CONFLICT (task_id) DO UPDATE SET
        last_failure_reason = excluded.last_failure_reason,
        last_failure_sent_at = excluded.last_failure_sent_at,
        last_success_fingerprint = excluded.last_success_fingerprint,
        suppressed_count = excluded.suppressed_count,
        suppressed_failures = excluded.suppressed_failures,
        suppressed_since = excluded.suppressed_since,
        last_settled_run_id = excluded.last_settled_run_id,
        last_success_at = excluded.last_success_at",
    key_columns: 1,
};

pub trait MemoryTx {
    /// The task's memory; a task that never settled a run has none.
    fn task_memory(&mut self, task_id: &str) -> Result<Option<TaskMemory>>;
    /// The task's last settled run (if it is still stored) and its last
    /// success's time, in one read; None when the task has no memory.
    fn last_settled(&mut self, task_id: &str) -> Result<Option<LastSettled>>;
    /// Writes the whole row (insert or replace).
    fn save_task_memory(&mut self, memory: &TaskMemory) -> Result<()>;
}

impl<C: Connection> MemoryTx for C {
    fn task_memory(&mut self, task_id: &str) -> Result<Option<TaskMemory>> {
        let row = self
            .query_opt(
                &format!("SELECT {MEMORY_COLUMNS} FROM task_memory WHERE task_id = $1"),
                args![task_id],
            )
            .context("reading the task's memory")?;
        row.as_ref().map(Row::decode).transpose()
    }

    fn last_settled(&mut self, task_id: &str) -> Result<Option<LastSettled>> {
        let row = self
            .query_opt(&LAST_SETTLED, args![task_id])
            .context("reading the task's last settled run")?;
        let Some(row) = row else { return Ok(None) };
        let run = match row.get::<Option<String>>(0)? {
            Some(_) => Some(super::rows::run(&row)?),
            None => None,
        };
        Ok(Some(LastSettled {
            run,
            last_success_at: row.get(super::rows::count(RUN_COLUMNS))?,
        }))
    }

    fn save_task_memory(&mut self, m: &TaskMemory) -> Result<()> {
        self.insert_later(
            &MEMORY_ROW,
            args![
                &m.task_id,
                &m.last_failure_reason,
                &m.last_failure_sent_at,
                &m.last_success_fingerprint,
                m.suppressed_count,
                m.suppressed_failures,
                &m.suppressed_since,
                &m.last_settled_run_id,
                &m.last_success_at,
            ],
        )
        .context("recording the task's memory")?;
        Ok(())
    }
}
