//! SQLite side of what shell completion reads: the shared SQL with SQLite's
//! numbered parameters.

use anyhow::{Context, Result};

use super::{numbered, SqliteTx};
use crate::store::completion::{CompletionTx, LIMIT};

impl CompletionTx for SqliteTx<'_> {
    fn completion_rows(
        &mut self,
        sql: &str,
        tenant_key: &str,
        prefix: &str,
        columns: usize,
    ) -> Result<Vec<Vec<Option<String>>>> {
        let mut stmt = self.conn.prepare(&numbered(sql))?;
        let rows = stmt.query_map(rusqlite::params![tenant_key, prefix, LIMIT], |row| {
            (0..columns).map(|i| row.get(i)).collect()
        })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("reading completion candidates")
    }
}
