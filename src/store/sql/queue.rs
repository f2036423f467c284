//! The statements of the due queue that both stores run as written (see
//! `store::sql`).

/// Run by `QueueTx::running_count`.
pub const RUNNING_COUNT: &str = "SELECT count(*) FROM runs WHERE status = 'running'";

/// Run by `QueueTx::note_seen`.
pub const NOTE_SEEN: &str = "INSERT INTO seen_due (task_id, due_at, seen_at) VALUES ($1, $2, $3)
    ON CONFLICT (task_id) DO UPDATE SET due_at = excluded.due_at,
        seen_at = excluded.seen_at
    WHERE seen_due.due_at <> excluded.due_at";
