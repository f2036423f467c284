//! PostgreSQL side of the meta table.

use crate::store::sql::meta as sql;
use anyhow::{Context, Result};

use super::{col, PgTx};
use crate::store::{Host, MetaTx};

impl MetaTx for PgTx<'_, '_> {
    fn meta(&mut self, key: &str) -> Result<Option<String>> {
        let row = self.tx.query_opt(sql::META, &[&key])?;
        row.map(|r| col(&r, 0)).transpose()
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.tx
            .execute(sql::SET_META, &[&key, &value])
            .context("writing store metadata")?;
        Ok(())
    }

    fn record_host(&mut self, host: &str, build: &str, at: i64) -> Result<()> {
        // A clock set back never moves a host's last tick back.
        self.tx
            .execute(
                "INSERT INTO hosts (host, build, last_tick_at) VALUES ($1, $2, $3)
                 ON CONFLICT (host) DO UPDATE SET build = excluded.build,
                     last_tick_at = greatest(hosts.last_tick_at, excluded.last_tick_at)",
                &[&host, &build, &at],
            )
            .context("recording this host's build")?;
        Ok(())
    }

    fn hosts(&mut self) -> Result<Vec<Host>> {
        let rows = self.tx.query(sql::HOSTS, &[])?;
        rows.iter()
            .map(|r| {
                Ok(Host {
                    host: col(r, 0)?,
                    build: col(r, 1)?,
                    last_tick_at: col(r, 2)?,
                })
            })
            .collect()
    }
}
