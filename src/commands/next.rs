//! `agentcron next`: the task's coming occurrences on its wall clock.

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::model::Task;
use crate::ops::access::{owned_task, Caller};
use crate::schedule::{self, Occurrence};
use crate::text::{relative, wall_time};
use crate::wire::time;

/// Show the next occurrences of a task in its zone, DST-shifted ones marked
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct NextArgs {
    /// Task id, unique id prefix (4+ characters), or name
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: String,

    /// How many occurrences
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub count: u32,
}

/// The caller's task `args` names and its next `--count` occurrences
/// after `now`.
pub fn coming(ctx: &mut Ctx, args: &NextArgs, now: i64) -> Result<(Task, Vec<Occurrence>)> {
    let tenant = ctx.tenant.clone();
    let identity = ctx.identity.clone();
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let task = ctx
        .store()?
        .read(|tx| owned_task(tx, &caller, &args.task))?;
    // A paused or finished task has no next run, but its schedule still has
    // occurrences worth showing; start from the stored next run when active.
    let after = match task.next_run_at {
        Some(at) if at > now => at - 1,
        _ => now,
    };
    let upcoming = schedule::upcoming(
        &task.payload.schedule,
        task.zone_in_force,
        after,
        args.count as usize,
    );
    Ok((task, upcoming))
}

/// `next --json`: the task's occurrences on its wall clock.
pub fn document(task: &Task, upcoming: &[Occurrence]) -> Value {
    let zone = task.zone_in_force;
    let items: Vec<_> = upcoming
        .iter()
        .map(|o| {
            json!({
                "at": time(Some(o.at)),
                "local": schedule::format_local(o.at, zone),
                "dst_shifted_from": o.shifted_from,
                "last": schedule::is_last(&task.payload.schedule, zone, o.at),
            })
        })
        .collect();
    json!({"task_id": task.task_id, "timezone": zone.name(),
           "state": task.state.as_str(), "next": items})
}

pub fn run(ctx: &mut Ctx, args: NextArgs) -> Result<()> {
    let now = ctx.clock.now();
    let (task, upcoming) = coming(ctx, &args, now)?;
    if ctx.out.json {
        return ctx.out.document(&document(&task, &upcoming));
    }
    let zone = task.zone_in_force;
    if upcoming.is_empty() {
        return ctx.out.line(&format!(
            "No upcoming runs: task {} ({}) is {} and its schedule has no occurrence left.",
            crate::model::short_id(&task.task_id),
            crate::text::escape(&task.label()),
            task.state
        ));
    }
    let rows = upcoming
        .iter()
        .map(|o| {
            vec![wall_time(o.at, zone), relative(o.at, now), {
                let mut note = o
                    .shifted_from
                    .as_ref()
                    .map(|w| format!("DST: {w} does not exist, shifted forward"))
                    .unwrap_or_default();
                if schedule::is_last(&task.payload.schedule, zone, o.at) {
                    if !note.is_empty() {
                        note.push_str("; ");
                    }
                    note.push_str("the last");
                }
                note
            }]
        })
        .collect();
    ctx.out.table(&["occurrence", "when", "note"], rows)
}
