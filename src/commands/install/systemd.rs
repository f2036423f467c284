//! `agentcron systemd`: a .service and .timer pair that run the tick every
//! minute, as `User=`, with the environment given with `--env` (never a
//! secret) and a PATH holding the binary's folder. The store's password
//! reaches the tick through `--env-file FILE`, which the tick reads itself:
//! neither the unit (world-readable) nor any process's environment block
//! (which `EnvironmentFile=` would fill, and a run of the tick's user could
//! read in /proc) carries it.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::environment::{environment, parse_env, refuse_secrets};
use super::{parse_user, tick_words, warnings, Capacity, TickLine};
use crate::commands::flags::LaunchArgs;
use crate::context::Ctx;
use crate::store::Location;

/// Print a systemd .service and .timer pair that run `agentcron tick` every minute
///
/// The service has `User=` (the invoking user unless --user; a warning when
/// that is root), the environment given with --env and a PATH holding the
/// agentcron binary's folder. The executor is checked as for `crontab`. In JSON
/// mode: `{"user", "service": {"path", "text"}, "timer": {"path", "text"}}`.
#[derive(Debug, Args)]
pub struct SystemdArgs {
    /// The executor the tick runs [default: $AGENTCRON_EXECUTOR]
    #[arg(long, env = "AGENTCRON_EXECUTOR", value_name = "CMD")]
    pub executor: Option<String>,

    /// The notifier the tick runs [default: $AGENTCRON_NOTIFIER]
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// The account the service runs as [default: the user running this command]
    ///
    /// Agents should not run as root: a root default is printed with a warning.
    #[arg(long, value_name = "NAME", value_parser = parse_user)]
    pub user: Option<String>,

    /// Set KEY=VALUE in the service's environment; repeatable
    ///
    /// Written as `Environment=` lines. PATH always holds the agentcron
    /// binary's folder, each folder once. A name that holds a secret
    /// (PGPASSWORD, or any with PASSWORD, SECRET, TOKEN or KEY in it) is
    /// refused: unit files are world-readable. Use ~/.pgpass or --env-file.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// The tick reads the store's password from FILE (`tick --env-file`)
    ///
    /// ExecStart carries the file's path, never its values. FILE holds
    /// `PGPASSWORD=…` (or `PGPASSFILE=…`), belongs to the service's user and
    /// is 0600; a warning says when it is not (yet).
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<std::path::PathBuf>,

    /// Print a PostgreSQL --db that carries a password as it is
    ///
    /// Refused by default: the line puts --db in every tick's argv, which
    /// `ps` shows to every local user. Keep the password in ~/.pgpass (or
    /// PGPASSFILE) of the service's user, or in an --env-file, instead.
    #[arg(long)]
    pub allow_password_in_argv: bool,

    #[command(flatten)]
    pub capacity: Capacity,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

pub fn systemd(ctx: &mut Ctx, args: SystemdArgs) -> Result<()> {
    refuse_secrets(&args.env)?;
    let words = tick_words(
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
    let vars = environment(&args.env)?;
    let user = args
        .user
        .clone()
        .unwrap_or_else(crate::context::effective_user);
    // systemd splits ExecStart by its own quoting rules, which accept the
    // POSIX-style quotes shell_words writes; `%` is its specifier character.
    let exec = shell_words::join(&words).replace('%', "%%");
    // Quoted for systemd: backslash and double quote escaped, `%` doubled.
    let environment: String = vars
        .iter()
        .map(|(k, v)| {
            let value = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('%', "%%");
            format!("Environment=\"{k}={value}\"\n")
        })
        .collect();
    let service = format!(
        "[Unit]\n\
         Description=agentcron tick: run due agent tasks\n\n\
         [Service]\n\
         # oneshot: the timer never starts a tick while the last one still runs\n\
         # (cron would start it alongside); due runs wait for it, within grace\n\
         # when ticks are short. Keep --timeout well below your tasks' grace.\n\
         Type=oneshot\n\
         User={user}\n\
         {environment}\
         ExecStart={exec}\n\
         # tick exits 0 when it did its job; non-zero means it could not.\n\
         SuccessExitStatus=0\n"
    );
    let timer = "[Unit]\n\
         Description=Run agentcron tick every minute\n\n\
         [Timer]\n\
         OnCalendar=*-*-* *:*:00\n\
         AccuracySec=1s\n\
         Persistent=false\n\n\
         [Install]\n\
         WantedBy=timers.target\n";
    if user == "root" {
        ctx.out.warn(
            "the unit runs the tick, and so every agent, as root (User=root); agents should not \
             run as root: pass --user NAME of an unprivileged account that owns the database",
        );
    }
    if let Some(problem) = store_problem(&ctx.location()?, &user) {
        ctx.out.warn(&problem);
    }
    // An unknown user is warned of above; its file cannot be judged.
    let env_file = crate::accounts::uid_of(&user)
        .and_then(|uid| warnings::env_file_warning(args.env_file.as_deref(), uid));
    for warning in warnings::commands_warnings(&args.executor, &args.notifier, &vars)
        .into_iter()
        .chain(env_file)
    {
        ctx.out.warn(&warning);
    }
    if ctx.out.json {
        return ctx.out.document(&json!({
            "user": user,
            "service": {"path": "/etc/systemd/system/agentcron.service", "text": service},
            "timer": {"path": "/etc/systemd/system/agentcron.timer", "text": timer},
        }));
    }
    ctx.out.line(&format!(
        "# /etc/systemd/system/agentcron.service\n{service}\n\
         # /etc/systemd/system/agentcron.timer\n{timer}\
         # enable with: systemctl daemon-reload && systemctl enable --now agentcron.timer"
    ))
}

/// Why `User=` could not open the SQLite store, said before the unit is
/// installed: the file belongs to another account (only its owner, or
/// root, may use it), or its mode lets others write it (refused, §11).
fn store_problem(location: &Location, user: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let Location::Sqlite(path) = location else {
        return None;
    };
    let meta = std::fs::metadata(path).ok()?;
    let owner = crate::accounts::label(meta.uid());
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Some(format!(
            "the store {} has mode {mode:04o}: writable by others, every tick refuses it; \
             chmod 600 it",
            path.display()
        ));
    }
    match crate::accounts::uid_of(user) {
        Some(0) => None,
        Some(uid) if uid == meta.uid() => None,
        Some(_) => Some(format!(
            "the store {} belongs to {owner} (mode {mode:04o}): a tick as {user} cannot open it; \
             pass --user {}",
            path.display(),
            crate::accounts::name_of(meta.uid()).unwrap_or_else(|| "ITS_OWNER".into())
        )),
        None => Some(format!(
            "there is no account {user} on this host: the unit would not start \
             (the store {} belongs to {owner})",
            path.display()
        )),
    }
}
