//! `agentcron reconcile`: list the runs frozen as unknown, or settle one
//! with a recorded decision. It never runs anything.

use anyhow::Result;
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::limits::Usage;
use crate::model::{short_id, RunStatus};
use crate::ops::access::Caller;
use crate::ops::reconcile::{self, Decision};
use crate::store::RunFilter;
use crate::text::{escape, relative, wall_time};
use crate::wire::{run as run_json, time};

/// List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`
///
/// A run whose outcome is uncertain (lease expired, killed, timed out) is frozen as
/// unknown and blocks the task's next occurrences. Find out what really happened,
/// then record it: confirmed_succeeded settles the run as succeeded,
/// confirmed_failed and abandoned as failed. Nothing is run or retried. What the
/// run spent, if you found out (`--usage usd=0.08`), is recorded on it and counted
/// once, in the tenant's totals and in the task's budget windows current now.
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

    /// What the run spent, as its executor would have reported it
    /// (repeatable, one KEY once; N a number from 0 to 1e15): recorded on the
    /// run, audited, and counted once in the tenant's usage totals and in
    /// the task's budget windows current now, so that its budgets stop the
    /// next run that would pass them
    #[arg(long, value_name = "KEY=N", requires = "decision")]
    pub usage: Vec<String>,
}

/// The decision as the command line spells it, with the help of each.
impl ValueEnum for Decision {
    fn value_variants<'a>() -> &'a [Self] {
        &Decision::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let help = match self {
            Decision::ConfirmedSucceeded => "The work was done: settle as succeeded",
            Decision::ConfirmedFailed => "The work was not done: settle as failed",
            Decision::Abandoned => "Give up on it: settle as failed",
        };
        Some(PossibleValue::new(self.as_str()).help(help))
    }
}

pub fn run(ctx: &mut Ctx, args: ReconcileArgs) -> Result<()> {
    // Runs whose lease has passed are unknown whether or not a tick has
    // looked yet: after a restore they are settled before ticks restart.
    // Bad input is refused before anything is written.
    let usage = Usage::from_flags(&args.usage).or_else(|why| fail(CmdError::usage(why)))?;
    let (tenant, now) = (ctx.tenant.clone(), ctx.clock.now());
    reconcile::freeze_expired(ctx.store()?, now, &tenant)?;
    match (args.run, args.decision, args.reason) {
        (Some(run), Some(decision), Some(reason)) => {
            settle_one(ctx, &run, decision, &reason, &usage)
        }
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
                v["frozen_since"] = time(r.finished_at());
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
    let now = ctx.clock.now();
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
                r.finished_at()
                    .map(|t| relative(t, now))
                    .unwrap_or_default(),
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
/// it (the same database, tenant and identity) behind the prefix every
/// command handed to a person carries, ready to paste.
fn settle_line(ctx: &Ctx, run_id: &str) -> String {
    let mut words: Vec<String> = vec!["agentcron".into(), "reconcile".into(), run_id.into()];
    words.extend(["--decision", "DECISION", "--reason", "WHAT YOU FOUND"].map(String::from));
    for (flag, value) in ctx.flags_for_followup() {
        words.push(flag.into());
        words.push(value);
    }
    crate::text::command_line(ctx.confirm_prefix(), &shell_words::join(words))
}

fn settle_one(
    ctx: &mut Ctx,
    run_arg: &str,
    decision: Decision,
    reason: &str,
    usage: &Usage,
) -> Result<()> {
    super::check_text("--reason", reason)?;
    if reason.trim().is_empty() {
        return fail(CmdError::usage("--reason is empty").with_hint("say what you found out"));
    }
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let settled = reconcile::settle_unknown(
        ctx.store()?,
        &caller,
        run_arg,
        &reconcile::Settling {
            decision,
            reason,
            usage,
        },
        now,
    )?;
    if ctx.out.json {
        let mut v = run_json(&settled);
        v["decision"] = json!(decision.as_str());
        return ctx.out.document(&v);
    }
    let spent = if usage.is_empty() {
        String::new()
    } else {
        format!(", spending {}", usage.words())
    };
    ctx.out.line(&format!(
        "Reconciled run {} as {} ({}{spent}); the task's next occurrence will run.",
        short_id(&settled.run_id),
        settled.status(),
        decision.as_str()
    ))
}
