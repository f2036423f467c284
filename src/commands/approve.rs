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

use crate::audit::{AuditAction, Event};
use crate::commands::flags::{command_argv, duration, notifier_from, LaunchArgs};
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Run, RunStatus, Task, TaskState};
use crate::ops::access::{owned_run, Caller};
use crate::store::Tx;
use crate::tick::execute::{self, Executor, Job};
use crate::tick::settle::{self, Outcome};
use crate::tick::{deliver, Notifier};

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

/// Finds the parked run, checks ownership and the wait id.
fn parked(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    run_arg: &str,
    wait_id: &str,
    now: i64,
) -> Result<(Task, Run)> {
    let (task, run) = owned_run(tx, caller, run_arg)?;
    let run_id = run.run_id.clone();
    if !run.status.is_awaiting() {
        return fail(CmdError::conflict(format!(
            "run {run_id} is {}, not waiting for approval",
            run.status
        )));
    }
    if run.wait_id.as_deref() != Some(wait_id) {
        return fail(
            CmdError::conflict(format!(
                "run {run_id} is not waiting on '{}'",
                crate::text::escape(wait_id)
            ))
            .with_hint("use the wait id from the notice"),
        );
    }
    if run.wait_deadline.is_some_and(|d| d < now) && run.approved_at.is_none() {
        return fail(CmdError::conflict(format!(
            "the continuation of run {run_id} has expired"
        )));
    }
    Ok((task, run))
}

/// Approving runs the executor again, and a paused, deleted or quarantined
/// task must not run anything: its parked run stays parked (denying it stays
/// allowed).
fn runnable(task: &Task, run: &Run) -> Result<()> {
    let why = match task.state {
        TaskState::Active | TaskState::Completed => return Ok(()),
        TaskState::Paused => "is paused; resume the task first",
        TaskState::Deleted => "is deleted and never runs again",
        TaskState::Error => "is quarantined (error) and never runs again",
    };
    fail(
        CmdError::conflict(format!(
            "run {} stays parked: its task {} {why}",
            run.run_id,
            task.label()
        ))
        .with_hint("`agentcron deny` settles the run without running anything"),
    )
}

/// The audit record of an approval; `ran` says where the continuation
/// runs: `next_tick`, or `here` (approve --here).
fn approve_event(run: &Run, actor: &str, now: i64, ran: &str) -> Event {
    Event::of_run(
        AuditAction::Approve,
        run,
        actor,
        now,
        json!({"wait_id": run.wait_id, "wait_kind": run.wait_kind, "ran": ran}),
    )
}

fn notifier_of(cmd: Option<&str>, launch: &crate::process::Launch) -> Result<Option<Notifier>> {
    use std::time::Duration;
    notifier_from(cmd, Duration::from_secs(60), Duration::from_secs(5), launch)
}

pub fn approve(ctx: &mut Ctx, args: ApproveArgs) -> Result<i32> {
    if args.here {
        return approve_here(ctx, args);
    }
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let run = ctx.store()?.write(|tx| {
        let (task, mut run) = parked(tx, &caller, &args.run, &args.wait_id, now)?;
        if let Some(by) = &run.approved_by {
            return fail(
                CmdError::conflict(format!(
                    "run {} is already approved (by {}); the next tick runs it",
                    run.run_id,
                    crate::text::escape(by)
                ))
                .with_hint("`agentcron deny` still cancels it until a tick claims it"),
            );
        }
        runnable(&task, &run)?;
        tx.approve_parked(&run.run_id, &args.wait_id, &identity[0], now)?;
        tx.append_event(&approve_event(&run, &identity[0], now, "next_tick"))?;
        run.approved_at = Some(now);
        run.approved_by = Some(identity[0].clone());
        Ok(run)
    })?;
    if ctx.out.json {
        ctx.out.document(&crate::wire::run(&run))?;
    } else {
        ctx.out.line(&format!(
            "Approved; the next tick runs run {} again with the decision.",
            crate::model::short_id(&run.run_id)
        ))?;
    }
    Ok(0)
}

/// `approve --here`: claims the continuation and runs the executor in this
/// process, under a lease, as a tick would.
fn approve_here(ctx: &mut Ctx, args: ApproveArgs) -> Result<i32> {
    let launch = args.launch.launch()?;
    let executor = Executor {
        argv: args
            .executor
            .as_deref()
            .map(|c| command_argv("--executor", c))
            .transpose()?,
        timeout: duration("--timeout", &args.timeout)?,
        kill_grace: std::time::Duration::from_secs(5),
        lease: duration("--lease", &args.lease)?,
        jobs: 1,
        output_cap: 1 << 20,
        launch: launch.clone(),
    };
    if executor.argv.is_none() {
        return fail(
            CmdError::usage("approve --here runs the executor here, and none is configured")
                .with_hint("pass --executor CMD or set AGENTCRON_EXECUTOR, or leave out --here so that the next tick runs it"),
        );
    }
    let notifier = notifier_of(args.notifier.as_deref(), &launch)?;
    // sudo that would ask for a password refuses here, before the claim.
    for argv in [executor.argv.as_ref(), notifier.as_ref().map(|n| &n.argv)]
        .into_iter()
        .flatten()
    {
        launch.preflight(&argv[0]).map_err(CmdError::usage)?;
    }
    // Opened before the clock is read: on PostgreSQL the lease deadline is
    // on the server's clock, which opening measures.
    ctx.store()?;
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let token = uuid::Uuid::new_v4().to_string();
    let lease_until = now + executor.lease.as_secs().max(1) as i64;
    // From the claim on, Ctrl-C must not leave the executor running under a
    // live lease: the signal is noted and the run settled unknown.
    crate::interrupt::catch_stop_signals()
        .map_err(|e| anyhow::anyhow!("cannot catch stop signals: {e}"))?;
    // As a tick: nothing the executor leaves behind outlives its run.
    let _subreaper = crate::process::become_subreaper(executor.kill_grace)
        .map_err(|e| anyhow::anyhow!("cannot become the child subreaper: {e}"))?;
    let (task, run, previous) = ctx.store()?.write(|tx| {
        let (task, mut run) = parked(tx, &caller, &args.run, &args.wait_id, now)?;
        runnable(&task, &run)?;
        tx.reclaim_parked(&run.run_id, &args.wait_id, &token, lease_until, now)?;
        if let Some(runner) = crate::process::runner_identity() {
            tx.mark_runner(&run.run_id, runner)?;
        }
        tx.append_event(&approve_event(&run, &identity[0], now, "here"))?;
        run.status = RunStatus::Running;
        run.lease_until = Some(lease_until);
        let previous = crate::tick::claim::previous_run(tx, &task.task_id)?;
        Ok((task, run, previous))
    })?;
    let job = Job {
        continuation: crate::tick::claim::approved_continuation(&run),
        previous,
        task,
        run,
        token,
    };
    let mut failed_to_start = false;
    let finished = execute::run_jobs(
        &ctx.shared_store()?,
        &executor,
        notifier.as_ref(),
        vec![job],
        ctx.clock,
        &mut |f| {
            failed_to_start |= matches!(f, execute::Finished::NotStarted { .. });
        },
    )?;
    for f in &finished {
        if let execute::Finished::Recorded { run, outcome, .. } = f {
            if ctx.out.json {
                let mut value = crate::wire::run(run);
                value["status"] = json!(outcome.status.as_str());
                ctx.out.document(&value)?;
            } else {
                ctx.out.line(&format!(
                    "Approved; run {} {}.",
                    crate::model::short_id(&run.run_id),
                    outcome.status
                ))?;
            }
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
    Ok(if failed_to_start { 1 } else { 0 })
}

pub fn deny(ctx: &mut Ctx, args: DenyArgs) -> Result<()> {
    // Without --here the notice stays pending for the tick's notifier.
    let notifier = match args.here {
        true => notifier_of(args.notifier.as_deref(), &args.launch.launch()?)?,
        false => None,
    };
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let (mut run, notice) = ctx.store()?.write(|tx| {
        let (_, run) = parked(tx, &caller, &args.run, &args.wait_id, now)?;
        // The person's decision is its own event; the run's settling
        // follows as the usual `finish`.
        tx.append_event(&Event::of_run(
            AuditAction::Deny,
            &run,
            &identity[0],
            now,
            json!({"wait_id": run.wait_id, "wait_kind": run.wait_kind}),
        ))?;
        let outcome = Outcome::final_decision(RunStatus::Failed, "denied".into());
        let notice = settle::settle(
            tx,
            &run,
            run.status,
            None,
            &outcome,
            &identity[0],
            now,
            None,
        )?;
        Ok((run, notice))
    })?;
    let mut delivery = Some(notice.state);
    if let Some(n) = &notifier {
        let clock = ctx.clock;
        if let Some(d) = deliver::deliver_pending(ctx.store()?, n, &notice, &clock)? {
            delivery = Some(d.state);
        }
    }
    if ctx.out.json {
        // The run as denying left it (read before the change).
        run.status = RunStatus::Failed;
        run.reason = Some("denied".into());
        run.finished_at = Some(now);
        run.delivery_status = delivery;
        return ctx.out.document(&crate::wire::run(&run));
    }
    ctx.out.line(&format!(
        "Denied; run {} failed.",
        crate::model::short_id(&run.run_id)
    ))
}
