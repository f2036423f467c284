//! What each budget of a task spent in its current window, and what each
//! tenant's executors reported spending in all (docs/CONTRACT.md §6,
//! Budgets). A claim reads a task's windows by its id alone (the table's
//! key begins with it): one lookup however long the task's history, never
//! a sum over runs. The run's settling transaction adds its usage to the
//! windows, the totals and the run's own row, so a crash counts it once or
//! not at all.

use anyhow::Result;

/// One budget's window of one task, as stored.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
