//! `agentcron completions`: print a shell completion script.

use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Print the completion script for a shell
///
/// bash: `agentcron completions bash > ~/.local/share/bash-completion/completions/agentcron`;
/// zsh: `agentcron completions zsh > "${fpath[1]}/_agentcron"`;
/// fish: `agentcron completions fish > ~/.config/fish/completions/agentcron.fish`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn script(shell: Shell) -> Vec<u8> {
    let mut cmd = crate::cli::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "agentcron", &mut out);
    out
}

pub fn run(ctx: &crate::context::Ctx, args: CompletionsArgs) -> Result<()> {
    let text = String::from_utf8_lossy(&script(args.shell)).into_owned();
    ctx.out.line(text.trim_end())
}
