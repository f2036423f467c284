//! PostgreSQL side of budget windows and usage totals.

use crate::store::sql::budgets as sql;
use anyhow::{Context, Result};
use postgres::Row;

use super::PgTx;
use crate::store::budgets::{BudgetTx, BudgetWindow, UsageTotal};

fn window(row: &Row) -> Result<BudgetWindow> {
    Ok(BudgetWindow {
        task_id: row.try_get(0)?,
        key: row.try_get(1)?,
        period: row.try_get(2)?,
        window_start: row.try_get(3)?,
        spent: row.try_get(4)?,
        told_at: row.try_get(5)?,
    })
}

fn total(row: &Row) -> Result<UsageTotal> {
    Ok(UsageTotal {
        tenant_key: row.try_get(0)?,
        key: row.try_get(1)?,
        total: row.try_get(2)?,
    })
}

impl BudgetTx for PgTx<'_, '_> {
    fn budget_windows(&mut self, task_id: &str) -> Result<Vec<BudgetWindow>> {
        let rows = self
            .tx
            .query(sql::BUDGET_WINDOWS, &[&task_id])
            .context("reading the task's budget windows")?;
        rows.iter().map(window).collect()
    }

    fn save_budget_window(&mut self, w: &BudgetWindow) -> Result<()> {
        self.tx
            .execute(
                sql::SAVE_BUDGET_WINDOW,
                &[
                    &w.task_id,
                    &w.key,
                    &w.period,
                    &w.window_start,
                    &w.spent,
                    &w.told_at,
                ],
            )
            .context("recording a budget window")?;
        Ok(())
    }

    fn active_budget_windows(&mut self, tenant: Option<&str>) -> Result<Vec<BudgetWindow>> {
        let rows = match tenant {
            Some(t) => self.tx.query(sql::TENANT_BUDGET_WINDOWS, &[&t]),
            None => self.tx.query(sql::ACTIVE_BUDGET_WINDOWS, &[]),
        }
        .context("reading the budget windows")?;
        rows.iter().map(window).collect()
    }

    fn add_usage_total(&mut self, tenant_key: &str, key: &str, amount: f64) -> Result<()> {
        self.tx
            .execute(sql::ADD_USAGE_TOTAL, &[&tenant_key, &key, &amount])
            .context("adding to a usage total")?;
        Ok(())
    }

    fn usage_totals(&mut self, tenant: Option<&str>) -> Result<Vec<UsageTotal>> {
        let rows = match tenant {
            Some(t) => self.tx.query(sql::TENANT_USAGE_TOTALS, &[&t]),
            None => self.tx.query(sql::USAGE_TOTALS, &[]),
        }
        .context("reading the usage totals")?;
        rows.iter().map(total).collect()
    }

    fn run_usage(&mut self, run_id: &str) -> Result<Option<String>> {
        let row = self
            .tx
            .query_opt(sql::RUN_USAGE, &[&run_id])
            .context("reading a run's usage")?;
        Ok(match row {
            Some(row) => row.try_get(0)?,
            None => None,
        })
    }

    fn set_run_usage(&mut self, run_id: &str, usage: &str) -> Result<()> {
        self.tx
            .execute(sql::SET_RUN_USAGE, &[&usage, &run_id])
            .context("recording a run's usage")?;
        Ok(())
    }
}
