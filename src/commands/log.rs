//! `agentcron log`: the audit trail, newest first.

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::model::short_id;
use crate::ops::access::{owned_task, Caller};
use crate::output::events;
use crate::store::EventFilter;
use crate::text::{escape, relative};
use crate::wire::time;

/// Show the audit trail: who changed what, when, newest first
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only this task's events (id, unique prefix, or name)
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: Option<String>,

    /// At most N events
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub limit: u64,
}

pub fn run(ctx: &mut Ctx, args: LogArgs) -> Result<()> {
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let events = ctx.store()?.read(|tx| {
        let task_id = match &args.task {
            Some(arg) => Some(owned_task(tx, &caller, arg)?.task_id),
            None => None,
        };
        tx.events(&EventFilter {
            tenant_key: &tenant,
            owner_keys: &identity,
            task_id: task_id.as_deref(),
            limit: args.limit,
        })
    })?;
    if ctx.out.json {
        let items: Vec<Value> = events
            .iter()
            .map(|e| {
                json!({"event_id": e.event_id, "at": time(Some(e.event.at)), "tenant_key": e.event.tenant_key,
                       "actor": e.event.actor, "action": e.event.action.as_str(), "task_id": e.event.task_id,
                       "run_id": e.event.run_id, "detail": e.event.detail})
            })
            .collect();
        return ctx.out.document(&Value::Array(items));
    }
    if events.is_empty() {
        return Ok(());
    }
    let now = ctx.clock.now();
    let rows = events
        .iter()
        .map(|e| {
            vec![
                crate::schedule::format_utc(e.event.at),
                relative(e.event.at, now),
                escape(&e.event.actor),
                e.event.action.to_string(),
                e.event
                    .task_id
                    .as_deref()
                    .map(short_id)
                    .unwrap_or("-")
                    .to_string(),
                e.event
                    .run_id
                    .as_deref()
                    .map(short_id)
                    .unwrap_or("-")
                    .to_string(),
                crate::text::clip(&events::sentence(&e.event.action, &e.event.detail), 100),
            ]
        })
        .collect();
    ctx.out.table(
        &["at", "when", "actor", "action", "task", "run", "detail"],
        rows,
    )
}
