//! `agentcron lease check`: lets an executor fence its side effects.

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::context::Ctx;
use crate::error::{classify, fail, CmdError, ErrorKind};
use crate::ops::access::{run_in_tenant, Caller};

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
        /// The run id (AGENTCRON_RUN_ID in the executor's environment), or a
        /// unique prefix of it (4+ characters) among the tenant's runs
        #[arg(value_name = "RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::runs_running))]
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
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let (run, holds) = ctx.store()?.read(|tx| {
        // A full id is checked as given, whatever the tenant: the token is
        // the credential, and the answer says only whether it holds. A run
        // that is not there (pruned, mistyped) holds no lease: exit 5, as
        // the executor protocol promises, rather than "not found".
        let run_id = match tx.run(&run)? {
            Some(found) => found.run_id,
            None => match run_in_tenant(tx, &caller, &run) {
                Ok(found) => found.run_id,
                Err(e) if classify(&e).0 == ErrorKind::NotFound => run.clone(),
                Err(e) => return Err(e),
            },
        };
        let holds = tx.lease_holds(&run_id, &token, now)?;
        Ok((run_id, holds))
    })?;
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
                crate::text::escape(&run)
            ))
            .with_hint("stop: another tick owns this run now, or it was settled"),
        )
    }
}
