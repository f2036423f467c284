//! The binary: parse, build the context, dispatch, report, exit.

use clap::Parser;

fn main() {
    let cli = agentcron::cli::Cli::parse();
    let json = cli.global.json;
    let code = match agentcron::run(cli) {
        Ok(code) => code,
        Err(err) => agentcron::output::report_error(&err, json),
    };
    std::process::exit(code);
}
