//! The rules of the data that `check` verifies, and the sentence it prints
//! for each row that breaks one. Both stores say them alike; the query that
//! finds the rows is written once for both (`maintenance/check.rs`), every
//! column read as text, in the order the sentence takes them. A query takes
//! `now` as `$1` whether it needs it or not, so that one loop runs them all.

/// Says one offending row, its columns as text.
pub type Describe = fn(&[String]) -> String;

/// Task, occurrence, how many.
pub const DUPLICATE_FIRST_RUNS: Describe = |r| {
    format!(
        "task {} has {} first runs for occurrence {}",
        r[0], r[2], r[1]
    )
};

/// Run, lease end.
pub const EXPIRED_LEASE: Describe = |r| {
    format!(
        "run {} is running with a lease that expired at {} (a tick will mark it unknown)",
        r[0], r[1]
    )
};

/// Run, status.
pub const UNFINISHED_END: Describe = |r| format!("run {} is {} but has no finish time", r[0], r[1]);

/// Run, status.
pub const RECONCILED_UNSETTLED: Describe =
    |r| format!("run {} was reconciled but is {}", r[0], r[1]);

/// Run, how many notices.
pub const NOTICES_SENT_AT_ONCE: Describe =
    |r| format!("run {} has {} notices being sent at once", r[0], r[1]);

/// Run. A run enters running when claimed and again at each approval
/// (recorded in the same transaction as the reclaim); it may leave running
/// once per entry.
pub const LEFT_RUNNING_TWICE: Describe = |r| format!("run {} left running more than once", r[0]);

/// Task, run.
pub const RETRY_OF_NOTHING: Describe =
    |r| format!("task {} retries run {}, which does not exist", r[0], r[1]);

/// Tenant, state, counted, found. Both ways round: a state a tenant has
/// tasks in with no count (or a wrong one), and a count of tasks that are
/// not there.
pub const WRONG_TASK_COUNT: Describe = |r| {
    format!(
        "tenant {} has {} {} tasks but status counts {}",
        r[0], r[3], r[1], r[2]
    )
};
