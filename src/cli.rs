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
pub struct CommandLine<C: clap::Subcommand> {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: C,
}

/// The whole command line: every subcommand.
pub type Cli = CommandLine<Command>;

/// The command line with `tick` as its only subcommand: the same name,
/// version and global options, so what `tick` parses, prints and refuses
/// is the same.
type TickLine = CommandLine<TickOnly>;

#[derive(Debug, clap::Subcommand)]
enum TickOnly {
    Tick(crate::commands::tick::TickArgs),
}

impl Cli {
    /// Parses this process's command line, as `Parser::try_parse` would.
    pub fn try_parse_args() -> Result<Self, clap::Error> {
        Self::try_parse_args_from(std::env::args_os())
    }

    /// Parses `args` as the whole command line does. `agentcron tick …`,
    /// the line cron runs every minute, is parsed by a command holding only
    /// `tick`: building every subcommand's parser (and dropping it) was
    /// about a third of an idle tick's instructions (issue 46). Its result,
    /// its help and its errors are the whole parser's
    /// (`tick_is_parsed_as_the_whole_command_line_parses_it`).
    pub fn try_parse_args_from<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        if args.get(1).is_some_and(|a| a == "tick") {
            let TickLine { global, command } = TickLine::try_parse_from(args)?;
            let TickOnly::Tick(tick) = command;
            return Ok(Cli {
                global,
                command: Command::Tick(tick),
            });
        }
        Cli::try_parse_from(args)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `tick` parsed by `TickLine` is `tick` parsed by the whole command
    /// line: the same value, and the same help, version and refusals,
    /// word for word, with the same exit codes.
    #[test]
    fn tick_is_parsed_as_the_whole_command_line_parses_it() {
        let lines: &[&[&str]] = &[
            &["tick"],
            &["tick", "--jobs", "3", "--json", "--db", "/x/a.db"],
            &["tick", "--executor", "run it", "--notifier", "tell", "-v"],
            &["tick", "--dry-run", "--tenant", "a", "--as", "b,c"],
            &["tick", "--now", "2026-12-02T08:00:00Z", "--max-runs", "5"],
            &["tick", "--lease", "90s", "--host-jobs", "4"],
            &["tick", "--help"],
            &["tick", "-h"],
            &["tick", "--version"],
            &["tick", "-V"],
            &["tick", "--bogus"],
            &["tick", "--job", "3"],
            &["tick", "--jobs"],
            &["tick", "--jobs", "many"],
            &["tick", "--jobs", "0"],
            &["tick", "--lease", "soon"],
            &["tick", "extra"],
            &["tick", "--", "extra"],
            &["tick", "--dry-run", "--dry-run"],
        ];
        for line in lines {
            let argv: Vec<&str> = std::iter::once("agentcron")
                .chain(line.iter().copied())
                .collect();
            match (Cli::try_parse_args_from(&argv), Cli::try_parse_from(&argv)) {
                (Ok(alone), Ok(whole)) => {
                    assert_eq!(format!("{alone:?}"), format!("{whole:?}"), "{line:?}")
                }
                (Err(alone), Err(whole)) => {
                    assert_eq!(alone.kind(), whole.kind(), "{line:?}");
                    assert_eq!(alone.exit_code(), whole.exit_code(), "{line:?}");
                    assert_eq!(
                        alone.render().to_string(),
                        whole.render().to_string(),
                        "{line:?}"
                    );
                }
                (alone, whole) => panic!("{line:?}: alone {alone:?}, whole {whole:?}"),
            }
        }
    }

    /// Only `tick` itself takes the short way: a line that merely mentions
    /// it is the whole parser's.
    #[test]
    fn only_a_line_that_starts_with_tick_is_parsed_alone() {
        for argv in [
            vec!["agentcron", "--db", "/x/a.db", "tick"],
            vec!["agentcron", "help", "tick"],
            vec!["agentcron", "ticks"],
        ] {
            let alone = Cli::try_parse_args_from(&argv).map(|c| format!("{c:?}"));
            let whole = Cli::try_parse_from(&argv).map(|c| format!("{c:?}"));
            match (alone, whole) {
                (Ok(a), Ok(w)) => assert_eq!(a, w, "{argv:?}"),
                (Err(a), Err(w)) => assert_eq!(a.render().to_string(), w.render().to_string()),
                (a, w) => panic!("{argv:?}: alone {a:?}, whole {w:?}"),
            }
        }
    }
}
