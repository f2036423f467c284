//! `agentcron runs`: run history, newest first.

use std::collections::HashMap;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use crate::context::Ctx;
use crate::model::{Run, RunStatus, Task};
use crate::ops::access::{owned_task, Caller};
use crate::output::run_table::{run_row, RUN_HEADER};
use crate::store::{RunFilter, Tx};
use crate::wire as json;

/// Show run history, newest first
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct RunsArgs {
    /// Only this task's runs (id, unique prefix, or name)
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: Option<String>,

    /// Only runs in this status
    #[arg(
        long,
        value_name = "S",
        value_parser = parse_status,
        add = clap_complete::ArgValueCandidates::new(crate::completion::run_statuses)
    )]
    #[schemars(with = "Option<String>")]
    pub status: Option<RunStatus>,

    /// At most N runs
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub limit: u64,
}

pub fn parse_status(text: &str) -> Result<RunStatus, String> {
    RunStatus::parse(text).ok_or_else(|| format!("expected one of {}", RunStatus::spellings()))
}

pub fn run(ctx: &mut Ctx, args: RunsArgs) -> Result<()> {
    if ctx.out.json {
        let mut array = ctx.out.json_array();
        each_document(ctx, &args, &mut |value| array.push(&value))?;
        return array.finish();
    }
    // The table needs every row first to size its columns (at most --limit).
    let (runs, tasks) = selected(ctx, &args, |tx, filter| {
        let mut runs = Vec::new();
        tx.each_run(filter, &mut |run| {
            runs.push(run);
            Ok(())
        })?;
        let tasks = tasks_of(tx, &runs)?;
        Ok((runs, tasks))
    })?;
    if runs.is_empty() {
        // On stderr, as `list` says it: stdout stays empty for scripts.
        ctx.out.note(&no_runs(&args));
        return Ok(());
    }
    let now = ctx.clock.now();
    let rows = runs
        .iter()
        .map(|r| run_row(r, tasks.get(&r.task_id), now))
        .collect();
    ctx.out.table(&RUN_HEADER, rows)
}

/// What an empty history says: "No runs yet" of a task (or of any task)
/// that has not run; "No S runs" when a status filtered them all out.
fn no_runs(args: &RunsArgs) -> String {
    let whose = match &args.task {
        Some(task) => format!(" of task {}", crate::text::escape(task)),
        None => String::new(),
    };
    match args.status {
        Some(status) => format!("No {status} runs{whose}"),
        None => format!("No runs yet{whose}"),
    }
}

/// `runs --json`'s elements, each handed to `each` as the store yields
/// it, keeping none.
pub fn each_document(
    ctx: &mut Ctx,
    args: &RunsArgs,
    each: &mut dyn FnMut(Value) -> Result<()>,
) -> Result<()> {
    selected(ctx, args, |tx, filter| {
        tx.each_run(filter, &mut |run| each(json::run(&run)))
    })
}

/// `read` with the runs `args` select, of the caller's tasks in the tenant
/// (a task named must be the caller's), in one transaction.
fn selected<T>(
    ctx: &mut Ctx,
    args: &RunsArgs,
    read: impl FnOnce(&mut dyn Tx, &RunFilter<'_>) -> Result<T>,
) -> Result<T> {
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    ctx.store()?.read(|tx| {
        let task_id = match &args.task {
            Some(arg) => Some(owned_task(tx, &caller, arg)?.task_id),
            None => None,
        };
        let filter = RunFilter {
            tenant_key: &tenant,
            owner_keys: &identity,
            task_id: task_id.as_deref(),
            status: args.status,
            limit: args.limit,
        };
        read(tx, &filter)
    })
}

/// Each run's task, for its zone and label, by task id.
fn tasks_of(tx: &mut dyn Tx, runs: &[Run]) -> Result<HashMap<String, Task>> {
    let mut tasks = HashMap::new();
    for run in runs {
        if !tasks.contains_key(&run.task_id) {
            if let Some(Ok(task)) = tx.task(&run.task_id)? {
                tasks.insert(run.task_id.clone(), task);
            }
        }
    }
    Ok(tasks)
}
