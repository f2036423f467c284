//! `tick --log FILE`: the tick's whole narrative, appended as timestamped
//! lines naming their tenant, for the operator who reads it later; stdout
//! stays for what needs a person (docs/CONTRACT.md §6, quiet under cron).
//!
//! A log that cannot be written must not stop the tick that is running
//! people's work: the first failed write is a warning, later lines are
//! dropped.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result};

pub struct LogFile {
    file: Option<File>,
    shown: String,
}

impl LogFile {
    /// Opens `path` for appending (created 0640 when new). Failing to open
    /// it is the tick's error, before it does anything.
    pub fn open(path: &Path) -> Result<LogFile> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o640)
            .open(path)
            .with_context(|| format!("cannot open the log {}", path.display()))?;
        Ok(LogFile {
            file: Some(file),
            shown: path.display().to_string(),
        })
    }

    /// Appends one line: `2026-12-04T09:30:00Z tenant=default text`. One
    /// write per line, so lines of ticks that overlap do not interleave.
    pub fn line(&mut self, at: i64, tenant: Option<&str>, text: &str) -> Option<String> {
        let file = self.file.as_mut()?;
        let line = format!(
            "{} tenant={} {}\n",
            crate::schedule::format_utc(at),
            tenant.unwrap_or("*"),
            text.replace('\n', " ")
        );
        match file.write_all(line.as_bytes()) {
            Ok(()) => None,
            Err(e) => {
                self.file = None;
                Some(format!(
                    "cannot write the log {}: {e}; the tick goes on without it",
                    self.shown
                ))
            }
        }
    }
}
