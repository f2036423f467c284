//! The audit trail: append-only, written in the same transaction as the
//! change it records, so a change without its event cannot exist.

use anyhow::Result;

pub trait EventTx {
    fn append_event(&mut self, event: &Event) -> Result<()>;
    /// Newest first, in the tenant: events of tasks the caller owns and
    /// events about no task (drafts shown to their author, scheduler gaps);
    /// optionally one task's.
    fn events(
        &mut self,
        tenant_key: &str,
        owner_keys: &[String],
        task_id: Option<&str>,
        limit: u64,
    ) -> Result<Vec<StoredEvent>>;
    /// The task's latest pause or resume at or before `at`.
    fn last_pause_change(&mut self, task_id: &str, at: i64) -> Result<Option<StoredEvent>>;
    /// The latest `scheduler_gap` event at or after `since` that concerns
    /// `tenant` (its own, or one of a tick serving every tenant, `*`); any
    /// tenant's when None.
    fn last_scheduler_gap(
        &mut self,
        tenant: Option<&str>,
        since: i64,
    ) -> Result<Option<StoredEvent>>;
}
use crate::audit::{Event, StoredEvent};
