//! What each budget of a task spent in its current window, and what each
//! tenant's executors reported spending in all (docs/CONTRACT.md §6,
//! Budgets). A claim reads a task's windows by its id alone (the table's
//! key begins with it): one lookup however long the task's history, never
//! a sum over runs. The run's settling transaction adds its usage to the
//! windows, the totals and the run's own row, so a crash counts it once or
//! not at all. The operations and their one implementation over
//! `Connection`.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::connection::{Connection, Row};
use crate::store::connection::args;

/// One budget's window of one task, as stored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BudgetWindow {
    pub task_id: String,
    pub key: String,
    /// `day`, `week` or `month` (`limits::BudgetPeriod`).
    pub period: String,
    /// When the window this sum counts in began, UTC seconds: a window
    /// that began before the current one counts as nothing spent.
    pub window_start: i64,
    pub spent: f64,
    /// When the window's `budget` notice was made, once per window.
    pub told_at: Option<i64>,
}

/// A usage key's total for a tenant (`metrics`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UsageTotal {
    pub tenant_key: String,
    pub key: String,
    pub total: f64,
}

pub trait BudgetTx {
    /// The task's stored windows, every key and period.
    fn budget_windows(&mut self, task_id: &str) -> Result<Vec<BudgetWindow>>;
    /// Writes one window (insert or replace).
    fn save_budget_window(&mut self, window: &BudgetWindow) -> Result<()>;
    /// The windows of the active tasks (`status`), one tenant's when given.
    fn active_budget_windows(&mut self, tenant: Option<&str>) -> Result<Vec<BudgetWindow>>;
    /// Adds `amount` to the tenant's total of `key`.
    fn add_usage_total(&mut self, tenant_key: &str, key: &str, amount: f64) -> Result<()>;
    /// Every tenant's totals (one tenant's when given), by tenant and key.
    fn usage_totals(&mut self, tenant: Option<&str>) -> Result<Vec<UsageTotal>>;
    /// What the run's executor reported spending (a JSON object), if anything.
    fn run_usage(&mut self, run_id: &str) -> Result<Option<String>>;
    /// Records the run's usage (a JSON object).
    fn set_run_usage(&mut self, run_id: &str, usage: &str) -> Result<()>;
}

/// The task's windows: the table's key begins with task_id.
const BUDGET_WINDOWS: &str = "SELECT task_id, budget_key, period, window_start, spent, told_at
    FROM budget_windows WHERE task_id = $1";

/// One tenant's windows of active tasks: along the windows (as many as
/// budgets), each task looked up by its key.
const TENANT_BUDGET_WINDOWS: &str =
    "SELECT b.task_id, b.budget_key, b.period, b.window_start, b.spent, b.told_at
    FROM budget_windows b CROSS JOIN tasks t
    WHERE t.task_id = b.task_id AND t.tenant_key = $1 AND t.state = 'active'";

/// Every tenant's windows of active tasks.
const ACTIVE_BUDGET_WINDOWS: &str =
    "SELECT b.task_id, b.budget_key, b.period, b.window_start, b.spent, b.told_at
    FROM budget_windows b CROSS JOIN tasks t
    WHERE t.task_id = b.task_id AND t.state = 'active'";

const RUN_USAGE: &str = "SELECT usage FROM runs WHERE run_id = $1";

const SET_RUN_USAGE: &str = "UPDATE runs SET usage = $1 WHERE run_id = $2";

impl<C: Connection> BudgetTx for C {
    fn budget_windows(&mut self, task_id: &str) -> Result<Vec<BudgetWindow>> {
        let rows = self
            .query(BUDGET_WINDOWS, args![task_id])
            .context("reading the task's budget windows")?;
        rows.iter().map(Row::decode).collect()
    }

    fn save_budget_window(&mut self, w: &BudgetWindow) -> Result<()> {
        self.execute(
            "INSERT INTO budget_windows
                (task_id, budget_key, period, window_start, spent, told_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (task_id, budget_key, period) DO UPDATE SET
                window_start = excluded.window_start, spent = excluded.spent,
                told_at = excluded.told_at",
            args![
                &w.task_id,
                &w.key,
                &w.period,
                w.window_start,
                w.spent,
                &w.told_at
            ],
        )
        .context("recording a budget window")?;
        Ok(())
    }

    fn active_budget_windows(&mut self, tenant: Option<&str>) -> Result<Vec<BudgetWindow>> {
        let rows = match tenant {
            Some(t) => self.query(TENANT_BUDGET_WINDOWS, args![t]),
            None => self.query(ACTIVE_BUDGET_WINDOWS, args![]),
        }
        .context("reading the budget windows")?;
        rows.iter().map(Row::decode).collect()
    }

    fn add_usage_total(&mut self, tenant_key: &str, key: &str, amount: f64) -> Result<()> {
        self.execute(
            "INSERT INTO usage_totals (tenant_key, usage_key, total) VALUES ($1, $2, $3)
             ON CONFLICT (tenant_key, usage_key)
             DO UPDATE SET total = usage_totals.total + excluded.total",
            args![tenant_key, key, amount],
        )
        .context("adding to a usage total")?;
        Ok(())
    }

    fn usage_totals(&mut self, tenant: Option<&str>) -> Result<Vec<UsageTotal>> {
        let rows = match tenant {
            Some(t) => self.query(
                "SELECT tenant_key, usage_key, total FROM usage_totals
                 WHERE tenant_key = $1 ORDER BY usage_key",
                args![t],
            ),
            None => self.query(
                "SELECT tenant_key, usage_key, total FROM usage_totals
                 ORDER BY tenant_key, usage_key",
                args![],
            ),
        }
        .context("reading the usage totals")?;
        rows.iter().map(Row::decode).collect()
    }

    fn run_usage(&mut self, run_id: &str) -> Result<Option<String>> {
        let row = self
            .query_opt(RUN_USAGE, args![run_id])
            .context("reading a run's usage")?;
        Ok(match row {
            Some(row) => row.get(0)?,
            None => None,
        })
    }

    fn set_run_usage(&mut self, run_id: &str, usage: &str) -> Result<()> {
        self.execute(SET_RUN_USAGE, args![usage, run_id])
            .context("recording a run's usage")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::numbered;

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
        crate::store::sqlite::schema::migrate(&mut conn, &mut |_| Ok(())).unwrap();
        let lines = plan(&conn, BUDGET_WINDOWS);
        assert_eq!(
            lines,
            ["SEARCH budget_windows USING PRIMARY KEY (task_id=?)"],
            "one lookup along the key, never a scan"
        );
        // Settling adds to a total and a window by their keys too.
        for statement in [RUN_USAGE, SET_RUN_USAGE] {
            let lines = plan(&conn, statement);
            assert!(
                lines.iter().all(|l| l.starts_with("SEARCH")),
                "{statement}: {lines:?}"
            );
        }
    }
}
