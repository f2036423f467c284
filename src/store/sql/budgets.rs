//! The statements of budget windows and usage totals that both stores run
//! as written (see `store::sql`).

/// Run by `BudgetTx::budget_windows`: the table's key begins with task_id.
pub const BUDGET_WINDOWS: &str = "SELECT task_id, budget_key, period, window_start, spent, told_at
    FROM budget_windows WHERE task_id = $1";

/// Run by `BudgetTx::save_budget_window`.
pub const SAVE_BUDGET_WINDOW: &str = "INSERT INTO budget_windows
        (task_id, budget_key, period, window_start, spent, told_at)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (task_id, budget_key, period) DO UPDATE SET
        window_start = excluded.window_start, spent = excluded.spent,
        told_at = excluded.told_at";

/// Run by `BudgetTx::active_budget_windows` for one tenant: along the
/// windows (as many as budgets), each task looked up by its key.
pub const TENANT_BUDGET_WINDOWS: &str =
    "SELECT b.task_id, b.budget_key, b.period, b.window_start, b.spent, b.told_at
    FROM budget_windows b CROSS JOIN tasks t
    WHERE t.task_id = b.task_id AND t.tenant_key = $1 AND t.state = 'active'";

/// Run by `BudgetTx::active_budget_windows` for every tenant.
pub const ACTIVE_BUDGET_WINDOWS: &str =
    "SELECT b.task_id, b.budget_key, b.period, b.window_start, b.spent, b.told_at
    FROM budget_windows b CROSS JOIN tasks t
    WHERE t.task_id = b.task_id AND t.state = 'active'";

/// Run by `BudgetTx::add_usage_total`.
pub const ADD_USAGE_TOTAL: &str = "INSERT INTO usage_totals (tenant_key, usage_key, total)
    VALUES ($1, $2, $3)
    ON CONFLICT (tenant_key, usage_key) DO UPDATE SET total = usage_totals.total + excluded.total";

/// Run by `BudgetTx::usage_totals`, every tenant's.
pub const USAGE_TOTALS: &str =
    "SELECT tenant_key, usage_key, total FROM usage_totals ORDER BY tenant_key, usage_key";

/// Run by `BudgetTx::usage_totals`, one tenant's.
pub const TENANT_USAGE_TOTALS: &str = "SELECT tenant_key, usage_key, total FROM usage_totals
    WHERE tenant_key = $1 ORDER BY usage_key";

/// Run by `BudgetTx::run_usage`.
pub const RUN_USAGE: &str = "SELECT usage FROM runs WHERE run_id = $1";

/// Run by `BudgetTx::set_run_usage`.
pub const SET_RUN_USAGE: &str = "UPDATE runs SET usage = $1 WHERE run_id = $2";
