//! `agentcron sudoers`: the one rule a tick that is not root needs for
//! `--run-as USER` (docs/CONTRACT.md §19.3). Every run (executor, gate,
//! notifier) starts under its supervisor as USER (`agentcron-supervise`
//! beside this binary, else `agentcron supervise`), which reads what to
//! run, and the run's environment, from its stdin; so the rule names
//! exactly that command, with no other argument, no wildcard and no SETENV
//! (which would let the tick's user set LD_PRELOAD for USER's programs).
//! A new executor, a gate or a notifier needs no new rule.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::parse_user;
use crate::context::Ctx;
use crate::error::CmdError;

/// Print the sudoers rule a tick needs to start its runs as USER without a password
///
/// For `tick --run-as USER` when the tick is not root: it starts every
/// executor, gate and notifier as `sudo -n -u USER -- SUPERVISOR`, the
/// supervisor of that run, and the rule allows exactly that command and no
/// argument (`agentcron-supervise` beside this binary, or this binary and
/// the word `supervise` where that is not installed), no SETENV. USER root is refused unless --allow-root. Check it with
/// `visudo -cf FILE`, install it 0440 under /etc/sudoers.d/ with the
/// file name printed (one per tick user and run user).
#[derive(Debug, Args)]
pub struct SudoersArgs {
    /// The user the runs execute as (the tick's --run-as)
    #[arg(long, value_name = "USER", value_parser = parse_user)]
    pub run_as: String,

    /// The user the tick runs as [default: the user running this command]
    #[arg(long, value_name = "NAME", value_parser = parse_user)]
    pub user: Option<String>,

    /// Print the rule for --run-as root, which gives every run root
    ///
    /// A run as root can read and write the store and every file of the
    /// host: there is no wall between the runs and the store any more.
    #[arg(long)]
    pub allow_root: bool,
}

pub fn sudoers(ctx: &mut Ctx, args: SudoersArgs) -> Result<()> {
    let (user, run_as) = (
        args.user
            .clone()
            .unwrap_or_else(crate::context::effective_user),
        &args.run_as,
    );
    let is_root = run_as == "root" || crate::accounts::uid_of(run_as) == Some(0);
    if is_root && !args.allow_root {
        return Err(CmdError::usage(format!(
            "--run-as {run_as}: runs as root would hold the store and the whole host"
        ))
        .with_hint(
            "name an unprivileged user that cannot read the store (useradd --system agent); \
             --allow-root prints the rule anyway",
        )
        .into());
    }
    // The supervisor's exact words: `agentcron-supervise` beside this
    // binary, else `agentcron supervise`, as the tick will start it.
    let words = crate::process::supervisor_words().map_err(anyhow::Error::msg)?;
    let mut command = sudoers_path(&words[0])?;
    for word in &words[1..] {
        command.push(' ');
        command.push_str(word);
    }
    // A command named without arguments would allow it any: `""` allows
    // none.
    if words.len() == 1 {
        command.push_str(" \"\"");
    }
    let rule = format!("{user} ALL=({run_as}) NOPASSWD: {command}");
    let file = format!("/etc/sudoers.d/{}", file_name(&user, run_as));
    let root_note = match is_root {
        true => format!(
            "# --allow-root: every run of this tick runs as {run_as}, uid 0: it can read and write\n\
             # the store and every file of this host. The wall between runs and the store is gone.\n"
        ),
        false => String::new(),
    };
    let text = format!(
        "# {file}\n\
         # Lets {user}'s `agentcron tick --run-as {run_as}` start each run (executor,\n\
         # gate, notifier) as {run_as} under its supervisor, without a password: this\n\
         # one command, nothing else. The run's program and environment reach the\n\
         # supervisor on its stdin, so sudo passes no variable; !use_pty keeps sudo\n\
         # from putting a terminal between the supervisor and the tick's socket.\n\
         # Check with `visudo -cf FILE`; install with\n\
         #   install -m 0440 FILE {file}\n\
         {root_note}\
         Defaults:{user} !use_pty\n\
         {rule}\n"
    );
    if ctx.out.json {
        return ctx
            .out
            .document(&json!({"path": file, "rule": rule, "text": text}));
    }
    ctx.out.line(text.trim_end())
}

/// `agentcron-TICKUSER-as-RUNUSER`: sudo skips a file in sudoers.d whose
/// name holds a `.` (or ends in `~`), so a `.` of a user name becomes `_`.
fn file_name(user: &str, run_as: &str) -> String {
    format!("agentcron-{user}-as-{run_as}").replace('.', "_")
}

/// A path as a sudoers command: its special characters backslashed; one
/// that sudoers would read as a wildcard, or cannot name at all, refused.
fn sudoers_path(path: &str) -> Result<String> {
    let unnameable = |c: char| {
        !c.is_ascii()
            || c.is_ascii_control()
            || matches!(c, '(' | ')' | '!' | '"' | '*' | '?' | '[' | ']')
    };
    if let Some(c) = path.chars().find(|&c| unnameable(c)) {
        return Err(CmdError::usage(format!(
            "the agentcron binary's path {path:?} holds {c:?}, which a sudoers rule cannot name \
             exactly"
        ))
        .with_hint("install agentcron at a plain path (/usr/local/bin/agentcron) and print the rule with it")
        .into());
    }
    Ok(path.chars().fold(String::new(), |mut out, c| {
        if matches!(c, '\\' | ',' | ':' | '=' | ' ' | '#') {
            out.push('\\');
        }
        out.push(c);
        out
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_holds_no_dot_sudo_would_skip() {
        assert_eq!(file_name("svc.ac", "agent"), "agentcron-svc_ac-as-agent");
        assert_eq!(file_name("svc", "agent"), "agentcron-svc-as-agent");
    }

    #[test]
    fn a_path_escapes_what_sudoers_reads_as_syntax() {
        assert_eq!(
            sudoers_path("/opt/a b,c:d=e#/agentcron").unwrap(),
            "/opt/a\\ b\\,c\\:d\\=e\\#/agentcron"
        );
        for path in [
            "/opt/a*/agentcron",
            "/opt/(x)/agentcron",
            "/opt/\u{e9}/agentcron",
        ] {
            assert!(sudoers_path(path).is_err(), "{path}");
        }
    }
}
