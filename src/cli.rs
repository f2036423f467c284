//! The command line's root: `Cli`, the global options (`context::GlobalArgs`)
//! and the subcommands (`commands::Command`, each Args struct beside its
//! handler). The top of the crate: nothing below imports it.
//!
//! The `///` comments are the user's documentation: they become `--help`,
//! the man pages and the shell completions.

use clap::Parser;

pub use crate::commands::Command;
pub use crate::context::GlobalArgs;

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
    long_version = long_version(),
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// What `--version` prints after the name: the crate version, the schema
/// each store is written at (docs/CONTRACT.md §21) and the commit built.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{}
schema: SQLite {}, PostgreSQL {}
build: {}",
            env!("CARGO_PKG_VERSION"),
            crate::store::sqlite::schema::LATEST,
            crate::store::postgres::schema::LATEST,
            option_env!("AGENTCRON_COMMIT").unwrap_or("unknown")
        )
    })
}

/// Whether a command line clap refused asked for `plan --detailed-exitcode`
/// (it cannot say which subcommand it got): then its error exits 1, not 2,
/// which a pipeline branching on that flag would read as "changes".
pub fn asks_detailed_exitcode(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    let args: Vec<_> = args.into_iter().skip(1).take_while(|a| a != "--").collect();
    args.iter().any(|a| a == "plan") && args.iter().any(|a| a == "--detailed-exitcode")
}
