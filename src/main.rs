//! The binary: parse, build the context, dispatch, report, exit.

use clap::CommandFactory;

fn main() {
    // A run's supervisor (`agentcron supervise`, started by a tick) is the
    // binary's hot path: it skips the parser, the context and the store.
    if is_supervisor(std::env::args_os()) {
        agentcron::process::supervisor::main();
    }
    // A shell asking for candidates (COMPLETE=bash …) is answered and exits.
    agentcron::completion::complete_if_requested(<agentcron::cli::Cli as CommandFactory>::command);
    let cli = match agentcron::cli::Cli::try_parse_args() {
        Ok(cli) => cli,
        Err(err) => {
            let detailed = agentcron::cli::asks_detailed_exitcode(std::env::args_os());
            std::process::exit(agentcron::output::report_parse_error(&err, detailed))
        }
    };
    let json = cli.global.json;
    // Terraform's contract: 0 no changes, 2 changes, 1 any error.
    let detailed = cli.command.detailed_exitcode();
    let code = match agentcron::run(cli) {
        Ok(code) => code,
        Err(err) => agentcron::output::report_error_as(&err, json, detailed.then_some(1)),
    };
    std::process::exit(code);
}

/// Exactly `agentcron supervise`, as `process::Launch` starts it.
fn is_supervisor(mut args: std::env::ArgsOs) -> bool {
    let _program = args.next();
    args.next()
        .is_some_and(|a| a == agentcron::process::SUPERVISE)
        && args.next().is_none()
}
