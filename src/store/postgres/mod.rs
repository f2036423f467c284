//! The PostgreSQL store, for several hosts sharing one set of schedules
//! (SPEC section 12). Same interface, same guarded UPDATEs as SQLite, at
//! READ COMMITTED (where a guarded UPDATE re-checks its WHERE after waiting
//! for a row lock); claims take due rows with `FOR UPDATE SKIP LOCKED`, so a
//! tick never waits on another host's claim. Time is the caller's clock,
//! which `context` corrects to the server's (`server_time_micros`).

mod deliveries;
mod records;
mod runs;
pub mod schema;
mod tasks;
mod transfer;

use anyhow::{Context, Result};
use postgres::{Client, Config, IsolationLevel, NoTls, Transaction};

use super::{OpenOptions, Store, Tx};

pub struct PgStore {
    client: Client,
    shown: String,
}

/// A transaction's view; the table-family modules implement the traits on it.
pub struct PgTx<'a, 'b> {
    tx: &'a mut Transaction<'b>,
}

impl PgStore {
    pub fn open(url: &str, options: &OpenOptions) -> Result<PgStore> {
        let mut config: Config = url.parse().map_err(|e| {
            crate::error::CmdError::usage(format!("--db is not a valid PostgreSQL URL: {e}"))
                .with_hint("postgres://USER@HOST:PORT/DATABASE")
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        let shown = redact(&config);
        let mut client = config.connect(NoTls).map_err(|e| {
            let detail = e
                .as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_else(|| e.to_string());
            // A server full of connections refused us before anything changed:
            // like a busy SQLite file, safe to retry.
            let full = e.code() == Some(&postgres::error::SqlState::TOO_MANY_CONNECTIONS);
            let kind = if full {
                crate::error::ErrorKind::Busy
            } else {
                crate::error::ErrorKind::Runtime
            };
            crate::error::CmdError::new(
                kind,
                format!("cannot connect to PostgreSQL at {shown}: {detail}"),
            )
            .with_hint(
                "check that the server runs and the URL (host, port, database, user) is right",
            )
        })?;
        // A lock held past busy_timeout is exit 75, as on SQLite.
        let millis = options.busy_timeout.as_millis();
        client
            .batch_execute(&format!(
                "SET lock_timeout = {millis}; SET statement_timeout = 0;"
            ))
            .context("configuring the PostgreSQL session")?;
        schema::migrate(&mut client).with_context(|| format!("preparing the database {shown}"))?;
        Ok(PgStore { client, shown })
    }

    fn run(
        &mut self,
        isolation: IsolationLevel,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(isolation)
            .start()
            .context("starting a transaction")?;
        f(&mut PgTx { tx: &mut tx })?;
        tx.commit().context("committing")
    }
}

fn redact(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!(
        "postgres://{}@{host}:{port}/{db}",
        config.get_user().unwrap_or("")
    )
}

impl Store for PgStore {
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.run(IsolationLevel::ReadCommitted, f)
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        // One snapshot for the whole read, like SQLite's read transaction.
        self.run(IsolationLevel::RepeatableRead, f)
    }

    fn location(&self) -> String {
        self.shown.clone()
    }

    fn size_bytes(&mut self) -> Option<u64> {
        // The tables and indexes of our schema, TOAST included.
        self.client
            .query_one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::BIGINT
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = current_schema() AND c.relkind = 'r'",
                &[],
            )
            .ok()
            .and_then(|row| row.try_get::<_, i64>(0).ok())
            .map(|n| n as u64)
    }

    fn server_time(&mut self) -> Option<i64> {
        self.client
            .query_one(
                "SELECT floor(extract(epoch FROM clock_timestamp()))::BIGINT",
                &[],
            )
            .ok()
            .and_then(|row| row.try_get::<_, i64>(0).ok())
    }

    fn server_time_micros(&mut self) -> Option<i64> {
        self.client
            .query_one(
                "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT",
                &[],
            )
            .ok()
            .and_then(|row| row.try_get::<_, i64>(0).ok())
    }

    fn compact(&mut self) -> Result<()> {
        // Autovacuum reclaims space; an explicit VACUUM gives it back now.
        // One statement at a time: several in one call form a transaction
        // block, where VACUUM cannot run.
        for table in ["runs", "deliveries", "events", "drafts", "reconciliations"] {
            self.client
                .batch_execute(&format!("VACUUM {table}"))
                .context("vacuuming")?;
        }
        Ok(())
    }
}

/// "no row matched the guard" → Conflict.
pub(crate) fn expect_one(changed: u64, message: impl FnOnce() -> String) -> Result<()> {
    if changed == 1 {
        Ok(())
    } else {
        Err(crate::error::CmdError::conflict(message()).into())
    }
}

/// Reads a column, turning a type mismatch into an error instead of a panic.
pub(crate) fn col<'r, T: postgres::types::FromSql<'r>>(
    row: &'r postgres::Row,
    i: usize,
) -> Result<T> {
    row.try_get(i)
        .with_context(|| format!("reading column {i}"))
}
