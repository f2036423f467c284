//! The delivery ledger: pending → sending (claimed with a token and a
//! deadline, committed before the notifier starts) → delivered or unknown.
//! An `unknown` notice is never sent again.

use anyhow::Result;

use crate::model::{DeliveryState, Notice};

/// The columns of a notice row, in the order both stores' decoders read them.
pub const NOTICE_COLUMNS: &str = "delivery_id, run_id, tenant_key, seq, state, target, message,
    created_at, updated_at, claim_token, deadline, attempts, last_error, kind,
    suppressed_since_last, suppressed_reason";

/// How a claimed notice ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeFinish<'a> {
    pub delivery_id: &'a str,
    pub token: &'a str,
    pub to: DeliveryState,
    pub error: Option<&'a str>,
    /// For `pending` (the notifier said "try later"): not before this.
    pub retry_at: Option<i64>,
    pub now: i64,
}

/// The last skip notice of a task that was not held back, among its runs
/// due since $2 ($1 the task): the run's status, reason and summary (its
/// dedup key) and when the notice was made. Read along `runs_by_task`, so
/// it reads no further back than the re-alert window.
pub const LAST_SKIP_SENT: &str = "SELECT r.status, r.reason, r.summary, d.created_at
    FROM runs r JOIN deliveries d ON d.run_id = r.run_id
    WHERE r.task_id = $1 AND r.scheduled_for >= $2
      AND r.status IN ('skipped_overlap', 'skipped_gate')
      AND d.kind = 'skipped' AND d.state <> 'suppressed'
    ORDER BY d.created_at DESC LIMIT 1";

/// What `last_skip_sent` reads: the skipped run's words and the notice's time.
pub struct SkipSent {
    pub status: String,
    pub reason: Option<String>,
    pub summary: Option<String>,
    pub at: i64,
}

pub trait DeliveryTx {
    fn insert_notice(&mut self, notice: &Notice) -> Result<()>;
    /// `LAST_SKIP_SENT`: the task's last skip notice sent (not held back)
    /// for a run due at or after `since`.
    fn last_skip_sent(&mut self, task_id: &str, since: i64) -> Result<Option<SkipSent>>;
    /// The next number for a run's notice (a run parked on a continuation
    /// has more than one).
    fn next_notice_seq(&mut self, run_id: &str) -> Result<i64>;
    /// Whether one of the run's notices is being sent now. A run's notices
    /// go out one at a time, in order: a later one waits while an earlier
    /// one is `sending`.
    fn notice_sending(&mut self, run_id: &str) -> Result<bool>;
    /// Pending notices, oldest first.
    fn pending_notices(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Notice>>;
    /// Pending notices whose next attempt is due, oldest first.
    fn notices_to_send(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notice>>;
    /// pending notices created before `created_before` → undeliverable
    /// (never sent); returns them.
    fn give_up_notices(
        &mut self,
        created_before: i64,
        now: i64,
        tenant: Option<&str>,
    ) -> Result<Vec<Notice>>;
    /// pending → sending; Conflict when another tick claimed it first, or
    /// while another notice of the same run is sending.
    fn claim_notice(
        &mut self,
        delivery_id: &str,
        token: &str,
        deadline: i64,
        now: i64,
    ) -> Result<()>;
    /// sending → delivered | pending | unknown, guarded by the claim token.
    fn finish_notice(&mut self, finish: &NoticeFinish<'_>) -> Result<()>;
    /// sending past its deadline → unknown; returns the notices it changed.
    fn expire_notices(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Notice>>;
    /// Marks pending notices as announced ("no notifier"), returning how many
    /// had not been announced before.
    fn announce_pending(&mut self, tenant: Option<&str>) -> Result<u64>;
}
