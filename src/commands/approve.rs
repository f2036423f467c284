//! `agentcron approve` and `agentcron deny`: answer a run parked on a
//! continuation. A continuation is claimed at most once.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::resolve::{owned_run, Caller};
use crate::commands::tick::{command_argv, duration, notifier_from};
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Event, Run, RunStatus, Task, TaskState};
use crate::store::Tx;
use crate::tick::execute::{self, Executor, Job};
use crate::tick::settle::{self, Outcome};
use crate::tick::{deliver, Notifier};

/// Approve a parked run: it runs again with the continuation
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The parked run: its id, or a unique prefix (4+ characters)
    #[arg(value_name = "RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::runs_parked))]
    pub run: String,

    /// The wait id the executor gave
    #[arg(long, value_name = "W")]
    pub wait_id: String,

    /// The executor command, split by shell word rules
    #[arg(long, env = "AGENTCRON_EXECUTOR", value_name = "CMD")]
    pub executor: Option<String>,

    /// The notifier command, split by shell word rules
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// Lease length, renewed every third of it
    #[arg(long, value_name = "DUR", default_value = "60s")]
    pub lease: String,

    /// Kill the executor's process group after this long
    #[arg(long, value_name = "DUR", default_value = "30m")]
    pub timeout: String,
}

/// Deny a parked run: it is recorded failed ("denied")
#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The parked run: its id, or a unique prefix (4+ characters)
    #[arg(value_name = "RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::runs_parked))]
    pub run: String,

    /// The wait id the executor gave
    #[arg(long, value_name = "W")]
    pub wait_id: String,

    /// The notifier command, split by shell word rules
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,
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
                crate::output::escape(wait_id)
            ))
            .with_hint("use the wait id from the notice"),
        );
    }
    if run.wait_deadline.is_some_and(|d| d < now) {
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

fn notifier_of(cmd: Option<&str>) -> Result<Option<Notifier>> {
    use std::time::Duration;
    notifier_from(cmd, Duration::from_secs(60), Duration::from_secs(5))
}

pub fn approve(ctx: &mut Ctx, args: ApproveArgs) -> Result<i32> {
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
    };
    if executor.argv.is_none() {
        return fail(
            CmdError::usage("approve runs the executor again, and none is configured")
                .with_hint("pass --executor CMD or set AGENTCRON_EXECUTOR"),
        );
    }
    let notifier = notifier_of(args.notifier.as_deref())?;
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
    let (task, run) = ctx.store()?.write(|tx| {
        let (task, mut run) = parked(tx, &caller, &args.run, &args.wait_id, now)?;
        runnable(&task, &run)?;
        tx.reclaim_parked(&run.run_id, &args.wait_id, &token, lease_until, now)?;
        tx.append_event(&Event {
            at: now,
            tenant_key: run.tenant_key.clone(),
            actor: identity[0].clone(),
            action: "approve".into(),
            task_id: Some(run.task_id.clone()),
            run_id: Some(run.run_id.clone()),
            detail: json!({"wait_id": args.wait_id, "wait_kind": run.wait_kind}),
        })?;
        run.status = RunStatus::Running;
        Ok((task, run))
    })?;
    let job = Job {
        continuation: json!({"kind": run.wait_kind, "wait_id": args.wait_id, "decision": "approved"}),
        task,
        run,
        token,
    };
    let mut failed_to_start = false;
    let finished = execute::run_jobs(
        &ctx.opener(),
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
                let mut value = crate::output::json::run(run);
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
    Ok(if failed_to_start { 1 } else { 0 })
}

pub fn deny(ctx: &mut Ctx, args: DenyArgs) -> Result<()> {
    let notifier = notifier_of(args.notifier.as_deref())?;
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let (mut run, notice) = ctx.store()?.write(|tx| {
        let (_, run) = parked(tx, &caller, &args.run, &args.wait_id, now)?;
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
        return ctx.out.document(&crate::output::json::run(&run));
    }
    ctx.out.line(&format!(
        "Denied; run {} failed.",
        crate::model::short_id(&run.run_id)
    ))
}
