//! Flag values several commands share: durations (`--lease 60s`), command
//! lines split by shell word rules (`--executor`, `--notifier`), and the
//! notifier they describe. Each error names its flag (exit 2).

use std::time::Duration;

use anyhow::Result;

use crate::error::CmdError;
use crate::process::split_command;
use crate::schedule;
use crate::tick::Notifier;

/// A duration flag (`30s`, `5m`, `2h`, `1d`) as a `Duration`.
pub fn duration(flag: &str, text: &str) -> Result<Duration> {
    let seconds = schedule::parse_duration(text)
        .map_err(|e| CmdError::usage(format!("{flag}: {}", e.message)))?;
    Ok(Duration::from_secs(seconds as u64))
}

/// A command flag split into argv; never empty.
pub fn command_argv(flag: &str, text: &str) -> Result<Vec<String>> {
    let argv = split_command(text).map_err(|e| CmdError::usage(format!("{flag}: {e}")))?;
    if argv.is_empty() {
        return Err(CmdError::usage(format!("{flag} is empty")).into());
    }
    Ok(argv)
}

/// The notifier for a command line, when one is configured.
pub fn notifier_from(
    cmd: Option<&str>,
    timeout: Duration,
    kill_grace: Duration,
) -> Result<Option<Notifier>> {
    cmd.map(|c| {
        Ok(Notifier {
            argv: command_argv("--notifier", c)?,
            timeout,
            kill_grace,
        })
    })
    .transpose()
}
