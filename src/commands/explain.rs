//! `agentcron explain`: why an occurrence did or did not run.

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::ops::access::Caller;
use crate::ops::explain::{self, Explained};
use crate::schedule;
use crate::wire::{run as run_json, time};

/// Explain why the occurrence at or before TIME did or did not run
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct ExplainArgs {
    /// Task id, unique id prefix (4+ characters), or name; or a run id (or
    /// unique prefix) to explain that run's occurrence
    #[arg(value_name = "TASK|RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::tasks_or_runs))]
    pub task: String,

    /// The moment to look back from (RFC 3339, or local in the task's zone) [default: now]
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
}

/// The occurrence `args` name, of the caller's task or run, explained.
pub fn explained(ctx: &mut Ctx, args: &ExplainArgs) -> Result<Explained> {
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let store = ctx.store()?;
    let noted_tick = store.idle_note().map(|note| note.at);
    store.read(|tx| {
        explain::explain_named(tx, &caller, &args.task, args.at.as_deref(), now, noted_tick)
    })
}

/// `explain --json`.
pub fn document(explained: &Explained) -> Value {
    let (task, occurrence) = (&explained.task, &explained.occurrence);
    let explanation = &explained.explanation;
    json!({
        "task_id": task.task_id,
        "occurrence": time(Some(occurrence.at)),
        "occurrence_local": schedule::format_local(occurrence.at, task.zone_in_force),
        "dst_shifted_from": occurrence.shifted_from,
        "rule": explanation.rule,
        "explanation": explanation.paragraph,
        "run": explained.run.as_ref().map(run_json),
    })
}

pub fn run(ctx: &mut Ctx, args: ExplainArgs) -> Result<()> {
    let explained = explained(ctx, &args)?;
    if ctx.out.json {
        return ctx.out.document(&document(&explained));
    }
    ctx.out
        .line(&crate::text::escape(&explained.explanation.paragraph))?;
    match explained
        .run
        .as_ref()
        .and_then(crate::output::human::stderr_block)
    {
        Some(block) => ctx.out.line(&block),
        None => Ok(()),
    }
}
