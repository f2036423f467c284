//! `agentcron plan` and `agentcron apply`: schedules as code (docs/CONTRACT.md
//! §14). The plan is what the file would change, with one hash over it; the
//! apply recomputes the plan inside its one write transaction and performs
//! it only when that hash is still the one the person confirmed.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use super::tasks_file;
use crate::context::Ctx;
use crate::ops::access::Caller;
use crate::ops::plan::{Action, Kind};
use crate::ops::{self};
use crate::schedule;
use crate::text::{escape, relative, wall_time};
use crate::wire::time;

/// Show what applying a TOML file of tasks would change, and its plan hash
///
/// Each [name] table of FILE is a task; its keys are the draft flags (instruction,
/// every + start, daily + days, cron, at, tz, grace, max_retries, retry_backoff, timeout,
/// policy, target, until, count, spread). Prints the tasks to create, to replace (field by field)
/// and, with --prune, to delete, then the plan hash to give `agentcron apply`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The TOML file of tasks
    pub file: PathBuf,

    /// Also delete tasks an earlier apply of a file of this name created and the file no longer has
    #[arg(long)]
    pub prune: bool,

    /// Take over tasks another source (another file's `source`) created
    ///
    /// Without it, a task of the same name that another file created is refused
    /// (exit 5) rather than silently replaced; with it, this file becomes its source.
    #[arg(long)]
    pub adopt: bool,

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

    /// Give it when the plan was made with --adopt
    #[arg(long)]
    pub adopt: bool,
}

fn parse_hash(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected the full 64-character hex plan hash printed by `agentcron plan`".into())
    }
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
    let loaded = tasks_file::load_with_zones(ctx, &args.file)?;
    let file = ops::plan::source_identity(&args.file, loaded.source.as_deref(), args.prune)?;
    let mut desired = loaded.tasks;
    let (tenant, identity) = caller_parts(ctx);
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let (summary, hash) = ctx.store()?.read(|tx| {
        let actions = ops::plan::compute(tx, &caller, &file, &mut desired, args.prune, args.adopt)?;
        Ok((render(&actions), ops::plan::plan_hash(&actions)))
    })?;
    let changes = summary.iter().any(|r| r.kind != Kind::Unchanged);
    print(ctx, &args, &file, &summary, &hash, changes)?;
    Ok(changes)
}

/// One action as shown, detached from the transaction.
struct Row {
    name: String,
    kind: Kind,
    task_id: Option<String>,
    revision: Option<i64>,
    /// The source that created the task now in the store (None: by hand).
    source: Option<String>,
    old_hash: Option<String>,
    new_hash: Option<String>,
    diff: Vec<(String, String, String)>,
    diff_json: Vec<Value>,
    next_runs: Vec<i64>,
    zone: Option<schedule::Tz>,
    summary: Option<String>,
    /// The notice policy in words (docs/CONTRACT.md §16), for a create.
    notices: Option<String>,
    /// The profile a created task binds (docs/CONTRACT.md §22).
    profile: Option<String>,
}

fn render(actions: &[Action<'_>]) -> Vec<Row> {
    actions
        .iter()
        .map(|a| {
            let (mut diff, mut diff_json) = (Vec::new(), Vec::new());
            if let (Some(task), Some(new), Kind::Replace) = (&a.current, a.built(), a.kind) {
                let old = &task.payload;
                for c in crate::payload::changes(old, &new.payload) {
                    let (mut old_words, mut new_words) = (
                        crate::output::human::in_words(&c.field, old, &c.old),
                        crate::output::human::in_words(&c.field, &new.payload, &c.new),
                    );
                    // A profile rebound reads as a replacement's does: in
                    // words, a widening marked (docs/CONTRACT.md §22).
                    if c.field == "profile" {
                        use crate::output::confirmed::{value_words, why};
                        old_words = value_words(&c.field, old, &c.old, 0);
                        new_words = value_words(&c.field, &new.payload, &c.new, 0);
                        if let Some(why) = why(&c) {
                            new_words.push_str(&format!("  [{}]", why.words()));
                        }
                    }
                    diff.push((c.field.clone(), old_words, new_words));
                    diff_json.push(json!({"field": c.field, "old": c.old, "new": c.new}));
                }
            }
            // What the task's schedule will be: the new payload's, or the
            // one it keeps.
            let shown = match (a.built(), &a.current) {
                (Some(b), _) => Some(b.payload.clone()),
                (None, Some(task)) if a.kind == Kind::Unchanged => Some(task.payload.clone()),
                _ => None,
            };
            Row {
                name: a.name.clone(),
                kind: a.kind,
                task_id: a.current.as_ref().map(|t| t.task_id.clone()),
                revision: a.current.as_ref().map(|t| t.revision),
                source: a.source.clone(),
                old_hash: a.current.as_ref().map(|t| t.payload_hash.clone()),
                new_hash: a.new_hash(),
                diff,
                diff_json,
                next_runs: a
                    .built()
                    .map(|b| b.upcoming.iter().map(|o| o.at).collect())
                    .unwrap_or_default(),
                zone: shown.as_ref().map(|p| p.zone.named()),
                summary: shown.as_ref().map(|p| p.schedule.describe(p.zone.named())),
                notices: shown.as_ref().map(|p| p.notice.describe()),
                profile: shown
                    .as_ref()
                    .and_then(|p| p.profile.as_ref())
                    .map(|b| b.describe()),
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
    if args.adopt {
        words.push("--adopt".into());
    }
    for (flag, value) in ctx.flags_for_followup() {
        words.push(flag.into());
        words.push(value);
    }
    shell_words::join(words)
}

fn print(
    ctx: &Ctx,
    args: &PlanArgs,
    source: &str,
    rows: &[Row],
    hash: &str,
    changes: bool,
) -> Result<()> {
    let file = args.file.display().to_string();
    if ctx.out.json {
        return ctx
            .out
            .document(&document(ctx, args, source, rows, hash, changes));
    }
    if !changes {
        return ctx.out.line(&format!(
            "no changes: the {} tasks of {} match the store",
            rows.len(),
            escape(&file)
        ));
    }
    let now = ctx.clock.now();
    let mut text = format!("Plan for {}:\n", escape(&file));
    let count = |k: Kind| rows.iter().filter(|r| r.kind == k).count();
    for r in rows.iter().filter(|r| r.kind != Kind::Unchanged) {
        text.push_str(&row_text(r, source, now));
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

/// The plan as `plan --json` prints it.
fn document(
    ctx: &Ctx,
    args: &PlanArgs,
    source: &str,
    rows: &[Row],
    hash: &str,
    changes: bool,
) -> Value {
    json!({
        "file": args.file.display().to_string(),
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
            "notices": r.notices,
            "profile": r.profile,
            "diff": r.diff_json,
            "next_runs": r.next_runs.iter().map(|t| time(Some(*t))).collect::<Vec<_>>(),
            "created_by": matches!(r.kind, Kind::Delete | Kind::Replace)
                .then(|| r.source.as_deref().unwrap_or("hand")),
        })).collect::<Vec<_>>(),
        "source": source,
    })
}

/// One change of the plan, as its lines of text.
fn row_text(r: &Row, source: &str, now: i64) -> String {
    let sign = match r.kind {
        Kind::Create => "+",
        Kind::Replace => "~",
        _ => "-",
    };
    let mut text = format!("\n  {sign} {} {}", r.kind.as_str(), escape(&r.name));
    if let (Some(id), Some(rev)) = (&r.task_id, r.revision) {
        text.push_str(&format!(" (task {id}, revision {rev})"));
    }
    text.push('\n');
    if matches!(r.kind, Kind::Delete | Kind::Replace) {
        // --prune deletes only what this very source created; a replace
        // of another source's task needed --adopt.
        let by = match &r.source {
            Some(s) if s != source => format!("{} (adopted by this file)", escape(s)),
            Some(s) => escape(s),
            None => "hand (draft and confirm)".to_string(),
        };
        text.push_str(&format!("      created by {by}\n"));
    }
    if r.kind == Kind::Create {
        if let Some(s) = &r.summary {
            text.push_str(&format!("      schedule  {s}\n"));
        }
        if let Some(n) = &r.notices {
            text.push_str(&format!("      notices   {n}\n"));
        }
        if let Some(p) = &r.profile {
            text.push_str(&format!("      profile   {p}\n"));
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
    text
}

pub fn apply(ctx: &mut Ctx, args: ApplyArgs) -> Result<()> {
    let loaded = tasks_file::load_with_zones(ctx, &args.file)?;
    let file = ops::plan::source_identity(&args.file, loaded.source.as_deref(), args.prune)?;
    let mut desired = loaded.tasks;
    let (tenant, identity) = caller_parts(ctx);
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let now = ctx.clock.now();
    let actor = ctx.actor().to_string();
    let request = ops::plan::Request {
        caller,
        file: &file,
        prune: args.prune,
        adopt: args.adopt,
        hash: &args.hash,
        actor: &actor,
        now,
    };
    let done = ops::plan::apply(ctx.store()?, &request, &mut desired)?;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "plan_hash": args.hash,
            "applied": done.iter().map(|a| json!({
                "name": a.name, "action": a.kind.as_str(), "task_id": a.task_id,
                "payload_hash": a.payload_hash,
            })).collect::<Vec<_>>(),
        }));
    }
    if done.is_empty() {
        return ctx.out.line("already applied: nothing to do");
    }
    let mut text = format!("Applied plan {}…:\n", &args.hash[..12]);
    for a in &done {
        text.push_str(&format!(
            "  {:<9} {} ({})\n",
            a.kind.as_str(),
            escape(&a.name),
            a.task_id
        ));
    }
    ctx.out.line(text.trim_end())
}
