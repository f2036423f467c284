//! SQLite side of the tasks' memory.

use super::numbered;
use crate::store::sql::memory as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Row};

use super::SqliteTx;
use crate::store::memory::{MemoryTx, TaskMemory, MEMORY_COLUMNS};

/// A memory row, by the decoder both stores share.
fn decode(row: &Row<'_>) -> rusqlite::Result<TaskMemory> {
    crate::store::rows::memory(row)
}

impl MemoryTx for SqliteTx<'_> {
    fn task_memory(&mut self, task_id: &str) -> Result<Option<TaskMemory>> {
        self.conn
            .prepare_cached(&numbered(&sql::TASK_MEMORY))?
            .query_row([task_id], decode)
            .optional()
            .context("reading the task's memory")
    }

    fn save_task_memory(&mut self, m: &TaskMemory) -> Result<()> {
        self.conn
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO task_memory ({MEMORY_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                m.task_id,
                m.last_failure_reason,
                m.last_failure_sent_at,
                m.last_success_fingerprint,
                m.suppressed_count,
                m.suppressed_failures,
                m.suppressed_since,
                m.last_settled_run_id,
                m.last_success_at
            ])
            .context("recording the task's memory")?;
        Ok(())
    }
}
