//! `agentcron show`: one task and its last runs; or a pending draft in
//! full (`show_draft`), when no task answers to the name.

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use super::draft::Made;
use crate::context::Ctx;
use crate::error::{classify, ErrorKind};
use crate::limits::budget::BudgetState;
use crate::model::{Run, RunStatus, Task};
use crate::ops::access::{owned_task, Caller};
use crate::output::human;
use crate::store::SuccessClock;
use crate::wire as json;

/// Show one task and its last 10 runs, or a pending draft in full
///
/// Given a pending draft's id (or a unique prefix of 4+ characters) instead of a task,
/// shows everything confirming it would schedule: the schedule in words with its zone,
/// the next runs in that zone, the whole instruction (quoted, control characters
/// escaped), policy, target, retries, notices, who drafted it, its expiry and payload
/// hash; for a replacement, each field it changes (old → new), step-ups first.
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct ShowArgs {
    /// Task id, unique id prefix (4+ characters), or name; or a pending draft's id or prefix
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub task: String,
}

/// What `show` found: the caller's task with what it shows beside it, or,
/// when no task answers to the name, the caller's pending draft.
pub enum Shown {
    Task(Found),
    Draft(Made),
}

/// A task, its last runs (newest first), the run that blocks it, and the
/// notices its policy held back since the last one it sent (§16):
/// how many, since when.
pub struct Found {
    pub task: Task,
    pub runs: Vec<Run>,
    pub blocker: Option<Run>,
    pub held_back: Option<(i64, Option<i64>)>,
    /// Its budgets in their current windows (none without budgets).
    pub budgets: Vec<BudgetState>,
    /// The success clock (`expect_success`): when it runs out, or since
    /// when the task is overdue.
    pub clock: SuccessClock,
}

/// The task or pending draft `arg` names, of the caller in the tenant.
pub fn find(ctx: &mut Ctx, arg: &str) -> Result<Shown> {
    let tenant = ctx.tenant.clone();
    let identity = ctx.identity.clone();
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let now = ctx.clock.now();
    let found = ctx.store()?.read(|tx| {
        let task = owned_task(tx, &caller, arg)?;
        let runs = tx.task_runs(&task.task_id, 10)?;
        let blocker = tx.blocking_run(&task.task_id)?;
        let memory = tx.task_memory(&task.task_id)?;
        let budgets = crate::tick::budgets_now(tx, &task, now)?;
        let clock = tx.success_clock(&task.task_id)?;
        Ok((task, runs, blocker, memory, budgets, clock))
    });
    let (task, runs, blocker, memory, budgets, clock) = match found {
        Ok(found) => found,
        // No such task: a pending draft of the caller's, else the task's "no task".
        Err(e) if classify(&e).0 == ErrorKind::NotFound => {
            return match super::show_draft::pending(ctx, arg) {
                Ok(made) => Ok(Shown::Draft(made)),
                Err(_) => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    let held_back = memory
        .as_ref()
        .filter(|m| m.suppressed_count > 0)
        .map(|m| (m.suppressed_count, m.suppressed_since));
    Ok(Shown::Task(Found {
        task,
        runs,
        blocker,
        held_back,
        budgets,
        clock,
    }))
}

/// `show --json` of a task.
pub fn document(found: &Found) -> Value {
    let held_back = found.held_back;
    let mut value = json::task(&found.task);
    value["blocked_by"] = human::blocked_by_json(found.blocker.as_ref());
    value["notices_held_back"] = serde_json::json!({
        "count": held_back.map_or(0, |(n, _)| n),
        "since": json::time(held_back.and_then(|(_, since)| since)),
    });
    if !found.budgets.is_empty() {
        let spent = found
            .budgets
            .iter()
            .map(|b| crate::limits::budget::state_json(b, found.task.zone_in_force));
        value["budget_windows"] = Value::Array(spent.collect());
    }
    value["success_due_at"] = json::time(found.clock.success_due_at);
    value["overdue_since"] = json::time(found.clock.overdue_since);
    value["runs"] = Value::Array(found.runs.iter().map(json::run).collect());
    value
}

pub fn run(ctx: &mut Ctx, args: ShowArgs) -> Result<()> {
    let found = match find(ctx, &args.task)? {
        Shown::Task(found) => found,
        Shown::Draft(made) => return super::show_draft::print(ctx, &made),
    };
    if ctx.out.json {
        return ctx.out.document(&document(&found));
    }
    print(ctx, &found)
}

/// The task in words, its runs' table and the latest run's stderr.
fn print(ctx: &Ctx, found: &Found) -> Result<()> {
    let Found {
        task,
        runs,
        blocker,
        held_back,
        budgets,
        clock,
    } = found;
    let held_back = *held_back;
    let now = ctx.clock.now();
    ctx.out.line(&human::task_detail(task, now))?;
    if let Some(blocked) = human::blocked_by(blocker.as_ref()) {
        let approved_by = blocker
            .as_ref()
            .and_then(|r| r.approval().map(|a| a.by.as_str()));
        let hint = match (blocker.as_ref().map(|r| r.status()), approved_by) {
            (Some(RunStatus::Unknown), _) => "settle it with `agentcron reconcile`".to_string(),
            // Approved: nothing waits for a person any more.
            (_, Some(by)) => format!(
                "approved by {}; the next tick runs it",
                crate::text::escape(by)
            ),
            _ => "it waits for `agentcron approve` or `agentcron deny`".to_string(),
        };
        ctx.out
            .line(&format!("{:<13} {blocked}: {hint}", "blocked"))?;
    }
    for b in budgets {
        ctx.out.line(&format!(
            "{:<13} {}",
            "spent",
            human::budget_words(b, task, now)
        ))?;
    }
    if let Some((count, since)) = held_back {
        let since = since
            .map(|at| format!(" since {}", crate::text::wall_time(at, task.zone_in_force)))
            .unwrap_or_default();
        ctx.out.line(&format!(
            "{:<13} {count} held back by the notice policy{since}; the next notice sent says so",
            "suppressed"
        ))?;
    }
    if let Some(line) = human::success_clock_line(clock, task, now) {
        ctx.out.line(&line)?;
    }
    if runs.is_empty() {
        return ctx.out.line("\nNo runs yet.");
    }
    ctx.out.line("")?;
    let rows = runs
        .iter()
        .map(|r| human::run_row(r, task.zone_in_force, now))
        .collect();
    ctx.out.table(&human::RUN_HEADER, rows)?;
    // The latest run's stderr, when it left one: why it failed, in full.
    match runs.first().and_then(human::stderr_block) {
        Some(block) => ctx.out.line(&format!("\n{block}")),
        None => Ok(()),
    }
}
