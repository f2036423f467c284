//! The statements of the tasks' memory that both stores run as written (see
//! `store::sql`).

use crate::store::memory::MEMORY_COLUMNS;
use std::sync::LazyLock;

/// Run by `MemoryTx::task_memory`.
pub static TASK_MEMORY: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {MEMORY_COLUMNS} FROM task_memory WHERE task_id = $1"));
