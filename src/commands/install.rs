//! `agentcron crontab` and `agentcron systemd`: how system cron (or a
//! systemd timer) should call this installation. Cron sets neither the XDG
//! variables nor the caller's environment, so the lines carry an absolute
//! binary, an absolute `--db`, and the executor and notifier in force now,
//! with the environment they need: `--env KEY=VALUE` and a PATH that holds
//! the binary's folder (an executor calls `agentcron lease check`).
//! `agentcron sudoers` prints the rule a tick that is not root needs for
//! `--run-as USER` (docs/CONTRACT.md §19).

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use crate::commands::flags::LaunchArgs;
use crate::context::Ctx;
use crate::error::CmdError;
use crate::store::Location;

/// Print the crontab line that runs `agentcron tick` every minute
///
/// Warns (exit 0) when the executor or notifier program is missing, not
/// executable or relative: the line may be meant for another host or printed
/// before the executor is installed, but as it stands every tick would fail.
/// In JSON mode: `{"line": …}` on stdout, each warning a JSON line on stderr.
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
    /// reads (AGENTCRON_SCRIPTS for examples/executor.sh, API keys) must be in the
    /// line. PATH always holds the agentcron binary's folder.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// Print a PostgreSQL --db that carries a password as it is
    ///
    /// Refused by default: the line puts --db in every tick's argv, which
    /// `ps` shows to every local user. Keep the password in ~/.pgpass (or
    /// PGPASSFILE, or PGPASSWORD in the environment) instead.
    #[arg(long)]
    pub allow_password_in_argv: bool,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

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
    /// binary's folder.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// Print a PostgreSQL --db that carries a password as it is
    ///
    /// Refused by default: the line puts --db in every tick's argv, which
    /// `ps` shows to every local user. Keep the password in ~/.pgpass (or
    /// PGPASSFILE, or PGPASSWORD in the environment) instead.
    #[arg(long)]
    pub allow_password_in_argv: bool,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// Print the sudoers rule a tick needs to run its children as USER without a password
///
/// For `tick --run-as USER` when the tick is not root: it runs the executor
/// and notifier through `sudo -n -u USER --preserve-env=…`, which needs a
/// rule with NOPASSWD and SETENV for the tick's user. The rule names the
/// executor and notifier programs when they are known (an absolute path,
/// found in PATH), else allows any command as USER. `!use_pty` keeps the
/// command in the tick's process group, so a timeout or a lost lease kills
/// it. Check it with `visudo -cf FILE`, install it 0440 under /etc/sudoers.d/.
#[derive(Debug, Args)]
pub struct SudoersArgs {
    /// The user the runs execute as (the tick's --run-as)
    #[arg(long, value_name = "USER", value_parser = parse_user)]
    pub run_as: String,

    /// The user the tick runs as [default: the user running this command]
    #[arg(long, value_name = "NAME", value_parser = parse_user)]
    pub user: Option<String>,

    /// The executor the tick runs [default: $AGENTCRON_EXECUTOR]
    #[arg(long, env = "AGENTCRON_EXECUTOR", value_name = "CMD")]
    pub executor: Option<String>,

    /// The notifier the tick runs [default: $AGENTCRON_NOTIFIER]
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,
}

/// A user name as systemd accepts it in `User=`.
fn parse_user(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    match valid {
        true => Ok(text.to_string()),
        false => Err(format!(
            "'{text}' is not a user name (letters, digits, _ - .)"
        )),
    }
}

/// `KEY=VALUE` with a shell variable name and a value of one line.
fn parse_env(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not KEY=VALUE"))?;
    let valid_key = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_key {
        return Err(format!(
            "'{key}' is not a variable name (letters, digits, _)"
        ));
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(format!("the value of {key} must be one line"));
    }
    Ok((key.to_string(), value.to_string()))
}

/// The environment the tick runs with: the given variables, PATH first,
/// with the binary's folder in PATH (ahead of a given PATH's entries when
/// missing; else with the usual system folders, since cron's is minimal).
fn environment(given: &[(String, String)]) -> Result<Vec<(String, String)>> {
    let binary = std::env::current_exe().context("finding the agentcron binary")?;
    let folder = binary
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/".into());
    let path = match given.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, path)) if path.split(':').any(|p| p == folder) => path.clone(),
        Some((_, path)) => format!("{folder}:{path}"),
        None => format!("{folder}:/usr/local/bin:/usr/bin:/bin"),
    };
    let mut vars = vec![("PATH".to_string(), path)];
    for (key, value) in given.iter().filter(|(k, _)| k != "PATH") {
        // The last of a repeated key wins, as in the shell.
        vars.retain(|(k, _)| k != key);
        vars.push((key.clone(), value.clone()));
    }
    Ok(vars)
}

/// The absolute words of `agentcron --db DB tick [--executor …] [--notifier …]`.
fn tick_words(
    ctx: &Ctx,
    executor: Option<&str>,
    notifier: Option<&str>,
    allow_password: bool,
    launch: &LaunchArgs,
) -> Result<Vec<String>> {
    for name in &launch.pass_env {
        if let Some(why) = crate::process::environment::refused_pass(name) {
            return Err(CmdError::usage(why).into());
        }
    }
    if let Some(user) = &launch.run_as {
        parse_user(user).map_err(|e| CmdError::usage(format!("--run-as: {e}")))?;
    }
    let binary = std::env::current_exe().context("finding the agentcron binary")?;
    let db = match &ctx.location()? {
        Location::Sqlite(path) => std::path::absolute(path)
            .context("resolving the database path")?
            .display()
            .to_string(),
        Location::Postgres(url) if allow_password => url.clone(),
        Location::Postgres(url) if crate::store::postgres::password::has_password(url) => {
            return Err(CmdError::usage(
                "--db carries a password, which the printed line would put in every tick's \
                 argv (visible to every local user through ps)",
            )
            .with_hint(
                "drop it from the URL and keep it in ~/.pgpass (0600) or a PGPASSFILE, or give \
                 PGPASSWORD in the environment (--env, or an EnvironmentFile= for systemd); \
                 --allow-password-in-argv prints it anyway",
            )
            .into());
        }
        Location::Postgres(url) => url.clone(),
    };
    let mut words = vec![binary.display().to_string(), "--db".into(), db];
    if let Some(tenant) = ctx.explicit_tenant() {
        words.extend(["--tenant".into(), tenant]);
    }
    words.push("tick".into());
    for (flag, value) in [("--executor", executor), ("--notifier", notifier)] {
        if let Some(value) = value {
            words.extend([flag.to_string(), value.to_string()]);
        }
    }
    words.extend(launch.words());
    Ok(words)
}

pub fn crontab(ctx: &mut Ctx, args: CrontabArgs) -> Result<()> {
    let mut words = tick_words(
        ctx,
        args.executor.as_deref(),
        args.notifier.as_deref(),
        args.allow_password_in_argv,
        &args.launch,
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
    for warning in commands_warnings(&args.executor, &args.notifier, &vars) {
        ctx.out.warn(&warning);
    }
    if ctx.out.json {
        return ctx.out.document(&json!({ "line": line }));
    }
    ctx.out.line(&format!(
        "# agentcron: run due tasks every minute (install with `crontab -e`)\n{line}"
    ))
}

pub fn systemd(ctx: &mut Ctx, args: SystemdArgs) -> Result<()> {
    let words = tick_words(
        ctx,
        args.executor.as_deref(),
        args.notifier.as_deref(),
        args.allow_password_in_argv,
        &args.launch,
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
    for warning in commands_warnings(&args.executor, &args.notifier, &vars) {
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

pub fn sudoers(ctx: &mut Ctx, args: SudoersArgs) -> Result<()> {
    let tick_user = args
        .user
        .clone()
        .unwrap_or_else(crate::context::effective_user);
    let path = environment(&[])?
        .into_iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let mut programs = Vec::new();
    for (flag, command) in [
        ("--executor", &args.executor),
        ("--notifier", &args.notifier),
    ] {
        let Some(command) = command else { continue };
        let argv = crate::commands::flags::command_argv(flag, command)?;
        let program = crate::process::resolve(&argv[0], &path).ok_or_else(|| {
            CmdError::usage(format!(
                "{flag}: `{}` is not found in PATH ({path}); give an absolute path",
                argv[0]
            ))
        })?;
        programs.push(program.display().to_string());
    }
    let commands = match programs.is_empty() {
        true => "ALL".to_string(),
        false => programs
            .iter()
            .map(|p| sudoers_escape(p))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let (user, run_as) = (&tick_user, &args.run_as);
    let file = format!("/etc/sudoers.d/agentcron-{run_as}");
    let text = format!(
        "# {file}: lets {user}'s `agentcron tick --run-as {run_as}` run its executor and\n\
         # notifier as {run_as} without a password, keeping the run's variables\n\
         # (SETENV: sudo -n -u {run_as} --preserve-env=…). !use_pty keeps the command in\n\
         # the tick's process group, so a timeout or a lost lease kills it.\n\
         # Check with `visudo -cf FILE`; install with `install -m 0440 FILE {file}`.\n\
         Defaults:{user} !use_pty\n\
         {user} ALL=({run_as}) NOPASSWD:SETENV: {commands}\n"
    );
    if programs.is_empty() {
        ctx.out.warn(
            "no executor is given: the rule lets the tick's user run any command as the \
             run-as user; pass --executor (and --notifier) to name only those programs",
        );
    }
    if ctx.out.json {
        return ctx.out.document(&json!({"path": file, "text": text}));
    }
    ctx.out.line(text.trim_end())
}

/// A path as a sudoers command: its special characters backslashed.
fn sudoers_escape(path: &str) -> String {
    path.chars().fold(String::new(), |mut out, c| {
        if matches!(c, '\\' | ',' | ':' | '=' | ' ') {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// What would make the printed line fail later, said now: no executor, or
/// an executor or notifier program that is missing, not executable, or
/// relative (cron starts in $HOME). Warnings, not errors: the line may be
/// meant for another host, or printed before the executor is installed.
fn commands_warnings(
    executor: &Option<String>,
    notifier: &Option<String>,
    vars: &[(String, String)],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if executor.is_none() {
        warnings.push(
            "no executor is set: pass --executor CMD (or set AGENTCRON_EXECUTOR) before installing this line"
                .to_string(),
        );
    }
    let path = vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or_default();
    for (role, command) in [("executor", executor), ("notifier", notifier)] {
        let Some(command) = command else { continue };
        if let Some(problem) = program_problem(command, path) {
            warnings.push(format!("the {role} {problem}"));
        }
    }
    warnings
}

/// Why the command's program cannot be run from the line, if it cannot.
fn program_problem(command: &str, path: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let program = match shell_words::split(command) {
        Ok(words) => words.into_iter().next()?,
        Err(e) => return Some(format!("command {command:?} cannot be split: {e}")),
    };
    let executable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if !program.contains('/') {
        let found = path
            .split(':')
            .any(|folder| executable(&std::path::Path::new(folder).join(&program)));
        return (!found).then(|| format!("{program:?} is not found in the line's PATH ({path})"));
    }
    let file = std::path::Path::new(&program);
    if file.is_relative() {
        return Some(format!(
            "{program:?} is a relative path; cron runs the line from your home folder: give an absolute path"
        ));
    }
    match file.metadata() {
        Err(_) => Some(format!("{program} does not exist")),
        Ok(m) if !m.is_file() => Some(format!("{program} is not a file")),
        Ok(_) if !executable(file) => Some(format!("{program} is not executable (chmod +x)")),
        Ok(_) => None,
    }
}
