//! The artefacts that install this build: `agentcron crontab` and
//! `agentcron systemd` (how system cron or a systemd timer calls the tick),
//! and `agentcron sudoers` (the one rule a tick that is not root needs for
//! `--run-as USER`, docs/CONTRACT.md §19.3). One file per printed artefact;
//! what the two tick lines share is here and in `environment` (the
//! variables a line may carry: never a secret, docs/CONTRACT.md §13) and
//! `warnings` (what would make the line fail later, said now).

mod crontab;
mod environment;
mod sudoers;
mod systemd;
mod warnings;

use anyhow::{Context, Result};
use clap::Args;

pub use crontab::{crontab, CrontabArgs};
pub use sudoers::{sudoers, SudoersArgs};
pub use systemd::{systemd, SystemdArgs};

use crate::commands::flags::LaunchArgs;
use crate::context::Ctx;
use crate::error::CmdError;
use crate::store::Location;

/// A user name as systemd accepts it in `User=`.
fn parse_user(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    match valid {
        true => Ok(text.to_string()),
        false => Err(format!(
            "'{text}' is not a user name (letters, digits, _ - .)"
        )),
    }
}

/// The agentcron binary as the printed lines and rule name it: this one.
fn binary() -> Result<std::path::PathBuf> {
    std::env::current_exe().context("finding the agentcron binary")
}

/// What the tick line is made of besides its environment.
struct TickLine<'a> {
    executor: Option<&'a str>,
    notifier: Option<&'a str>,
    allow_password: bool,
    env_file: Option<&'a std::path::Path>,
    capacity: &'a Capacity,
    launch: &'a LaunchArgs,
}

/// How much the printed tick runs at once (`tick --jobs`, `--host-jobs`).
#[derive(Debug, Args)]
pub struct Capacity {
    /// The line's tick runs up to N executors of this store at once on this host
    ///
    /// `tick --jobs N --host-jobs N`: each tick claims new runs for 50 s
    /// (`--claim-for`), and ticks that overlap while slow runs go on share
    /// the N. A burst of B runs of S seconds starts within about B × S / N
    /// seconds (1,800 one-second runs: under 5 minutes at 8). For slow
    /// agents, size N by what the host and the agents' own rate limits
    /// bear, not by the burst.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
}

/// The absolute words of `agentcron --db DB tick [--executor …] [--notifier …]
/// [--env-file FILE] [launch flags]`.
fn tick_words(ctx: &Ctx, line: &TickLine) -> Result<Vec<String>> {
    for name in &line.launch.pass_env {
        if let Some(why) = crate::process::environment::refused_pass(name) {
            return Err(CmdError::usage(why).into());
        }
    }
    if let Some(user) = &line.launch.run_as {
        parse_user(user).map_err(|e| CmdError::usage(format!("--run-as: {e}")))?;
    }
    let db = match &ctx.location()? {
        Location::Sqlite(path) => std::path::absolute(path)
            .context("resolving the database path")?
            .display()
            .to_string(),
        Location::Postgres(url) if line.allow_password => url.clone(),
        Location::Postgres(url) if crate::store::postgres::password::has_password(url) => {
            return Err(CmdError::usage(
                "--db carries a password, which the printed line would put in every tick's \
                 argv (visible to every local user through ps)",
            )
            .with_hint(
                "drop it from the URL and keep it in ~/.pgpass (0600) of the tick's user, or \
                 write PGPASSWORD=… in a file only that user can read and pass --env-file FILE; \
                 --allow-password-in-argv prints it anyway",
            )
            .into());
        }
        Location::Postgres(url) => url.clone(),
    };
    let mut words = vec![binary()?.display().to_string(), "--db".into(), db];
    if let Some(tenant) = ctx.explicit_tenant() {
        words.extend(["--tenant".into(), tenant]);
    }
    words.push("tick".into());
    let jobs = line.capacity.jobs.to_string();
    words.extend(["--jobs".into(), jobs.clone(), "--host-jobs".into(), jobs]);
    for (flag, value) in [("--executor", line.executor), ("--notifier", line.notifier)] {
        if let Some(value) = value {
            words.extend([flag.to_string(), value.to_string()]);
        }
    }
    if let Some(file) = line.env_file {
        let file = std::path::absolute(file).context("resolving the --env-file path")?;
        words.extend(["--env-file".to_string(), file.display().to_string()]);
    }
    words.extend(line.launch.words());
    Ok(words)
}
