//! `agentcron pause`: stop a task from running until it is resumed.

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::ops::access::Caller;
use crate::ops::lifecycle::{self, Changed, Request};

/// Pause a task: nothing runs while it is paused
///
/// Pausing a task that is already paused changes nothing (its reason stays, no
/// revision, no audit event) and exits 0 saying "already paused", so scripts
/// can pause without asking first. A completed or deleted task cannot be paused
/// (exit 5).
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct PauseArgs {
    /// Task id, unique id prefix (4+ characters), or name
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: String,

    /// Why, kept with the task and shown by `show`
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    /// Only if the task is still at revision N (compare-and-set)
    #[arg(long, value_name = "N")]
    pub expect_revision: Option<i64>,
}

pub fn run(ctx: &mut Ctx, args: PauseArgs) -> Result<()> {
    let result = pause(ctx, &args)?;
    super::print_transition(ctx, &result, "Paused")
}

/// Pauses the caller's task `args` names, in one transaction.
pub fn pause(ctx: &mut Ctx, args: &PauseArgs) -> Result<Changed> {
    if let Some(reason) = &args.reason {
        super::check_text("--reason", reason)?;
    }
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let req = Request {
        caller: Caller {
            tenant: &tenant,
            identity: &identity,
        },
        task: &args.task,
        expect_revision: args.expect_revision,
        now,
    };
    lifecycle::pause(ctx.store()?, &req, args.reason.as_deref())
}
