//! The claim queue (docs/CONTRACT.md §6): which tenant's due work comes next,
//! what a tick saw due but could not start, and the host-wide limit on
//! running runs.
//!
//! "Capacity is not lateness": a tick that sees due work it cannot start
//! (its slots are busy, `--max-runs` or `--max-running` is reached) marks
//! each such task with the due instant it saw within grace. A later claim
//! runs a marked instant whatever the wait; an instant no tick saw within
//! grace is missed.

use anyhow::Result;

use super::DueTask;

/// A due instant a tick saw within grace but could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueMark {
    /// The occurrence (or retry time) that was seen due.
    pub due_at: i64,
    /// When a tick first saw it due.
    pub seen_at: i64,
    /// The task's next due instant after `due_at`: once that is due as
    /// well, the queued one is superseded ("superseded while queued").
    pub superseded_at: Option<i64>,
}

/// What `status` and `metrics` say about the queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Tasks with a queued (seen, not yet started) due instant.
    pub queued: i64,
    /// The due instant of the longest-waiting queued task.
    pub oldest_queued_due: Option<i64>,
    /// Runs `running` in the whole store (every tenant: the limit is the host's).
    pub running_all: i64,
}

/// What a tick has to do besides recording itself, from one read: an idle
/// tick (nothing due, nothing expired, the common case) then takes no write
/// transaction for steps 1-4. A flag may say yes when the step will find
/// nothing (then it finds nothing), never no when it would find something.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agenda {
    /// Steps 1-3: an expired lease, delivery attempt or continuation, or a
    /// notice past its give-up age.
    pub expiries: bool,
    /// Step 4: a due occurrence, retry or trigger of an active task, or an
    /// approved continuation.
    pub claims: bool,
    /// A task's success came due (`expect_success`): the tick decides
    /// whether it is overdue.
    pub overdue: bool,
}

pub trait QueueTx {
    /// Whether steps 1-3 and 4 have anything to do at `now` (notices
    /// created before `give_up_before` and never sent are given up).
    fn agenda(&mut self, now: i64, give_up_before: i64, tenant: Option<&str>) -> Result<Agenda>;
    /// The tenants that have active tasks, in order (only `tenant` when given).
    fn active_tenants(&mut self, tenant: Option<&str>) -> Result<Vec<String>>;
    /// The tenant's earliest due occurrence or retry at `now`.
    fn earliest_due_in(&mut self, tenant_key: &str, now: i64) -> Result<Option<DueTask>>;
    /// Due tasks not yet marked for their latest due instant (never marked,
    /// or marked for an instant that a newer one has superseded), earliest first.
    fn unmarked_due(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>>;
    /// The task's mark: the one on its row or the one noted beside it
    /// (`note_seen`), the newer due instant first.
    fn queue_mark(&mut self, task_id: &str) -> Result<Option<QueueMark>>;
    /// Notes beside the task's row that a tick saw `mark.due_at` due, when
    /// the row itself is locked by another session and cannot be marked
    /// (PostgreSQL). Keeps the first sighting of the same instant.
    fn note_seen(&mut self, task_id: &str, mark: &QueueMark) -> Result<()>;
    /// Marks the task, guarded by the due instants it was read with;
    /// Conflict when a claim moved the task on meanwhile.
    fn set_queue_mark(
        &mut self,
        task_id: &str,
        next_run_at: Option<i64>,
        next_retry_at: Option<i64>,
        mark: &QueueMark,
    ) -> Result<()>;
    /// Runs `running` in the whole store. On PostgreSQL this serializes the
    /// claim transactions that call it, so a limit checked with it is exact
    /// across hosts.
    fn running_count(&mut self) -> Result<i64>;
    fn queue_stats(&mut self, tenant: Option<&str>) -> Result<QueueStats>;
}
