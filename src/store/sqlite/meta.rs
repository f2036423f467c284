//! SQLite side of the meta table.

use super::numbered;
use crate::store::sql::meta as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};

use super::SqliteTx;
use crate::store::{Host, MetaTx};

impl MetaTx for SqliteTx<'_> {
    fn meta(&mut self, key: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached(&numbered(sql::META))?
            .query_row([key], |row| row.get(0))
            .optional()
            .context("reading store metadata")
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::SET_META))?
            .execute(params![key, value])
            .context("writing store metadata")?;
        Ok(())
    }

    fn record_host(&mut self, host: &str, build: &str, at: i64) -> Result<()> {
        // A clock set back never moves a host's last tick back.
        self.conn
            .prepare_cached(
                "INSERT INTO hosts (host, build, last_tick_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (host) DO UPDATE SET build = excluded.build,
                     last_tick_at = max(last_tick_at, excluded.last_tick_at)",
            )?
            .execute(params![host, build, at])
            .context("recording this host's build")?;
        Ok(())
    }

    fn hosts(&mut self) -> Result<Vec<Host>> {
        self.conn
            .prepare_cached(&numbered(sql::HOSTS))?
            .query_map([], |row| {
                Ok(Host {
                    host: row.get(0)?,
                    build: row.get(1)?,
                    last_tick_at: row.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
            .context("reading the hosts")
    }
}
