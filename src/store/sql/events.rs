//! The statements of the audit trail that both stores run as written (see
//! `store::sql`).

use crate::store::rows::EVENT_COLUMNS;
use std::sync::LazyLock;

/// Run by `EventTx::append_event`.
pub const APPEND_EVENT: &str =
    "INSERT INTO events (at, tenant_key, actor, action, task_id, run_id, detail)
    VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Run by `EventTx::last_pause_change`.
pub static LAST_PAUSE_CHANGE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {EVENT_COLUMNS} FROM events
    WHERE task_id = $1 AND action IN ('pause', 'resume') AND at <= $2
    ORDER BY event_id DESC LIMIT 1"
    )
});
