//! `agentcron resume`: let a paused task run again, from now on.

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::ops::access::Caller;
use crate::ops::lifecycle::{self, Request};

/// Resume a paused task; its next run is the next occurrence after now
///
/// There is no catch-up burst for occurrences that passed while paused. A once
/// task whose time passed records one missed run and completes. Resuming a task
/// that is already active changes nothing and exits 0 saying "already active".
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Task id, unique id prefix (4+ characters), or name
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: String,

    /// Only if the task is still at revision N (compare-and-set)
    #[arg(long, value_name = "N")]
    pub expect_revision: Option<i64>,
}

pub fn run(ctx: &mut Ctx, args: ResumeArgs) -> Result<()> {
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
    let result = lifecycle::resume(ctx.store()?, &req)?;
    super::print_transition(ctx, &result, "Resumed")
}
