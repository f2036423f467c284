//! `agentcron prune`: delete old settled history and give the space back.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::flags::duration;
use crate::context::Ctx;
use crate::ops::prune::{prune, Pruned, Request};
use crate::text::human_bytes;

/// Delete settled runs, delivered notices, audit events and expired drafts older than DUR
///
/// Never unknown, running or parked runs, runs with a notice not yet delivered, or a
/// failed run whose retry is pending; never the draft and confirm events of a task
/// that is not deleted (how it came to be stays as long as it does). Deletes in
/// batches of at most 10,000 rows, each its own transaction holding the write lock
/// about 150 ms, with a pause after each, so ticks keep running; the freed space is
/// reused by later writes. `--vacuum` also gives it back to the
/// file system.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Age of what to delete, e.g. 90d
    #[arg(long, value_name = "DUR")]
    pub older_than: String,

    /// Report what would be deleted, changing nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Then shrink the file (SQLite: VACUUM rewrites it, holding the write
    /// lock throughout, so ticks wait; PostgreSQL: a plain VACUUM, which
    /// blocks no one)
    #[arg(long, conflicts_with = "dry_run")]
    pub vacuum: bool,
}

pub fn run(ctx: &mut Ctx, args: PruneArgs) -> Result<()> {
    let now = ctx.clock.now();
    let age = duration("--older-than", &args.older_than)?;
    let cutoff = now - age.as_secs() as i64;
    let tenant = ctx.explicit_tenant();
    let request = Request {
        cutoff,
        tenant: tenant.as_deref(),
        dry_run: args.dry_run,
        vacuum: args.vacuum,
    };
    let Pruned {
        counts,
        size_before: before,
        size_after: after,
    } = prune(ctx.store()?, &request)?;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "dry_run": args.dry_run,
            "cutoff": crate::wire::time(Some(cutoff)),
            "runs": counts.runs, "notices": counts.notices, "reconciliations": counts.reconciliations,
            "events": counts.events, "drafts": counts.drafts,
            "size_before": before, "size_after": after,
        }));
    }
    let verb = if args.dry_run {
        "Would delete"
    } else {
        "Deleted"
    };
    let mut text = format!(
        "{verb} {} runs, {} notices, {} reconciliations, {} audit events and {} expired drafts older than {}.",
        counts.runs, counts.notices, counts.reconciliations, counts.events, counts.drafts,
        crate::schedule::format_utc(cutoff)
    );
    if let (Some(b), Some(a), false) = (before, after, args.dry_run) {
        text.push_str(&format!(
            " Database: {} → {}.",
            human_bytes(b),
            human_bytes(a)
        ));
    }
    ctx.out.line(&text)
}
