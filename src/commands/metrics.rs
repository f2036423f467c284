//! `agentcron metrics`: the store's state for Prometheus (docs/CONTRACT.md §15).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::model::{DeliveryState, RunStatus, TaskState};
use crate::output::metrics::{write_textfile, Exposition};

/// Print the store's state in the Prometheus text exposition format
///
/// Last tick time and duration, due and queued backlog with the oldest queued
/// wait, runs by status, unknown and stuck runs, notices by state and the
/// scheduler gaps still in the audit log: gauges, in seconds where a time. And
/// agentcron_runs_finished_total{status}, a counter kept as runs finish (prune does
/// not lower it, so rate() works).
/// With --textfile, the file is replaced atomically (mode 0644) for
/// node_exporter's textfile collector; run it from cron after `tick`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Write to this file (atomically) instead of standard output
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
}

pub fn run(ctx: &mut Ctx, args: MetricsArgs) -> Result<()> {
    let (now, tenant) = (ctx.clock.now(), ctx.explicit_tenant());
    let store = ctx.store()?;
    let (stats, queue, tallies, last_tick, last_duration) = store.read(|tx| {
        let stats = tx.stats(now, tenant.as_deref())?;
        let queue = tx.queue_stats(tenant.as_deref())?;
        let tallies = tx.tallies(tenant.as_deref())?;
        let last_tick: Option<f64> = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
        let duration: Option<f64> = tx.meta("last_tick_seconds")?.and_then(|v| v.parse().ok());
        Ok((stats, queue, tallies, last_tick, duration))
    })?;
    let mut out = Exposition::default();
    // A store never ticked has no last tick: the sample is left out, so
    // that `absent()` alerts rather than a tick "in 1970".
    if let Some(at) = last_tick {
        out.gauge(
            "last_tick_timestamp_seconds",
            "When the last tick started, in seconds since the epoch.",
            at,
        );
    }
    if let Some(seconds) = last_duration {
        out.gauge(
            "last_tick_duration_seconds",
            "How long the last tick that finished took.",
            seconds,
        );
    }
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
    let oldest = queue.oldest_queued_due.map_or(0, |due| (now - due).max(0));
    out.gauge(
        "oldest_queued_wait_seconds",
        "How long the longest-waiting queued run has waited (0 when none).",
        oldest as f64,
    );
    let count = |list: &[(String, i64)], key: &str| {
        list.iter()
            .find(|(k, _)| k == key)
            .map_or(0.0, |(_, n)| *n as f64)
    };
    let runs: Vec<(&str, f64)> = RunStatus::ALL
        .iter()
        .map(|s| (s.as_str(), count(&tallies.runs, s.as_str())))
        .collect();
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
    let notices: Vec<(&str, f64)> = DeliveryState::ALL
        .iter()
        .map(|s| (s.as_str(), count(&tallies.notices, s.as_str())))
        .collect();
    out.labelled(
        "notices",
        "Notices by delivery state (suppressed: held back by the task's notice policy).",
        "state",
        &notices,
    );
    let finished: Vec<(&str, f64)> = RunStatus::ALL
        .iter()
        .filter(|s| s.is_finished())
        .map(|s| (s.as_str(), count(&tallies.finished_totals, s.as_str())))
        .collect();
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
    match args.textfile {
        Some(path) => write_textfile(&path, out.text()),
        None if ctx.out.json => ctx.out.document(&out.json()),
        None => ctx.out.line(out.text().trim_end()),
    }
}
