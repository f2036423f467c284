//! Runs: one row per occurrence attempt, and its outcome; the operations,
//! written once over `Connection` in `sql.rs`.

mod leases;
mod sql;
pub(in crate::store) use sql::continuations_sql;
#[cfg(test)]
mod tests;

use anyhow::Result;
use serde::Deserialize;

use crate::model::{Run, RunStatus};

/// What `run_and_task` reads.
pub type RunAndTask = (
    Run,
    Option<Result<crate::model::Task, crate::store::CorruptRow>>,
);

/// The columns of a run row (`runs r` joined with its notice's state), in
/// the order both stores' decoders read them.
pub const RUN_COLUMNS: &str = "r.run_id, r.task_id, r.tenant_key, r.scheduled_for,
    r.scheduled_local, r.attempt, r.due_at, r.status, r.payload_hash, r.created_at, r.started_at,
    r.finished_at, r.lease_token, r.lease_until, r.summary, r.reason, r.skipped_occurrences,
    r.blocked_by, r.wait_kind, r.wait_id, r.wait_deadline, r.queued_seconds, r.stderr_tail,
    (SELECT d.state FROM deliveries d WHERE d.run_id = r.run_id ORDER BY d.seq DESC LIMIT 1),
    r.trigger, r.approved_at, r.approved_by, r.catch_up, r.usage";

/// A guarded change of a run's status: applies only while the run is still
/// `from` (and, for a leased run, still holds `token`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFinish<'a> {
    pub run_id: &'a str,
    pub from: RunStatus,
    pub token: Option<&'a str>,
    pub to: RunStatus,
    pub summary: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub wait_kind: Option<&'a str>,
    pub wait_id: Option<&'a str>,
    pub wait_deadline: Option<i64>,
    /// Replaces the kept stderr when given (a reconcile keeps it).
    pub stderr: Option<&'a str>,
    pub now: i64,
}

/// Which runs `runs` and `reconcile` show: the caller's, in the tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFilter<'a> {
    pub tenant_key: &'a str,
    pub owner_keys: &'a [String],
    pub task_id: Option<&'a str>,
    pub status: Option<RunStatus>,
    pub limit: u64,
}

/// An operator's decision on an unknown run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciliation {
    pub run_id: String,
    pub tenant_key: String,
    pub actor: String,
    pub decision: String,
    pub reason: String,
    pub prior_reason: Option<String>,
    pub decided_at: i64,
}

/// Where unknown runs are: a tenant, an owner of their tasks, how many.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UnknownPlace {
    pub tenant_key: String,
    /// The first owner key of the tasks (any owner may reconcile).
    pub owner_key: String,
    pub count: i64,
}

pub trait RunTx {
    /// Unknown runs counted by tenant and first owner key, the largest first
    /// (every tenant's when `tenant` is None), at most `limit` places.
    fn unknown_places(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<UnknownPlace>>;
    /// Records a new run; `runner` is the process running it, for a run
    /// claimed to run (`process::runner_identity`), never read back.
    /// `profile`: the profile the run runs under (docs/CONTRACT.md §22),
    /// counted against its `--max-concurrent` while it runs.
    fn insert_run(&mut self, run: &Run, runner: Option<&str>, profile: Option<&str>) -> Result<()>;
    fn run(&mut self, run_id: &str) -> Result<Option<Run>>;
    /// The run and its task's row (None when the task row is gone), in one
    /// read.
    fn run_and_task(&mut self, run_id: &str) -> Result<Option<RunAndTask>>;
    /// Runs matching the filter, newest first, handed to `each` as the
    /// query yields them (nothing else is held: `runs --json` streams).
    fn each_run(
        &mut self,
        filter: &RunFilter<'_>,
        each: &mut dyn FnMut(Run) -> Result<()>,
    ) -> Result<()>;
    /// Runs matching the filter, newest first.
    fn list_runs(&mut self, filter: &RunFilter<'_>) -> Result<Vec<Run>> {
        let mut runs = Vec::new();
        self.each_run(filter, &mut |run| {
            runs.push(run);
            Ok(())
        })?;
        Ok(runs)
    }
    /// Runs of the task scheduled for exactly this occurrence, every attempt.
    fn occurrence_runs(&mut self, task_id: &str, scheduled_for: i64) -> Result<Vec<Run>>;
    /// The latest run of the task scheduled at or before `at`.
    fn run_at_or_before(&mut self, task_id: &str, at: i64) -> Result<Option<Run>>;
    fn insert_reconciliation(&mut self, r: &Reconciliation) -> Result<()>;
    /// The task's runs, newest occurrence first.
    fn task_runs(&mut self, task_id: &str, limit: u64) -> Result<Vec<Run>>;
    /// A run of the task that blocks its next occurrence, if any.
    fn blocking_run(&mut self, task_id: &str) -> Result<Option<Run>>;
    /// running past its lease → unknown; returns the runs it changed, each
    /// with the end of the lease that lapsed (an unknown run has no lease).
    fn expire_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<(Run, i64)>>;
    /// The runs `expire_leases` would change, read only (`tick --dry-run`).
    fn expired_leases(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>>;
    /// Extends a lease to `until`; false when the token no longer holds or
    /// the lease expired before `now` (docs/CONTRACT.md §6: an expired lease is
    /// lost for good, no renewal revives it). `now` must be read once the
    /// write lock is held, so that waiting for the lock cannot hide an expiry.
    fn renew_lease(&mut self, run_id: &str, token: &str, until: i64, now: i64) -> Result<bool>;
    /// Applies the change; Conflict when the guard matches no row. With a
    /// token, the guard includes `lease_until >= now`: an outcome recorded
    /// after the lease expired would overwrite what step 1 of another tick
    /// may already have decided.
    fn finish_run(&mut self, finish: &RunFinish<'_>) -> Result<()>;
    /// Takes back a run claimed by this tick whose executor never started
    /// (the tick was told to stop first): deletes the row, which is still
    /// `running` under `token` with its lease alive; Conflict otherwise.
    fn release_unstarted(&mut self, run_id: &str, token: &str, now: i64) -> Result<()>;
    /// Whether the run is `running` under `token` with its lease not yet expired.
    fn lease_holds(&mut self, run_id: &str, token: &str, now: i64) -> Result<bool>;
    /// Parked runs past their continuation deadline, oldest first.
    fn expired_continuations(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Run>>;
    /// Records an owner's approval on a run parked on `wait_id`, for the next
    /// tick to continue: Conflict when the run is no longer parked on it or
    /// was approved already.
    fn approve_parked(&mut self, run_id: &str, wait_id: &str, actor: &str, now: i64) -> Result<()>;
    /// Approved parked runs whose task may run (active or completed),
    /// oldest approval first; on PostgreSQL rows another transaction holds
    /// are passed over.
    fn approved_continuations(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Run>>;
    /// awaiting → running under a new lease, once (the approval, if any, is
    /// used up): Conflict when the run is no longer parked on `wait_id`.
    /// Records which process runs the running run (a continuation claimed
    /// back; claims write it with the run).
    fn mark_runner(&mut self, run_id: &str, runner: &str) -> Result<()>;
    /// The runners of every running run that has one: the few rows of
    /// runs_leased.
    fn running_runners(&mut self) -> Result<Vec<(String, String)>>;
    fn reclaim_parked(
        &mut self,
        run_id: &str,
        wait_id: &str,
        token: &str,
        lease_until: i64,
        now: i64,
    ) -> Result<()>;
}
