//! SQLite side of the tasks' success clocks: each read names its partial
//! index, so the plan is the index whatever the statistics say.

use super::numbered;
use crate::store::sql::overdue as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};

use super::{expect_one, SqliteTx};
use crate::store::overdue::{Expecting, OverdueTx, SuccessClock, SuccessDue};
use crate::store::rows;

/// `successes_due`'s query, along `tasks_success_due`.
pub(super) const SUCCESSES_DUE: &str = "SELECT task_id, success_due_at, state = 'active'
    FROM tasks INDEXED BY tasks_success_due
    WHERE success_due_at IS NOT NULL AND success_due_at <= ?1 AND state <> 'paused'
      AND (?2 IS NULL OR tenant_key = ?2)
    ORDER BY success_due_at LIMIT ?3";

impl SqliteTx<'_> {
    fn expecting(&mut self, query: &str, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        let mut stmt = self.conn.prepare_cached(query)?;
        let found = stmt.query_map(params![tenant], |row| rows::expecting(row))?;
        found
            .collect::<rusqlite::Result<Vec<_>>>()
            .context("reading the tasks that expect successes")
    }
}

impl OverdueTx for SqliteTx<'_> {
    fn set_success_due(&mut self, task_id: &str, due_at: Option<i64>) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::SET_SUCCESS_DUE))?
            .execute(params![due_at, task_id])
            .context("setting the task's success clock")?;
        expect_one(changed, || format!("task {task_id} vanished"))
    }

    fn success_clock(&mut self, task_id: &str) -> Result<SuccessClock> {
        let clock = self
            .conn
            .prepare_cached(&numbered(sql::SUCCESS_CLOCK))?
            .query_row([task_id], |row| {
                Ok(SuccessClock {
                    success_due_at: row.get(0)?,
                    overdue_since: row.get(1)?,
                })
            })
            .optional()
            .context("reading the task's success clock")?;
        Ok(clock.unwrap_or_default())
    }

    fn successes_due(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SuccessDue>> {
        let mut stmt = self.conn.prepare_cached(SUCCESSES_DUE)?;
        let rows = stmt.query_map(params![now, tenant, limit], |row| {
            Ok(SuccessDue {
                task_id: row.get(0)?,
                success_due_at: row.get(1)?,
                active: row.get(2)?,
            })
        })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("reading the tasks whose success is due")
    }

    fn mark_overdue(&mut self, due: &SuccessDue) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::MARK_OVERDUE))?
            .execute(params![due.task_id, due.success_due_at])
            .context("marking the task overdue")?;
        expect_one(changed, || {
            format!("task {} changed while it was decided overdue", due.task_id)
        })
    }

    fn drop_success_due(&mut self, due: &SuccessDue) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::DROP_SUCCESS_DUE))?
            .execute(params![due.task_id, due.success_due_at])
            .context("dropping the task's success clock")?;
        expect_one(changed, || {
            format!("task {} changed while its clock was dropped", due.task_id)
        })
    }

    fn overdue_tasks(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        let query = format!(
            "SELECT {} FROM tasks t INDEXED BY tasks_overdue
             LEFT JOIN task_memory m ON m.task_id = t.task_id
             WHERE t.overdue_since IS NOT NULL AND t.state IN ('active', 'paused')
               AND (?1 IS NULL OR t.tenant_key = ?1)
             ORDER BY t.overdue_since, t.task_id",
            sql::EXPECTING_COLUMNS
        );
        self.expecting(&query, tenant)
    }

    fn expecting_success(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        // At most one of the two is set: the halves never share a task.
        let columns = sql::EXPECTING_COLUMNS;
        let query = format!(
            "SELECT {columns} FROM tasks t INDEXED BY tasks_success_due
             LEFT JOIN task_memory m ON m.task_id = t.task_id
             WHERE t.success_due_at IS NOT NULL AND t.state IN ('active', 'paused')
               AND (?1 IS NULL OR t.tenant_key = ?1)
             UNION ALL
             SELECT {columns} FROM tasks t INDEXED BY tasks_overdue
             LEFT JOIN task_memory m ON m.task_id = t.task_id
             WHERE t.overdue_since IS NOT NULL AND t.success_due_at IS NULL
               AND t.state IN ('active', 'paused') AND (?1 IS NULL OR t.tenant_key = ?1)
             ORDER BY 1"
        );
        self.expecting(&query, tenant)
    }
}
