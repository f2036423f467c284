//! Flag values several commands share: durations (`--lease 60s`), command
//! lines split by shell word rules (`--executor`, `--notifier`), the
//! notifier they describe, and how their children start (`--pass-env`,
//! `--run-as`). Each error names its flag (exit 2).

use std::time::Duration;

use anyhow::Result;
use clap::Args;

use crate::error::CmdError;
use crate::process::{environment, split_command, Launch, RunAs};
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
    launch: &Launch,
) -> Result<Option<Notifier>> {
    cmd.map(|c| {
        Ok(Notifier {
            argv: command_argv("--notifier", c)?,
            timeout,
            kill_grace,
            launch: launch.clone(),
        })
    })
    .transpose()
}

/// How the executor and the notifier start (docs/CONTRACT.md §19).
#[derive(Debug, Clone, Default, Args)]
pub struct LaunchArgs {
    /// Give the executor and notifier this variable of the environment too; repeatable
    ///
    /// A run receives only PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ and
    /// TMPDIR of this environment, and its own AGENTCRON_TENANT, _TASK_ID,
    /// _RUN_ID, _LEASE_TOKEN and _LEASE_ENDPOINT; never the store's location
    /// or credentials. Name what else it needs (an API key) here. AGENTCRON_*
    /// and PG* names are refused. From the environment: names separated by
    /// commas.
    #[arg(
        long = "pass-env",
        env = "AGENTCRON_PASS_ENV",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub pass_env: Vec<String>,

    /// Run the executor and notifier as the unix user USER
    ///
    /// With USER's HOME, USER, LOGNAME and groups, starting in /. As root the
    /// ids are set before exec; otherwise through `sudo -n -u USER`, which the
    /// rule `agentcron sudoers --run-as USER` prints must allow. A user that
    /// does not exist, or sudo that would ask for a password, exits 2 before
    /// anything is claimed. With the store 0600 of its owner, the run cannot
    /// open it.
    #[arg(long, value_name = "USER")]
    pub run_as: Option<String>,
}

impl LaunchArgs {
    /// The launch these flags describe, its environment read now.
    pub fn launch(&self) -> Result<Launch> {
        for name in &self.pass_env {
            if let Some(why) = environment::refused_pass(name) {
                return Err(CmdError::usage(why).into());
            }
        }
        let run_as = self
            .run_as
            .as_deref()
            .map(RunAs::lookup)
            .transpose()
            .map_err(CmdError::usage)?;
        Ok(Launch {
            env: crate::context::child_environment(&self.pass_env),
            run_as,
            cwd: None,
        })
    }

    /// The flags again, for a printed tick line.
    pub fn words(&self) -> Vec<String> {
        let mut words = Vec::new();
        for name in &self.pass_env {
            words.extend(["--pass-env".to_string(), name.clone()]);
        }
        if let Some(user) = &self.run_as {
            words.extend(["--run-as".to_string(), user.clone()]);
        }
        words
    }
}
