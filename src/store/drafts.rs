//! Drafts: proposed tasks waiting for their hash to be confirmed.

use anyhow::Result;

use crate::model::Draft;

pub trait DraftTx {
    fn insert_draft(&mut self, draft: &Draft) -> Result<()>;
    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>>;
    /// Removes a confirmed draft; Conflict when it is already gone (a
    /// concurrent confirm won).
    fn consume_draft(&mut self, draft_id: &str) -> Result<()>;
    /// Counts one more wrong confirmation code on an agent's draft, guarded
    /// by the count the caller read (`seen`); Conflict when it moved on.
    fn count_wrong_code(&mut self, draft_id: &str, seen: i64) -> Result<()>;
    /// The ids of the tenant's drafts that begin with `prefix`, at most
    /// `limit`, in order.
    fn draft_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>>;
    /// Serializes this write transaction with every other one that counts
    /// or adds an agent's drafts for `actor` in the tenant, until it ends,
    /// so that two agents' drafts cannot both fit under one quota
    /// (docs/CONTRACT.md §17). SQLite's write transactions are serial
    /// already; PostgreSQL takes a transaction-scoped advisory lock on the
    /// (tenant, person).
    fn hold_agent_quota(&mut self, tenant_key: &str, actor: &str) -> Result<()>;
    /// When each draft an agent made for `actor` in the tenant at or after
    /// `since` was made, oldest first: from the audit trail, which keeps the
    /// drafts already confirmed or voided (docs/CONTRACT.md §17).
    fn agent_drafts_since(&mut self, tenant_key: &str, actor: &str, since: i64)
        -> Result<Vec<i64>>;
    /// How many drafts an agent made for `actor` in the tenant still wait
    /// for the person at `now` (neither confirmed, voided nor expired).
    fn agent_drafts_waiting(&mut self, tenant_key: &str, actor: &str, now: i64) -> Result<i64>;
}
