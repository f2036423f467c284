//! PostgreSQL side of what shell completion reads: the shared SQL with the
//! prefix typed as text.

use anyhow::{Context, Result};

use super::{col, PgTx};
use crate::store::completion::{CompletionTx, LIMIT};

impl CompletionTx for PgTx<'_, '_> {
    fn completion_rows(
        &mut self,
        sql: &str,
        tenant_key: &str,
        prefix: &str,
        columns: usize,
    ) -> Result<Vec<Vec<Option<String>>>> {
        // substr/length on text, the cap as bigint: the same SQL as SQLite's.
        let sql = sql.replace("length($2)", "length($2::text)");
        let rows = self
            .tx
            .query(&sql, &[&tenant_key, &prefix, &LIMIT])
            .context("reading completion candidates")?;
        rows.iter()
            .map(|row| (0..columns).map(|i| col(row, i)).collect())
            .collect()
    }
}
