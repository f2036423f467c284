//! `agentcron lease check`: lets an executor fence its side effects.

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::context::Ctx;
use crate::error::{fail, CmdError};

/// Inspect a run's lease (for executors fencing their side effects)
#[derive(Debug, Args)]
pub struct LeaseArgs {
    #[command(subcommand)]
    pub action: LeaseAction,
}

#[derive(Debug, Subcommand)]
pub enum LeaseAction {
    /// Exit 0 while the lease holds, 5 when it does not
    Check {
        /// The run id (AGENTCRON_RUN_ID in the executor's environment)
        run: String,
        /// The lease token (AGENTCRON_LEASE_TOKEN in the executor's environment)
        #[arg(long, value_name = "T")]
        token: String,
    },
}

pub fn run(ctx: &mut Ctx, args: LeaseArgs) -> Result<()> {
    let LeaseAction::Check { run, token } = args.action;
    // Opened before the clock is read: on PostgreSQL, opening corrects our
    // clock to the server's, the one the tick's lease deadline is on.
    ctx.store()?;
    // The tick's clock moves on while it runs; so does ours.
    let now = ctx.clock.now();
    let holds = ctx.store()?.read(|tx| tx.lease_holds(&run, &token, now))?;
    if ctx.out.json {
        ctx.out
            .document(&serde_json::json!({"run_id": run, "lease_holds": holds}))?;
    }
    if holds {
        Ok(())
    } else {
        fail(
            CmdError::conflict(format!(
                "the lease on run {} does not hold",
                crate::output::escape(&run)
            ))
            .with_hint("stop: another tick owns this run now, or it was settled"),
        )
    }
}
