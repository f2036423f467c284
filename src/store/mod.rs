//! The persistence interface: one write or read transaction at a time, and
//! inside it operations named for what they do to the data.
//!
//! Commands, the tick and shell completion see only these traits; `sqlite`
//! and `postgres` implement them, and `shared` lets a tick's threads use one
//! connection. Each family's operations are written once over
//! `connection::Connection`, in the family's own module; a backend is its
//! driver and dialect: the row decoders are in `rows`, and each maps its driver's
//! errors to the kinds `error.rs` acts on (`fault`), put on every error that
//! leaves the store. Completion opens the store never to write
//! (`OpenOptions::never_writing`): no file created, no migration.
//! Every write runs inside `Store::write`, which SQLite opens with `BEGIN
//! IMMEDIATE` and PostgreSQL as a READ COMMITTED transaction; every state
//! change is a guarded UPDATE that returns a Conflict when its guard matches
//! no row.

pub mod budgets;
pub mod completion;
pub mod connection;
pub mod deliveries;
pub mod drafts;
pub mod events;
pub mod fault;
pub mod idle;
pub mod ids;
pub mod invariants;
pub mod maintenance;
pub mod memory;
pub mod meta;
#[cfg(test)]
mod migration_pins;
pub mod overdue;
pub mod owners;
pub mod postgres;
pub mod profiles;
pub mod queue;
pub mod row_decode;
pub mod rows;
pub mod runs;
pub mod schema;
pub mod shared;
pub mod sqlite;
pub mod tasks;
pub mod transfer;
pub mod zones;

use std::path::PathBuf;

use anyhow::Result;
use connection::Connection;

pub use budgets::{BudgetTx, BudgetWindow, UsageTotal};
pub use completion::CompletionTx;
pub use deliveries::{DeliveryTx, NoticeClaim, NoticeFinish, NoticeStart};
pub use drafts::DraftTx;
pub use events::{EventFilter, EventTx};
pub use ids::{IdTx, Ids};
pub use maintenance::{MaintenanceTx, PruneCounts, Stats, Tallies};
pub use memory::{LastSettled, MemoryTx, TaskMemory};
pub use meta::{Host, MetaTx};
pub use overdue::{Expecting, OverdueTx, SuccessClock, SuccessDue};
pub use profiles::{BoundTask, ProfileTx};
pub use queue::{Agenda, DueRead, DueRow, QueueMark, QueueStats, QueueTx, TaskToNote};
pub use runs::{Reconciliation, RunFilter, RunFinish, RunTx, UnknownPlace};
pub use tasks::{CorruptRow, DueTask, TaskAdvance, TaskFilter, TaskTransition, TaskTx, Trigger};
pub use transfer::TransferTx;
pub use zones::ZoneTx;

pub use fault::faulted;

/// Everything one transaction can do.
pub trait Tx:
    BudgetTx
    + DraftTx
    + TaskTx
    + RunTx
    + DeliveryTx
    + EventTx
    + MetaTx
    + MemoryTx
    + OverdueTx
    + MaintenanceTx
    + TransferTx
    + QueueTx
    + ZoneTx
    + ProfileTx
    + CompletionTx
    + IdTx
{
}
// Every family is implemented over a `Connection`, so every connection is
// a whole transaction's worth of operations.
impl<C: Connection> Tx for C {}

/// A database holding agentcron's state. `Send`, so that one connection
/// can serve every thread of a tick (see `shared`).
pub trait Store: Send {
    /// Runs `f` in one write transaction (IMMEDIATE on SQLite), committing only
    /// when it returns Ok. Prefer the typed `write` on `dyn Store`.
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// Runs `job` in a write transaction that may hold other threads' writes
    /// too, committed once for all (`shared::SharedStore`); returns once
    /// this write is committed. `job` may run more than once (its group
    /// rolled back because another write failed: it runs again alone).
    /// A store of one thread commits it alone.
    fn write_together_dyn(&mut self, mut job: SharedJob) -> Result<()> {
        self.write_dyn(&mut |tx| job(tx))
    }

    /// `write_together_dyn` for a write nothing waits on soon: it waits
    /// up to `within` for another thread's write to carry it in the same
    /// commit, then runs with whatever is queued. A store of one thread
    /// commits it at once.
    fn write_soon_dyn(&mut self, job: SharedJob, within: std::time::Duration) -> Result<()> {
        let _ = within;
        self.write_together_dyn(job)
    }

    /// Runs `f` in one read-only snapshot.
    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// Where the data lives, for messages and `status`.
    fn location(&self) -> String;

    /// Bytes the store occupies on disk, when that is known.
    fn size_bytes(&mut self) -> Option<u64>;

    /// The server's clock (unix seconds) when the store has one, for the
    /// skew check in `status`; None for a local file.
    fn server_time(&mut self) -> Option<i64>;

    /// The server's clock in microseconds, for correcting this host's clock
    /// (docs/CONTRACT.md §12); None for a local file.
    fn server_time_micros(&mut self) -> Option<i64> {
        None
    }

    /// Whether a claim may skip a due task's row that another session holds
    /// locked (PostgreSQL's SKIP LOCKED), so that a tick must note such
    /// work as seen (tick/queue.rs `note_locked`). A SQLite writer holds
    /// the whole file: nothing is ever skipped.
    fn skips_locked_rows(&self) -> bool {
        false
    }

    /// Runs `f` in one write transaction that need not reach the disk before
    /// it returns: bookkeeping that is harmless to lose in a power cut (a
    /// tick's heartbeat). SQLite's WAL then skips the fsync, and the next
    /// durable commit syncs those frames with its own; every other commit
    /// stays durable (`synchronous=FULL`). Stores without the choice commit
    /// as usual. One call, so that a store shared between threads never lets
    /// another thread's commit in while durability is relaxed.
    fn write_relaxed_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.write_dyn(f)
    }

    /// The last idle tick's note (`idle`), where the store keeps one:
    /// beside a SQLite file.
    fn idle_note(&self) -> Option<idle::IdleNote> {
        None
    }

    /// Leaves `note` for the next tick of a tick that found nothing to do
    /// at `note.at`, with what only the store can add: until when nothing
    /// is due, read under the write lock together with the store's files
    /// (`idle`). A store that keeps no note does nothing.
    fn note_idle(&mut self, note: idle::IdleNote) -> Result<()> {
        let _ = note;
        Ok(())
    }

    /// Gives the space of deleted rows back to the file system.
    fn compact(&mut self) -> Result<()>;

    /// Writes a consistent, self-contained copy of the store to `path` (a
    /// new file, 0600), whatever other processes are doing meanwhile.
    fn backup_to(&mut self, path: &std::path::Path) -> Result<()>;

    /// The schema version the store is at (docs/CONTRACT.md §21).
    fn schema_version(&mut self) -> Result<i64>;

    /// This build's migrations, one line each saying what it does: entry
    /// `i` takes the schema from version `i` to `i + 1`.
    fn migrations(&self) -> &'static [&'static str];

    /// Brings the schema to this build's, one transaction per step under the
    /// migration lock (another `migrate` waits for it, then finds less or
    /// nothing to do), calling `applied` with each version committed.
    fn migrate(&mut self, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()>;
}

/// A write `write_together_dyn` may hand to another thread to run.
pub type SharedJob = Box<dyn FnMut(&mut dyn Tx) -> Result<()> + Send>;

impl dyn Store + '_ {
    /// One write transaction returning a value, which may share its commit
    /// with other threads' writes (see `write_together_dyn`): `f` may run
    /// more than once, so it owns what it needs.
    pub fn write_together<T: Send + 'static>(
        &mut self,
        f: impl FnMut(&mut dyn Tx) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.write_within(std::time::Duration::ZERO, f)
    }

    /// `write_together` that may first wait up to `within` for another
    /// thread's write to carry it in the same commit (see
    /// `write_soon_dyn`); the caller still returns only once it committed.
    pub fn write_within<T: Send + 'static>(
        &mut self,
        within: std::time::Duration,
        mut f: impl FnMut(&mut dyn Tx) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let out = std::sync::Arc::new(std::sync::Mutex::new(None));
        let slot = std::sync::Arc::clone(&out);
        let job: SharedJob = Box::new(move |tx| {
            let value = f(tx)?;
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
            Ok(())
        });
        if within.is_zero() {
            self.write_together_dyn(job)?;
        } else {
            self.write_soon_dyn(job, within)?;
        }
        let value = out.lock().unwrap_or_else(|p| p.into_inner()).take();
        value.ok_or_else(|| anyhow::anyhow!("a shared write committed without its value"))
    }

    /// One write that may wait up to `within` to share another thread's
    /// commit (see `write_soon_dyn`); `f` may run more than once.
    pub fn write_soon(
        &mut self,
        within: std::time::Duration,
        f: impl FnMut(&mut dyn Tx) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.write_soon_dyn(Box::new(f), within)
    }

    /// One write transaction that need not reach the disk before it returns
    /// (see `write_relaxed_dyn`).
    pub fn write_relaxed<T>(&mut self, f: impl FnOnce(&mut dyn Tx) -> Result<T>) -> Result<T> {
        with_value(|tx| self.write_relaxed_dyn(tx), f)
    }

    /// One write transaction returning a value.
    pub fn write<T>(&mut self, f: impl FnOnce(&mut dyn Tx) -> Result<T>) -> Result<T> {
        with_value(|tx| self.write_dyn(tx), f)
    }

    /// One read transaction returning a value.
    pub fn read<T>(&mut self, f: impl FnOnce(&mut dyn Tx) -> Result<T>) -> Result<T> {
        with_value(|tx| self.read_dyn(tx), f)
    }
}

/// Runs `f` once through one of `Store`'s object-safe entry points (which
/// take a closure returning nothing) and hands back what it returned.
fn with_value<T>(
    transaction: impl FnOnce(&mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>,
    f: impl FnOnce(&mut dyn Tx) -> Result<T>,
) -> Result<T> {
    let mut f = Some(f);
    let mut out = None;
    transaction(&mut |tx| {
        let f = f.take().expect("transaction closure runs once");
        out = Some(f(tx)?);
        Ok(())
    })?;
    Ok(out.expect("transaction closure produced a value"))
}

/// Where `--db` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

/// As printed: a PostgreSQL URL never shows its password (`ps`, a pasted
/// command line, a crontab all show what is printed).
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&postgres::password::without_password(url)),
        }
    }
}

/// Opens the store at `location`, creating or migrating it when the options
/// allow (`schema::on_open`).
pub fn open(location: &Location, options: &OpenOptions) -> Result<Box<dyn Store>> {
    let opened: Result<Box<dyn Store>> = match location {
        Location::Sqlite(path) => sqlite::SqliteStore::open(path, options)
            .map(|s| Box::new(fault::Faulting(s)) as Box<dyn Store>),
        Location::Postgres(url) => postgres::PgStore::open(url, options)
            .map(|s| Box::new(fault::Faulting(s)) as Box<dyn Store>),
    };
    opened.map_err(faulted)
}

/// The note beside the store at `location`, when it lets a tick `asked`
/// at `now` end without opening the store (`sqlite::idle::glance`);
/// `rest_for`: how long after the store's own record of a tick the ticks
/// after it may rest. A PostgreSQL store keeps no note.
pub fn glance_idle(
    location: &Location,
    now: i64,
    asked: &idle::Asked<'_>,
    rest_for: i64,
) -> Option<idle::IdleNote> {
    match location {
        Location::Sqlite(path) => sqlite::idle::glance(path, now, asked, rest_for),
        Location::Postgres(_) => None,
    }
}

/// Replaces the note beside the store at `location` (a tick that ended at
/// `glance_idle`'s word records itself there).
pub fn keep_idle_note(location: &Location, note: &idle::IdleNote) -> anyhow::Result<()> {
    match location {
        Location::Sqlite(path) => sqlite::idle::write_note(path, note),
        Location::Postgres(_) => Ok(()),
    }
}

/// Connection settings shared by every backend.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// How long to wait for another writer before giving up with exit 75.
    pub busy_timeout: std::time::Duration,
    /// Whether a store may be created where there is none: a missing SQLite
    /// file (and its folders), a 0-byte one, or agentcron's tables in a
    /// PostgreSQL schema without them (agentcron never creates the database
    /// itself). Only the commands that create stores pass true, so that a
    /// mistyped `--db` reports "no store" instead of leaving an empty one
    /// behind (`schema::on_open`).
    pub create: bool,
    /// The command only reads: a SQLite store on a read-only file system (or
    /// in a folder this user cannot write) is then opened read-only.
    pub read_only: bool,
    /// Nothing may change, not even to open: only an existing store already
    /// at this build's schema is opened (no file created, no migration, no
    /// `-wal`/`-shm` set up or WAL switch on SQLite; read-only transactions
    /// on PostgreSQL), and `busy_timeout` bounds connecting and every
    /// statement too. Anything else is an error. For shell completion
    /// (`never_writing`), which must not write or wait.
    pub never_write: bool,
    /// Where a PostgreSQL URL without a password finds one (`PGPASSWORD`,
    /// the password file), as the environment gave them.
    pub postgres_password: postgres::password::PasswordSources,
    /// What to do with a store at an older schema (`schema::on_open`).
    pub upgrade: schema::Upgrade,
    /// How a PostgreSQL session plans the statements it prepares.
    pub plans: Plans,
}

/// How a PostgreSQL session plans the statements it prepares once and runs
/// many times (store/postgres/statements.rs). After five executions the
/// server may keep one generic plan, costed on the tables as they were
/// then: one made while `runs` was empty scans it whole at every lookup by
/// run id once it holds thousands (a sequential scan beats an index on one
/// page). SQLite plans a statement when it is prepared: it ignores this.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Plans {
    /// A plan for each execution: a command's session runs a statement a
    /// few times, and its reads may be best served by scanning a table.
    #[default]
    EachExecution,
    /// A tick draining a burst: its statements are written for indexes, so
    /// sequential scans are ruled out (where an index serves) and each
    /// statement runs on one generic plan, made at its first execution,
    /// whatever the tables held then. Planning each execution was half of
    /// the server's time a run (2,000 runs: 2.6 s of 5.5 s). The server is
    /// told to (`force_generic_plan`): left to choose, it planned the claim
    /// at every execution (a generic plan it costed higher), 1 ms of CPU a
    /// claim. So a statement a tick runs must have no plan that walks a
    /// table at every execution, whatever the tables held when it was made
    /// (`queue::due_rows` fences its lookups by key).
    Kept,
}

impl OpenOptions {
    /// The options of a caller that reads a few rows and must never change
    /// the store, create it or wait longer than `wait` (shell completion).
    pub fn never_writing(wait: std::time::Duration) -> OpenOptions {
        OpenOptions {
            busy_timeout: wait,
            create: false,
            read_only: true,
            never_write: true,
            upgrade: schema::Upgrade::Never,
            ..Default::default()
        }
    }
}
