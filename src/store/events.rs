//! The audit trail: append-only, written in the same transaction as the
//! change it records, so a change without its event cannot exist.

use anyhow::Result;

use crate::model::{Event, StoredEvent};

pub trait EventTx {
    fn append_event(&mut self, event: &Event) -> Result<()>;
    /// Newest first, in the tenant, optionally for one task.
    fn events(
        &mut self,
        tenant_key: &str,
        task_id: Option<&str>,
        limit: u64,
    ) -> Result<Vec<StoredEvent>>;
}
