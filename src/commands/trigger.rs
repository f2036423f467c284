//! `agentcron trigger`: one extra run of a confirmed task, due now (docs/CONTRACT.md
//! §13). It is a pending request on the task that the next tick
//! claims under the same rules as an occurrence; the schedule does not move.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::context::Ctx;
use crate::ops::access::Caller;
use crate::ops::trigger;
use crate::store::Trigger;
use crate::text::{escape, wall_time};
use crate::wire::time;

/// Run a task once more, now: the next tick claims it
///
/// The run is decided like an occurrence at the trigger's time: it is
/// `skipped_overlap` while an earlier run of the task is still active, `missed`
/// when no tick claims it within the task's grace, and it runs at most once
/// however many ticks overlap. Its run shows `"trigger":"manual"`; who triggered
/// it and why are in the audit trail. The task's schedule does not move. Only an
/// active task can be triggered (a paused one is refused with exit 5), and only
/// one trigger may be pending at a time.
#[derive(Debug, Args)]
pub struct TriggerArgs {
    /// Task id, unique id prefix (4+ characters), or name
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: String,

    /// Why, kept in the audit trail
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

pub fn run(ctx: &mut Ctx, args: TriggerArgs) -> Result<()> {
    if let Some(reason) = &args.reason {
        super::check_text("--reason", reason)?;
    }
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let actor = ctx.actor().to_string();
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let request = Trigger {
        at: now,
        actor: actor.clone(),
        reason: args.reason.clone(),
    };
    let task = trigger::trigger(ctx.store()?, &caller, &args.task, &request)?;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "task_id": task.task_id,
            "name": task.payload.name,
            "trigger_at": time(Some(now)),
            "reason": args.reason,
            "actor": actor,
            "next_run_at": time(task.next_run_at),
        }));
    }
    ctx.out.line(&format!(
        "Triggered task {} ({}): one extra run due {}; the next `agentcron tick` claims it. \
         The schedule is unchanged.",
        task.task_id,
        escape(&task.label()),
        wall_time(now, task.zone_in_force)
    ))
}
