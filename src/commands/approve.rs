//! `agentcron approve` and `agentcron deny`: answer a run parked on a
//! continuation. A continuation is claimed at most once.
//!
//! `approve` records the decision and leaves the run to the next tick: the
//! tick has cron's executor, environment and limits, where the operator's
//! shell has whatever it happens to have. `approve --here` runs it here, at
//! once, as before.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::flags::{command_argv, duration, notifier_from, LaunchArgs};
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{short_id, Run, RunStatus};
use crate::ops::access::Caller;
use crate::ops::approve::{answer, Answered, Decision, Here, Parked};
use crate::tick::Notifier;

/// Approve a parked run: the next tick runs it again with the decision
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The parked run: its id, or a unique prefix (4+ characters)
    #[arg(value_name = "RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::runs_parked))]
    pub run: String,

    /// The wait id the executor gave
    #[arg(long, value_name = "W")]
    pub wait_id: String,

    /// Run the executor here, in this shell, at once, instead of leaving
    /// the run to the next tick
    // Not `--now`: that is the global (hidden) clock option.
    #[arg(long)]
    pub here: bool,

    /// With --here: the executor command, split by shell word rules
    #[arg(long, env = "AGENTCRON_EXECUTOR", value_name = "CMD")]
    pub executor: Option<String>,

    /// With --here: the notifier command, split by shell word rules
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// With --here: lease length, renewed every third of it
    #[arg(long, value_name = "DUR", default_value = "60s")]
    pub lease: String,

    /// With --here: kill the executor's process group after this long
    #[arg(long, value_name = "DUR", default_value = "30m")]
    pub timeout: String,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// Deny a parked run: it is recorded failed ("denied"); the next tick sends its notice
#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The parked run: its id, or a unique prefix (4+ characters)
    #[arg(value_name = "RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::runs_parked))]
    pub run: String,

    /// The wait id the executor gave
    #[arg(long, value_name = "W")]
    pub wait_id: String,

    /// Send the notice here, at once, with the notifier instead of leaving
    /// it to the next tick
    #[arg(long)]
    pub here: bool,

    /// With --here: the notifier command, split by shell word rules
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

fn notifier_of(cmd: Option<&str>, launch: &crate::process::Launch) -> Result<Option<Notifier>> {
    use std::time::Duration;
    notifier_from(cmd, Duration::from_secs(60), Duration::from_secs(5), launch)
}

pub fn approve(ctx: &mut Ctx, args: ApproveArgs) -> Result<i32> {
    let decision = match args.here {
        true => Decision::ApproveHere(Box::new(here(&args)?)),
        false => Decision::Approve,
    };
    decide(ctx, &args.run, &args.wait_id, decision)
}

pub fn deny(ctx: &mut Ctx, args: DenyArgs) -> Result<()> {
    // Without --here the notice stays pending for the tick's notifier.
    let notifier = match args.here {
        true => notifier_of(args.notifier.as_deref(), &args.launch.launch()?)?,
        false => None,
    };
    decide(ctx, &args.run, &args.wait_id, Decision::Deny(notifier)).map(drop)
}

/// What `approve --here` runs, checked before anything is claimed: an
/// executor is configured, and sudo that would ask for a password refuses
/// here rather than after the claim.
fn here(args: &ApproveArgs) -> Result<Here> {
    let launch = args.launch.launch()?;
    let argv = (args.executor.as_deref())
        .map(|c| command_argv("--executor", c))
        .transpose()?;
    let timeout = duration("--timeout", &args.timeout)?;
    let lease = duration("--lease", &args.lease)?;
    let Some(argv) = argv else {
        return fail(
            CmdError::usage("approve --here runs the executor here, and none is configured")
                .with_hint("pass --executor CMD or set AGENTCRON_EXECUTOR, or leave out --here so that the next tick runs it"),
        );
    };
    let here = Here {
        argv,
        timeout,
        lease,
        notifier: notifier_of(args.notifier.as_deref(), &launch)?,
        launch,
        profile_env: crate::context::profile_environment(),
    };
    // One rule covers the executor and the notifier: both start under the
    // supervisor.
    here.launch.preflight().map_err(CmdError::usage)?;
    Ok(here)
}

/// Answers the parked run and says what became of it. The store is opened
/// before the clock is read: on PostgreSQL a lease deadline is on the
/// server's clock, which opening measures.
fn decide(ctx: &mut Ctx, run: &str, wait_id: &str, decision: Decision) -> Result<i32> {
    let store = ctx.shared_store()?;
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let parked = Parked {
        caller: Caller {
            tenant: &tenant,
            identity: &identity,
        },
        run,
        wait_id,
        now,
    };
    match answer(&store, ctx.clock, &parked, decision)? {
        Answered::Approved(run) if ctx.out.json => ctx.out.document(&crate::wire::run(&run))?,
        Answered::Approved(run) => ctx.out.line(&format!(
            "Approved; the next tick runs run {} again with the decision.",
            short_id(&run.run_id)
        ))?,
        Answered::Ran {
            settled,
            not_started,
        } => return ran_here(ctx, &settled, not_started),
        Answered::Denied(run) if ctx.out.json => ctx.out.document(&crate::wire::run(&run))?,
        Answered::Denied(run) => ctx
            .out
            .line(&format!("Denied; run {} failed.", short_id(&run.run_id)))?,
    }
    Ok(0)
}

/// What `approve --here` ran, and its exit code: a stop signal's when one
/// stopped the executor, 1 when the executor could not be started.
fn ran_here(ctx: &mut Ctx, settled: &[(Run, RunStatus)], not_started: bool) -> Result<i32> {
    for (run, status) in settled {
        if ctx.out.json {
            let mut value = crate::wire::run(run);
            value["status"] = json!(status.as_str());
            ctx.out.document(&value)?;
        } else {
            ctx.out.line(&format!(
                "Approved; run {} {status}.",
                short_id(&run.run_id)
            ))?;
        }
    }
    if let Some(signal) = crate::interrupt::received() {
        ctx.out.warn(&format!(
            "interrupted by {}: the executor was stopped and the run is unknown; \
             settle it with `agentcron reconcile` once you know what it did",
            crate::interrupt::name(signal)
        ));
        return Ok(crate::interrupt::exit_code(signal));
    }
    Ok(if not_started { 1 } else { 0 })
}
