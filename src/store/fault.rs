//! What a driver's error was, put on the error where it leaves the store:
//! each backend reads its own driver's errors (`sqlite::fault`,
//! `postgres::fault`) into the plain `error::Fault`, and `faulted` wraps
//! the error with what they found (`error::Faulted`), so that `error.rs`
//! classifies by the faults it finds and never names a driver or the store.
//! Every store `open` returns is a `Faulting` one: each of its entry points
//! is such a boundary.

use std::path::Path;

use anyhow::Result;

use super::{Store, Tx};
use crate::error::{Fault, Faulted};

/// What either driver says each cause of `err` was.
fn faults(err: &anyhow::Error) -> Vec<Fault> {
    err.chain()
        .filter_map(|cause| {
            super::sqlite::fault::fault(cause).or_else(|| super::postgres::fault::fault(cause))
        })
        .collect()
}

/// `err` with what its driver's error was on it, for `error.rs`.
pub fn faulted(err: anyhow::Error) -> anyhow::Error {
    let found = faults(&err);
    Faulted::attach(err, found)
}

/// A store whose errors carry their faults.
pub struct Faulting<S>(pub S);

impl<S: Store> Store for Faulting<S> {
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.0.write_dyn(f).map_err(faulted)
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.0.read_dyn(f).map_err(faulted)
    }

    fn write_relaxed_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.0.write_relaxed_dyn(f).map_err(faulted)
    }

    fn location(&self) -> String {
        self.0.location()
    }

    fn size_bytes(&mut self) -> Option<u64> {
        self.0.size_bytes()
    }

    fn server_time(&mut self) -> Option<i64> {
        self.0.server_time()
    }

    fn server_time_micros(&mut self) -> Option<i64> {
        self.0.server_time_micros()
    }

    fn skips_locked_rows(&self) -> bool {
        self.0.skips_locked_rows()
    }

    fn idle_note(&self) -> Option<crate::store::idle::IdleNote> {
        self.0.idle_note()
    }

    fn note_idle(&mut self, note: crate::store::idle::IdleNote) -> Result<()> {
        self.0.note_idle(note).map_err(faulted)
    }

    fn compact(&mut self) -> Result<()> {
        self.0.compact().map_err(faulted)
    }

    fn backup_to(&mut self, path: &Path) -> Result<()> {
        self.0.backup_to(path).map_err(faulted)
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.0.schema_version().map_err(faulted)
    }

    fn migrations(&self) -> &'static [&'static str] {
        self.0.migrations()
    }

    fn migrate(&mut self, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()> {
        self.0.migrate(applied).map_err(faulted)
    }
}

/// Whether `err` is a busy database (or agentcron's own refusal of kind
/// busy), as `error.rs` will say once it leaves the store: for the store's
/// own decisions before that.
pub fn is_busy(err: &anyhow::Error) -> bool {
    faults(err).contains(&Fault::Busy)
        || crate::error::classify(err).0 == crate::error::ErrorKind::Busy
}
