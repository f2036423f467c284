//! `agentcron prune`: delete old settled history and give the space back.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::flags::duration;
use crate::context::Ctx;
use crate::error::{classify, ErrorKind};
use crate::store::PruneCounts;
use crate::text::human_bytes;

/// Rows of each kind one prune transaction deletes at most.
const BATCH: i64 = 10_000;

/// Rows of each kind a batch deletes at least, however slow the disk.
const MIN_BATCH: i64 = 200;

/// How long one batch should hold the write lock: a tick waiting behind it
/// waits about this long per transaction, far inside its busy timeout.
const LOCK_BUDGET: Duration = Duration::from_millis(150);

/// How long the write lock is left free after each batch. A waiting tick
/// tries the lock every millisecond (store/sqlite/busy.rs), so it finds it
/// free within this pause even on a loaded machine; without it, the prune
/// takes the lock again within microseconds and a waiting tick can try into
/// batch after batch until its busy timeout.
const PAUSE: Duration = Duration::from_millis(30);

/// Batches that may find the database busy before prune gives up.
const BUSY_RETRIES: u32 = 10;

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

/// The next batch's size: scaled so that it holds the lock for about
/// `LOCK_BUDGET`, changing at most twofold a step.
fn next_batch_rows(rows: i64, took: Duration) -> i64 {
    let budget = LOCK_BUDGET.as_secs_f64();
    let factor = (budget / took.as_secs_f64().max(1e-6)).clamp(0.5, 2.0);
    ((rows as f64 * factor) as i64).clamp(MIN_BATCH, BATCH)
}

pub fn run(ctx: &mut Ctx, args: PruneArgs) -> Result<()> {
    let age = duration("--older-than", &args.older_than)?;
    let cutoff = ctx.clock.now() - age.as_secs() as i64;
    let tenant = ctx.explicit_tenant();
    let apply = !args.dry_run;
    let store = ctx.store()?;
    let before = store.size_bytes();
    let counts = if apply {
        // Short transactions, one batch each: a tick waiting for the write
        // lock waits for one batch, never for the whole prune.
        let mut total = PruneCounts::default();
        let mut busy = 0;
        let mut rows = BATCH;
        loop {
            let began = Instant::now();
            let result = store.write(|tx| tx.prune_batch(cutoff, tenant.as_deref(), rows));
            // Sized by time, not rows: a slow disk or a busy machine makes a
            // batch of 10,000 hold the lock for a second. The time includes
            // any wait for the lock, so batches also shrink while ticks
            // are writing.
            rows = next_batch_rows(rows, began.elapsed());
            let batch = match result {
                Ok(batch) => batch,
                // Ticks come first: a batch that found the lock taken past
                // the busy timeout is tried again (it changed nothing), a few
                // times, before prune gives up with what it has deleted.
                Err(e) if busy < BUSY_RETRIES && classify(&e).0 == ErrorKind::Busy => {
                    busy += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let deleted = batch.runs + batch.events + batch.drafts;
            total.runs += batch.runs;
            total.notices += batch.notices;
            total.reconciliations += batch.reconciliations;
            total.events += batch.events;
            total.drafts += batch.drafts;
            if deleted == 0 {
                break total;
            }
            std::thread::sleep(PAUSE);
        }
    } else {
        store.read(|tx| tx.prune(cutoff, tenant.as_deref(), false))?
    };
    // Not by default: on SQLite, VACUUM holds the write lock for the whole
    // rewrite of the file (minutes at millions of runs), and every tick
    // started meanwhile would wait past its busy timeout. Deleted pages are
    // reused by later writes without it.
    if args.vacuum {
        store.compact()?;
    }
    let after = store.size_bytes();
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
    if let (Some(b), Some(a), true) = (before, after, apply) {
        text.push_str(&format!(
            " Database: {} → {}.",
            human_bytes(b),
            human_bytes(a)
        ));
    }
    ctx.out.line(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_shrink_when_slow_and_grow_back_when_fast() {
        let ms = Duration::from_millis;
        // A batch of 10,000 that held the lock 600 ms: half as many next.
        assert_eq!(next_batch_rows(10_000, ms(600)), 5_000);
        // 300 ms at 5,000: half again.
        assert_eq!(next_batch_rows(5_000, ms(300)), 2_500);
        // On budget: unchanged.
        assert_eq!(next_batch_rows(2_500, ms(150)), 2_500);
        // Fast: at most twice as many, never past BATCH.
        assert_eq!(next_batch_rows(2_500, ms(10)), 5_000);
        assert_eq!(next_batch_rows(8_000, ms(10)), BATCH);
        // Never below MIN_BATCH, however slow.
        assert_eq!(next_batch_rows(300, Duration::from_secs(10)), MIN_BATCH);
    }
}
