//! `agentcron list`: the caller's tasks in the tenant.

use std::collections::HashMap;

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::error::CmdError;
use crate::model::{Task, TaskState};
use crate::output::{human, json};
use crate::store::TaskFilter;

/// List your tasks in the tenant, the next to run first
///
/// Tasks that will not run again come last. LAST RUN and RESULT are those of
/// the latest run; a paused task shows why it was paused.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Include deleted tasks
    #[arg(long)]
    pub all: bool,

    /// Only tasks in this state (active, paused, completed, deleted, error)
    #[arg(
        long,
        value_name = "S",
        value_parser = parse_state,
        add = clap_complete::ArgValueCandidates::new(crate::completion::task_states)
    )]
    pub state: Option<TaskState>,
}

fn parse_state(text: &str) -> Result<TaskState, String> {
    TaskState::parse(text).ok_or_else(|| format!("expected one of {}", TaskState::spellings()))
}

pub fn run(ctx: &mut Ctx, args: ListArgs) -> Result<()> {
    let owner_keys = ctx.identity.clone();
    let tenant = ctx.tenant.clone();
    let filter = TaskFilter {
        tenant_key: &tenant,
        owner_keys: &owner_keys,
        include_deleted: args.all || args.state == Some(TaskState::Deleted),
        state: args.state,
    };
    let (rows, last_runs, blockers) = ctx.store()?.read(|tx| {
        let rows = tx.list_tasks(&filter)?;
        let mut last_runs = HashMap::new();
        let mut blockers = HashMap::new();
        for task in rows.iter().flatten() {
            if let Some(run) = tx.task_runs(&task.task_id, 1)?.pop() {
                last_runs.insert(task.task_id.clone(), run);
            }
            if let Some(run) = tx.blocking_run(&task.task_id)? {
                blockers.insert(task.task_id.clone(), run);
            }
        }
        Ok((rows, last_runs, blockers))
    })?;
    let mut tasks: Vec<Task> = Vec::new();
    for row in rows {
        match row {
            Ok(task) => tasks.push(task),
            Err(corrupt) => ctx.out.note(&CmdError::usage(corrupt.to_string()).message),
        }
    }
    // Soonest first; tasks that will not run again after them.
    tasks.sort_by_key(|t| (t.next_run_at.is_none(), t.next_run_at));
    if ctx.out.json {
        return ctx.out.document(&serde_json::Value::Array(
            tasks
                .iter()
                .map(|t| {
                    let mut value = json::task(t);
                    value["blocked_by"] = human::blocked_by_json(blockers.get(&t.task_id));
                    value
                })
                .collect(),
        ));
    }
    if tasks.is_empty() {
        return Ok(());
    }
    let now = ctx.out.now();
    let rows = tasks
        .iter()
        .map(|t| {
            let mut row = human::task_row(t, last_runs.get(&t.task_id), now);
            // The STATE cell says what stops the task, not only "active".
            if let Some(blocked) = human::blocked_by(blockers.get(&t.task_id)) {
                row[2] = match t.state {
                    TaskState::Active => blocked,
                    _ => format!("{}; {blocked}", row[2]),
                };
            }
            row
        })
        .collect();
    ctx.out.table(&human::TASK_HEADER, rows)
}
