//! One file per subcommand: its Args and `run(ctx, args)`. Handlers validate,
//! call the store inside one transaction, and hand a value to `output`.
//! They run no SQL and read no clock; what they do to the store lives in
//! `crate::ops`. Beside them: `tasks_file` (plan's TOML), `bounded`
//! (reading files) and `flags` (flag values several commands share); and
//! `mcp`, the one command that runs others: it serves them as tools to an
//! agent host, reading each call with the command's own Args.

pub mod approve;
pub mod backup;
pub mod bounded;
pub mod check;
pub mod completions;
pub mod confirm;
pub mod delete;
pub mod draft;
pub mod draft_replace;
pub mod env_file;
pub mod explain;
pub mod flags;
pub mod install;
pub mod lease;
pub mod list;
pub mod log;
pub mod mcp;
pub mod metrics;
pub mod migrate;
pub mod next;
pub mod pause;
pub mod plan;
pub mod profile;
pub mod prune;
pub mod reconcile;
pub mod resume;
pub mod runs;
pub mod show;
pub mod show_draft;
pub mod status;
pub mod tasks_file;
pub mod tick;
pub mod transfer;
pub mod trigger;
pub mod upcoming;
pub mod zone;

use anyhow::Result;

use crate::context::Ctx;

/// Every subcommand, one Args struct each, defined beside its handler.
// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    Draft(draft::DraftArgs),
    Confirm(confirm::ConfirmArgs),
    List(list::ListArgs),
    Show(show::ShowArgs),
    Pause(pause::PauseArgs),
    Resume(resume::ResumeArgs),
    Delete(delete::DeleteArgs),
    Trigger(trigger::TriggerArgs),
    Next(next::NextArgs),
    Upcoming(upcoming::UpcomingArgs),
    Plan(plan::PlanArgs),
    Apply(plan::ApplyArgs),
    Runs(runs::RunsArgs),
    Log(log::LogArgs),
    Explain(explain::ExplainArgs),
    Tick(tick::TickArgs),
    Lease(lease::LeaseArgs),
    Approve(approve::ApproveArgs),
    Deny(approve::DenyArgs),
    Reconcile(reconcile::ReconcileArgs),
    Status(status::StatusArgs),
    Prune(prune::PruneArgs),
    Check(check::CheckArgs),
    Backup(backup::BackupArgs),
    Metrics(metrics::MetricsArgs),
    Crontab(install::CrontabArgs),
    Systemd(install::SystemdArgs),
    Sudoers(install::SudoersArgs),
    Export(transfer::ExportArgs),
    Import(transfer::ImportArgs),
    Zone(zone::ZoneArgs),
    Profile(profile::ProfileArgs),
    Migrate(migrate::MigrateArgs),
    Completions(completions::CompletionsArgs),
    Mcp(mcp::McpArgs),
}

impl Command {
    /// Whether this is `plan --detailed-exitcode`, whose every error exits 1.
    pub fn detailed_exitcode(&self) -> bool {
        matches!(self, Command::Plan(args) if args.detailed_exitcode)
    }
}

/// Runs the command; the returned code is the process exit code.
pub fn dispatch(ctx: &mut Ctx, command: Command) -> Result<i32> {
    if only_reads(&command) {
        ctx.only_read_the_store();
    } else if acts_on_what_exists(&command) {
        ctx.open_existing_store_only();
    }
    match &command {
        // Upgrades the store, or copies or verifies it as it is: a store
        // kept for going back to an older build must stay at its schema.
        Command::Migrate(_) | Command::Backup(_) | Command::Check(_) => ctx.open_any_schema(),
        // Its read tools must not migrate, so no tool does.
        Command::Mcp(_) => ctx.never_migrate(),
        _ => {}
    }
    if changes_schedules(&command) {
        crate::ops::inside_run::refuse_marked(ctx.run_marker.as_deref())?;
        let supervised = crate::process::under_supervisor();
        // A store not made yet runs nothing; the command says what it
        // lacks (or makes it) in its own order. Under a supervisor the
        // store may be out of reach (another user's): the refusal below
        // stands, only without the run's name.
        if ctx.store_may_exist() {
            match ctx.store() {
                Ok(store) => crate::ops::inside_run::refuse_by_ancestry(store)?,
                Err(e) if !supervised => return Err(e),
                Err(_) => {}
            }
        }
        if supervised {
            crate::ops::inside_run::refuse_supervised()?;
        }
    }
    match command {
        Command::Draft(args) => draft::run(ctx, args),
        Command::Confirm(args) => confirm::run(ctx, args),
        Command::List(args) => list::run(ctx, args),
        Command::Show(args) => show::run(ctx, args),
        Command::Pause(args) => pause::run(ctx, args),
        Command::Resume(args) => resume::run(ctx, args),
        Command::Delete(args) => delete::run(ctx, args),
        Command::Trigger(args) => trigger::run(ctx, args),
        Command::Next(args) => next::run(ctx, args),
        Command::Upcoming(args) => upcoming::run(ctx, args),
        Command::Plan(args) => return plan::plan(ctx, args),
        Command::Apply(args) => plan::apply(ctx, args),
        Command::Tick(args) => return tick::run(ctx, args),
        Command::Lease(args) => lease::run(ctx, args),
        Command::Approve(args) => return approve::approve(ctx, args),
        Command::Deny(args) => approve::deny(ctx, args),
        Command::Runs(args) => runs::run(ctx, args),
        Command::Log(args) => log::run(ctx, args),
        Command::Explain(args) => explain::run(ctx, args),
        Command::Reconcile(args) => reconcile::run(ctx, args),
        Command::Status(args) => return status::run(ctx, args),
        Command::Prune(args) => prune::run(ctx, args),
        Command::Check(args) => return check::run(ctx, args),
        Command::Backup(args) => return backup::run(ctx, args),
        Command::Metrics(args) => metrics::run(ctx, args),
        Command::Crontab(args) => install::crontab(ctx, args),
        Command::Systemd(args) => install::systemd(ctx, args),
        Command::Sudoers(args) => install::sudoers(ctx, args),
        Command::Completions(args) => completions::run(ctx, args),
        Command::Export(args) => transfer::export(ctx, args),
        Command::Import(args) => transfer::import(ctx, args),
        Command::Zone(args) => zone::run(ctx, args),
        Command::Profile(args) => profile::run(ctx, args),
        Command::Mcp(args) => return mcp::run(ctx, args),
        Command::Migrate(args) => migrate::run(ctx, args),
    }
    .map(|()| 0)
}

/// Commands that only read: they never create a store, open one they
/// cannot write (a read-only file system) read-only, and never migrate one
/// (docs/CONTRACT.md §21): a dry run, of the tick or of `migrate`, included.
fn only_reads(command: &Command) -> bool {
    matches!(
        command,
        Command::Status(_)
            | Command::List(_)
            | Command::Show(_)
            | Command::Runs(_)
            | Command::Log(_)
            | Command::Explain(_)
            | Command::Next(_)
            | Command::Upcoming(_)
            | Command::Check(_)
            | Command::Backup(_)
            | Command::Metrics(_)
            | Command::Export(_)
            | Command::Lease(_)
    ) || matches!(command, Command::Zone(args) if args.only_reads())
        || matches!(command, Command::Profile(args) if args.only_reads())
        || matches!(command, Command::Tick(args) if args.dry_run)
        || matches!(command, Command::Migrate(args) if args.dry_run)
}

/// Commands that confirm or change schedules: refused inside a run, the
/// speed bump of docs/CONTRACT.md §19 (`pause` and `delete` only take work
/// away; `reconcile` without a run only lists).
fn changes_schedules(command: &Command) -> bool {
    matches!(
        command,
        Command::Confirm(_)
            | Command::Apply(_)
            | Command::Resume(_)
            | Command::Trigger(_)
            | Command::Approve(_)
            | Command::Deny(_)
            | Command::Import(_)
    ) || matches!(command, Command::Zone(args) if !args.only_reads())
        || matches!(command, Command::Profile(args) if !args.only_reads())
        || matches!(command, Command::Reconcile(args) if args.run.is_some())
}

/// Commands that change what a store already holds, so must not create
/// one: a new store has nothing due, no task and no run, and for them a
/// missing file is a mistyped `--db` (or a volume not mounted yet) — above
/// all for `tick`, which cron would otherwise run on a new empty store every
/// minute, silently. Only `draft`, `plan`/`apply` and `import` create one.
fn acts_on_what_exists(command: &Command) -> bool {
    matches!(
        command,
        Command::Tick(_)
            | Command::Confirm(_)
            | Command::Pause(_)
            | Command::Resume(_)
            | Command::Delete(_)
            | Command::Trigger(_)
            | Command::Approve(_)
            | Command::Deny(_)
            | Command::Reconcile(_)
            | Command::Prune(_)
    ) || matches!(command, Command::Zone(args) if !args.only_reads() && !args.may_create_store())
        || matches!(command, Command::Profile(args) if !args.only_reads() && !args.may_create_store())
}

/// Free text given on the command line: no NUL, at most 4096 bytes.
pub fn check_text(flag: &str, text: &str) -> Result<()> {
    use crate::error::{fail, CmdError};
    if text.len() > 4096 {
        return fail(CmdError::usage(format!("{flag} is longer than 4096 bytes")));
    }
    if text.contains('\0') {
        return fail(CmdError::usage(format!("{flag} contains a NUL byte")));
    }
    Ok(())
}

/// The answer of a state change: the task in JSON, or one line.
fn print_changed(ctx: &Ctx, task: &crate::model::Task, verb: &str) -> Result<()> {
    if ctx.out.json {
        return ctx.out.document(&crate::wire::task(task));
    }
    let next = crate::output::human::when(task.next_run_at, task.zone_in_force, ctx.clock.now());
    ctx.out.line(&format!(
        "{verb} task {} ({}): now {}, revision {}, next run {next}.",
        crate::model::short_id(&task.task_id),
        crate::text::escape(&task.label()),
        task.state,
        task.revision
    ))
}

/// The answer of a pause or resume: as `print_changed` when it changed the
/// task, else one line saying it already was so. JSON adds `changed`.
fn print_transition(ctx: &Ctx, result: &crate::ops::lifecycle::Changed, verb: &str) -> Result<()> {
    let task = &result.task;
    if ctx.out.json {
        return ctx.out.document(&transition_document(result));
    }
    if result.changed {
        return print_changed(ctx, task, verb);
    }
    ctx.out.line(&format!(
        "Task {} ({}) is already {}; nothing changed (revision {}).",
        crate::model::short_id(&task.task_id),
        crate::text::escape(&task.label()),
        task.state,
        task.revision
    ))
}

/// `pause --json` and `resume --json`: the task as it now is, and whether
/// anything changed.
pub fn transition_document(result: &crate::ops::lifecycle::Changed) -> serde_json::Value {
    let mut value = crate::wire::task(&result.task);
    value["changed"] = serde_json::Value::Bool(result.changed);
    value
}

/// Where unknown runs wait, in words, with the exact command that lists
/// them there (this store's `--db`, their tenant, an owner's key).
fn unknown_place_line(ctx: &Ctx, place: &crate::store::UnknownPlace) -> String {
    let mut words = vec!["agentcron".to_string()];
    for (flag, value) in ctx.flags_for_followup() {
        if flag == "--db" {
            words.push(flag.into());
            words.push(value);
        }
    }
    words.extend(["--tenant".into(), place.tenant_key.clone()]);
    words.extend(["--as".into(), place.owner_key.clone()]);
    words.push("reconcile".into());
    format!(
        "{} unknown run(s) in tenant '{}' owned by {}: `{}`",
        place.count,
        crate::text::escape(&place.tenant_key),
        crate::text::escape(&place.owner_key),
        crate::text::escape(&crate::text::command_line(
            ctx.confirm_prefix(),
            &shell_words::join(&words)
        ))
    )
}
