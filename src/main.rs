//! The binary: parse, build the context, dispatch, report, exit.

use clap::Parser;

fn main() {
    // A shell asking for candidates (COMPLETE=bash …) is answered and exits.
    agentcron::completion::complete_if_requested();
    let cli = match agentcron::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => std::process::exit(agentcron::output::report_parse_error(&err)),
    };
    let json = cli.global.json;
    let code = match agentcron::run(cli) {
        Ok(code) => code,
        Err(err) => agentcron::output::report_error(&err, json),
    };
    std::process::exit(code);
}
