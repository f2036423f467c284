//! What a PostgreSQL error was, in the kinds `error.rs` distinguishes: the
//! one place that reads the driver's SQLSTATEs for the rest of the program.
//! `store::fault` puts what it finds on errors as they leave the store.

use tokio_postgres::error::SqlState;

use crate::error::{Fault, Violation};

/// The kind of `cause` when it is the driver's error of a kind that
/// matters to a caller; None for any other error.
pub fn fault(cause: &(dyn std::error::Error + 'static)) -> Option<Fault> {
    let e = cause.downcast_ref::<tokio_postgres::Error>()?;
    if e.is_closed() {
        return Some(Fault::ConnectionLost(Some(lost_words(e))));
    }
    let Some(code) = e.code() else {
        // No SQLSTATE: the socket itself failed.
        return e
            .as_db_error()
            .is_none()
            .then_some(Fault::ConnectionLost(None));
    };
    // Waiting on another host's lock past lock_timeout, or losing a
    // serialization race: nothing was changed, safe to retry.
    let busy = [
        SqlState::LOCK_NOT_AVAILABLE,
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
    ];
    if busy.contains(code) {
        return Some(Fault::Busy);
    }
    if *code == SqlState::DISK_FULL {
        return Some(Fault::DiskFull);
    }
    // Class 08 (connection exception) and 57P01-57P03 (shutdown, crash,
    // cannot connect now).
    if code.code().starts_with("08") || code.code().starts_with("57P0") {
        return Some(Fault::ConnectionLost(Some(lost_words(e))));
    }
    violation(e).map(|(kind, words)| Fault::Violation(kind, words))
}

/// How the connection was lost, in the server's words: its message and
/// SQLSTATE when it said why (a restart, an administrator's
/// pg_terminate_backend), else what the client saw.
fn lost_words(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{}: {}, SQLSTATE {}",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None => "the server closed it without a word".into(),
    }
}

/// The rule of the schema a write broke (class 23), with the server's
/// message and detail.
fn violation(e: &tokio_postgres::Error) -> Option<(Violation, String)> {
    let db = e.as_db_error()?;
    let kind = match db.code() {
        c if *c == SqlState::UNIQUE_VIOLATION => Violation::Duplicate,
        c if *c == SqlState::FOREIGN_KEY_VIOLATION => Violation::Orphan,
        c if c.code().starts_with("23") => Violation::Invalid,
        _ => return None,
    };
    let words = match db.detail() {
        Some(detail) => format!("{}: {detail}", db.message()),
        None => db.message().to_string(),
    };
    Some((kind, words))
}
