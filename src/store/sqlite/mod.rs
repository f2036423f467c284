//! The SQLite store: one file, WAL, `synchronous=FULL`, every write in
//! `BEGIN IMMEDIATE`.
//!
//! Opening is careful about the path: no URI interpretation, no symlink as
//! the final component, no hard-linked file, a new file 0600 in 0700 folders.
//!
//! The store is self-contained between commands (docs/CONTRACT.md §11): a
//! connection that committed a change checkpoints as it closes, so the
//! `.db` file alone holds every committed change — a copy of it is a backup,
//! and losing the `-wal` loses nothing. Heartbeats (`write_relaxed`) and
//! transactions that changed no row do not count as changes: an idle tick
//! leaves its heartbeat in the WAL and costs no checkpoint. A change also
//! creates `<db>-fold`, removed only by a complete fold: a fold that another
//! process's snapshot held back, or that a kill cut short, is done by the
//! next connection that may write, which checks for that file (one stat)
//! as it closes.

mod backup;
mod busy;
mod connection;
pub(super) mod fault;
mod files;
pub use files::check_folders_of;
pub mod idle;
mod open;
pub mod schema;
#[cfg(any(test, feature = "test-hooks"))]
pub mod trace;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{Connection, TransactionBehavior};

use super::schema::Opening;
use super::{OpenOptions, Store, Tx};

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// This connection committed a durable change (rows written, not a
    /// heartbeat): the WAL holds frames the `.db` file does not yet.
    changed: bool,
}

/// How often, and how long apart, the closing checkpoint is tried when
/// another process holds an old snapshot (so its frames cannot be folded
/// in yet). Whatever is left, the next command that changes the store folds.
const CHECKPOINT_TRIES: u32 = 20;
const CHECKPOINT_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// A WAL past this size is checkpointed and truncated as a connection that
/// may write closes, an idle tick's included. Every process's first
/// connection rebuilds the WAL index by reading and checksumming every valid
/// frame (one pread each, ~2 µs a frame), and that rebuild forgets which
/// frames were checkpointed, so with the WAL kept between processes
/// (open.rs) the automatic checkpoint never lets a later writer start it
/// over: it grew without bound (18 MiB and ~4,900 preads per idle tick
/// after 200 tasks were drafted and confirmed; an idle tick's heartbeat adds
/// two frames, 11 MiB over a day of idle ticks). 64 pages keep the rebuild
/// to ~0.1 ms; about every 30 idle ticks, one pays 3 fsyncs to fold them
/// and the next 2 to start the WAL over (issue 46).
const WAL_TRUNCATE_BYTES: u64 = 256 << 10;

/// The suffix of the file that says a fold is owed (docs/CONTRACT.md §11).
const FOLD_MARKER: &str = "-fold";

/// A statement written once for both stores (with PostgreSQL's
/// `$1`, `$2`…) with SQLite's numbered parameters (`?1`, `?2`…). Only a `$`
/// before a digit is a parameter: a `$` in a JSON path stays.
pub(crate) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        let parameter = c == '$' && chars.peek().is_some_and(char::is_ascii_digit);
        out.push(if parameter { '?' } else { c });
    }
    out
}

/// A transaction's view of the connection; the table-family modules
/// implement the store traits on it.
pub struct SqliteTx<'c> {
    conn: &'c Connection,
}

impl SqliteStore {
    pub fn open(path: &Path, options: &OpenOptions) -> Result<SqliteStore> {
        let mut conn = open::connect(path, options)?;
        let shown = path.display().to_string();
        let found =
            schema::user_version(&conn).with_context(|| format!("reading the database {shown}"))?;
        let migrated =
            match crate::store::schema::on_open(found, schema::LATEST, options, true, &shown)? {
                Opening::Ready => false,
                // A first use races other first uses (creating the schema,
                // switching to WAL): a lock they hold is waited for like any
                // write's.
                Opening::Create | Opening::Migrate => {
                    busy::retry_while_busy(options.busy_timeout, || {
                        schema::migrate(&mut conn, &mut |_| Ok(()))
                    })
                    .with_context(|| format!("preparing the database {shown}"))?
                }
            };
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
            changed: false,
        };
        if migrated {
            // A migration is a change the file alone must hold too.
            store.note_change();
        }
        Ok(store)
    }
}

impl Store for SqliteStore {
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        // A transaction that changed no row wrote no WAL frame: nothing to
        // fold for it.
        if self.commit(f)? {
            self.note_change();
        }
        Ok(())
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        // A deferred transaction is right for reads: one consistent snapshot,
        // and it never takes the write lock.
        in_transaction(&mut self.conn, TransactionBehavior::Deferred, f)?
            .finish()
            .context("ending a read transaction")
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn size_bytes(&mut self) -> Option<u64> {
        let file = |suffix: &str| {
            let mut name = self.path.clone().into_os_string();
            name.push(suffix);
            std::fs::metadata(name).map(|m| m.len()).unwrap_or(0)
        };
        Some(file("") + file("-wal"))
    }

    fn server_time(&mut self) -> Option<i64> {
        None
    }

    fn write_relaxed_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.set_synchronous("NORMAL")?;
        // Bookkeeping, not a change a backup must hold: no checkpoint for it.
        let out = self.commit(f).map(|_| ());
        let restored = self.set_synchronous("FULL");
        out?;
        restored
    }

    fn idle_note(&self) -> Option<crate::store::idle::IdleNote> {
        idle::read_note(&self.path)
    }

    fn note_idle(&mut self, mut note: crate::store::idle::IdleNote) -> Result<()> {
        // What this connection's close would do to the files (a fold owed,
        // a long WAL cut), done first: the note is read from the files as
        // the next tick will find them.
        self.close_work();
        let path = self.path.clone();
        let mut found = None;
        // Under the write lock: no commit can come between what is due and
        // the files it was read from. Nothing is written, so the commit
        // leaves the files as they were read.
        self.commit(&mut |tx| {
            found = Some((
                tx.next_work_at(note.at, note.notices)?,
                idle::files_now(&path),
            ));
            Ok(())
        })?;
        let Some((until, Some(files))) = found else {
            return Ok(());
        };
        note.until = until;
        note.files = files;
        idle::write_note(&self.path, &note)
    }

    fn backup_to(&mut self, path: &Path) -> Result<()> {
        // VACUUM INTO reads one snapshot (ticks go on writing meanwhile) and
        // writes a compact copy with no WAL of its own.
        backup::write(&self.conn, path)
    }

    fn compact(&mut self) -> Result<()> {
        // VACUUM rewrites the file without the free pages; the checkpoint then
        // folds the rewritten pages back into it and truncates the WAL.
        self.conn
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
            .context("compacting the database")
    }

    fn schema_version(&mut self) -> Result<i64> {
        schema::user_version(&self.conn)
    }

    fn migrations(&self) -> &'static [&'static str] {
        schema::DESCRIPTIONS
    }

    fn migrate(&mut self, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()> {
        // BEGIN IMMEDIATE waits for another migrate's step (busy_timeout).
        let migrated = schema::migrate(&mut self.conn, applied)
            .map_err(|e| open::read_only_store(&self.path, e))?;
        if migrated {
            // A migration is a change the file alone must hold too.
            self.note_change();
        }
        Ok(())
    }
}

/// Runs `f` in a transaction begun with `behavior`, and hands the
/// transaction back for the caller to end.
fn in_transaction<'c>(
    conn: &'c mut rusqlite::Connection,
    behavior: TransactionBehavior,
    f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
) -> Result<rusqlite::Transaction<'c>> {
    let starting = match behavior {
        TransactionBehavior::Deferred => "starting a read transaction",
        _ => "starting a write transaction",
    };
    let tx = conn.transaction_with_behavior(behavior).context(starting)?;
    f(&mut SqliteTx { conn: &tx })?;
    Ok(tx)
}

impl SqliteStore {
    /// Runs `f` in one IMMEDIATE transaction; says whether it changed rows.
    fn commit(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<bool> {
        let before = self.conn.total_changes();
        let committed = (|| {
            in_transaction(&mut self.conn, TransactionBehavior::Immediate, f)?
                .commit()
                .context("committing")
        })();
        // On a read-only file system: one line saying so, not SQLite's words.
        committed.map_err(|e| open::read_only_store(&self.path, e))?;
        Ok(self.conn.total_changes() != before)
    }

    fn set_synchronous(&mut self, level: &str) -> Result<()> {
        self.conn
            .execute_batch(&format!("PRAGMA synchronous = {level};"))
            .context("setting the durability of commits")
    }

    fn wal_bytes(&self) -> u64 {
        let mut name = self.path.clone().into_os_string();
        name.push("-wal");
        std::fs::metadata(name).map(|m| m.len()).unwrap_or(0)
    }
}

impl SqliteStore {
    /// `<db>-fold`: present while committed changes may be missing from the
    /// `.db` file (see `note_change`).
    fn fold_marker(&self) -> PathBuf {
        files::sidecar(&self.path, FOLD_MARKER)
    }

    /// Records that this connection committed a change, and that a fold is
    /// owed until one completes: the marker outlives a process killed before
    /// or during its closing checkpoint, and one whose checkpoint another
    /// process's snapshot (a backup) held back.
    fn note_change(&mut self) {
        if !self.changed {
            self.changed = true;
            self.owe_fold();
        }
    }

    fn owe_fold(&self) {
        use std::os::unix::fs::OpenOptionsExt;
        // Best effort: without it the fold at close still runs; only its
        // repair after a kill depends on the marker. Never a symlink.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.fold_marker());
    }

    /// Whether a fold is owed: one stat of the marker, the whole cost of the
    /// check for a command that changed nothing (an idle tick).
    fn fold_owed(&self) -> bool {
        std::fs::symlink_metadata(self.fold_marker()).is_ok()
    }

    /// Folds every committed frame of the WAL into the `.db` file. PASSIVE
    /// never blocks another process: a reader holding an older snapshot
    /// only keeps the newer frames out until it ends, so it is tried again
    /// briefly. The commits were durable already; this makes the file alone
    /// hold them. Only a complete fold removes the marker; a frame committed
    /// meanwhile (by a process that then marks it) puts the marker back, so
    /// that process's kill cannot leave its frames unfolded and unmarked.
    fn checkpoint(&mut self) {
        #[cfg(feature = "test-hooks")]
        crate::hooks::at("sqlite-fold");
        let _ = self.conn.busy_timeout(std::time::Duration::ZERO);
        let mut folded_to = None;
        for _ in 0..CHECKPOINT_TRIES {
            match self.checkpoint_passive() {
                Ok((log, folded)) if folded >= log => {
                    folded_to = Some(log);
                    break;
                }
                Ok(_) => std::thread::sleep(CHECKPOINT_PAUSE),
                // Busy (another checkpoint runs: it folds our frames too)
                // or failing: the marker stays for the next command.
                Err(_) => break,
            }
        }
        if let Some(log) = folded_to {
            let _ = std::fs::remove_file(self.fold_marker());
            let again = self.checkpoint_passive();
            if !matches!(again, Ok((now, folded)) if now == log && folded >= now) {
                self.owe_fold();
            }
        }
        self.shorten_wal();
    }

    /// Every process rebuilds the WAL index from the whole WAL: a WAL past
    /// `WAL_TRUNCATE_BYTES` is folded and truncated. Only when no one else
    /// is reading (never waits: the busy timeout is zero by then).
    fn shorten_wal(&self) {
        if self.wal_bytes() >= WAL_TRUNCATE_BYTES {
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }

    /// One PASSIVE checkpoint: (frames in the WAL, frames folded).
    fn checkpoint_passive(&self) -> rusqlite::Result<(i64, i64)> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
            })
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.close_work();
    }
}

impl SqliteStore {
    /// What a connection does to the files as it closes: once done, doing
    /// it again finds nothing to do.
    fn close_work(&mut self) {
        // A connection that changed something folds; so does any other that
        // may write, when an earlier command left a fold owed (a backup held
        // its checkpoint back, or it was killed during it). A read-only
        // connection cannot checkpoint.
        let may_write = || {
            !self
                .conn
                .is_readonly(rusqlite::DatabaseName::Main)
                .unwrap_or(true)
        };
        if self.changed || (may_write() && self.fold_owed()) {
            // The fold is bounded (CHECKPOINT_TRIES); a stop signal waits for
            // it, so a TERM cannot leave the .db half-written.
            crate::interrupt::hold_stop_signals(|| self.checkpoint());
        } else if may_write() && self.wal_bytes() >= WAL_TRUNCATE_BYTES {
            // Heartbeats alone (idle ticks) grow the WAL too, two frames a
            // tick, and every later process would read them all.
            let _ = self.conn.busy_timeout(std::time::Duration::ZERO);
            crate::interrupt::hold_stop_signals(|| self.shorten_wal());
        }
    }
}
