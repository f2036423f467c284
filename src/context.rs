//! The one place that reads the environment: it turns global options into a
//! `Ctx` every command receives.
//!
//! Time is handed down as one `Clock` value (`crate::clock`, the one place
//! that reads the system clock): the instant the invocation started (the
//! system's, or the one tests pin with `AGENTCRON_NOW`) moving on with the
//! monotonic clock, so a long tick still renews its leases in real seconds.
//! A handler asks it once (`let now = ctx.clock.now();`), so that a command
//! acts at one instant.
//!
//! On PostgreSQL the clock that matters is the server's (docs/CONTRACT.md §12):
//! the first connection measures how far the server's clock is from ours,
//! and from then on `Clock::now` is corrected by that offset, so every host
//! writes and judges lease and delivery deadlines by the same clock. A
//! pinned `AGENTCRON_NOW` stays an offset from this host's clock, applied to
//! the server's. `AGENTCRON_TEST_CLOCK_SKEW` (for tests only, undocumented
//! to users) shifts this process's view of its own clock, so that the
//! suite can play hosts whose clocks disagree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use crate::error::CmdError;
use crate::output::Output;
use crate::schedule::{self, Tz};
use crate::store::schema::Upgrade;
use crate::store::{self, shared::SharedStore, Location, OpenOptions, Store};

pub use crate::clock::Clock;

/// The help heading of the options every subcommand takes, so that a
/// subcommand's own options stand apart from them in its `--help`.
pub const GLOBAL: &str = "Global options";

/// Options every subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// The store: a SQLite file, or a `postgresql://` (or `postgres://`) URL
    /// [default: $XDG_STATE_HOME/agentcron/agentcron.db, else
    /// ~/.local/state/agentcron/agentcron.db]
    ///
    /// A file is created with mode 0600 in 0700 folders by `draft`,
    /// `plan`/`apply` or `import`; every other command (`tick` included)
    /// exits 3 when the file does not exist, so a mistyped path is never a
    /// new empty store. `:memory:` is refused. A URL names a database that
    /// exists (`postgresql://USER@HOST:PORT/DB`, a password from PGPASSWORD
    /// or ~/.pgpass, never in the URL on a command line others can read).
    #[arg(long, global = true, env = "AGENTCRON_DB", value_name = "PATH", help_heading = GLOBAL)]
    pub db: Option<PathBuf>,

    /// The tenant every command acts in [default: default]
    #[arg(long, global = true, env = "AGENTCRON_TENANT", value_name = "KEY", help_heading = GLOBAL)]
    pub tenant: Option<String>,

    /// The caller's identity key; repeat for several [default: unix:<login name>]
    ///
    /// A caller owns a task when one of its keys is among the task's owner keys.
    /// From the environment, several keys are separated by commas.
    #[arg(
        long = "as",
        global = true,
        env = "AGENTCRON_AS",
        value_name = "KEY",
        value_delimiter = ',',
        help_heading = GLOBAL
    )]
    pub as_keys: Vec<String>,

    /// Print machine-readable JSON; errors become one JSON object on stderr
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,

    /// A fixed "now" (RFC 3339 or unix seconds), for tests and simulations
    #[arg(
        long,
        global = true,
        env = "AGENTCRON_NOW",
        value_name = "TIME",
        hide = true
    )]
    pub now: Option<String>,
}

/// How to open the store: where it is and with which settings.
#[derive(Debug)]
pub struct StoreOpener {
    pub location: Location,
    pub options: OpenOptions,
    /// The clock a PostgreSQL server's clock corrects.
    pub clock: Clock,
}

impl StoreOpener {
    pub fn open(&self) -> Result<Box<dyn Store>> {
        let mut store = store::open(&self.location, &self.options)?;
        crate::clock::correct_by_server(&mut || store.server_time_micros(), &self.clock);
        Ok(store)
    }
}

/// Everything a command needs besides its own arguments.
pub struct Ctx {
    /// The one clock: `now()` for what a command does, `host_now()` for
    /// comparing this host with another machine.
    pub clock: Clock,
    pub tenant: String,
    /// The caller's keys in the order given (deduplicated); the first is the
    /// actor named in the audit trail and the default delivery target.
    pub identity: Vec<String>,
    /// The zone for drafts that name none.
    pub default_zone: Tz,
    /// Where the store is; None when there is no place for it (no --db,
    /// no HOME): an error for every command that opens it, not for one
    /// that never does (`lease check` inside a run).
    location: Option<Location>,
    pub out: Output,
    /// `AGENTCRON_RUN_ID`: set by the tick for what a run runs, so the
    /// commands that change schedules refuse (docs/CONTRACT.md §19).
    pub run_marker: Option<String>,
    busy_timeout: Duration,
    store: Option<Box<dyn Store>>,
    /// False for read-only commands: a missing SQLite file is "not found".
    create_store: bool,
    /// True for commands that only read: a store they may not write is
    /// opened read-only.
    read_only: bool,
    /// PGPASSWORD and the password file, for a URL without a password.
    postgres_password: store::postgres::password::PasswordSources,
    /// What opening does with a store at an older schema.
    upgrade: Upgrade,
    /// How a PostgreSQL session plans its statements (`plan_for_a_burst`).
    plans: store::Plans,
    tenant_given: bool,
    /// `--db` (or AGENTCRON_DB) was given, not the default location.
    db_given: bool,
    /// Global flags that a follow-up command (the confirm line) must repeat.
    followup: Vec<(&'static str, String)>,
    /// The words every command handed to a person begins with
    /// (docs/CONTRACT.md §17).
    confirm_prefix: Vec<String>,
}

impl Ctx {
    pub fn from_args(args: &GlobalArgs) -> Result<Ctx> {
        let host_skew = test_clock_skew()?;
        let pinned = match &args.now {
            Some(text) => Some(schedule::parse_instant(text).map_err(|e| {
                CmdError::usage(format!("--now / AGENTCRON_NOW: {}", e.message))
                    .with_hint("use RFC 3339 (2026-12-03T09:00:00Z) or unix seconds")
            })?),
            None => None,
        };
        let tenant = args.tenant.clone().unwrap_or_else(|| "default".to_string());
        crate::model::check_key("--tenant", &tenant)?;
        let mut identity: Vec<String> = Vec::new();
        for key in &args.as_keys {
            crate::model::check_key("--as", key)?;
            if !identity.contains(key) {
                identity.push(key.clone());
            }
        }
        let mut followup = Vec::new();
        if let Some(db) = &args.db {
            // Printed in commands to paste: never with a password.
            let shown = db.display().to_string();
            let shown = store::postgres::password::without_password(&shown);
            followup.push(("--db", shown));
        }
        if tenant != "default" {
            followup.push(("--tenant", tenant.clone()));
        }
        for key in &identity {
            followup.push(("--as", key.clone()));
        }
        if identity.is_empty() {
            identity.push(format!("unix:{}", login_name()));
        }
        Ok(Ctx {
            clock: Clock::start(pinned, host_skew),
            tenant_given: args.tenant.is_some(),
            db_given: args.db.is_some(),
            followup,
            confirm_prefix: confirm_prefix()?,
            tenant,
            identity,
            default_zone: default_zone()?,
            // A --db given must be one (a quoted `~` is refused at once); the
            // default may be missing (no HOME inside a run), which only a
            // command that opens the store then reports.
            location: match args.db.as_deref() {
                Some(db) => Some(location(Some(db))?),
                None => location(None).ok(),
            },
            out: Output::new(args.json),
            run_marker: std::env::var("AGENTCRON_RUN_ID")
                .ok()
                .filter(|id| !id.is_empty()),
            busy_timeout: busy_timeout()?,
            store: None,
            create_store: true,
            read_only: false,
            upgrade: Upgrade::Writer,
            plans: store::Plans::EachExecution,
            postgres_password: postgres_password()?,
        })
    }

    /// The store and the printer at once, for commands that report while
    /// they work.
    pub fn store_and_output(&mut self) -> Result<(&mut dyn Store, &Output)> {
        self.store()?;
        let store = self.store.as_deref_mut().expect("store was just opened");
        Ok((store, &self.out))
    }

    /// Whether the store was named (`--db` or AGENTCRON_DB): inside a run,
    /// where it is not, `lease check` asks the run's endpoint instead.
    pub fn db_given(&self) -> bool {
        self.db_given
    }

    /// The tenant when one was named (`--tenant` or AGENTCRON_TENANT); the
    /// tick serves every tenant otherwise.
    pub fn explicit_tenant(&self) -> Option<String> {
        self.tenant_given.then(|| self.tenant.clone())
    }

    /// Where the store is (`--db`, AGENTCRON_DB, else the default file).
    pub fn location(&self) -> Result<Location> {
        match &self.location {
            Some(location) => Ok(location.clone()),
            None => location(None),
        }
    }

    fn opener(&self) -> Result<StoreOpener> {
        Ok(StoreOpener {
            location: self.location()?,
            options: OpenOptions {
                busy_timeout: self.busy_timeout,
                create: self.create_store,
                read_only: self.read_only,
                never_write: false,
                postgres_password: self.postgres_password.clone(),
                upgrade: self.upgrade,
                plans: self.plans,
            },
            clock: self.clock,
        })
    }

    /// The tick's sessions keep their plans (`store::Plans::Kept`): they run
    /// the same few statements thousands of times; before the store is opened.
    pub fn plan_for_a_burst(&mut self) {
        debug_assert!(self.store.is_none(), "the store is already open");
        self.plans = store::Plans::Kept;
    }

    /// The store's password from `tick --env-file` (PGPASSWORD, PGPASSFILE),
    /// ahead of the environment's; before the store is opened.
    pub fn use_store_credentials(&mut self, password: Option<String>, file: Option<PathBuf>) {
        debug_assert!(self.store.is_none(), "the store is already open");
        if password.is_some() {
            self.postgres_password.password = password;
        }
        if file.is_some() {
            self.postgres_password.file = file;
        }
    }

    /// Makes `store()` refuse to create a missing database: for commands that
    /// only read or act on what exists, where an empty new file would only
    /// hide a mistyped `--db`.
    pub fn open_existing_store_only(&mut self) {
        self.create_store = false;
    }

    /// Whether `store()` may create a missing database: `agentcron mcp`
    /// lets only a draft create it, call by call.
    pub fn create_store_if_missing(&mut self, create: bool) {
        self.create_store = create;
    }

    /// Marks the command as one that only reads: besides never creating the
    /// store, it may open one it cannot write (a read-only file system).
    pub fn only_read_the_store(&mut self) {
        self.create_store = false;
        self.read_only = true;
        self.upgrade = Upgrade::Never;
    }

    /// Makes `store()` refuse a store at an older schema, on both stores,
    /// whether or not the command writes (`agentcron mcp`, whose read tools
    /// must not migrate).
    pub fn never_migrate(&mut self) {
        self.upgrade = Upgrade::Never;
    }

    /// Makes `store()` open a store at an older schema as it is, for
    /// `agentcron migrate` (which creates none) and `backup` (which copies
    /// it as it is, before a migration).
    pub fn open_any_schema(&mut self) {
        self.create_store = false;
        self.upgrade = Upgrade::Explicit;
    }

    /// Whether there may be a store to read: false only for a SQLite file
    /// that does not exist (yet).
    pub fn store_may_exist(&self) -> bool {
        match &self.location {
            _ if self.store.is_some() => true,
            Some(Location::Sqlite(path)) => path.exists(),
            Some(Location::Postgres(_)) => true,
            // No place for a store (no --db, no HOME): the command says so
            // when it needs one.
            None => false,
        }
    }

    /// The store, opened on first use so that commands which fail validation
    /// never touch (or create) the database.
    pub fn store(&mut self) -> Result<&mut dyn Store> {
        if self.store.is_none() {
            self.store = Some(self.opener()?.open()?);
        }
        Ok(self.store.as_deref_mut().expect("store was just opened"))
    }

    /// The store as one connection that threads share (the tick's workers,
    /// `approve --here`), taken out of the context: the command's own
    /// transactions go through it too.
    pub fn shared_store(&mut self) -> Result<SharedStore> {
        let opener = self.opener()?;
        let store = match self.store.take() {
            Some(store) => store,
            None => opener.open()?,
        };
        Ok(SharedStore::new(store, opener.location, opener.options))
    }

    /// Keeps every command to this context's tenant, also those that
    /// otherwise serve every tenant when none is named (`status`): for
    /// `agentcron mcp`, whose agent sees its person's tenant only.
    pub fn confine_to_tenant(&mut self) {
        self.tenant_given = true;
    }

    /// Readies the context for one tool call of `agentcron mcp`: a call
    /// prints nothing on stdout (the protocol's), and what it says on
    /// stderr (a row it cannot read, `status`'s warnings) it says as
    /// `--json` would, warnings as JSON lines. Its time it asks the clock,
    /// as every command does, however long the server has lived.
    pub fn begin_call(&mut self) {
        self.out = Output::new(true);
    }

    /// The global flags to repeat in a command we tell the person to run.
    pub fn flags_for_followup(&self) -> Vec<(&'static str, String)> {
        self.followup.clone()
    }

    /// The words every command handed to a person begins with, so that it
    /// works as printed: AGENTCRON_CONFIRM_PREFIX (split by shell word
    /// rules), else `sudo -u USER` when sudo runs this as USER for another.
    pub fn confirm_prefix(&self) -> &[String] {
        &self.confirm_prefix
    }

    /// `agentcron mcp --confirm-prefix` wins over the environment's.
    pub fn set_confirm_prefix(&mut self, words: Vec<String>) {
        self.confirm_prefix = words;
    }

    /// The actor recorded in audit events.
    pub fn actor(&self) -> &str {
        &self.identity[0]
    }

    /// The caller's keys, sorted and deduplicated, as stored in owner_keys.
    pub fn owner_keys(&self) -> Vec<String> {
        let mut keys = self.identity.clone();
        keys.sort();
        keys
    }
}

/// AGENTCRON_CONFIRM_PREFIX, else `sudo -u USER` when sudo runs this
/// process as USER for another (`Ctx::confirm_prefix`).
fn confirm_prefix() -> Result<Vec<String>> {
    if let Some(words) = env_text("AGENTCRON_CONFIRM_PREFIX")? {
        return shell_words::split(&words).map_err(|e| {
            CmdError::usage(format!("AGENTCRON_CONFIRM_PREFIX: {e}"))
                .with_hint("quote it as a shell would, e.g. 'sudo -u agentcron'")
                .into()
        });
    }
    let by = std::env::var("SUDO_USER").ok();
    let user = std::env::var("USER").ok();
    Ok(match (by, user) {
        (Some(by), Some(user)) if !user.is_empty() && by != user => {
            vec!["sudo".into(), "-u".into(), user]
        }
        _ => Vec::new(),
    })
}

/// `AGENTCRON_TEST_CLOCK_SKEW` ("-30s", "+2m", "30s"): how far this
/// process's clock is off, to play several hosts in one test. Test-only.
fn test_clock_skew() -> Result<i64> {
    let Some(text) = env_text("AGENTCRON_TEST_CLOCK_SKEW")? else {
        return Ok(0);
    };
    let (sign, magnitude) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(&text)),
    };
    // "0s" is a host whose clock is right; durations elsewhere are positive.
    if magnitude.trim_end_matches(['s', 'm', 'h']) == "0" {
        return Ok(0);
    }
    let seconds = schedule::parse_duration(magnitude)
        .map_err(|e| CmdError::usage(format!("AGENTCRON_TEST_CLOCK_SKEW: {}", e.message)))?;
    Ok(sign * seconds)
}

/// Where `--db` (or AGENTCRON_DB, already folded into `db` by clap) points,
/// else the default file under XDG_STATE_HOME or HOME.
pub fn location(db: Option<&Path>) -> Result<Location> {
    if let Some(path) = db {
        let text = path.to_string_lossy();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Location::Postgres(text.into_owned()));
        }
        // A quoted "~/x.db" (or AGENTCRON_DB='~/x.db') reaches us with its
        // tilde: the shell did not expand it, and a folder named "~" under
        // the working directory is never what was meant.
        if text.starts_with('~') {
            return Err(CmdError::usage(format!(
                "--db {} starts with a literal '~': the shell expands it only unquoted",
                crate::text::escape(&text)
            ))
            .with_hint("write the path without quotes around the ~, or use $HOME/…")
            .into());
        }
        return Ok(Location::Sqlite(path.to_path_buf()));
    }
    let state_home = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .ok_or_else(|| {
            CmdError::usage(
                "cannot find a place for the database: neither XDG_STATE_HOME nor HOME is set",
            )
            .with_hint("pass --db PATH or set AGENTCRON_DB")
        })?;
    Ok(Location::Sqlite(
        state_home.join("agentcron").join("agentcron.db"),
    ))
}

/// The variables of this process's environment a child gets: the
/// allowlist and the names passed (docs/CONTRACT.md §19).
pub fn child_environment(pass: &[String]) -> Vec<(String, String)> {
    crate::process::environment::select(std::env::vars_os(), pass)
}

/// What a profile's run may be given of this environment (docs/CONTRACT.md
/// §22): every UTF-8 variable but the names no run may have (the store's
/// location and credentials, the caller's identity); each run takes the
/// base allowlist and its profile's own names from it.
pub fn profile_environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| {
            crate::process::environment::inherited(k)
                || crate::process::environment::refused_pass(k).is_none()
        })
        .collect()
}

/// The run's lease endpoint (AGENTCRON_LEASE_ENDPOINT), inside a run.
pub fn lease_endpoint() -> Option<String> {
    std::env::var(crate::process::endpoint::VARIABLE)
        .ok()
        .filter(|v| !v.is_empty())
}

/// An environment variable, None when unset; a value that is not UTF-8 is
/// a usage error rather than silently ignored.
fn env_text(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(text) => Ok(Some(text)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(CmdError::usage(format!("{name} is not valid UTF-8")).into())
        }
    }
}

fn busy_timeout() -> Result<Duration> {
    match env_text("AGENTCRON_BUSY_TIMEOUT")? {
        Some(text) => {
            let seconds = schedule::parse_duration(&text)
                .map_err(|e| CmdError::usage(format!("AGENTCRON_BUSY_TIMEOUT: {}", e.message)))?;
            Ok(Duration::from_secs(seconds as u64))
        }
        None => Ok(Duration::from_secs(5)),
    }
}

/// AGENTCRON_TZ, else the system zone (TZ, then /etc/localtime), else UTC.
fn default_zone() -> Result<Tz> {
    if let Some(name) = env_text("AGENTCRON_TZ")? {
        return schedule::parse_zone(&name).map_err(|e| {
            CmdError::from(e)
                .with_hint("AGENTCRON_TZ must be an IANA zone name")
                .into()
        });
    }
    Ok(system_zone().unwrap_or(chrono_tz::UTC))
}

fn system_zone() -> Option<Tz> {
    if let Ok(tz) = std::env::var("TZ") {
        let name = tz.trim_start_matches(':');
        if let Ok(zone) = schedule::parse_zone(name) {
            return Some(zone);
        }
    }
    let target = std::fs::read_link("/etc/localtime").ok()?;
    let text = target.to_str()?;
    let name = text.rsplit_once("zoneinfo/").map(|(_, name)| name)?;
    schedule::parse_zone(name).ok()
}

/// This machine's name, as the hosts table records it: the kernel's, else
/// /etc/hostname's, else "unknown".
pub fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .map(|name| name.trim().to_string())
        .find(|name| !name.is_empty() && !name.chars().any(char::is_control))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The login name, for the default identity `unix:NAME`.
pub fn login_name() -> String {
    for var in ["LOGNAME", "USER"] {
        if let Ok(name) = std::env::var(var) {
            if crate::model::check_key("login name", &name).is_ok() {
                return name;
            }
        }
    }
    // SAFETY: getuid cannot fail.
    user_name(unsafe { libc::getuid() })
}

/// The user this process runs as (its effective uid): `sudo agentcron
/// systemd` is root's, whatever LOGNAME says.
pub fn effective_user() -> String {
    // SAFETY: geteuid cannot fail.
    user_name(unsafe { libc::geteuid() })
}

fn user_name(uid: libc::uid_t) -> String {
    // SAFETY: getpwuid returns a pointer into static storage that we copy
    // out of before any other libc call.
    unsafe {
        let pw = libc::getpwuid(uid);
        if !pw.is_null() && !(*pw).pw_name.is_null() {
            if let Ok(name) = std::ffi::CStr::from_ptr((*pw).pw_name).to_str() {
                return name.to_string();
            }
        }
        format!("uid{uid}")
    }
}

/// PGPASSWORD, and the password file libpq would read (PGPASSFILE, else
/// ~/.pgpass), for a PostgreSQL URL that carries no password.
fn postgres_password() -> Result<store::postgres::password::PasswordSources> {
    let file = match env_text("PGPASSFILE")? {
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")),
    };
    Ok(store::postgres::password::PasswordSources {
        password: env_text("PGPASSWORD")?.filter(|p| !p.is_empty()),
        file,
    })
}
