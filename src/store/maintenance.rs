//! Whole-store questions and chores: health counts, pruning old history,
//! and the invariant check.

use anyhow::Result;

/// What `status` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub tasks_active: i64,
    pub tasks_paused: i64,
    pub tasks_error: i64,
    pub due: i64,
    pub running: i64,
    pub unknown: i64,
    pub awaiting: i64,
    pub notices_pending: i64,
    pub notices_sending: i64,
    pub notices_unknown: i64,
    /// Never sent: the notifier kept answering "try later" past the give-up age.
    pub notices_undeliverable: i64,
    /// Held back by their task's notice policy (docs/CONTRACT.md §16).
    pub notices_suppressed: i64,
    /// Running runs whose lease has passed: stuck, though no tick froze them yet.
    pub stuck: i64,
}

/// What `metrics` counts beyond `Stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tallies {
    /// (status, count) for every status that has runs.
    pub runs: Vec<(String, i64)>,
    /// (state, count) for every state that has notices.
    pub notices: Vec<(String, i64)>,
    /// `scheduler_gap` events still in the audit log (prune removes old ones).
    pub scheduler_gaps: i64,
    /// (status, count) of runs finished since the store began: counted as
    /// they finish, never decremented, so prune does not lower them.
    pub finished_totals: Vec<(String, i64)>,
}

/// What `prune` removes (or would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneCounts {
    pub runs: i64,
    pub notices: i64,
    pub reconciliations: i64,
    pub events: i64,
    pub drafts: i64,
}

pub trait MaintenanceTx {
    fn stats(&mut self, now: i64, tenant: Option<&str>) -> Result<Stats>;
    /// Runs by status, notices by state, recorded scheduler gaps. A gap is
    /// the host's (recorded under the tick's tenant or `*`), so a tenant
    /// sees its own and the unscoped ones.
    fn tallies(&mut self, tenant: Option<&str>) -> Result<Tallies>;
    /// Deletes (when `apply`) or counts settled history older than `cutoff`:
    /// runs that finished before it and whose notices are all delivered,
    /// delivered notices, their reconciliations, audit events, expired
    /// drafts. Never unknown, running or parked runs, nor a run a pending
    /// retry refers to, nor the draft and confirm/replace events of a task
    /// that is not deleted.
    fn prune(&mut self, cutoff: i64, tenant: Option<&str>, apply: bool) -> Result<PruneCounts>;
    /// Deletes at most `limit` of the prunable runs (with their notices and
    /// reconciliations), `limit` events and `limit` drafts, returning what it
    /// deleted: `prune` calls it in a loop of short transactions, so ticks
    /// wait for the write lock for one batch at most, never for the whole.
    fn prune_batch(&mut self, cutoff: i64, tenant: Option<&str>, limit: i64)
        -> Result<PruneCounts>;
    /// Every broken invariant, in words; empty when the store is sound.
    fn violations(&mut self, now: i64) -> Result<Vec<String>>;
    /// What the database itself finds broken, read with no table of any
    /// schema (SQLite's integrity check; PostgreSQL keeps its own): what
    /// `check` verifies of a store at an older schema.
    fn integrity(&mut self) -> Result<Vec<String>>;
}
