//! `agentcron list`: the caller's tasks in the tenant.

use std::ops::ControlFlow::Continue;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use crate::context::Ctx;
use crate::error::CmdError;
use crate::model::{Run, Task, TaskState};
use crate::output::{human, Output, PipeTable};
use crate::store::{CorruptRow, TaskFilter, Tx};
use crate::text::escape;
use crate::wire as json;

/// List your tasks in the tenant, the next to run first
///
/// Tasks that will not run again come last. LAST RUN and RESULT are those of
/// the latest run; a paused task shows why it was paused, and a task no run
/// of which succeeded within its --expect-success says since when it is
/// overdue.
#[derive(Debug, Args, schemars::JsonSchema)]
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
    #[schemars(with = "Option<String>")]
    pub state: Option<TaskState>,
}

fn parse_state(text: &str) -> Result<TaskState, String> {
    TaskState::parse(text).ok_or_else(|| format!("expected one of {}", TaskState::spellings()))
}

/// The tasks `args` select, of the caller in the tenant.
fn filter<'a>(args: &ListArgs, tenant: &'a str, owner_keys: &'a [String]) -> TaskFilter<'a> {
    TaskFilter {
        tenant_key: tenant,
        owner_keys,
        include_deleted: args.all || args.state == Some(TaskState::Deleted),
        state: args.state,
    }
}

pub fn run(ctx: &mut Ctx, args: ListArgs) -> Result<()> {
    let owner_keys = ctx.identity.clone();
    let tenant = ctx.tenant.clone();
    let filter = filter(&args, &tenant, &owner_keys);
    let out = ctx.out.clone();
    if out.json {
        let mut array = out.json_array();
        each_document(ctx, &args, &mut |value| array.push(&value))?;
        return array.finish();
    }
    // A table's columns are as wide as their widest cell. On a terminal
    // the table is fitted to it, so its cells are gathered first; into a
    // pipe or a file the tasks are read twice in the same snapshot (widths,
    // then lines), so nothing grows with the number of tasks.
    let now = ctx.clock.now();
    // A PROFILE column when any of the tenant's tasks has one (docs/CONTRACT.md
    // §22): one read along the tasks' profile index.
    let with_profiles = ctx.store()?.read(|tx| tx.any_task_bound(&tenant))?;
    let mut header: Vec<&str> = human::TASK_HEADER.to_vec();
    if with_profiles {
        // Before the instruction, the one column a terminal clips.
        header.insert(header.len() - 1, "profile");
    }
    let rows = |tx: &mut dyn Tx, note: bool, each: &mut dyn FnMut(Vec<String>) -> Result<()>| {
        tx.each_listed_task(&filter, &mut |tx, row| {
            let Some(task) = readable(note.then_some(&out), row) else {
                return Ok(Continue(()));
            };
            let last_run = tx.task_runs(&task.task_id, 1)?.pop();
            let mut row = human::task_row(&task, last_run.as_ref(), now);
            // The STATE cell says what stops the task, not only "active".
            if let Some(blocked) = human::blocked_by(tx.blocking_run(&task.task_id)?.as_ref()) {
                row[2] = match task.state {
                    TaskState::Active => blocked,
                    _ => format!("{}; {blocked}", row[2]),
                };
            }
            if let Some(since) = overdue_since(tx, &task)? {
                row[2] = format!("{}; overdue {}", row[2], crate::text::relative(since, now));
            }
            if with_profiles {
                let profile = task.payload.profile.as_ref();
                row.insert(
                    row.len() - 1,
                    profile.map_or("-".into(), |p| escape(&p.name)),
                );
            }
            each(row)?;
            Ok(Continue(()))
        })
    };
    if out.to_terminal() {
        let mut cells = Vec::new();
        ctx.store()?.read(|tx| {
            rows(tx, true, &mut |row| {
                cells.push(row);
                Ok(())
            })
        })?;
        if cells.is_empty() {
            return say_none(ctx, &filter);
        }
        return out.table(&header, cells);
    }
    ctx.store()?
        .read(|tx| {
            let mut table = PipeTable::new(&header);
            // Corrupt rows are reported once, in the first pass.
            rows(tx, true, &mut |row| {
                table.measure(&row);
                Ok(())
            })?;
            if table.is_empty() {
                return Ok(None);
            }
            let mut lines = table.print()?;
            rows(tx, false, &mut |row| lines.row(&row))?;
            lines.finish().map(Some)
        })?
        .map_or_else(|| say_none(ctx, &filter), Ok)
}

/// `list --json`'s elements, each handed to `each` as the store yields it,
/// in the listing's order: nothing grows with the number of tasks. A row
/// that cannot be read is said on stderr and skipped.
pub fn each_document(
    ctx: &mut Ctx,
    args: &ListArgs,
    each: &mut dyn FnMut(Value) -> Result<()>,
) -> Result<()> {
    let (owner_keys, tenant, out) = (ctx.identity.clone(), ctx.tenant.clone(), ctx.out.clone());
    let filter = filter(args, &tenant, &owner_keys);
    ctx.store()?.read(|tx| {
        tx.each_listed_task(&filter, &mut |tx, row| {
            let Some(task) = readable(Some(&out), row) else {
                return Ok(Continue(()));
            };
            let blocker = tx.blocking_run(&task.task_id)?;
            each(document(&task, blocker.as_ref(), overdue_since(tx, &task)?))?;
            Ok(Continue(()))
        })
    })
}

/// One task as `list --json` shows it, with the run that blocks it and
/// since when it is overdue (null when it is not).
pub fn document(task: &Task, blocker: Option<&Run>, overdue_since: Option<i64>) -> Value {
    let mut value = json::task(task);
    value["blocked_by"] = human::blocked_by_json(blocker);
    value["overdue_since"] = json::time(overdue_since);
    value
}

/// Since when the task is overdue; read only for a task that expects
/// successes (one row by its key), so other tasks cost nothing more.
fn overdue_since(tx: &mut dyn Tx, task: &Task) -> Result<Option<i64>> {
    match task.payload.expect_success_seconds {
        Some(_) => Ok(tx.success_clock(&task.task_id)?.overdue_since),
        None => Ok(None),
    }
}

/// An empty listing says so on stderr (stdout stays empty for scripts),
/// naming the tenant and the tenants where the caller does have tasks: a
/// misspelled `--tenant acm` is then one glance from `acme`.
fn say_none(ctx: &mut Ctx, filter: &TaskFilter<'_>) -> Result<()> {
    let tenants = ctx
        .store()?
        .read(|tx| tx.tenants_owned(filter.owner_keys))?;
    let what = match filter.state {
        Some(state) => format!("No {state} tasks"),
        None => "No tasks".to_string(),
    };
    let mut note = format!("{what} in tenant '{}'", escape(filter.tenant_key));
    let elsewhere: Vec<String> = tenants
        .iter()
        .filter(|(t, _)| t != filter.tenant_key)
        .map(|(t, n)| format!("'{}' ({n})", escape(t)))
        .collect();
    if !elsewhere.is_empty() {
        note.push_str(&format!(
            "; you have tasks in tenant {} (--tenant)",
            elsewhere.join(", ")
        ));
    }
    ctx.out.note(&note);
    Ok(())
}

/// The task, or None after saying on stderr (given `out`) why its row
/// cannot be shown.
fn readable(out: Option<&Output>, row: Result<Task, CorruptRow>) -> Option<Task> {
    match row {
        Ok(task) => Some(task),
        Err(corrupt) => {
            if let Some(out) = out {
                out.note(&CmdError::usage(corrupt.to_string()).message);
            }
            None
        }
    }
}
