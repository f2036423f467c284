//! The statements of the tasks table that both stores run as written (see
//! `store::sql`).

use crate::store::tasks::TASK_COLUMNS;
use std::sync::LazyLock;

/// Run by `TaskTx::insert_task`.
pub static INSERT_TASK: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tasks ({TASK_COLUMNS})
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
            $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)"
    )
});

/// Run by `TaskTx::task`.
pub static TASK: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = $1"));

/// Run by `TaskTx::task_id_named`.
pub const TASK_ID_NAMED: &str =
    "SELECT task_id FROM tasks WHERE tenant_key = $1 AND name = $2 AND state <> 'deleted'";

/// Run by `TaskTx::replace_task`.
pub const REPLACE_TASK: &str = "UPDATE tasks
    SET name = $1, target = $2, instruction = $3, schedule = $4, timezone = $5,
        policy = $6, grace_seconds = $7, max_retries = $8,
        retry_backoff_seconds = $9, payload = $10, payload_hash = $11,
        next_run_at = $12, updated_at = $13, revision = revision + 1,
        next_retry_at = NULL, retry_run_id = NULL, consecutive_failures = 0,
        queued_for = NULL, queued_since = NULL, queued_next = NULL,
        follow_key = $18, zone_in_force = $19
    WHERE task_id = $14 AND revision = $15 AND state IN ('active', 'paused')
      AND tenant_key = $16 AND owner_keys = $17";

/// Run by `TaskTx::set_trigger`.
pub const SET_TRIGGER: &str =
    "UPDATE tasks SET trigger_at = $1, trigger_actor = $2, trigger_reason = $3
    WHERE task_id = $4 AND state = 'active' AND revision = $5
      AND trigger_at IS NULL";

/// Run by `TaskTx::pending_trigger`.
pub const PENDING_TRIGGER: &str = "SELECT trigger_at, trigger_actor, trigger_reason FROM tasks
    WHERE task_id = $1 AND trigger_at IS NOT NULL";

/// Run by `TaskTx::clear_trigger`.
pub const CLEAR_TRIGGER: &str =
    "UPDATE tasks SET trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL
    WHERE task_id = $1 AND trigger_at = $2";

/// Run by `TaskTx::set_managed_by`.
pub const SET_MANAGED_BY: &str = "UPDATE tasks SET managed_by = $1 WHERE task_id = $2";

/// Run by `TaskTx::set_declared`.
pub const SET_DECLARED: &str = "UPDATE tasks SET declared_hash = $1 WHERE task_id = $2";

/// Run by `TaskTx::declared`.
pub const DECLARED: &str = "SELECT task_id, declared_hash FROM tasks
    WHERE tenant_key = $1 AND declared_hash IS NOT NULL AND state <> 'deleted'";

/// Run by `TaskTx::managed_tasks`.
pub const MANAGED_TASKS: &str = "SELECT task_id FROM tasks
    WHERE tenant_key = $1 AND managed_by = $2 AND state <> 'deleted'
    ORDER BY task_id";

/// Run by `TaskTx::managers`.
pub const MANAGERS: &str = "SELECT task_id, managed_by FROM tasks
    WHERE tenant_key = $1 AND managed_by IS NOT NULL AND state <> 'deleted'";
