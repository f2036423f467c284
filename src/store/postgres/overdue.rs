//! PostgreSQL side of the tasks' success clocks.

use crate::store::sql::overdue as sql;
use anyhow::{Context, Result};

use super::{col, expect_one, PgTx};
use crate::store::overdue::{Expecting, OverdueTx, SuccessClock, SuccessDue};
use crate::store::rows;

impl PgTx<'_, '_> {
    fn expecting(&mut self, query: &str, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        self.tx
            .query(query, &[&tenant])
            .context("reading the tasks that expect successes")?
            .iter()
            .map(rows::expecting)
            .collect()
    }
}

impl OverdueTx for PgTx<'_, '_> {
    fn set_success_due(&mut self, task_id: &str, due_at: Option<i64>) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::SET_SUCCESS_DUE, &[&due_at, &task_id])
            .context("setting the task's success clock")?;
        expect_one(changed, || format!("task {task_id} vanished"))
    }

    fn success_clock(&mut self, task_id: &str) -> Result<SuccessClock> {
        let row = self
            .tx
            .query_opt(sql::SUCCESS_CLOCK, &[&task_id])
            .context("reading the task's success clock")?;
        Ok(match row {
            Some(row) => SuccessClock {
                success_due_at: col(&row, 0)?,
                overdue_since: col(&row, 1)?,
            },
            None => SuccessClock::default(),
        })
    }

    fn successes_due(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SuccessDue>> {
        // Along tasks_success_due; SKIP LOCKED: a row another session
        // holds (a claim, a settle) is decided by a later tick.
        self.tx
            .query(
                "SELECT task_id, success_due_at, state = 'active' FROM tasks
                 WHERE success_due_at IS NOT NULL AND success_due_at <= $1
                   AND state <> 'paused' AND ($2::text IS NULL OR tenant_key = $2)
                 ORDER BY success_due_at LIMIT $3 FOR UPDATE SKIP LOCKED",
                &[&now, &tenant, &i64::from(limit)],
            )
            .context("reading the tasks whose success is due")?
            .iter()
            .map(|row| {
                Ok(SuccessDue {
                    task_id: col(row, 0)?,
                    success_due_at: col(row, 1)?,
                    active: col(row, 2)?,
                })
            })
            .collect()
    }

    fn mark_overdue(&mut self, due: &SuccessDue) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::MARK_OVERDUE, &[&due.task_id, &due.success_due_at])
            .context("marking the task overdue")?;
        expect_one(changed, || {
            format!("task {} changed while it was decided overdue", due.task_id)
        })
    }

    fn drop_success_due(&mut self, due: &SuccessDue) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::DROP_SUCCESS_DUE, &[&due.task_id, &due.success_due_at])
            .context("dropping the task's success clock")?;
        expect_one(changed, || {
            format!("task {} changed while its clock was dropped", due.task_id)
        })
    }

    fn overdue_tasks(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        let query = format!(
            "SELECT {} FROM tasks t LEFT JOIN task_memory m ON m.task_id = t.task_id
             WHERE t.overdue_since IS NOT NULL AND t.state IN ('active', 'paused')
               AND ($1::text IS NULL OR t.tenant_key = $1)
             ORDER BY t.overdue_since, t.task_id COLLATE \"C\"",
            sql::EXPECTING_COLUMNS
        );
        self.expecting(&query, tenant)
    }

    fn expecting_success(&mut self, tenant: Option<&str>) -> Result<Vec<Expecting>> {
        // At most one of the two is set: the halves never share a task.
        let columns = sql::EXPECTING_COLUMNS;
        let query = format!(
            "SELECT * FROM (
               SELECT {columns} FROM tasks t LEFT JOIN task_memory m ON m.task_id = t.task_id
               WHERE t.success_due_at IS NOT NULL AND t.state IN ('active', 'paused')
                 AND ($1::text IS NULL OR t.tenant_key = $1)
               UNION ALL
               SELECT {columns} FROM tasks t LEFT JOIN task_memory m ON m.task_id = t.task_id
               WHERE t.overdue_since IS NOT NULL AND t.success_due_at IS NULL
                 AND t.state IN ('active', 'paused') AND ($1::text IS NULL OR t.tenant_key = $1)
             ) e ORDER BY e.task_id COLLATE \"C\""
        );
        self.expecting(&query, tenant)
    }
}
