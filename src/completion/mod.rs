//! Dynamic shell completion (docs/CONTRACT.md §15): the shell calls back into
//! the binary (`COMPLETE=bash agentcron -- WORDS…`) and gets task names and
//! ids, run ids, zones and enumerated values, read from the database.
//!
//! clap_complete's engine parses the line and picks the argument; we add
//! three pieces it lacks:
//! - its value completers see only the word being completed, not the line,
//!   so `shells` reads `--db`, `--tenant` and `--as` off the words first and keeps
//!   them in `LINE` for `candidates` to open the store the command would;
//! - it offers a hidden flag when no visible one matches (`--n` → `--now`),
//!   so `shells` drops hidden candidates;
//! - its errors reach the terminal (bash does not redirect stderr), so
//!   `shells` swallows them: a completion prints candidates or nothing.

mod candidates;
mod shells;

use std::sync::OnceLock;

pub use candidates::profile_names;
pub use candidates::{days, run_statuses, runs_any, runs_parked, runs_running, runs_unknown};
pub use candidates::{draft_zones, identity_keys, task_states, tasks, tasks_or_runs, zones};

/// The environment variable that turns an invocation into a completion
/// request (clap_complete's convention).
const VAR: &str = "COMPLETE";

/// The name the registration scripts call: found on PATH like the command
/// the person types, so that the committed scripts are the same on every
/// machine.
const BIN: &str = "agentcron";

/// `--db`, `--tenant` and `--as` as written on the line being completed.
#[derive(Debug, Default, Clone)]
struct Line {
    db: Option<String>,
    tenant: Option<String>,
    /// The caller's keys: only tasks they own are offered, as only those
    /// can be named (`show` of another owner's task is denied).
    as_keys: Vec<String>,
}

static LINE: OnceLock<Line> = OnceLock::new();

/// Answers a completion request (`COMPLETE=SHELL` in the environment) and
/// exits; returns at once for every other invocation. Runs before anything
/// else reads the command line or prints. `command` is the whole command
/// line's definition (`Cli::command`), given by `main` so that completion,
/// which the subcommands' arguments use, does not import the root above them.
pub fn complete_if_requested(command: fn() -> clap::Command) {
    if std::env::var_os(VAR).is_none_or(|v| v.is_empty() || v == "0") {
        return;
    }
    let env = clap_complete::CompleteEnv::with_factory(command)
        .var(VAR)
        .bin(BIN)
        .completer(BIN)
        .shells(shells::SHELLS);
    let cwd = std::env::current_dir().ok();
    match env.try_complete(std::env::args_os(), cwd.as_deref()) {
        Ok(true) => std::process::exit(0),
        Ok(false) => {}
        // Only a registration request can fail here (an unknown shell, a
        // closed stdout): a person typed it, so say why.
        Err(err) => {
            crate::output::write_stderr(&format!(
                "agentcron: error: {VAR}: {}\n",
                err.to_string().trim_end()
            ));
            std::process::exit(2);
        }
    }
}

/// The registration script for `shell`: what `COMPLETE=SHELL agentcron`
/// prints, and `agentcron completions SHELL` too.
pub fn registration(shell: clap_complete::Shell) -> Vec<u8> {
    let name = shell.to_string();
    let completer = shells::SHELLS
        .completer(&name)
        .expect("every clap_complete::Shell has a dynamic completer");
    let mut out = Vec::new();
    completer
        .write_registration(VAR, BIN, BIN, BIN, &mut out)
        .expect("writing to a Vec cannot fail");
    out
}
