//! PostgreSQL side of the meta table.

use anyhow::{Context, Result};

use super::{col, PgTx};
use crate::store::MetaTx;

impl MetaTx for PgTx<'_, '_> {
    fn meta(&mut self, key: &str) -> Result<Option<String>> {
        let row = self
            .tx
            .query_opt("SELECT value FROM meta WHERE key = $1", &[&key])?;
        row.map(|r| col(&r, 0)).transpose()
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )
            .context("writing store metadata")?;
        Ok(())
    }
}
