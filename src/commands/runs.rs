//! `agentcron runs`: run history, newest first.

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::model::{short_id, RunStatus};
use crate::ops::access::{owned_task, Caller};
use crate::output::human;
use crate::store::RunFilter;
use crate::text::{escape, relative, wall_time};
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
        // JSON is printed run by run as the store yields them; the table
        // needs every row first to size its columns (at most --limit).
        let mut runs = Vec::new();
        tx.each_run(&filter, &mut |run| match array.as_mut() {
            Some(array) => array.push(&json::run(&run)),
            None => {
                runs.push(run);
                Ok(())
            }
        })?;
        // Each run's task, for its zone and label.
        let mut tasks = std::collections::HashMap::new();
        for run in &runs {
            if !tasks.contains_key(&run.task_id) {
                if let Some(Ok(task)) = tx.task(&run.task_id)? {
                    tasks.insert(run.task_id.clone(), task);
                }
            }
        }
        Ok((runs, tasks))
    })?;
    if let Some(array) = array {
        return array.finish();
    }
    if runs.is_empty() {
        return Ok(());
    }
    let now = ctx.out.now();
    let rows = runs
        .iter()
        .map(|r| {
            let task = tasks.get(&r.task_id);
            let zone = task.map(|t| t.zone_in_force).unwrap_or(chrono_tz::UTC);
            vec![
                short_id(&r.run_id).to_string(),
                task.map(|t| escape(&t.label()))
                    .unwrap_or_else(|| short_id(&r.task_id).into()),
                wall_time(r.scheduled_for, zone),
                r.status.to_string(),
                r.attempt.to_string(),
                // Which confirmed payload the run ran under (a replace changes it).
                r.payload_hash
                    .get(..8)
                    .unwrap_or(&r.payload_hash)
                    .to_string(),
                r.delivery_status
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "-".into()),
                relative(r.finished_at.or(r.started_at).unwrap_or(r.created_at), now),
                crate::text::clip(&human::run_summary(r), 50),
            ]
        })
        .collect();
    ctx.out.table(
        &[
            "run",
            "task",
            "occurrence",
            "status",
            "attempt",
            "payload",
            "delivery",
            "when",
            "summary",
        ],
        rows,
    )
}
