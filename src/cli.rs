//! The command line, as clap derive types: global options and one Args
//! struct per subcommand (each defined beside its handler in `commands/`).
//!
//! The `///` comments here are the user's documentation: they become
//! `--help`, the man pages and the shell completions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::commands;

/// Explicitly confirmed schedules for agent tasks, run by system cron, at most once.
///
/// Draft a schedule, check exactly what will run and its SHA-256 payload hash,
/// confirm it; system cron then runs `agentcron tick` every minute. Nothing runs
/// that a person did not confirm, nothing runs twice, and a run whose outcome is
/// uncertain is frozen as `unknown` for an operator to reconcile.
#[derive(Debug, Parser)]
#[command(
    name = "agentcron",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// The help heading of the options every subcommand takes, so that a
/// subcommand's own options stand apart from them in its `--help`.
pub const GLOBAL: &str = "Global options";

/// Options every subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db,
    /// else ~/.local/state/agentcron/agentcron.db]
    ///
    /// Created with mode 0600 in 0700 folders by the first command that writes
    /// (`draft`, `confirm`, `tick`, …); a command that only reads (`list`,
    /// `status`, `show`, …) exits 3 when the file does not exist. `:memory:` is
    /// refused.
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

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    Draft(commands::draft::DraftArgs),
    Confirm(commands::confirm::ConfirmArgs),
    List(commands::list::ListArgs),
    Show(commands::show::ShowArgs),
    Pause(commands::pause::PauseArgs),
    Resume(commands::resume::ResumeArgs),
    Delete(commands::delete::DeleteArgs),
    Trigger(commands::trigger::TriggerArgs),
    Next(commands::next::NextArgs),
    Upcoming(commands::upcoming::UpcomingArgs),
    Plan(commands::plan::PlanArgs),
    Apply(commands::plan::ApplyArgs),
    Runs(commands::runs::RunsArgs),
    Log(commands::log::LogArgs),
    Explain(commands::explain::ExplainArgs),
    Tick(commands::tick::TickArgs),
    Lease(commands::lease::LeaseArgs),
    Approve(commands::approve::ApproveArgs),
    Deny(commands::approve::DenyArgs),
    Reconcile(commands::reconcile::ReconcileArgs),
    Status(commands::status::StatusArgs),
    Prune(commands::prune::PruneArgs),
    Check(commands::check::CheckArgs),
    Backup(commands::backup::BackupArgs),
    Metrics(commands::metrics::MetricsArgs),
    Crontab(commands::install::CrontabArgs),
    Systemd(commands::install::SystemdArgs),
    Export(commands::transfer::ExportArgs),
    Import(commands::transfer::ImportArgs),
    Completions(commands::completions::CompletionsArgs),
}

impl Command {
    /// Whether this is `plan --detailed-exitcode`, whose every error exits 1.
    pub fn detailed_exitcode(&self) -> bool {
        matches!(self, Command::Plan(args) if args.detailed_exitcode)
    }
}

/// Whether a command line clap refused asked for `plan --detailed-exitcode`
/// (it cannot say which subcommand it got): then its error exits 1, not 2,
/// which a pipeline branching on that flag would read as "changes".
pub fn asks_detailed_exitcode(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    let args: Vec<_> = args.into_iter().skip(1).take_while(|a| a != "--").collect();
    args.iter().any(|a| a == "plan") && args.iter().any(|a| a == "--detailed-exitcode")
}
