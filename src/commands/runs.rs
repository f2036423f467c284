//! `agentcron runs`: run history, newest first.

use std::collections::HashMap;

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::model::{Run, RunStatus, Task};
use crate::ops::access::{owned_task, Caller};
use crate::output::run_table::{run_row, RUN_HEADER};
use crate::output::JsonArray;
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
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let out = ctx.out.clone();
    let mut array = out.json.then(|| out.json_array());
    let (runs, tasks) = ctx.store()?.read(|tx| {
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
        let runs = print_or_keep(tx, &filter, array.as_mut())?;
        let tasks = tasks_of(tx, &runs)?;
        Ok((runs, tasks))
    })?;
    if let Some(array) = array {
        return array.finish();
    }
    if runs.is_empty() {
        return Ok(());
    }
    let now = ctx.clock.now();
    let rows = runs
        .iter()
        .map(|r| run_row(r, tasks.get(&r.task_id), now))
        .collect();
    ctx.out.table(&RUN_HEADER, rows)
}

/// The runs `filter` selects: with `array` (JSON), printed run by run as
/// the store yields them, keeping none; else kept, since the table needs
/// every row first to size its columns (at most --limit).
fn print_or_keep(
    tx: &mut dyn Tx,
    filter: &RunFilter<'_>,
    mut array: Option<&mut JsonArray>,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    tx.each_run(filter, &mut |run| match array.as_mut() {
        Some(array) => array.push(&json::run(&run)),
        None => {
            runs.push(run);
            Ok(())
        }
    })?;
    Ok(runs)
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
