//! `agentcron profile set|list|show|delete` (docs/CONTRACT.md §22): an
//! operator's named ways to run an agent, kept in the store per tenant (so
//! every host of a fleet runs the same), audited. A person binds one to a
//! task with `draft --profile NAME`; changing or deleting a profile holds
//! the tasks bound to it until their owners confirm again. Writing is
//! refused inside a run, like every command that changes what runs.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::ops::profiles::{self, ProfileSet, ProfileWrite};
use crate::output::human::when;
use crate::profile::{Definition, Profile};
use crate::schedule::Tz;
use crate::store::BoundTask;
use crate::text::escape;
use crate::wire::time;

/// Keep named ways to run an agent — command, folder, user, passed variables, limits — that
/// tasks are drafted with (`draft --profile NAME`)
///
/// A profile's hash (SHA-256 of its canonical definition) is part of the payload a person
/// confirms: changing or deleting a profile holds its tasks (their runs are skipped_profile,
/// told once) until each owner confirms again with `draft --replace TASK`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(subcommand)]
    pub action: ProfileAction,
}

#[derive(Debug, Subcommand)]
pub enum ProfileAction {
    /// Add profile NAME, or change it (every flag not given is unset)
    ///
    /// The definition is replaced as a whole, so the command line shows all of what runs.
    /// Setting what the profile already is changes nothing.
    Set(SetArgs),
    /// List the tenant's profiles, with how many tasks each runs and holds
    List,
    /// Show profile NAME: its definition, hash and the tasks bound to it
    Show {
        #[arg(value_name = "NAME", add = clap_complete::ArgValueCompleter::new(crate::completion::profile_names))]
        name: String,
    },
    /// Delete profile NAME: the tasks bound to it are held until confirmed with another
    Delete {
        #[arg(value_name = "NAME", add = clap_complete::ArgValueCompleter::new(crate::completion::profile_names))]
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct SetArgs {
    /// The profile's name: 1–64 of A-Z a-z 0-9 . _ -
    #[arg(value_name = "NAME", add = clap_complete::ArgValueCompleter::new(crate::completion::profile_names))]
    pub name: String,

    /// The executor's command line (split into words, no shell); it speaks the executor
    /// protocol, agentcron-executor(7)
    #[arg(long, value_name = "CMD")]
    pub command: String,

    /// The absolute folder the command starts in [default: the tick's; / with --run-as]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,

    /// Run as the unix user USER (through the tick's supervisor, as `tick --run-as`)
    /// [default: the tick's --run-as]
    #[arg(long, value_name = "USER")]
    pub run_as: Option<String>,

    /// Give the run this variable of the tick's environment; repeatable. A run of the profile
    /// gets these and the base allowlist only, not the tick's own --pass-env names
    #[arg(long = "pass-env", value_name = "NAME", value_delimiter = ',')]
    pub pass_env: Vec<String>,

    /// Stop a run after DUR (1 s to 24 h); a task's own --timeout and the tick's may be shorter
    #[arg(long, value_name = "DUR")]
    pub timeout: Option<String>,

    /// At most N runs of this profile running at once, across every host; more wait as
    /// capacity (queued), not lateness
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=crate::profile::MAX_CONCURRENT_MAX))]
    pub max_concurrent: Option<u32>,

    /// A note for people (and agents choosing a profile); not part of the hash
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,

    /// Create the store when it does not exist yet
    #[arg(long)]
    pub create_store: bool,
}

impl ProfileArgs {
    /// `profile list` and `profile show` only read the store.
    pub fn only_reads(&self) -> bool {
        matches!(
            self.action,
            ProfileAction::List | ProfileAction::Show { .. }
        )
    }

    /// `profile set --create-store` may create a missing store.
    pub fn may_create_store(&self) -> bool {
        matches!(&self.action, ProfileAction::Set(set) if set.create_store)
    }
}

pub fn run(ctx: &mut Ctx, args: ProfileArgs) -> Result<()> {
    match args.action {
        ProfileAction::Set(set) => set_profile(ctx, set),
        ProfileAction::List => list(ctx),
        ProfileAction::Show { name } => show(ctx, &name),
        ProfileAction::Delete { name } => delete(ctx, &name),
    }
}

fn set_profile(ctx: &mut Ctx, args: SetArgs) -> Result<()> {
    super::check_text("--command", &args.command)?;
    let timeout_seconds = args
        .timeout
        .as_deref()
        .map(|t| crate::ops::draft::duration_flag("--timeout", t, false))
        .transpose()?;
    let definition = Definition {
        command: args.command,
        cwd: args.cwd,
        max_concurrent: args.max_concurrent.map(i64::from),
        pass_env: args.pass_env,
        run_as: args.run_as,
        timeout_seconds,
    };
    let now = ctx.clock.now();
    let (tenant, actor) = (ctx.tenant.clone(), ctx.actor().to_string());
    let set = profiles::set(
        ctx.store()?,
        ProfileWrite {
            tenant_key: &tenant,
            name: &args.name,
            definition,
            description: args.description,
            actor: &actor,
            now,
        },
    )?;
    if ctx.out.json {
        let mut value = document(&set.profile, &[]);
        value["changed"] = json!(set.changed);
        value["previous_sha256"] = json!(set.previous.as_ref().map(|p| &p.sha256));
        value["tasks_held"] = json!(set.tasks_held);
        return ctx.out.document(&value);
    }
    ctx.out.line(&set_words(&set))
}

/// "Added profile coder (1a2b3c4d): runs `…` …" or what changed, and the
/// tasks it holds.
fn set_words(set: &ProfileSet) -> String {
    let p = &set.profile;
    let name = escape(&p.name);
    let short = crate::model::short_id(&p.sha256);
    match &set.previous {
        _ if !set.changed => format!("Profile {name} ({short}) is already so; nothing changed."),
        None => format!(
            "Added profile {name} ({short}): {}.",
            p.definition.describe()
        ),
        Some(old) if old.sha256 == p.sha256 => {
            format!("Changed profile {name}'s description; its hash {short} is unchanged.")
        }
        Some(old) => {
            let mut text = format!(
                "Changed profile {name}: {} -> {short}.",
                crate::model::short_id(&old.sha256)
            );
            for change in p.definition.changes_from(&old.definition) {
                let mark = if change.widening.is_some() {
                    "step-up: "
                } else {
                    ""
                };
                text.push_str(&format!("\n  {mark}{}", change.words));
            }
            if set.tasks_held > 0 {
                text.push_str(&format!(
                    "\n{} task(s) bound to it are held (skipped_profile) until their owners \
                     confirm again: agentcron draft --replace TASK",
                    set.tasks_held
                ));
            }
            text
        }
    }
}

fn list(ctx: &mut Ctx) -> Result<()> {
    let tenant = ctx.tenant.clone();
    let (profiles, bound) = ctx.store()?.read(|tx| {
        Ok((
            tx.profiles(Some(&tenant))?,
            tx.tasks_with_profiles(Some(&tenant))?,
        ))
    })?;
    if ctx.out.json {
        let list = profiles.iter().map(|p| document(p, &bound)).collect();
        return ctx.out.document(&Value::Array(list));
    }
    if profiles.is_empty() {
        return ctx.out.line(
            "No profiles. An operator adds one with: agentcron profile set NAME --command CMD",
        );
    }
    let now = ctx.clock.now();
    let rows = profiles
        .iter()
        .map(|p| {
            let (runs, held) = counts(p, &bound);
            vec![
                escape(&p.name),
                crate::model::short_id(&p.sha256).to_string(),
                escape(&p.definition.command),
                p.definition.run_as.as_deref().map_or("-".into(), escape),
                p.definition.cwd.as_deref().map_or("-".into(), escape),
                format!("{runs}"),
                format!("{held}"),
                when(Some(p.updated_at), Tz::UTC, now),
                p.description.as_deref().map_or("".into(), escape),
            ]
        })
        .collect();
    ctx.out.table(
        &[
            "NAME",
            "HASH",
            "COMMAND",
            "USER",
            "FOLDER",
            "TASKS",
            "HELD",
            "CHANGED",
            "DESCRIPTION",
        ],
        rows,
    )
}

/// The tasks bound to `p`: how many, and how many of them it holds.
fn counts(p: &Profile, bound: &[BoundTask]) -> (usize, usize) {
    let mine: Vec<&BoundTask> = bound.iter().filter(|t| t.profile == p.name).collect();
    let held = mine.iter().filter(|t| t.sha256 != p.sha256).count();
    (mine.len(), held)
}

fn show(ctx: &mut Ctx, name: &str) -> Result<()> {
    let tenant = ctx.tenant.clone();
    let (profile, bound) = ctx.store()?.read(|tx| {
        Ok((
            tx.profile(&tenant, name)?,
            tx.tasks_with_profiles(Some(&tenant))?,
        ))
    })?;
    let Some(p) = profile else {
        return fail(
            CmdError::not_found(format!("no profile named '{}'", escape(name)))
                .with_hint("`agentcron profile list` shows them"),
        );
    };
    if ctx.out.json {
        return ctx.out.document(&document(&p, &bound));
    }
    let now = ctx.clock.now();
    let d = &p.definition;
    let text_or = |v: &Option<String>, default: &str| v.as_deref().map_or(default.into(), escape);
    let mut rows: Vec<(&str, String)> = vec![
        ("profile", escape(&p.name)),
        ("hash", p.sha256.clone()),
        ("command", format!("`{}`", escape(&d.command))),
        ("folder", text_or(&d.cwd, "the tick's (/ with a user)")),
        ("user", text_or(&d.run_as, "the tick's --run-as")),
        (
            "passes",
            match d.pass_env.is_empty() {
                true => "the base allowlist only".into(),
                false => d.pass_env.join(", "),
            },
        ),
        (
            "timeout",
            d.timeout_seconds.map_or(
                "the task's and the tick's".into(),
                crate::text::human_duration,
            ),
        ),
        (
            "at once",
            d.max_concurrent
                .map_or("no limit of its own".into(), |n| n.to_string()),
        ),
        ("description", text_or(&p.description, "-")),
        (
            "changed",
            format!(
                "{} by {}",
                when(Some(p.updated_at), Tz::UTC, now),
                escape(&p.updated_by)
            ),
        ),
    ];
    let mine: Vec<&BoundTask> = bound.iter().filter(|t| t.profile == p.name).collect();
    let tasks = match mine.is_empty() {
        true => "none".to_string(),
        false => mine
            .iter()
            .map(|t| {
                let label = t
                    .name
                    .as_deref()
                    .map_or_else(|| crate::model::short_id(&t.task_id).to_string(), escape);
                match t.sha256 == p.sha256 {
                    true => label,
                    false => format!(
                        "{label} (held: confirmed {})",
                        crate::model::short_id(&t.sha256)
                    ),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    rows.push(("tasks", tasks));
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let text = rows
        .iter()
        .map(|(k, v)| format!("{k:<width$}  {v}"))
        .collect::<Vec<_>>()
        .join("\n");
    ctx.out.line(&text)
}

fn delete(ctx: &mut Ctx, name: &str) -> Result<()> {
    let now = ctx.clock.now();
    let (tenant, actor) = (ctx.tenant.clone(), ctx.actor().to_string());
    let (profile, held) = profiles::delete(ctx.store()?, &tenant, name, &actor, now)?;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "name": profile.name, "deleted": true, "sha256": profile.sha256, "tasks_held": held}));
    }
    let mut text = format!(
        "Deleted profile {} ({}).",
        escape(&profile.name),
        crate::model::short_id(&profile.sha256)
    );
    if held > 0 {
        text.push_str(&format!(
            " {held} task(s) bound to it are held (skipped_profile) until their owners confirm \
             them with another: agentcron draft --replace TASK --profile NAME"
        ));
    }
    ctx.out.line(&text)
}

/// A profile in JSON (`profile show --json`, one element of `profile list
/// --json`, the MCP `profiles` tool): its definition, hash, and the tasks
/// bound to it with whether each is held.
pub fn document(p: &Profile, bound: &[BoundTask]) -> Value {
    let d = &p.definition;
    let tasks: Vec<Value> = bound
        .iter()
        .filter(|t| t.profile == p.name)
        .map(|t| {
            json!({"task_id": t.task_id, "name": t.name, "state": t.state,
                        "confirmed_sha256": t.sha256, "held": t.sha256 != p.sha256})
        })
        .collect();
    json!({
        "name": p.name,
        "sha256": p.sha256,
        "command": d.command,
        "cwd": d.cwd,
        "run_as": d.run_as,
        "pass_env": d.pass_env,
        "timeout_seconds": d.timeout_seconds,
        "max_concurrent": d.max_concurrent,
        "description": p.description,
        "revision": p.revision,
        "created_at": time(Some(p.created_at)),
        "updated_at": time(Some(p.updated_at)),
        "updated_by": p.updated_by,
        "tasks": tasks,
    })
}
