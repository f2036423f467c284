//! A claim's budgets (docs/CONTRACT.md §6, Budgets): a run about to start
//! is held back when a budget is spent, or counted in the `runs` budgets;
//! the decisions themselves are `limits::budget`'s.

use anyhow::Result;

use crate::limits::budget::{self, BudgetState};
use crate::limits::RUNS_KEY;
use crate::model::{Run, RunEnd, RunState, RunStatus, Task, TaskState};
use crate::store::Tx;

use super::Plan;

/// Applies the budgets to a claim's plan: a run about to start becomes
/// `skipped_budget` when a budget is spent (settled now, like a missed
/// run: the schedule has moved on, a retry it was ends); otherwise the
/// run counts in the `runs` budgets.
pub fn apply(plan: &mut Plan, task: &Task, budgets: Vec<BudgetState>, now: i64) {
    plan.budgets = budgets;
    let Some(run) = plan
        .runs
        .iter_mut()
        .find(|r| r.status() == RunStatus::Running)
    else {
        return;
    };
    match plan.budgets.iter().find(|b| b.is_spent()) {
        Some(spent) => {
            let why = budget::reason(
                spent,
                task.payload.expect_success_seconds,
                task.zone_in_force,
            );
            hold_back(run, &why, now);
            let nothing_left = plan.next_run_at.is_none() && plan.next_retry_at.is_none();
            if nothing_left {
                plan.state = TaskState::Completed;
            }
        }
        None => {
            for b in plan.budgets.iter_mut().filter(|b| b.budget.key == RUNS_KEY) {
                b.spent += 1.0;
                b.changed = true;
            }
        }
    }
}

/// A run the claim decided to start, recorded instead as not executed.
fn hold_back(run: &mut Run, reason: &str, now: i64) {
    run.state = RunState::not_run(RunEnd::SkippedBudget, now);
    run.reason = Some(reason.to_string());
}

/// Whether the notice of a run skipped for its budget was made already
/// (`budget::tell`), reading the task's last success only when a run is
/// skipped (one lookup by the task's id).
pub fn tell_in(tx: &mut dyn Tx, plan: &mut Plan, task_id: &str, now: i64) -> Result<bool> {
    if !plan
        .runs
        .iter()
        .any(|r| r.status() == RunStatus::SkippedBudget)
    {
        return Ok(false);
    }
    let last_success_at = tx.task_memory(task_id)?.and_then(|m| m.last_success_at);
    Ok(budget::tell(&mut plan.budgets, last_success_at, now).unwrap_or(false))
}
