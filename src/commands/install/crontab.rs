//! `agentcron crontab`: the crontab line that runs the tick every minute.
//! Cron sets neither the XDG variables nor the caller's environment, so the
//! line carries an absolute binary, an absolute `--db`, the executor and
//! notifier in force now, and the environment they need: `--env KEY=VALUE`
//! (never a secret) and a PATH that holds the binary's folder (an executor
//! calls `agentcron lease check`).

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::environment::{environment, parse_env, refuse_secrets};
use super::{tick_words, warnings, Capacity, TickLine};
use crate::commands::flags::LaunchArgs;
use crate::context::Ctx;

/// Print the crontab line that runs `agentcron tick` every minute
///
/// Warns (exit 0) when the executor or notifier program is missing, not
/// executable or relative, or the --env-file is not the tick's own: the
/// line may be meant for another host or printed before they are
/// installed, but as it stands every tick would fail. In JSON mode:
/// `{"line": …}` on stdout, each warning a JSON line on stderr.
#[derive(Debug, Args)]
pub struct CrontabArgs {
    /// The executor the tick runs [default: $AGENTCRON_EXECUTOR]
    #[arg(long, env = "AGENTCRON_EXECUTOR", value_name = "CMD")]
    pub executor: Option<String>,

    /// The notifier the tick runs [default: $AGENTCRON_NOTIFIER]
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// The tick appends its whole narrative to FILE (`tick --log`); cron still mails what needs a person
    #[arg(long, value_name = "FILE")]
    pub log: Option<std::path::PathBuf>,

    /// Set KEY=VALUE for the tick and so its executor and notifier; repeatable
    ///
    /// Cron starts jobs with an almost empty environment: whatever the executor
    /// reads (AGENTCRON_SCRIPTS for examples/executor.sh) must be in the line.
    /// PATH always holds the agentcron binary's folder, each folder once. A
    /// name that holds a secret (PGPASSWORD, or any with PASSWORD, SECRET,
    /// TOKEN or KEY in it) is refused: cron runs the line through `sh -c`,
    /// whose argv every local user can read. Use ~/.pgpass or --env-file.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// The tick reads the store's password from FILE (`tick --env-file`)
    ///
    /// The line carries the file's path, never its values. FILE holds
    /// `PGPASSWORD=…` (or `PGPASSFILE=…`), belongs to the tick's user
    /// and is 0600; a warning says when it is not (yet).
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<std::path::PathBuf>,

    /// Print a PostgreSQL --db that carries a password as it is
    ///
    /// Refused by default: the line puts --db in every tick's argv, which
    /// `ps` shows to every local user. Keep the password in ~/.pgpass (or
    /// PGPASSFILE) of the tick's user, or in an --env-file, instead.
    #[arg(long)]
    pub allow_password_in_argv: bool,

    #[command(flatten)]
    pub capacity: Capacity,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

pub fn crontab(ctx: &mut Ctx, args: CrontabArgs) -> Result<()> {
    refuse_secrets(&args.env)?;
    let mut words = tick_words(
        ctx,
        &TickLine {
            executor: args.executor.as_deref(),
            notifier: args.notifier.as_deref(),
            allow_password: args.allow_password_in_argv,
            env_file: args.env_file.as_deref(),
            capacity: &args.capacity,
            launch: &args.launch,
        },
    )?;
    // The narrative goes to the log; stdout, which cron mails, keeps only
    // what needs a person (docs/CONTRACT.md §6).
    if let Some(path) = &args.log {
        let path = std::path::absolute(path).context("resolving the log path")?;
        words.extend(["--log".to_string(), path.display().to_string()]);
    }
    let vars = environment(&args.env)?;
    // cron runs the line with /bin/sh: assignments before the command set
    // the tick's environment, for this line only.
    let assignments: Vec<String> = vars
        .iter()
        .map(|(k, v)| format!("{k}={}", shell_words::quote(v)))
        .collect();
    // `%` is special in crontab lines (it starts stdin); escape it.
    let line = format!(
        "* * * * * {} {}",
        assignments.join(" "),
        shell_words::join(&words)
    )
    .replace('%', "\\%");
    // cron mails the output: tick prints only what needs a person, so the
    // mail is news.
    let owner = crate::process::own_uid();
    for warning in warnings::commands_warnings(&args.executor, &args.notifier, &vars)
        .into_iter()
        .chain(warnings::env_file_warning(args.env_file.as_deref(), owner))
    {
        ctx.out.warn(&warning);
    }
    if ctx.out.json {
        return ctx.out.document(&json!({ "line": line }));
    }
    ctx.out.line(&format!(
        "# agentcron: run due tasks every minute (install with `crontab -e`)\n{line}"
    ))
}
