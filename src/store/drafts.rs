//! Drafts: proposed tasks waiting for their hash to be confirmed.

use anyhow::Result;

use crate::model::Draft;

pub trait DraftTx {
    fn insert_draft(&mut self, draft: &Draft) -> Result<()>;
    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>>;
    /// Removes a confirmed draft; Conflict when it is already gone (a
    /// concurrent confirm won).
    fn consume_draft(&mut self, draft_id: &str) -> Result<()>;
}
