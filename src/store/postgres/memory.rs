//! PostgreSQL side of the tasks' memory.

use crate::store::sql::memory as sql;
use anyhow::{Context, Result};

use super::PgTx;
use crate::store::memory::{MemoryTx, TaskMemory, MEMORY_COLUMNS};

impl MemoryTx for PgTx<'_, '_> {
    fn task_memory(&mut self, task_id: &str) -> Result<Option<TaskMemory>> {
        let row = self
            .tx
            .query_opt(&sql::TASK_MEMORY, &[&task_id])
            .context("reading the task's memory")?;
        row.as_ref().map(crate::store::rows::memory).transpose()
    }

    fn save_task_memory(&mut self, m: &TaskMemory) -> Result<()> {
        self.tx
            .execute(
                &format!(
                    "INSERT INTO task_memory ({MEMORY_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                     ON CONFLICT (task_id) DO UPDATE SET
                        last_failure_reason = excluded.last_failure_reason,
                        last_failure_sent_at = excluded.last_failure_sent_at,
                        last_success_fingerprint = excluded.last_success_fingerprint,
                        suppressed_count = excluded.suppressed_count,
                        suppressed_failures = excluded.suppressed_failures,
                        suppressed_since = excluded.suppressed_since,
                        last_settled_run_id = excluded.last_settled_run_id,
                        last_success_at = excluded.last_success_at"
                ),
                &[
                    &m.task_id,
                    &m.last_failure_reason,
                    &m.last_failure_sent_at,
                    &m.last_success_fingerprint,
                    &m.suppressed_count,
                    &m.suppressed_failures,
                    &m.suppressed_since,
                    &m.last_settled_run_id,
                    &m.last_success_at,
                ],
            )
            .context("recording the task's memory")?;
        Ok(())
    }
}
