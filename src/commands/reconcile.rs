//! `agentcron reconcile`: list the runs frozen as unknown, or settle one
//! with a recorded decision. It never runs anything.

use anyhow::Result;
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{short_id, Event, RunStatus};
use crate::ops::access::{owned_run, Caller};
use crate::store::{Reconciliation, RunFilter, TaskMemory};
use crate::text::{escape, relative, wall_time};
use crate::tick::notice_policy;
use crate::tick::settle::{self, Outcome};
use crate::wire::{run as run_json, time};

/// List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`
///
/// A run whose outcome is uncertain (lease expired, killed, timed out) is frozen as
/// unknown and blocks the task's next occurrences. Find out what really happened,
/// then record it: confirmed_succeeded settles the run as succeeded,
/// confirmed_failed and abandoned as failed. Nothing is run or retried.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The unknown run to settle (its id, or a unique prefix of 4+
    /// characters); without it, list the unknown runs
    #[arg(requires = "decision", value_name = "RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::runs_unknown))]
    pub run: Option<String>,

    /// What really happened
    #[arg(long, value_enum, requires = "run", requires = "reason")]
    pub decision: Option<Decision>,

    /// Why you decided so; kept with the decision
    #[arg(long, value_name = "TEXT", requires = "decision")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Decision {
    /// The work was done: settle as succeeded
    #[value(name = "confirmed_succeeded")]
    ConfirmedSucceeded,
    /// The work was not done: settle as failed
    #[value(name = "confirmed_failed")]
    ConfirmedFailed,
    /// Give up on it: settle as failed
    #[value(name = "abandoned")]
    Abandoned,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::ConfirmedSucceeded => "confirmed_succeeded",
            Decision::ConfirmedFailed => "confirmed_failed",
            Decision::Abandoned => "abandoned",
        }
    }
}

pub fn run(ctx: &mut Ctx, args: ReconcileArgs) -> Result<()> {
    // Runs whose lease has passed are unknown whether or not a tick has
    // looked yet: after a restore they are settled before ticks restart.
    let (tenant, now) = (ctx.tenant.clone(), ctx.now);
    ctx.store()?
        .write(|tx| crate::tick::freeze_expired_leases(tx, now, Some(&tenant)))?;
    match (args.run, args.decision, args.reason) {
        (Some(run), Some(decision), Some(reason)) => settle_one(ctx, &run, decision, &reason),
        _ => list(ctx),
    }
}

fn list(ctx: &mut Ctx) -> Result<()> {
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let filter = RunFilter {
        tenant_key: &tenant,
        owner_keys: &identity,
        task_id: None,
        status: Some(RunStatus::Unknown),
        limit: 10_000,
    };
    let rows = ctx.store()?.read(|tx| {
        let runs = tx.list_runs(&filter)?;
        runs.into_iter()
            .map(|r| Ok((tx.task(&r.task_id)?.and_then(Result::ok), r)))
            .collect::<Result<Vec<_>>>()
    })?;
    if ctx.out.json {
        let items: Vec<Value> = rows
            .iter()
            .map(|(task, r)| {
                let mut v = run_json(r);
                v["task_name"] = json!(task.as_ref().and_then(|t| t.payload.name.clone()));
                v["frozen_since"] = time(r.finished_at);
                v
            })
            .collect();
        return ctx.out.document(&Value::Array(items));
    }
    if rows.is_empty() {
        // None of the caller's here; say where any are (status counts them all).
        let elsewhere = ctx.store()?.read(|tx| tx.unknown_places(None, 10))?;
        if elsewhere.is_empty() {
            return ctx.out.line("No unknown runs: nothing to reconcile.");
        }
        let total: i64 = elsewhere.iter().map(|p| p.count).sum();
        let mut text = format!(
            "No unknown runs of yours ({}) in tenant '{}'; {total} elsewhere:",
            escape(&identity.join(", ")),
            escape(&tenant)
        );
        for place in &elsewhere {
            text.push_str(&format!("\n  {}", super::unknown_place_line(ctx, place)));
        }
        return ctx.out.line(&text);
    }
    let now = ctx.out.now();
    let table = rows
        .iter()
        .map(|(task, r)| {
            let zone = task
                .as_ref()
                .map(|t| t.zone_in_force)
                .unwrap_or(chrono_tz::UTC);
            vec![
                r.run_id.clone(),
                task.as_ref()
                    .map(|t| escape(&t.label()))
                    .unwrap_or_else(|| short_id(&r.task_id).into()),
                wall_time(r.scheduled_for, zone),
                r.finished_at.map(|t| relative(t, now)).unwrap_or_default(),
                crate::text::clip(&escape(r.reason.as_deref().unwrap_or("")), 60),
            ]
        })
        .collect();
    ctx.out
        .table(&["run", "task", "occurrence", "frozen", "why"], table)?;
    let lines: Vec<String> = rows
        .iter()
        .map(|(_, r)| format!("  {}", settle_line(ctx, &r.run_id)))
        .collect();
    ctx.out.line(&format!(
        "\nFind out what happened, then settle each (DECISION: confirmed_succeeded, \
         confirmed_failed or abandoned):\n{}",
        lines.join("\n")
    ))
}

/// The command that settles `run_id`, carrying the global flags that found
/// it (the same database, tenant and identity), ready to paste.
fn settle_line(ctx: &Ctx, run_id: &str) -> String {
    let mut words: Vec<String> = vec!["agentcron".into(), "reconcile".into(), run_id.into()];
    words.extend(["--decision", "DECISION", "--reason", "WHAT YOU FOUND"].map(String::from));
    for (flag, value) in ctx.flags_for_followup() {
        words.push(flag.into());
        words.push(value);
    }
    shell_words::join(words)
}

fn settle_one(ctx: &mut Ctx, run_arg: &str, decision: Decision, reason: &str) -> Result<()> {
    super::check_text("--reason", reason)?;
    if reason.trim().is_empty() {
        return fail(CmdError::usage("--reason is empty").with_hint("say what you found out"));
    }
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.now);
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let actor = identity[0].clone();
    let settled = ctx.store()?.write(|tx| {
        let (_, run) = owned_run(tx, &caller, run_arg)?;
        let run_id = run.run_id.as_str();
        if run.status != RunStatus::Unknown {
            return fail(CmdError::conflict(format!("run {run_id} is {}, not unknown: only unknown runs are reconciled", run.status)));
        }
        let status = if decision == Decision::ConfirmedSucceeded { RunStatus::Succeeded } else { RunStatus::Failed };
        let outcome = Outcome::final_decision(status, format!("reconciled ({}): {reason}", decision.as_str()));
        tx.insert_reconciliation(&Reconciliation {
            run_id: run.run_id.clone(),
            tenant_key: run.tenant_key.clone(),
            actor: actor.clone(),
            decision: decision.as_str().into(),
            reason: reason.into(),
            prior_reason: run.reason.clone(),
            decided_at: now,
        })?;
        let (_, settled, _) = settle::record(tx, &run, RunStatus::Unknown, None, &outcome, &actor, now)?;
        let memory = tx.task_memory(&run.task_id)?.unwrap_or_else(|| TaskMemory::new(&run.task_id));
        tx.save_task_memory(&notice_policy::reconciled(memory, &settled, now))?;
        tx.append_event(&Event {
            at: now,
            tenant_key: run.tenant_key.clone(),
            actor: actor.clone(),
            action: "reconcile".into(),
            task_id: Some(run.task_id.clone()),
            run_id: Some(run.run_id.clone()),
            detail: json!({"decision": decision.as_str(), "reason": reason, "prior_reason": run.reason}),
        })?;
        Ok(settled)
    })?;
    if ctx.out.json {
        let mut v = run_json(&settled);
        v["decision"] = json!(decision.as_str());
        return ctx.out.document(&v);
    }
    ctx.out.line(&format!(
        "Reconciled run {} as {} ({}); the task's next occurrence will run.",
        short_id(&settled.run_id),
        settled.status,
        decision.as_str()
    ))
}
