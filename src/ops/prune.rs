//! Pruning old settled history (`agentcron prune`): deleted in short
//! batches, each its own write transaction sized to hold the lock about
//! `LOCK_BUDGET`, with a pause after each, so that ticks keep running while
//! millions of rows go; or, for a dry run, counted in one read.
//!
//! Invariant: what a batch deletes is the store's `prune_batch` choice
//! (never unknown, running or parked runs, nor what a task still needs); a
//! batch that found the lock taken changed nothing and is tried again.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::error::{classify, ErrorKind};
use crate::store::{PruneCounts, Store};

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

/// What `prune` asks for.
pub struct Request<'a> {
    /// History older than this goes.
    pub cutoff: i64,
    /// Only this tenant's, when one is named; every tenant's otherwise.
    pub tenant: Option<&'a str>,
    /// Count what would go, changing nothing.
    pub dry_run: bool,
    /// Then give the freed space back to the file system.
    pub vacuum: bool,
}

/// What a prune deleted (or would delete), and the store's size around it.
pub struct Pruned {
    pub counts: PruneCounts,
    pub size_before: Option<u64>,
    pub size_after: Option<u64>,
}

/// Deletes (or for a dry run counts) the history `req` names.
pub fn prune(store: &mut dyn Store, req: &Request<'_>) -> Result<Pruned> {
    let size_before = store.size_bytes();
    let counts = if req.dry_run {
        store.read(|tx| tx.prunable(req.cutoff, req.tenant))?
    } else {
        delete_in_batches(store, req.cutoff, req.tenant)?
    };
    // Not by default: on SQLite, VACUUM holds the write lock for the whole
    // rewrite of the file (minutes at millions of runs), and every tick
    // started meanwhile would wait past its busy timeout. Deleted pages are
    // reused by later writes without it.
    if req.vacuum {
        store.compact()?;
    }
    Ok(Pruned {
        counts,
        size_before,
        size_after: store.size_bytes(),
    })
}

/// Short transactions, one batch each: a tick waiting for the write lock
/// waits for one batch, never for the whole prune.
fn delete_in_batches(
    store: &mut dyn Store,
    cutoff: i64,
    tenant: Option<&str>,
) -> Result<PruneCounts> {
    let mut total = PruneCounts::default();
    let mut busy = 0;
    let mut rows = BATCH;
    loop {
        let began = Instant::now();
        let result = store.write(|tx| tx.prune_batch(cutoff, tenant, rows));
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
        add(&mut total, &batch);
        if deleted == 0 {
            return Ok(total);
        }
        std::thread::sleep(PAUSE);
    }
}

fn add(total: &mut PruneCounts, batch: &PruneCounts) {
    total.runs += batch.runs;
    total.notices += batch.notices;
    total.reconciliations += batch.reconciliations;
    total.events += batch.events;
    total.drafts += batch.drafts;
}

/// The next batch's size: scaled so that it holds the lock for about
/// `LOCK_BUDGET`, changing at most twofold a step.
fn next_batch_rows(rows: i64, took: Duration) -> i64 {
    let budget = LOCK_BUDGET.as_secs_f64();
    let factor = (budget / took.as_secs_f64().max(1e-6)).clamp(0.5, 2.0);
    ((rows as f64 * factor) as i64).clamp(MIN_BATCH, BATCH)
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
