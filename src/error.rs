//! Typed leaf errors and their exit codes (docs/CONTRACT.md §10).
//!
//! Everything else travels as `anyhow::Error` with context; `main` finds the
//! first `CmdError` in the chain (or a busy database) and maps it to the
//! exit code. What a driver's error was is each store's to say: it puts a
//! `Fault` on the error where it leaves the store (`Faulted`), so this file
//! stands below the store and names none. A command never exits the
//! process itself. Also here, the
//! reading of an error that does not depend on a command: the one-line
//! sentence it is reported as, and the schema constraint a write broke.

use std::fmt;

/// The classes of failure a caller can act on differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad flag or value (exit 2).
    Usage,
    /// Task, draft or run not found (exit 3).
    NotFound,
    /// Not an owner, or another tenant (exit 4).
    Denied,
    /// Stale revision, wrong state, already claimed, lease lost (exit 5).
    Conflict,
    /// Draft expired or payload hash mismatch (exit 6).
    DraftRejected,
    /// Database busy past busy_timeout; nothing changed (exit 75).
    Busy,
    /// A PostgreSQL store at an older schema than this build writes, which
    /// only `agentcron migrate` upgrades; nothing changed (exit 78).
    SchemaBehind,
    /// Runtime failure that still deserves a hint (exit 1).
    Runtime,
}

impl ErrorKind {
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Runtime => 1,
            ErrorKind::Usage => 2,
            ErrorKind::NotFound => 3,
            ErrorKind::Denied => 4,
            ErrorKind::Conflict => 5,
            ErrorKind::DraftRejected => 6,
            ErrorKind::Busy => 75,
            ErrorKind::SchemaBehind => 78,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Runtime => "runtime",
            ErrorKind::Usage => "usage",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Denied => "denied",
            ErrorKind::Conflict => "conflict",
            ErrorKind::DraftRejected => "draft_rejected",
            ErrorKind::Busy => "busy",
            ErrorKind::SchemaBehind => "schema_behind",
        }
    }
}

/// A classified error with a message and an optional hint on how to mend it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

impl CmdError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CmdError {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Denied, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, message)
    }

    pub fn draft_rejected(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::DraftRejected, message)
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CmdError {}

impl From<crate::schedule::ScheduleError> for CmdError {
    fn from(e: crate::schedule::ScheduleError) -> Self {
        CmdError {
            kind: ErrorKind::Usage,
            message: e.message,
            hint: e.hint,
        }
    }
}

/// The step of a command that was under way when the database was busy,
/// attached by `BusyStep::busy_during`. A busy database is reported in one
/// line (docs/CONTRACT.md §10); the step is what that line names, so an operator
/// can tell which of a tick's transactions waited.
#[derive(Debug, Clone, Copy)]
pub struct Step(pub &'static str);

/// Names the step of a busy error; any other error is left as it is, so its
/// message stays the one line that says what went wrong.
pub trait BusyStep {
    fn busy_during(self, step: &'static str) -> Self;
}

impl BusyStep for anyhow::Error {
    fn busy_during(self, step: &'static str) -> Self {
        if classify(&self).0 == ErrorKind::Busy {
            self.context(Step(step))
        } else {
            self
        }
    }
}

impl<T> BusyStep for anyhow::Result<T> {
    fn busy_during(self, step: &'static str) -> Self {
        self.map_err(|e| e.busy_during(step))
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Shorthand for returning a classified error from a function yielding `anyhow::Result`.
pub fn fail<T>(e: CmdError) -> anyhow::Result<T> {
    Err(anyhow::Error::new(e))
}

/// What a store's driver says a failure was. Each backend reads its own
/// driver's errors and puts what it found on the error where it leaves the
/// store (`Faulted`); the functions below find it there, so this file names
/// no driver and no store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Waiting on another's lock past the timeout, or losing a
    /// serialization race: nothing was changed, safe to retry (exit 75).
    Busy,
    /// The disk (or quota) holding the database ran out of space.
    DiskFull,
    /// The connection to the database went away (a server restarting):
    /// worth reconnecting for, unlike a damaged file. With the server's
    /// words on how, when it said (see `connection_loss`).
    ConnectionLost(Option<String>),
    /// A write refused by a rule of the schema, in the database's words.
    Violation(Violation, String),
    /// The error's last cause only repeats, as a code, the message of the
    /// one above it (SQLite's numbered code: its driver shows both).
    Restatement,
}

/// An error that left a store, with what its driver's error was. It says
/// what the error it wraps says, and its causes are that error's causes,
/// so the chain reads as before; only the faults are added.
#[derive(Debug)]
pub struct Faulted {
    faults: Vec<Fault>,
    error: anyhow::Error,
}

impl Faulted {
    /// `error` with `faults` on it; as it is when there are none, or when a
    /// store already said (an inner store's boundary).
    pub fn attach(error: anyhow::Error, faults: Vec<Fault>) -> anyhow::Error {
        if faults.is_empty() || faults_of(&error).next().is_some() {
            return error;
        }
        anyhow::Error::new(Faulted { faults, error })
    }
}

impl fmt::Display for Faulted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The outermost message only, as anyhow shows each cause.
        write!(f, "{}", self.error)
    }
}

impl std::error::Error for Faulted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.chain().nth(1)
    }
}

/// The faults a store put on `err`.
fn faults_of(err: &anyhow::Error) -> impl Iterator<Item = &Fault> {
    err.chain()
        .filter_map(|c| c.downcast_ref::<Faulted>())
        .flat_map(|f| f.faults.iter())
}

/// The causes of `err` as they were before a store put its faults on it:
/// each `Faulted` stands for the error it wraps (its outermost cause).
pub fn causes(err: &anyhow::Error) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    err.chain().map(|c| match c.downcast_ref::<Faulted>() {
        Some(f) => f.error.chain().next().unwrap_or(c),
        None => c,
    })
}

/// The classification `main` reports: the first `CmdError` in the chain, a
/// busy database anywhere in it, or a plain runtime failure.
pub fn classify(err: &anyhow::Error) -> (ErrorKind, Option<&CmdError>) {
    if let Some(e) = causes(err).find_map(|c| c.downcast_ref::<CmdError>()) {
        return (e.kind, Some(e));
    }
    if faults_of(err).any(|f| *f == Fault::Busy) {
        return (ErrorKind::Busy, None);
    }
    (ErrorKind::Runtime, None)
}

/// Whether the error is the disk (or quota) holding the database running
/// out of space: the store's driver says so, or a file said ENOSPC/EDQUOT.
pub fn is_disk_full(err: &anyhow::Error) -> bool {
    let full_file = causes(err).any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)))
    });
    full_file || faults_of(err).any(|f| *f == Fault::DiskFull)
}

/// The error and its causes as one sentence for the one error line
/// (docs/CONTRACT.md §10): the context, then each cause that adds words, joined by
/// ": ". Left out: a cause that restates the one above it as a code
/// (`Fault::Restatement`), a cause the sentence already says (PostgreSQL's "db error:
/// FATAL: …" and then "FATAL: …"), and line breaks inside a cause.
pub fn sentence(err: &anyhow::Error) -> String {
    let mut line = String::new();
    let restated = faults_of(err).any(|f| *f == Fault::Restatement);
    let last = err.chain().count() - 1;
    for (n, cause) in err.chain().enumerate() {
        if !line.is_empty() && restated && n == last {
            continue;
        }
        let text = cause.to_string();
        let text: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let text = text.join("; ");
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Which rule of the schema a write broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// A second row with the same key (primary key or unique index).
    Duplicate,
    /// A row referring to one that is not there (foreign key).
    Orphan,
    /// A missing or impossible value (NOT NULL, CHECK).
    Invalid,
}

/// Whether the error is a write refused by a constraint of the schema, on
/// either store, with the database's own words for it.
pub fn constraint_violation(err: &anyhow::Error) -> Option<(Violation, String)> {
    faults_of(err).find_map(|fault| match fault {
        Fault::Violation(kind, words) => Some((*kind, words.clone())),
        _ => None,
    })
}

/// A lost connection could not be opened again yet (a server still
/// restarting): to the caller, the connection is still lost. It names how
/// the connection was lost (`connection_loss`), which the error of the new
/// connection does not say.
#[derive(Debug)]
pub struct StillDisconnected(pub String);

impl fmt::Display for StillDisconnected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the connection to the database was lost ({}) and could not be opened again",
            self.0
        )
    }
}

/// How a connection was lost, in the server's words: its message and
/// SQLSTATE when it said why (a restart, an administrator's
/// pg_terminate_backend), else what the client saw.
pub fn connection_loss(err: &anyhow::Error) -> String {
    if let Some(still) = err.downcast_ref::<StillDisconnected>() {
        return still.0.clone();
    }
    let found = faults_of(err).find_map(|fault| match fault {
        Fault::ConnectionLost(words) => Some(words.clone()),
        _ => None,
    });
    found.flatten().unwrap_or_else(|| sentence(err))
}

impl std::error::Error for StillDisconnected {}

/// Whether the error is the database connection going away (a PostgreSQL
/// server restarting): worth reconnecting for, unlike a damaged file.
pub fn is_connection_lost(err: &anyhow::Error) -> bool {
    // A context, so found by the error's own downcast (through any
    // contexts added above it), not among the chain's causes.
    if err.downcast_ref::<StillDisconnected>().is_some() {
        return true;
    }
    faults_of(err).any(|fault| matches!(fault, Fault::ConnectionLost(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_busy_error_is_given_its_step() {
        let busy = anyhow::Error::new(CmdError::new(ErrorKind::Busy, "database is locked"))
            .busy_during("claiming due runs");
        assert_eq!(
            busy.downcast_ref::<Step>().map(|s| s.0),
            Some("claiming due runs")
        );
        assert_eq!(classify(&busy).0, ErrorKind::Busy);
        let conflict = anyhow::Error::new(CmdError::conflict("stale")).busy_during("claiming");
        assert!(conflict.downcast_ref::<Step>().is_none());
        assert_eq!(conflict.to_string(), "stale");
    }

    #[test]
    fn exit_codes_follow_the_spec() {
        assert_eq!(ErrorKind::Usage.exit_code(), 2);
        assert_eq!(ErrorKind::NotFound.exit_code(), 3);
        assert_eq!(ErrorKind::Denied.exit_code(), 4);
        assert_eq!(ErrorKind::Conflict.exit_code(), 5);
        assert_eq!(ErrorKind::DraftRejected.exit_code(), 6);
        assert_eq!(ErrorKind::Busy.exit_code(), 75);
    }

    #[test]
    fn a_failed_reconnection_is_still_a_lost_connection_and_keeps_its_exit_code() {
        let refused = anyhow::Error::new(CmdError::new(ErrorKind::Busy, "server full"))
            .context(StillDisconnected("FATAL: the end, SQLSTATE 57P01".into()))
            .context("recording the outcome");
        assert!(is_connection_lost(&refused));
        assert_eq!(classify(&refused).0, ErrorKind::Busy);
        assert!(!is_connection_lost(&anyhow::anyhow!("disk on fire")));
    }

    #[test]
    fn a_sentence_is_the_chain_without_repeats_or_codes() {
        let repeated = anyhow::anyhow!("FATAL: terminating connection\nDETAIL: by an admin")
            .context("db error: FATAL: terminating connection; DETAIL: by an admin")
            .context("recording the outcome");
        assert_eq!(
            sentence(&repeated),
            "recording the outcome: db error: FATAL: terminating connection; DETAIL: by an admin"
        );
        assert_eq!(sentence(&anyhow::anyhow!("plain")), "plain");
    }

    #[test]
    fn classify_finds_a_wrapped_cmd_error() {
        let err = anyhow::Error::new(CmdError::conflict("stale")).context("pausing task");
        assert_eq!(classify(&err).0, ErrorKind::Conflict);
        let plain = anyhow::anyhow!("disk on fire");
        assert_eq!(classify(&plain).0, ErrorKind::Runtime);
    }
}
