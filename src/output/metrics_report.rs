//! The gauges and counters `metrics` exposes, from what the store counted:
//! names, help texts and samples, laid out in `metrics::Exposition`.
//! Nothing here reads the store or a clock.

use crate::model::{DeliveryState, RunStatus, TaskState};
use crate::output::metrics::Exposition;
use crate::store::{Expecting, QueueStats, Stats, Tallies};

/// What `metrics` read in one transaction, and the `now` waits count to.
pub struct Counted {
    pub now: i64,
    pub stats: Stats,
    pub queue: QueueStats,
    pub tallies: Tallies,
    /// When the last tick started; None before any tick.
    pub last_tick: Option<f64>,
    /// How long the last tick that finished took.
    pub last_duration: Option<f64>,
    /// What executors reported spending, by tenant and key.
    pub usage: Vec<crate::store::UsageTotal>,
    /// The tasks that set `expect_success`, each with its last success.
    pub expecting: Vec<Expecting>,
}

/// Every family, in the order the exposition lists them.
pub fn exposition(counted: &Counted) -> Exposition {
    let mut out = Exposition::default();
    last_tick(&mut out, counted);
    backlog(&mut out, counted);
    runs_and_notices(&mut out, counted);
    usage(&mut out, counted);
    last_successes(&mut out, counted);
    out
}

/// What executors reported spending since the store began, by key (every
/// tenant's summed); prune never lowers it. Absent until a run reports any.
fn usage(out: &mut Exposition, counted: &Counted) {
    let mut keys: Vec<(&str, f64)> = Vec::new();
    for total in &counted.usage {
        match keys.iter_mut().find(|(k, _)| *k == total.key) {
            Some(entry) => entry.1 += total.total,
            None => keys.push((&total.key, total.total)),
        }
    }
    if keys.is_empty() {
        return;
    }
    keys.sort_by(|a, b| a.0.cmp(b.0));
    out.counter(
        "usage_total",
        "What executors reported spending (their reply's usage), by key; prune does not lower it.",
        "key",
        &keys,
    );
}

/// The last success of each task that expects successes, by task id. A
/// task that never succeeded has no sample (no success "in 1970"): alert
/// on `absent()`, or on the task's overdue notice. No such task: no family.
fn last_successes(out: &mut Exposition, counted: &Counted) {
    let samples: Vec<(&str, f64)> = (counted.expecting.iter())
        .filter_map(|t| Some((t.task_id.as_str(), t.last_success_at? as f64)))
        .collect();
    if samples.is_empty() {
        return;
    }
    out.labelled(
        "last_success_timestamp_seconds",
        "When a run of the task last succeeded, in seconds since the epoch (tasks that set expect_success).",
        "task",
        &samples,
    );
}

fn last_tick(out: &mut Exposition, counted: &Counted) {
    // A store never ticked has no last tick: the sample is left out, so
    // that `absent()` alerts rather than a tick "in 1970".
    if let Some(at) = counted.last_tick {
        out.gauge(
            "last_tick_timestamp_seconds",
            "When the last tick started, in seconds since the epoch.",
            at,
        );
    }
    if let Some(seconds) = counted.last_duration {
        out.gauge(
            "last_tick_duration_seconds",
            "How long the last tick that finished took.",
            seconds,
        );
    }
}

/// Tasks by state, and what waits: due, queued, the oldest queued wait.
fn backlog(out: &mut Exposition, counted: &Counted) {
    let (stats, queue) = (&counted.stats, &counted.queue);
    let tasks = [
        (TaskState::Active.as_str(), stats.tasks_active as f64),
        (TaskState::Paused.as_str(), stats.tasks_paused as f64),
        (TaskState::Error.as_str(), stats.tasks_error as f64),
    ];
    out.labelled("tasks", "Tasks by state.", "state", &tasks);
    out.gauge(
        "due_tasks",
        "Active tasks with an occurrence or retry due now (the due backlog).",
        stats.due as f64,
    );
    out.gauge(
        "queued_tasks",
        "Tasks whose due run a tick saw but could not start yet.",
        queue.queued as f64,
    );
    let oldest = queue
        .oldest_queued_due
        .map_or(0, |due| (counted.now - due).max(0));
    out.gauge(
        "oldest_queued_wait_seconds",
        "How long the longest-waiting queued run has waited (0 when none).",
        oldest as f64,
    );
}

/// Runs by status (and those stuck or unknown), notices by state, the
/// finished-runs counter and the scheduler gaps.
fn runs_and_notices(out: &mut Exposition, counted: &Counted) {
    let (stats, tallies) = (&counted.stats, &counted.tallies);
    let runs = by_key(RunStatus::ALL.iter().map(|s| s.as_str()), &tallies.runs);
    out.labelled("runs", "Runs by status.", "status", &runs);
    out.gauge(
        "unknown_runs",
        "Runs whose outcome is uncertain; each blocks its task until reconciled.",
        stats.unknown as f64,
    );
    out.gauge(
        "stuck_runs",
        "Running runs past their lease that no tick has frozen yet.",
        stats.stuck as f64,
    );
    let notices = by_key(
        DeliveryState::ALL.iter().map(|s| s.as_str()),
        &tallies.notices,
    );
    out.labelled(
        "notices",
        "Notices by delivery state (suppressed: held back by the task's notice policy).",
        "state",
        &notices,
    );
    let finished = by_key(
        (RunStatus::ALL.iter())
            .filter(|s| s.is_finished())
            .map(|s| s.as_str()),
        &tallies.finished_totals,
    );
    out.counter(
        "runs_finished_total",
        "Runs finished since the store began, by status; prune does not lower it.",
        "status",
        &finished,
    );
    out.gauge(
        "scheduler_gap_events",
        "Scheduler gaps (ticks more than 5 min apart) in the audit log; prune removes old ones.",
        tallies.scheduler_gaps as f64,
    );
}

/// One sample per key, in the keys' order: its count in `list`, or 0.
fn by_key<'k>(keys: impl Iterator<Item = &'k str>, list: &[(String, i64)]) -> Vec<(&'k str, f64)> {
    keys.map(|key| {
        let count = list
            .iter()
            .find(|(k, _)| k == key)
            .map_or(0.0, |(_, n)| *n as f64);
        (key, count)
    })
    .collect()
}
