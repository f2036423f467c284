//! The statements of `check` that both stores run as written (see
//! `store::sql`).

use crate::store::tasks::TASK_COLUMNS;
use std::sync::LazyLock;

/// Run by `MaintenanceTx::violations`.
pub static ALL_TASKS: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY task_id"));
