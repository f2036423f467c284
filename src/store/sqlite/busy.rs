//! Waiting for a lock another connection holds: tried again every
//! millisecond until the busy timeout.
//!
//! SQLite's own busy timeout sleeps 1, 2, 5 … then 100 ms between tries. A
//! connection waiting behind another process that commits transaction
//! after transaction (a prune's batches, a tick claiming and recording a
//! burst of runs) finds the lock free only in the gaps between them, a few
//! milliseconds each, and at 100 ms a try it polls into transaction after
//! transaction until it gives up: measured, ticks started during a prune of
//! 1M runs waited 4–5 s and some exited 75. Trying every millisecond costs
//! a lock attempt (a few system calls) per millisecond of waiting.
//!
//! Some lock conflicts never reach the busy handler: SQLite answers BUSY at
//! once where waiting could deadlock (a read upgrading to a write while
//! another connection holds the write lock), which is what several first
//! uses of a new file meet while they switch it to WAL and create the
//! schema. `retry_while_busy` gives those steps the same patience.

use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rusqlite::Connection;

/// The pause between two tries for a lock.
const POLL: Duration = Duration::from_millis(1);

/// Makes `conn` wait for a busy lock up to `timeout`, trying every `POLL`.
pub fn wait_for_locks(conn: &Connection, timeout: Duration) -> Result<()> {
    let millis = timeout.as_millis().min(u32::MAX as u128) as usize;
    // SAFETY: registers a callback on our own open handle. Its argument is
    // the timeout in milliseconds carried in the pointer's bits, never
    // dereferenced, so it outlives nothing.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_busy_handler(conn.handle(), Some(on_busy), millis as *mut c_void)
    };
    if rc != rusqlite::ffi::SQLITE_OK {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rc),
            None,
        ))
        .context("setting busy_timeout");
    }
    Ok(())
}

/// Runs `step` again, every `POLL`, while it fails because the database is
/// busy, until `timeout` has passed; `step` must change nothing when it fails
/// (one transaction, or settings that are asked again).
pub fn retry_while_busy<T>(timeout: Duration, mut step: impl FnMut() -> Result<T>) -> Result<T> {
    let began = Instant::now();
    loop {
        match step() {
            Err(e) if crate::store::fault::is_busy(&e) && began.elapsed() < timeout => {
                std::thread::sleep(POLL);
            }
            other => return other,
        }
    }
}

thread_local! {
    /// When this thread's current wait began. A thread waits for one lock at
    /// a time, and SQLite numbers the calls of one wait from 0.
    static WAITING_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// SQLite's busy callback: nonzero to try again, 0 to give up (SQLITE_BUSY).
unsafe extern "C" fn on_busy(timeout_ms: *mut c_void, count: c_int) -> c_int {
    let timeout = Duration::from_millis(timeout_ms as usize as u64);
    let now = Instant::now();
    // `try_with`: a panic must not cross into SQLite's C frames; a thread
    // whose locals are gone waits as if this were its first call.
    let since = WAITING_SINCE
        .try_with(|cell| match cell.get() {
            Some(since) if count > 0 => since,
            _ => {
                cell.set(Some(now));
                now
            }
        })
        .unwrap_or(now);
    let waited = now.duration_since(since);
    if waited >= timeout {
        return 0;
    }
    std::thread::sleep(POLL.min(timeout - waited));
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL database with one table, in a folder dropped with the first.
    fn wal_database() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t(x);")
            .unwrap();
        (dir, path, conn)
    }

    /// Runs `sql` on a new connection waiting for locks up to `timeout`:
    /// its result and how long it took.
    fn wait_then(
        path: &std::path::Path,
        timeout: Duration,
        sql: &str,
    ) -> (rusqlite::Result<()>, Duration) {
        let waiter = Connection::open(path).unwrap();
        wait_for_locks(&waiter, timeout).unwrap();
        let began = Instant::now();
        let result = waiter.execute_batch(sql);
        (result, began.elapsed())
    }

    #[test]
    fn a_held_lock_is_waited_for_until_the_timeout_then_busy() {
        let (_dir, path, holder) = wal_database();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (err, waited) = wait_then(&path, Duration::from_millis(150), "BEGIN IMMEDIATE");
        let err = err.unwrap_err();
        assert_eq!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        );
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
    }

    #[test]
    fn a_lock_free_only_for_moments_between_transactions_is_taken() {
        // Another connection commits transaction after transaction, leaving
        // the lock free 3 ms in every 64: the waiter gets in through one of
        // those gaps, long before its timeout. (Whether SQLite's own handler
        // would too is a matter of chance, so this does not compare them;
        // scripts/bench --only prune does, in docs/PERFORMANCE.md.)
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let (_dir, path, _setup) = wal_database();
        let done = Arc::new(AtomicBool::new(false));
        let holder = {
            let (path, done) = (path.clone(), done.clone());
            std::thread::spawn(move || {
                let conn = Connection::open(&path).unwrap();
                let began = Instant::now();
                while !done.load(Ordering::Acquire) && began.elapsed() < Duration::from_secs(20) {
                    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                    std::thread::sleep(Duration::from_millis(61));
                    conn.execute_batch("COMMIT").unwrap();
                    std::thread::sleep(Duration::from_millis(3));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let write = "BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT;";
        let (result, waited) = wait_then(&path, Duration::from_secs(10), write);
        result.unwrap();
        done.store(true, Ordering::Release);
        holder.join().unwrap();
        assert!(waited < Duration::from_secs(3), "{waited:?}");
    }
}
