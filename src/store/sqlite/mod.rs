//! The SQLite store: one file, WAL, `synchronous=FULL`, every write in
//! `BEGIN IMMEDIATE`.
//!
//! Opening is careful about the path: no URI interpretation, no symlink as
//! the final component, no hard-linked file, a new file 0600 in 0700 folders.

mod busy;
mod deliveries;
mod drafts;
mod events;
mod files;
#[cfg(test)]
mod growth;
mod maintenance;
mod meta;
mod open;
#[cfg(test)]
mod plans;
mod queue;
mod runs;
pub mod schema;
mod tasks;
mod transfer;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{Connection, TransactionBehavior};

use super::{OpenOptions, Store, Tx};

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// This connection committed a write: its WAL may need folding back.
    wrote: bool,
}

/// A WAL past this size is checkpointed and truncated by the connection
/// that wrote it, as it closes. Every process's first connection rebuilds
/// the WAL index by reading every valid frame (one pread each), and that
/// rebuild forgets which frames were checkpointed, so with the WAL kept
/// between processes (open.rs) the automatic checkpoint never lets a later
/// writer start it over: it grew without bound (18 MiB and ~4,900 preads per
/// idle tick after 200 tasks were drafted and confirmed). 256 pages keeps
/// the rebuild to ~130 preads.
const WAL_TRUNCATE_BYTES: u64 = 1 << 20;

/// A transaction's view of the connection; the table-family modules
/// implement the store traits on it.
pub struct SqliteTx<'c> {
    conn: &'c Connection,
}

impl SqliteStore {
    pub fn open(path: &Path, options: &OpenOptions) -> Result<SqliteStore> {
        let mut conn = open::connect(path, options)?;
        schema::migrate(&mut conn)
            .with_context(|| format!("preparing the database {}", path.display()))?;
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
            wrote: false,
        })
    }
}

impl Store for SqliteStore {
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .context("starting a write transaction")?;
        f(&mut SqliteTx { conn: &tx })?;
        tx.commit().context("committing")?;
        self.wrote = true;
        Ok(())
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        // A deferred transaction is right for reads: one consistent snapshot,
        // and it never takes the write lock.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .context("starting a read transaction")?;
        f(&mut SqliteTx { conn: &tx })?;
        tx.finish().context("ending a read transaction")
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
        let out = self.write_dyn(f);
        let restored = self.set_synchronous("FULL");
        out?;
        restored
    }

    fn compact(&mut self) -> Result<()> {
        // VACUUM rewrites the file without the free pages; the checkpoint then
        // folds the rewritten pages back into it and truncates the WAL.
        self.conn
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
            .context("compacting the database")
    }
}

impl SqliteStore {
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

impl Drop for SqliteStore {
    fn drop(&mut self) {
        if !self.wrote || self.wal_bytes() < WAL_TRUNCATE_BYTES {
            return;
        }
        // Never wait for this: with another connection reading or writing,
        // the checkpoint is BUSY at once and a later writer does it. The
        // commits are already durable; this only moves them into the file.
        let _ = self.conn.busy_timeout(std::time::Duration::ZERO);
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
}

impl SqliteTx<'_> {
    /// The ids `sql` finds for a prefix: a range scan on the primary key
    /// with the parameters (prefix, its upper bound, tenant, limit), so the
    /// prefix is only ever a bound, never SQL.
    fn ids_with_prefix(
        &self,
        sql: &str,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> rusqlite::Result<Vec<String>> {
        let upper = format!("{prefix}\u{10FFFF}");
        let mut stmt = self.conn.prepare_cached(sql)?;
        let ids = stmt
            .query_map(rusqlite::params![prefix, upper, tenant_key, limit], |row| {
                row.get(0)
            })?
            .collect();
        ids
    }
}

/// Turns "no row matched the guard" into a Conflict with `message`.
pub(crate) fn expect_one(changed: usize, message: impl FnOnce() -> String) -> Result<()> {
    if changed == 1 {
        Ok(())
    } else {
        Err(crate::error::CmdError::conflict(message()).into())
    }
}
