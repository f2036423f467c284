//! `agentcron completions`: print a shell's registration script for the
//! dynamic completion in `crate::completion`.

use anyhow::Result;
use clap::Args;
use clap_complete::Shell;

/// Print the completion script for a shell
///
/// The script asks `agentcron` (on PATH) for candidates as you type: task
/// names and ids, run ids, zones and flag values, from the database the line
/// names (`--db`, else AGENTCRON_DB, else the default). The same script is
/// printed by `COMPLETE=SHELL agentcron`.
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
    crate::completion::registration(shell)
}

pub fn run(ctx: &crate::context::Ctx, args: CompletionsArgs) -> Result<()> {
    let text = String::from_utf8_lossy(&script(args.shell)).into_owned();
    ctx.out.line(text.trim_end())
}
