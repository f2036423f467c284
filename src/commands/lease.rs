//! `agentcron lease check`: lets an executor fence its side effects.
//!
//! Inside a run (AGENTCRON_LEASE_ENDPOINT set, no --db) it asks the tick
//! that holds the lease through the run's endpoint, with no access to the
//! store (docs/CONTRACT.md §19); an operator's check reads the store.

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::context::Ctx;
use crate::error::{classify, fail, CmdError, ErrorKind};
use crate::ops::access::{run_in_tenant, Caller};

/// Inspect a run's lease (for executors fencing their side effects)
///
/// Inside a run (AGENTCRON_LEASE_ENDPOINT set, and neither --db nor
/// AGENTCRON_DB) the tick holding the lease answers through the run's
/// endpoint, without the store; otherwise the store is read.
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
        /// Tell the tick what the run has spent so far (repeatable)
        ///
        /// KEY=N is the run's total of KEY until now (as its final reply's
        /// `usage` would say), not an increment. The tick records it when it
        /// arrives, so a crash loses at most what was not told yet, and
        /// counts it once with the final reply. When it takes a budget of
        /// the task past its limit, the answer is 5 and the run is stopped.
        /// Only inside a run (its lease endpoint).
        #[arg(long, value_name = "KEY=N", value_parser = usage_word)]
        usage: Vec<String>,
    },
}

pub fn run(ctx: &mut Ctx, args: LeaseArgs) -> Result<()> {
    let LeaseAction::Check { run, token, usage } = args.action;
    let (run, holds) = match crate::context::lease_endpoint().filter(|_| !ctx.db_given()) {
        Some(endpoint) => ask_endpoint(&endpoint, &run, &token, &usage),
        None if !usage.is_empty() => {
            return fail(
                CmdError::usage(
                    "--usage is told to the tick running the run: it works only inside a run",
                )
                .with_hint("call it from the executor, where AGENTCRON_LEASE_ENDPOINT is set"),
            )
        }
        None => ask_store(ctx, run, &token)?,
    };
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

/// The tick's answer. An endpoint that does not answer belongs to a tick
/// that is gone: the lease does not hold (its run will end `unknown`).
fn ask_endpoint(endpoint: &str, run: &str, token: &str, usage: &[String]) -> (String, bool) {
    match crate::process::endpoint::ask(endpoint, run, token, usage) {
        Ok((holds, run_id)) => (run_id, holds),
        Err(_) => (run.to_string(), false),
    }
}

/// The store's answer, for an operator (or a run given --db).
fn ask_store(ctx: &mut Ctx, run: String, token: &str) -> Result<(String, bool)> {
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
    ctx.store()?.read(|tx| {
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
        let holds = tx.lease_holds(&run_id, token, now)?;
        Ok((run_id, holds))
    })
}

/// One `--usage KEY=N`: a budget key and a finite non-negative number
/// within the cap (docs/CONTRACT.md §20).
fn usage_word(text: &str) -> Result<String, String> {
    let (key, amount) = text
        .split_once('=')
        .ok_or_else(|| format!("'{}' is not KEY=N", crate::text::escape(text)))?;
    crate::limits::check_key(key)?;
    let number: f64 = amount
        .parse()
        .map_err(|_| format!("{} is not a number", crate::text::escape(amount)))?;
    if !(number.is_finite() && (0.0..=crate::limits::USAGE_MAX).contains(&number)) {
        return Err(format!(
            "{} is not a finite number from 0 to {}",
            crate::text::escape(amount),
            crate::limits::USAGE_MAX
        ));
    }
    Ok(format!("{key}={amount}"))
}
