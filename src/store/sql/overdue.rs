//! The statements of the tasks' success clocks that both stores run as
//! written (see `store::sql`).

/// Run by `OverdueTx::set_success_due`.
pub const SET_SUCCESS_DUE: &str =
    "UPDATE tasks SET success_due_at = $1, overdue_since = NULL WHERE task_id = $2";

/// Run by `OverdueTx::success_clock`.
pub const SUCCESS_CLOCK: &str =
    "SELECT success_due_at, overdue_since FROM tasks WHERE task_id = $1";

/// Run by `OverdueTx::mark_overdue`: guarded by the due instant read, so a
/// success committed meanwhile (which moved it) wins.
pub const MARK_OVERDUE: &str =
    "UPDATE tasks SET overdue_since = success_due_at, success_due_at = NULL
    WHERE task_id = $1 AND success_due_at = $2 AND state = 'active'";

/// Run by `OverdueTx::drop_success_due`.
pub const DROP_SUCCESS_DUE: &str =
    "UPDATE tasks SET success_due_at = NULL WHERE task_id = $1 AND success_due_at = $2";

/// The columns `Expecting` is read from, in order (tasks `t`, memory `m`).
pub const EXPECTING_COLUMNS: &str =
    "t.task_id, t.tenant_key, t.name, t.overdue_since, m.last_success_at";
