//! The PostgreSQL store, for several hosts sharing one set of schedules
//! (docs/CONTRACT.md §12). Same interface, same guarded UPDATEs as SQLite, at
//! READ COMMITTED (where a guarded UPDATE re-checks its WHERE after waiting
//! for a row lock); claims take due rows with `FOR UPDATE SKIP LOCKED`, so a
//! tick never waits on another host's claim. Time is the caller's clock,
//! which `context` corrects to the server's (`server_time_micros`).

mod client;
mod commit;
mod connection;
pub(super) mod fault;
pub mod password;
pub mod schema;
mod statements;

use std::ops::ControlFlow;

use anyhow::{Context, Result};
use tokio_postgres::Config;

use super::connection::{LaterInsert, OwnedArg};
use super::schema::Opening;
use super::{OpenOptions, Plans, Store, Tx};
use client::Client;
use statements::{CachedTx, Statements};

/// What `each_row` calls per row; `Break` ends the read there.
type EachRow<'e> = dyn FnMut(&mut dyn Tx, &tokio_postgres::Row) -> Result<ControlFlow<()>> + 'e;

/// How a write transaction begins: READ COMMITTED, where a guarded UPDATE
/// re-checks its WHERE after waiting for a row lock.
const BEGIN_WRITE: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

/// How a read begins: one snapshot for the whole read, like SQLite's read
/// transaction.
const BEGIN_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ";

pub struct PgStore {
    client: Client,
    shown: String,
    /// To connect again after a connection was lost.
    config: Config,
    options: OpenOptions,
    /// The server session behind `client`, to settle a lost commit.
    session: commit::Session,
    /// Write transactions on this store, for pruning commit markers.
    writes: u64,
    /// The statements prepared on `client`.
    statements: Statements,
}

/// A transaction's view; the table-family modules implement the traits on it.
pub struct PgTx<'a> {
    tx: CachedTx<'a>,
    /// Cursors open in this transaction (`each_row`), each named by its depth.
    cursors: usize,
    /// Rows `insert_later` holds until a statement names their table or the
    /// transaction ends (`send_later`).
    later: Vec<Held>,
}

/// A row `insert_later` holds, and the insert it is a row of.
type Held = (&'static LaterInsert, Vec<OwnedArg>);

impl PgStore {
    pub fn open(url: &str, options: &OpenOptions) -> Result<PgStore> {
        let mut config: Config = url.parse().map_err(|e| {
            crate::error::CmdError::usage(format!("--db is not a valid PostgreSQL URL: {e}"))
                .with_hint("postgres://USER@HOST:PORT/DATABASE")
        })?;
        // Never needed in --db: PGPASSWORD or the password file, as libpq.
        if let Some(found) = password::fallback(&config, &options.postgres_password) {
            config.password(found);
        }
        if options.never_write {
            config.connect_timeout(options.busy_timeout);
        } else if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        // Names the process in pg_stat_activity, so an operator (and the
        // suite) can tell which connections a given tick holds.
        if config.get_application_name().is_none() {
            config.application_name(format!("agentcron/{}", std::process::id()));
        }
        let shown = redact(&config);
        let (mut client, session) = connect(&config, options, &shown)?;
        let found = schema::current(&mut client)
            .with_context(|| format!("reading the schema version of {shown}"))?;
        // Only a store being created is migrated here: an older schema
        // waits for `agentcron migrate` (docs/CONTRACT.md §21).
        match super::schema::on_open(found, schema::LATEST, options, false, &shown)? {
            Opening::Ready => {}
            Opening::Create | Opening::Migrate => schema::migrate(&mut client, &mut |_| Ok(()))
                .with_context(|| format!("preparing the database {shown}"))?,
        }
        Ok(PgStore {
            client,
            shown,
            config,
            options: options.clone(),
            session,
            writes: 0,
            statements: Statements::default(),
        })
    }

    /// A connection that broke (a server restart, a lost commit that could
    /// not be settled) is replaced before the next transaction. What the
    /// server sent while the connection sat idle is read first: a session
    /// it ended meanwhile (an administrator, a restart; a long-lived `mcp`
    /// server meets this) is seen closed here, before BEGIN goes out with
    /// a statement.
    fn reconnect_if_closed(&mut self) -> Result<()> {
        self.client.notice_closing();
        if self.client.is_closed() {
            (self.client, self.session) = connect(&self.config, &self.options, &self.shown)?;
            self.statements.clear();
        }
        Ok(())
    }

    /// COMMIT was sent and the connection dropped before its answer: settle
    /// whether it committed from a new connection (docs/CONTRACT.md §12).
    fn settle_lost_commit(&mut self, marker: &str, lost: anyhow::Error) -> Result<()> {
        let lost = lost.context("the connection was lost while committing");
        let (mut client, session) = match connect(&self.config, &self.options, &self.shown) {
            Ok(connected) => connected,
            Err(e) => return Err(lost.context(format!("whether it committed is unknown: {e:#}"))),
        };
        let fate = commit::committed(&mut client, &self.session, marker);
        (self.client, self.session) = (client, session);
        self.statements.clear();
        match fate {
            Ok(true) => Ok(()),
            Ok(false) => Err(lost.context("the transaction was not committed; nothing changed")),
            Err(e) => Err(lost.context(format!("whether it committed is unknown: {e:#}"))),
        }
    }

    /// BEGIN failed on a lost connection (the server ended the session
    /// while it sat idle, and said so too late for `reconnect_if_closed`):
    /// nothing was done on the server in it, so a new connection replaces
    /// it and the transaction begins again, once. BEGIN goes out with the
    /// transaction's first statement, so the transaction's function ran up
    /// to that statement and runs again from its start: as for any
    /// transaction, what it decides comes from what it reads.
    fn begin_again(&mut self, e: anyhow::Error) -> Result<()> {
        if e.downcast_ref::<NotBegun>().is_none() {
            return Err(e);
        }
        let e = crate::store::faulted(e);
        if !crate::error::is_connection_lost(&e) {
            return Err(e);
        }
        let (client, session) = connect(&self.config, &self.options, &self.shown).map_err(|c| {
            c.context(crate::error::StillDisconnected(
                crate::error::connection_loss(&e),
            ))
        })?;
        (self.client, self.session) = (client, session);
        self.statements.clear();
        Ok(())
    }

    fn run(
        &mut self,
        begin: &'static str,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        self.reconnect_if_closed()?;
        match self.run_once(begin, f) {
            Err(e) => {
                self.begin_again(e)?;
                self.run_once(begin, f)
            }
            done => done,
        }
    }

    fn run_once(
        &mut self,
        begin: &'static str,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        let mut pg = PgTx::new(&mut self.client, &mut self.statements, begin);
        pg.within(f)?;
        pg.send_later()?;
        // Its own error says "committing"; a held row's says what it wrote.
        pg.tx.commit()
    }

    /// A write transaction, marked so that a lost acknowledgement of its
    /// COMMIT can be settled by looking the marker up.
    fn run_write(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.reconnect_if_closed()?;
        match self.write_once(f) {
            Err(e) => {
                self.begin_again(e)?;
                self.write_once(f)
            }
            done => done,
        }
    }

    fn write_once(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let marker = uuid::Uuid::new_v4().to_string();
        let prune = self.writes.is_multiple_of(commit::PRUNE_EVERY);
        self.writes += 1;
        let ended = {
            let mut pg = PgTx::new(&mut self.client, &mut self.statements, BEGIN_WRITE);
            pg.within(f)?;
            if prune {
                // Its count is not read: it goes with the commit.
                let pruning = "pruning commit markers".to_string();
                pg.tx.defer(commit::PRUNE, Vec::new(), pruning, None)?;
            }
            // The marker's insert is the one statement every write runs:
            // it goes with the rows held for the commit, and COMMIT with
            // them, one round trip.
            pg.send_later_and_commit(&marker)
        };
        match ended {
            Ok(()) => Ok(()),
            Err(e) => {
                let e = crate::store::faulted(e);
                if crate::error::is_connection_lost(&e) {
                    // COMMIT may have been sent: the marker says.
                    self.settle_lost_commit(&marker, e)
                } else {
                    Err(e)
                }
            }
        }
    }
}

impl<'a> PgTx<'a> {
    /// A transaction on `client` that `begin` starts with its first
    /// statement.
    fn new(client: &'a mut Client, statements: &'a mut Statements, begin: &'static str) -> Self {
        PgTx {
            cursors: 0,
            tx: CachedTx::new(client, statements, begin),
            later: Vec::new(),
        }
    }

    /// Runs the transaction's function; an error of its BEGIN says that
    /// nothing of it ran (`begin_again`).
    fn within(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        match f(self) {
            Err(e) if self.tx.not_begun() => Err(e.context(NotBegun)),
            done => done,
        }
    }
}

/// BEGIN itself failed: nothing of the transaction ran.
#[derive(Debug)]
struct NotBegun;

impl std::fmt::Display for NotBegun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("starting a transaction")
    }
}

/// Connects and configures a session: a lock held past busy_timeout is
/// exit 75, as on SQLite.
fn connect(
    config: &Config,
    options: &OpenOptions,
    shown: &str,
) -> Result<(Client, commit::Session)> {
    let mut client = Client::connect(config).map_err(|e| {
        let Some(e) = e.downcast_ref::<tokio_postgres::Error>() else {
            return crate::error::CmdError::new(
                crate::error::ErrorKind::Runtime,
                format!("cannot connect to PostgreSQL at {shown}: {e:#}"),
            );
        };
        let detail = e
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_else(|| e.to_string());
        // A server full of connections refused us before anything changed:
        // like a busy SQLite file, safe to retry.
        let full = e.code() == Some(&tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS);
        let kind = if full {
            crate::error::ErrorKind::Busy
        } else {
            crate::error::ErrorKind::Runtime
        };
        let hint = if full {
            "nothing was changed; retry in a moment"
        } else {
            "check that the server runs and the URL (host, port, database, user) is right"
        };
        crate::error::CmdError::new(
            kind,
            format!("cannot connect to PostgreSQL at {shown}: {detail}"),
        )
        .with_hint(hint)
    })?;
    let millis = options.busy_timeout.as_millis();
    // No JIT: every statement here is short, and compiling one the planner
    // costs high (a cursor over a million tasks) took longer than running
    // it (`upcoming` at 1M tasks: 33 ms with JIT, 11 ms without).
    // How statements prepared once are planned (store::Plans). enable_seqscan
    // = off only rules a sequential scan out where an index serves: a table
    // without one is still read.
    let plans = match options.plans {
        Plans::EachExecution => "SET plan_cache_mode = force_custom_plan;",
        Plans::Kept => "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;",
    };
    let setup = if options.never_write {
        // Every transaction read-only, no statement longer than the wait.
        format!("SET lock_timeout = {millis}; SET statement_timeout = {millis}; SET jit = off; SET default_transaction_read_only = on; {plans}")
    } else {
        format!("SET lock_timeout = {millis}; SET statement_timeout = 0; SET jit = off; {plans}")
    };
    let session = commit::start_session(&mut client, &setup)?;
    Ok((client, session))
}

#[cfg(test)]
impl PgStore {
    /// Opens a session at `url` that plans as `plans` says.
    pub fn open_planning(url: &str, options: &OpenOptions, plans: Plans) -> Result<PgStore> {
        let options = OpenOptions {
            plans,
            ..options.clone()
        };
        PgStore::open(url, &options)
    }

    /// How many times the session's prepared statements that take
    /// parameters were run on a generic plan and on a plan of their own
    /// (`pg_prepared_statements`; one without parameters has one plan).
    pub fn plans_used(&mut self) -> Result<(i64, i64)> {
        let row = self.client.query_one(
            "SELECT coalesce(sum(generic_plans), 0)::BIGINT,
                    coalesce(sum(custom_plans), 0)::BIGINT
             FROM pg_prepared_statements WHERE cardinality(parameter_types) > 0",
            &[],
        )?;
        Ok((row.get(0), row.get(1)))
    }

    /// The plan this session would run its prepared statement whose text
    /// begins with `start` on next (EXPLAIN EXECUTE, every parameter NULL:
    /// a generic plan does not look at them).
    pub fn next_plan_of(&mut self, start: &str) -> Result<String> {
        let row = self.client.query_one(
            "SELECT name, cardinality(parameter_types) FROM pg_prepared_statements
             WHERE starts_with(ltrim(statement), $1)",
            &[&start],
        )?;
        let (name, parameters): (String, i32) = (row.get(0), row.get(1));
        let nulls = vec!["NULL"; parameters as usize].join(", ");
        let lines = self
            .client
            .simple_query(&format!("EXPLAIN EXECUTE {name}({nulls})"))?;
        Ok(lines
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// How many times this connection has sent requests and waited for
    /// their answers: its round trips.
    pub fn round_trips(&self) -> u64 {
        self.client.round_trips
    }

    /// Runs `sql` as it is, outside the store's own statements.
    pub fn run_sql(&mut self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql)?)
    }

    /// The first column of every row of `sql`, read as a number, outside
    /// the store's own statements.
    pub fn numbers(&mut self, sql: &str) -> Result<Vec<i64>> {
        let messages = self.client.simple_query(sql)?;
        messages
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("")),
                _ => None,
            })
            .map(|text| Ok(text.parse::<i64>()?))
            .collect()
    }
}

fn redact(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
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
        self.run_write(f)
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.run(BEGIN_READ, f)
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

    fn skips_locked_rows(&self) -> bool {
        true
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

    fn backup_to(&mut self, _path: &std::path::Path) -> Result<()> {
        // A server's database is backed up by the server's own tools, which
        // know its roles, its other schemas and its point-in-time recovery.
        Err(crate::error::CmdError::usage(
            "backup copies a SQLite store; a PostgreSQL database is backed up with pg_dump",
        )
        .with_hint("run `pg_dump` on the database (or `agentcron export > FILE`, which `import` reads back)")
        .into())
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.reconnect_if_closed()?;
        schema::current(&mut self.client).context("reading the schema version")
    }

    fn migrations(&self) -> &'static [&'static str] {
        schema::DESCRIPTIONS
    }

    fn migrate(&mut self, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()> {
        self.reconnect_if_closed()?;
        schema::migrate(&mut self.client, applied)?;
        // Statements prepared against the older tables are stale.
        self.statements.clear();
        Ok(())
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

impl PgTx<'_> {
    /// Hands `each` the rows of `sql` a page at a time through a cursor,
    /// with the transaction for the row's own queries between pages: memory
    /// holds one page however many rows match (a plain `query` holds them
    /// all). A cursor, not a protocol-level portal: PostgreSQL plans a cursor
    /// to return its first rows soon (`cursor_tuple_fraction`) and a portal
    /// to return all of them, which for `upcoming` (it stops after a few
    /// tasks) was a sort of every task of the tenant before the first row:
    /// 4.4 s at a million tasks. The cursor walks `tasks_listed` in order.
    fn each_pg_row(
        &mut self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        each: &mut EachRow<'_>,
    ) -> Result<()> {
        const PAGE: usize = 256;
        // Named by depth, should a row's callback read through another; the
        // texts repeat, so their prepared statements are reused (a FETCH's
        // only over the query it was first prepared for: its columns).
        let name = format!("agentcron_rows_{}", self.cursors);
        self.tx
            .execute(
                &format!("DECLARE {name} NO SCROLL CURSOR FOR {sql}"),
                params,
            )
            .context("starting a read")?;
        self.cursors += 1;
        let fetch = format!("FETCH {PAGE} FROM {name}");
        let read = (|| -> Result<()> {
            loop {
                let rows = self
                    .tx
                    .query_over(&fetch, sql, &[])
                    .context("reading rows")?;
                for row in &rows {
                    if each(self, row)?.is_break() {
                        return Ok(());
                    }
                }
                if rows.len() < PAGE {
                    return Ok(());
                }
            }
        })();
        self.cursors -= 1;
        read?;
        self.tx
            .execute(&format!("CLOSE {name}"), &[])
            .context("ending a read")?;
        Ok(())
    }
}
