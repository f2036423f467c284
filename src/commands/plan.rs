//! `agentcron plan` and `agentcron apply`: schedules as code (docs/CONTRACT.md
//! §14). The plan is what the file would change, with one hash over it; the
//! apply recomputes the plan inside its one write transaction and performs
//! it only when that hash is still the one the person confirmed.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use super::tasks_file::{self, Built, Desired};
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Event, Replaces, Task, TaskState};
use crate::ops::access::{ensure_owner, Caller};
use crate::output::json::time;
use crate::output::{escape, relative, wall_time};
use crate::payload::{hash_hex, Payload};
use crate::schedule;
use crate::store::{TaskTransition, Tx};

/// Show what applying a TOML file of tasks would change, and its plan hash
///
/// Each [name] table of FILE is a task; its keys are the draft flags (instruction,
/// every + start, daily + days, cron, at, tz, grace, max_retries, retry_backoff, policy,
/// target, until, count, spread). Prints the tasks to create, to replace (field by field)
/// and, with --prune, to delete, then the plan hash to give `agentcron apply`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The TOML file of tasks
    pub file: PathBuf,

    /// Also delete tasks an earlier apply of a file of this name created and the file no longer has
    #[arg(long)]
    pub prune: bool,

    /// Exit 0 when there are no changes, 2 when there are, 1 on any error
    ///
    /// As Terraform's plan: every error exits 1 then, a bad file or command line too
    /// (2 otherwise), so that a pipeline never reads a mistake as changes.
    #[arg(long)]
    pub detailed_exitcode: bool,
}

/// Perform a plan: every change in one transaction, or nothing
///
/// Refused with exit 6 when the file or an affected task changed since the plan
/// (its hash differs), with 4 when a task is not yours.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The TOML file of tasks, as planned
    pub file: PathBuf,

    /// The plan hash printed by `agentcron plan`
    #[arg(long, value_name = "PLAN_HASH", value_parser = parse_hash)]
    pub hash: String,

    /// Give it when the plan was made with --prune
    #[arg(long)]
    pub prune: bool,
}

fn parse_hash(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected the full 64-character hex plan hash printed by `agentcron plan`".into())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Create,
    Replace,
    Delete,
    Unchanged,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Replace => "replace",
            Kind::Delete => "delete",
            Kind::Unchanged => "unchanged",
        }
    }
}

struct Action<'a> {
    name: String,
    kind: Kind,
    /// The task as it is now (replace, delete, unchanged).
    current: Option<Task>,
    /// The file's task (create, replace, unchanged).
    desired: Option<&'a Desired>,
}

impl Action<'_> {
    /// The payload to write: only a create or a replace has one (an
    /// unchanged task's file values need not build today, see `declared_hash`).
    fn built(&self) -> Option<&Built> {
        match self.kind {
            Kind::Create | Kind::Replace => self.desired.and_then(|d| d.built.as_ref().ok()),
            Kind::Delete | Kind::Unchanged => None,
        }
    }

    /// The task's payload hash after the plan: the new one, or the one it keeps.
    fn new_hash(&self) -> Option<String> {
        match (self.kind, self.built(), &self.current) {
            (Kind::Unchanged, _, Some(task)) => Some(task.payload_hash.clone()),
            (_, Some(b), _) => Some(hash_hex(b.payload.canonical().as_bytes())),
            _ => None,
        }
    }
}

/// The stable comparison of a file's task with the store. The payload
/// `draft` builds from the file is not a function of the file alone:
/// `count = N` ends at the Nth occurrence after "now", so it resolves to a
/// new payload on every later plan, and an `at` that has passed builds no
/// payload at all. So each create or replace an apply performs records on
/// the task this hash, over the file's declared values (`Desired::declared`)
/// and the payload hash they were applied as. A later plan calls the task
/// unchanged when the file still declares the same values and the task still
/// has that payload, without building anything; a task replaced by hand
/// since (another payload hash), or never applied from a file, is compared
/// by payload as `draft` would build it now.
fn declared_hash(declared: &str, payload_hash: &str) -> String {
    hash_hex(format!("{declared}\n{payload_hash}").as_bytes())
}

/// The payload the file's task builds today, or the refusal naming its
/// file, line and key.
fn built_mut(d: &mut Desired) -> Result<&mut Built> {
    match &mut d.built {
        Ok(built) => Ok(built),
        Err(refusal) => fail(refusal.clone()),
    }
}

/// The provenance recorded on created tasks: the file's name, so that a
/// checkout anywhere prunes what the same file created.
fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// What the file would change, read in `tx`.
fn compute<'a>(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    file: &str,
    desired: &'a mut [Desired],
    prune: bool,
) -> Result<Vec<Action<'a>>> {
    let mut actions = Vec::new();
    let mut kept = Vec::new();
    let recorded = tx.declared(caller.tenant)?;
    for d in desired.iter_mut() {
        let current = match tx.task_id_named(caller.tenant, &d.name)? {
            Some(id) => Some(read_task(tx, &id)?),
            None => None,
        };
        let kind = match &current {
            None => {
                built_mut(d)?;
                Kind::Create
            }
            Some(task) => {
                check_owned(task, caller)?;
                kept.push(task.task_id.clone());
                if recorded.get(&task.task_id)
                    == Some(&declared_hash(&d.declared, &task.payload_hash))
                {
                    actions.push((d.name.clone(), Kind::Unchanged, current));
                    continue;
                }
                let built = built_mut(d)?;
                // A replacement keeps the task's owners (as `draft --replace`).
                built.payload.owner_keys = task.owner_keys.clone();
                if task.payload_hash == hash_hex(built.payload.canonical().as_bytes()) {
                    Kind::Unchanged
                } else if matches!(task.state, TaskState::Active | TaskState::Paused) {
                    Kind::Replace
                } else {
                    return fail(
                        CmdError::conflict(format!(
                            "task {} is {}; only an active or paused task can be replaced",
                            escape(&d.name),
                            task.state
                        ))
                        .with_hint("delete it, or rename the task in the file"),
                    );
                }
            }
        };
        actions.push((d.name.clone(), kind, current));
    }
    let desired: &'a [Desired] = desired;
    let mut out: Vec<Action<'a>> = Vec::new();
    let mut rest = desired.iter();
    for (name, kind, current) in actions {
        out.push(Action {
            name,
            kind,
            current,
            desired: rest.next(),
        });
    }
    if prune {
        for id in tx.managed_tasks(caller.tenant, file)? {
            if kept.contains(&id) {
                continue;
            }
            let task = read_task(tx, &id)?;
            check_owned(&task, caller)?;
            out.push(Action {
                name: task.label(),
                kind: Kind::Delete,
                current: Some(task),
                desired: None,
            });
        }
    }
    Ok(out)
}

fn read_task(tx: &mut dyn Tx, id: &str) -> Result<Task> {
    match tx.task(id)? {
        Some(Ok(task)) => Ok(task),
        Some(Err(corrupt)) => fail(CmdError::conflict(format!(
            "task {id} cannot be read: {}",
            corrupt.problem
        ))),
        None => fail(CmdError::not_found(format!("task {id} vanished"))),
    }
}

fn check_owned(task: &Task, caller: &Caller<'_>) -> Result<()> {
    // Another tenant's task of the same name is not the caller's either.
    let owners: &[String] = match task.tenant_key == caller.tenant {
        true => &task.owner_keys,
        false => &[],
    };
    let what = format!("task {}", escape(&task.label()));
    ensure_owner(caller, owners, &what).map_err(|e| {
        e.with_hint("act as an owner with --as KEY, or rename the task in the file")
    })?;
    Ok(())
}

/// SHA-256 of the canonical JSON list of the changes: name, action, new
/// payload hash and current revision, in the file's (sorted) order.
fn plan_hash(actions: &[Action<'_>]) -> String {
    let list: Vec<Value> = actions
        .iter()
        .filter(|a| a.kind != Kind::Unchanged)
        .map(|a| {
            json!({"name": a.name, "action": a.kind.as_str(), "payload_hash": a.new_hash(),
                   "revision": a.current.as_ref().map(|t| t.revision)})
        })
        .collect();
    hash_hex(Value::Array(list).to_string().as_bytes())
}

fn caller_parts(ctx: &Ctx) -> (String, Vec<String>) {
    (ctx.tenant.clone(), ctx.identity.clone())
}

/// With `--detailed-exitcode`, 2 when there are changes; its errors exit 1
/// in `main` (as do those of the command line and the context).
pub fn plan(ctx: &mut Ctx, args: PlanArgs) -> Result<i32> {
    let detailed = args.detailed_exitcode;
    let changes = plan_inner(ctx, args)?;
    Ok(if detailed && changes { 2 } else { 0 })
}

fn plan_inner(ctx: &mut Ctx, args: PlanArgs) -> Result<bool> {
    let mut desired = tasks_file::load(ctx, &args.file)?;
    let file = file_name(&args.file);
    let (tenant, identity) = caller_parts(ctx);
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let (summary, hash) = ctx.store()?.read(|tx| {
        let actions = compute(tx, &caller, &file, &mut desired, args.prune)?;
        Ok((render(&actions), plan_hash(&actions)))
    })?;
    let changes = summary.iter().any(|r| r.kind != Kind::Unchanged);
    print(ctx, &args, &summary, &hash, changes)?;
    Ok(changes)
}

/// One action as shown, detached from the transaction.
struct Row {
    name: String,
    kind: Kind,
    task_id: Option<String>,
    revision: Option<i64>,
    old_hash: Option<String>,
    new_hash: Option<String>,
    diff: Vec<(String, String, String)>,
    diff_json: Vec<Value>,
    next_runs: Vec<i64>,
    zone: Option<schedule::Tz>,
    summary: Option<String>,
}

fn render(actions: &[Action<'_>]) -> Vec<Row> {
    actions
        .iter()
        .map(|a| {
            let (mut diff, mut diff_json) = (Vec::new(), Vec::new());
            if let (Some(task), Some(new), Kind::Replace) = (&a.current, a.built(), a.kind) {
                let old = Payload::of_task(task);
                for c in crate::payload::changes(&old, &new.payload) {
                    diff.push((
                        c.field.clone(),
                        crate::output::human::in_words(&c.field, &old, &c.old),
                        crate::output::human::in_words(&c.field, &new.payload, &c.new),
                    ));
                    diff_json.push(json!({"field": c.field, "old": c.old, "new": c.new}));
                }
            }
            // What the task's schedule will be: the new payload's, or the
            // one it keeps.
            let shown = match (a.built(), &a.current) {
                (Some(b), _) => Some(b.payload.clone()),
                (None, Some(task)) if a.kind == Kind::Unchanged => Some(Payload::of_task(task)),
                _ => None,
            };
            Row {
                name: a.name.clone(),
                kind: a.kind,
                task_id: a.current.as_ref().map(|t| t.task_id.clone()),
                revision: a.current.as_ref().map(|t| t.revision),
                old_hash: a.current.as_ref().map(|t| t.payload_hash.clone()),
                new_hash: a.new_hash(),
                diff,
                diff_json,
                next_runs: a
                    .built()
                    .map(|b| b.upcoming.iter().map(|o| o.at).collect())
                    .unwrap_or_default(),
                zone: shown.as_ref().map(|p| p.timezone),
                summary: shown.as_ref().map(|p| p.schedule.describe(p.timezone)),
            }
        })
        .collect()
}

fn apply_line(ctx: &Ctx, args: &PlanArgs, hash: &str) -> String {
    let mut words = vec![
        "agentcron".to_string(),
        "apply".into(),
        args.file.display().to_string(),
        "--hash".into(),
        hash.to_string(),
    ];
    if args.prune {
        words.push("--prune".into());
    }
    for (flag, value) in ctx.flags_for_followup() {
        words.push(flag.into());
        words.push(value);
    }
    shell_words::join(words)
}

fn print(ctx: &Ctx, args: &PlanArgs, rows: &[Row], hash: &str, changes: bool) -> Result<()> {
    let file = args.file.display().to_string();
    if ctx.out.json {
        return ctx.out.document(&json!({
            "file": file,
            "changes": changes,
            "plan_hash": hash,
            "apply_command": changes.then(|| apply_line(ctx, args, hash)),
            "actions": rows.iter().map(|r| json!({
                "name": r.name,
                "action": r.kind.as_str(),
                "task_id": r.task_id,
                "revision": r.revision,
                "old_payload_hash": r.old_hash,
                "payload_hash": r.new_hash,
                "summary": r.summary,
                "diff": r.diff_json,
                "next_runs": r.next_runs.iter().map(|t| time(Some(*t))).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }));
    }
    if !changes {
        return ctx.out.line(&format!(
            "no changes: the {} tasks of {} match the store",
            rows.len(),
            escape(&file)
        ));
    }
    let now = ctx.out.now();
    let mut text = format!("Plan for {}:\n", escape(&file));
    let count = |k: Kind| rows.iter().filter(|r| r.kind == k).count();
    for r in rows.iter().filter(|r| r.kind != Kind::Unchanged) {
        let sign = match r.kind {
            Kind::Create => "+",
            Kind::Replace => "~",
            _ => "-",
        };
        text.push_str(&format!(
            "\n  {sign} {} {}",
            r.kind.as_str(),
            escape(&r.name)
        ));
        if let (Some(id), Some(rev)) = (&r.task_id, r.revision) {
            text.push_str(&format!(" (task {id}, revision {rev})"));
        }
        text.push('\n');
        if r.kind == Kind::Create {
            if let Some(s) = &r.summary {
                text.push_str(&format!("      schedule  {s}\n"));
            }
        }
        for (field, old, new) in &r.diff {
            text.push_str(&format!("      {field:<22} {old} → {new}\n"));
        }
        if let Some(h) = &r.new_hash {
            text.push_str(&format!("      payload hash  {h}\n"));
        }
        if let Some(zone) = r.zone {
            for at in &r.next_runs {
                text.push_str(&format!(
                    "      next run  {}  ({})\n",
                    wall_time(*at, zone),
                    relative(*at, now)
                ));
            }
        }
    }
    text.push_str(&format!(
        "\n{} to create, {} to replace, {} to delete, {} unchanged.\n",
        count(Kind::Create),
        count(Kind::Replace),
        count(Kind::Delete),
        count(Kind::Unchanged)
    ));
    text.push_str(&format!("\nPlan hash: {hash}\n"));
    text.push_str(&format!(
        "\nTo apply, run:\n  {}",
        apply_line(ctx, args, hash)
    ));
    ctx.out.line(&text)
}

pub fn apply(ctx: &mut Ctx, args: ApplyArgs) -> Result<()> {
    let mut desired = tasks_file::load(ctx, &args.file)?;
    let file = file_name(&args.file);
    let (tenant, identity) = caller_parts(ctx);
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let now = ctx.now;
    let actor = ctx.actor().to_string();
    let done = ctx.store()?.write(|tx| {
        let actions = compute(tx, &caller, &file, &mut desired, args.prune)?;
        if plan_hash(&actions) != args.hash {
            return fail(
                CmdError::draft_rejected(
                    "the plan changed since it was made: the file or a task in the store differs",
                )
                .with_hint("run `agentcron plan` again, check it, and apply its new hash"),
            );
        }
        let mut done = Vec::new();
        let changes = actions.iter().filter(|a| a.kind != Kind::Unchanged).count();
        for a in actions.iter().filter(|a| a.kind != Kind::Unchanged) {
            #[cfg(feature = "test-hooks")]
            if done.len() == changes / 2 {
                crate::hooks::at("apply_midway");
            }
            let task_id = perform(tx, &caller, a, &file, &args.hash, &actor, now)?;
            done.push((a.name.clone(), a.kind, task_id, a.new_hash()));
        }
        debug_assert_eq!(done.len(), changes);
        Ok(done)
    })?;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "plan_hash": args.hash,
            "applied": done.iter().map(|(name, kind, id, hash)| json!({
                "name": name, "action": kind.as_str(), "task_id": id, "payload_hash": hash,
            })).collect::<Vec<_>>(),
        }));
    }
    if done.is_empty() {
        return ctx.out.line("no changes");
    }
    let mut text = format!("Applied plan {}…:\n", &args.hash[..12]);
    for (name, kind, id, _) in &done {
        text.push_str(&format!("  {:<9} {} ({id})\n", kind.as_str(), escape(name)));
    }
    ctx.out.line(text.trim_end())
}

/// One change, with the audit event its command writes plus the plan hash.
fn perform(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    a: &Action<'_>,
    file: &str,
    plan_hash: &str,
    actor: &str,
    now: i64,
) -> Result<String> {
    let event = |action: &str, task: &Task, detail: Value| Event {
        at: now,
        tenant_key: task.tenant_key.clone(),
        actor: actor.to_string(),
        action: action.into(),
        task_id: Some(task.task_id.clone()),
        run_id: None,
        detail,
    };
    match (a.kind, a.desired, &a.current) {
        (Kind::Create, Some(d), _) => {
            let Some(b) = a.built() else {
                unreachable!("compute refuses a create that does not build")
            };
            let hash = hash_hex(b.payload.canonical().as_bytes());
            let Some(next) = schedule::next_after(&b.payload.schedule, b.payload.timezone, now)
            else {
                return fail(CmdError::draft_rejected(format!(
                    "task {}: the schedule has no occurrence after now",
                    escape(&a.name)
                )));
            };
            let task = b
                .payload
                .new_task(uuid::Uuid::new_v4().to_string(), hash, next.at, now);
            tx.insert_task(&task)?;
            tx.set_managed_by(&task.task_id, file)?;
            tx.set_declared(
                &task.task_id,
                &declared_hash(&d.declared, &task.payload_hash),
            )?;
            tx.append_event(&event(
                "confirm",
                &task,
                json!({"plan_hash": plan_hash, "file": file, "payload_hash": task.payload_hash,
                       "next_run_at": time(task.next_run_at)}),
            ))?;
            Ok(task.task_id)
        }
        (Kind::Replace, Some(d), Some(current)) => {
            let Some(b) = a.built() else {
                unreachable!("compute refuses a replace that does not build")
            };
            let hash = hash_hex(b.payload.canonical().as_bytes());
            let replaces = Replaces {
                task_id: current.task_id.clone(),
                revision: current.revision,
            };
            let old = crate::ops::confirm::replace(tx, caller, &hash, &replaces, &b.payload, now)?;
            let task = read_task(tx, &old.task_id)?;
            tx.set_declared(
                &task.task_id,
                &declared_hash(&d.declared, &task.payload_hash),
            )?;
            tx.append_event(&event(
                "replace",
                &task,
                json!({"plan_hash": plan_hash, "file": file,
                       "old_payload_hash": old.payload_hash,
                       "payload_hash": task.payload_hash, "revision": task.revision,
                       "next_run_at": time(task.next_run_at)}),
            ))?;
            Ok(task.task_id)
        }
        (Kind::Delete, _, Some(task)) => {
            tx.transition_task(&TaskTransition {
                task_id: &task.task_id,
                from: task.state,
                revision: task.revision,
                to: TaskState::Deleted,
                reason: None,
                next_run_at: None,
                now,
            })?;
            tx.append_event(&event(
                "delete",
                task,
                json!({"from": task.state.as_str(), "plan_hash": plan_hash, "file": file}),
            ))?;
            Ok(task.task_id.clone())
        }
        _ => unreachable!("compute pairs each kind with its tasks"),
    }
}
