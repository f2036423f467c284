//! The SQLite store: one file, WAL, `synchronous=FULL`, every write in
//! `BEGIN IMMEDIATE`.
//!
//! Opening is careful about the path: no URI interpretation, no symlink as
//! the final component, no hard-linked file, a new file 0600 in 0700 folders.

mod deliveries;
mod drafts;
mod events;
mod files;
mod maintenance;
mod meta;
mod open;
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
}

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
        tx.commit().context("committing")
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

    fn compact(&mut self) -> Result<()> {
        // VACUUM rewrites the file without the free pages; the checkpoint then
        // folds the rewritten pages back into it and truncates the WAL.
        self.conn
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
            .context("compacting the database")
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
