//! `agentcron delete`: soft-delete a task; its history stays readable.

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::ops::access::Caller;
use crate::ops::lifecycle::{self, Request};

/// Delete a task; its history stays readable with `list --all`
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Task id, unique id prefix (4+ characters), or name
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: String,

    /// Only if the task is still at revision N (compare-and-set)
    #[arg(long, value_name = "N")]
    pub expect_revision: Option<i64>,
}

pub fn run(ctx: &mut Ctx, args: DeleteArgs) -> Result<()> {
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
    let task = lifecycle::delete(ctx.store()?, &req)?;
    super::print_changed(ctx, &task, "Deleted")
}
