//! SQLite side of budget windows and usage totals.

use super::numbered;
use crate::store::sql::budgets as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Row};

use super::SqliteTx;
use crate::store::budgets::{BudgetTx, BudgetWindow, UsageTotal};

fn window(row: &Row<'_>) -> rusqlite::Result<BudgetWindow> {
    Ok(BudgetWindow {
        task_id: row.get(0)?,
        key: row.get(1)?,
        period: row.get(2)?,
        window_start: row.get(3)?,
        spent: row.get(4)?,
        told_at: row.get(5)?,
    })
}

fn total(row: &Row<'_>) -> rusqlite::Result<UsageTotal> {
    Ok(UsageTotal {
        tenant_key: row.get(0)?,
        key: row.get(1)?,
        total: row.get(2)?,
    })
}

impl BudgetTx for SqliteTx<'_> {
    fn budget_windows(&mut self, task_id: &str) -> Result<Vec<BudgetWindow>> {
        self.conn
            .prepare_cached(&numbered(sql::BUDGET_WINDOWS))?
            .query_map([task_id], window)?
            .collect::<rusqlite::Result<_>>()
            .context("reading the task's budget windows")
    }

    fn save_budget_window(&mut self, w: &BudgetWindow) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::SAVE_BUDGET_WINDOW))?
            .execute(params![
                w.task_id,
                w.key,
                w.period,
                w.window_start,
                w.spent,
                w.told_at
            ])
            .context("recording a budget window")?;
        Ok(())
    }

    fn active_budget_windows(&mut self, tenant: Option<&str>) -> Result<Vec<BudgetWindow>> {
        let rows = match tenant {
            Some(t) => self
                .conn
                .prepare_cached(&numbered(sql::TENANT_BUDGET_WINDOWS))?
                .query_map([t], window)?
                .collect::<rusqlite::Result<_>>(),
            None => self
                .conn
                .prepare_cached(sql::ACTIVE_BUDGET_WINDOWS)?
                .query_map([], window)?
                .collect::<rusqlite::Result<_>>(),
        };
        rows.context("reading the budget windows")
    }

    fn add_usage_total(&mut self, tenant_key: &str, key: &str, amount: f64) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::ADD_USAGE_TOTAL))?
            .execute(params![tenant_key, key, amount])
            .context("adding to a usage total")?;
        Ok(())
    }

    fn usage_totals(&mut self, tenant: Option<&str>) -> Result<Vec<UsageTotal>> {
        let rows = match tenant {
            Some(t) => self
                .conn
                .prepare_cached(&numbered(sql::TENANT_USAGE_TOTALS))?
                .query_map([t], total)?
                .collect::<rusqlite::Result<_>>(),
            None => self
                .conn
                .prepare_cached(sql::USAGE_TOTALS)?
                .query_map([], total)?
                .collect::<rusqlite::Result<_>>(),
        };
        rows.context("reading the usage totals")
    }

    fn run_usage(&mut self, run_id: &str) -> Result<Option<String>> {
        let usage: Option<Option<String>> = self
            .conn
            .prepare_cached(&numbered(sql::RUN_USAGE))?
            .query_row([run_id], |r| r.get(0))
            .optional()
            .context("reading a run's usage")?;
        Ok(usage.flatten())
    }

    fn set_run_usage(&mut self, run_id: &str, usage: &str) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::SET_RUN_USAGE))?
            .execute(params![usage, run_id])
            .context("recording a run's usage")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql`, one line per step.
    fn plan(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
        let mut statement = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", numbered(sql)))
            .unwrap();
        let nulls = vec![rusqlite::types::Null; statement.parameter_count()];
        statement
            .query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_claim_reads_a_tasks_windows_by_its_key_alone() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn, &mut |_| Ok(())).unwrap();
        let lines = plan(&conn, sql::BUDGET_WINDOWS);
        assert_eq!(
            lines,
            ["SEARCH budget_windows USING PRIMARY KEY (task_id=?)"],
            "one lookup along the key, never a scan"
        );
        // Settling adds to a total and a window by their keys too.
        for statement in [sql::RUN_USAGE, sql::SET_RUN_USAGE] {
            let lines = plan(&conn, statement);
            assert!(
                lines.iter().all(|l| l.starts_with("SEARCH")),
                "{statement}: {lines:?}"
            );
        }
    }
}
