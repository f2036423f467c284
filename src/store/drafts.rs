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
}
