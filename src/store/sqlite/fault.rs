//! What a SQLite error was, in the kinds `error.rs` distinguishes: the one
//! place that reads rusqlite's error codes for the rest of the program.
//! `store::fault` puts what it finds on errors as they leave the store.

use rusqlite::ffi;
use rusqlite::ErrorCode;

use crate::error::{Fault, Violation};

/// The kind of `cause` when it is rusqlite's error of a kind that matters
/// to a caller; None for any other error.
pub fn fault(cause: &(dyn std::error::Error + 'static)) -> Option<Fault> {
    // rusqlite shows SQLite's numbered code behind its own message, as the
    // last cause of its error (`ffi::Error` has no source).
    if cause.is::<ffi::Error>() {
        return Some(Fault::Restatement);
    }
    let rusqlite::Error::SqliteFailure(code, message) = cause.downcast_ref::<rusqlite::Error>()?
    else {
        return None;
    };
    match code.code {
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Some(Fault::Busy),
        ErrorCode::DiskFull => Some(Fault::DiskFull),
        ErrorCode::ConstraintViolation => {
            let kind = match code.extended_code {
                ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                    Violation::Duplicate
                }
                ffi::SQLITE_CONSTRAINT_FOREIGNKEY => Violation::Orphan,
                _ => Violation::Invalid,
            };
            let words = message.clone().unwrap_or_else(|| code.to_string());
            Some(Fault::Violation(kind, words))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::error::{classify, sentence, BusyStep, ErrorKind, Step};

    /// A driver's failure as it leaves the store, after `contexts`.
    fn failure(code: i32, message: Option<&str>, contexts: &[&'static str]) -> anyhow::Error {
        let mut e = anyhow::Error::new(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(code),
            message.map(str::to_string),
        ));
        for c in contexts {
            e = e.context(*c);
        }
        // As the store's boundary puts it on (store/fault.rs), read here.
        let found = e.chain().filter_map(super::fault).collect();
        crate::error::Faulted::attach(e, found)
    }

    #[test]
    fn a_busy_database_is_busy_and_given_its_step() {
        let busy = failure(rusqlite::ffi::SQLITE_BUSY, None, &[]).busy_during("claiming due runs");
        assert_eq!(
            busy.downcast_ref::<Step>().map(|s| s.0),
            Some("claiming due runs")
        );
        assert_eq!(classify(&busy).0, ErrorKind::Busy);
    }

    #[test]
    fn a_sentence_leaves_out_the_numbered_code() {
        let sqlite = failure(
            rusqlite::ffi::SQLITE_CANTOPEN,
            Some("unable to open database file"),
            &["setting up the database /proc/version"],
        );
        assert_eq!(
            sentence(&sqlite),
            "setting up the database /proc/version: unable to open database file"
        );
    }

    #[test]
    fn a_full_disk_is_disk_full() {
        let full = failure(rusqlite::ffi::SQLITE_FULL, None, &["saving"]);
        assert!(crate::error::is_disk_full(&full));
        assert_eq!(classify(&full).0, ErrorKind::Runtime);
    }
}
