//! SQLite side of the meta table.

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::MetaTx;

impl MetaTx for SqliteTx<'_> {
    fn meta(&mut self, key: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
            .query_row([key], |row| row.get(0))
            .optional()
            .context("reading store metadata")
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![key, value])
            .context("writing store metadata")?;
        Ok(())
    }
}
