//! Small facts about the store itself, such as the time of the last tick,
//! and the hosts that tick it with the build each last ran; the operations
//! and their one implementation over `Connection`.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::connection::{Connection, Row};
use crate::store::connection::args;

pub trait MetaTx {
    fn meta(&mut self, key: &str) -> Result<Option<String>>;
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()>;
    /// Records that `host`, running `build`, ticked at `at`.
    fn record_host(&mut self, host: &str, build: &str, at: i64) -> Result<()>;
    /// Every host that ticked this store, the latest tick first.
    fn hosts(&mut self) -> Result<Vec<Host>>;
}

/// A host that ticks the store and the build its last tick ran.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Host {
    pub host: String,
    pub build: String,
    pub last_tick_at: i64,
}

impl<C: Connection> MetaTx for C {
    fn meta(&mut self, key: &str) -> Result<Option<String>> {
        let row = self
            .query_opt("SELECT value FROM meta WHERE key = $1", args![key])
            .context("reading store metadata")?;
        row.map(|r| r.get(0)).transpose()
    }

    fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            args![key, value],
        )
        .context("writing store metadata")?;
        Ok(())
    }

    fn record_host(&mut self, host: &str, build: &str, at: i64) -> Result<()> {
        // A clock set back never moves a host's last tick back.
        let greater = self.dialect().pick("max", "greatest");
        self.execute(
            &format!(
                "INSERT INTO hosts (host, build, last_tick_at) VALUES ($1, $2, $3)
                 ON CONFLICT (host) DO UPDATE SET build = excluded.build,
                     last_tick_at = {greater}(hosts.last_tick_at, excluded.last_tick_at)"
            ),
            args![host, build, at],
        )
        .context("recording this host's build")?;
        Ok(())
    }

    fn hosts(&mut self) -> Result<Vec<Host>> {
        let rows = self
            .query(
                "SELECT host, build, last_tick_at FROM hosts ORDER BY last_tick_at DESC, host",
                args![],
            )
            .context("reading the hosts")?;
        rows.iter().map(Row::decode).collect()
    }
}
