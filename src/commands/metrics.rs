//! `agentcron metrics`: the store's state for Prometheus (docs/CONTRACT.md §15).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::output::metrics::write_textfile;
use crate::output::metrics_report::{exposition, Counted};

/// Print the store's state in the Prometheus text exposition format
///
/// Last tick time and duration, due and queued backlog with the oldest queued
/// wait, runs by status, unknown and stuck runs, notices by state and the
/// scheduler gaps still in the audit log: gauges, in seconds where a time. And
/// agentcron_runs_finished_total{status}, a counter kept as runs finish (prune does
/// not lower it, so rate() works). And agentcron_last_success_timestamp_seconds{task}
/// for each task that sets --expect-success and has succeeded once.
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
    // Ticks that ended at the idle note (`store::idle`) recorded
    // themselves there.
    let noted = store.idle_note();
    let counted = store.read(|tx| {
        let stats = tx.stats(now, tenant.as_deref())?;
        let queue = tx.queue_stats(tenant.as_deref())?;
        let tallies = tx.tallies(tenant.as_deref())?;
        let usage = tx.usage_totals(tenant.as_deref())?;
        let recorded: Option<i64> = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
        let mut duration: Option<f64> = tx.meta("last_tick_seconds")?.and_then(|v| v.parse().ok());
        if let Some(note) = noted.as_ref().filter(|n| recorded.is_none_or(|r| n.at > r)) {
            duration = note.seconds.parse().ok().or(duration);
        }
        let last_tick = crate::store::idle::last_tick(recorded, noted.as_ref()).map(|t| t as f64);
        let expecting = tx.expecting_success(tenant.as_deref())?;
        Ok(Counted {
            now,
            stats,
            queue,
            tallies,
            last_tick,
            last_duration: duration,
            usage,
            expecting,
        })
    })?;
    let out = exposition(&counted);
    match args.textfile {
        Some(path) => write_textfile(&path, out.text()),
        None if ctx.out.json => ctx.out.document(&out.json()),
        None => ctx.out.line(out.text().trim_end()),
    }
}
