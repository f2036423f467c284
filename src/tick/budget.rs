//! Budgets at claim and at settle (docs/CONTRACT.md §6, Budgets).
//!
//! A due run of a task with budgets reads the task's windows (one lookup by
//! its id, `BudgetTx::budget_windows`) and is not executed when one of them
//! is spent: it is recorded `skipped_budget` in the claim's transaction,
//! like a missed run. A run that starts adds one to its `runs` budgets in
//! that transaction too; the usage its executor reports is added in the
//! transaction that settles it. A stored window that began before the
//! current one counts as nothing spent: a window resets by being read, not
//! by a sweep. A task without budgets reads and writes nothing here.

use anyhow::Result;
use serde_json::{json, Value};

use crate::budget_window::{self, Window};
use crate::limits::{amount_words, decimal, Budget, Usage, RUNS_KEY};
use crate::model::{Run, RunStatus, Task, TaskState};
use crate::store::{BudgetWindow, Tx};

use super::claim::Plan;

/// One budget of a task as it stands now: its current window, what was
/// spent in it, and whether its notice was made.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetState {
    pub budget: Budget,
    pub window: Window,
    pub spent: f64,
    pub told_at: Option<i64>,
    /// When an earlier window of this budget was told (its stored row is
    /// being replaced by the current window's): a budget is told once per
    /// change, not once per window.
    pub told_before: Option<i64>,
    /// Differs from the stored row (reset, counted, told): to be saved.
    pub changed: bool,
}

impl BudgetState {
    pub fn is_spent(&self) -> bool {
        self.spent >= self.budget.limit
    }

    pub fn remaining(&self) -> f64 {
        (self.budget.limit - self.spent).max(0.0)
    }

    fn row(&self, task_id: &str) -> BudgetWindow {
        BudgetWindow {
            task_id: task_id.to_string(),
            key: self.budget.key.clone(),
            period: self.budget.period.as_str().to_string(),
            window_start: self.window.start,
            spent: self.spent,
            told_at: self.told_at,
        }
    }
}

/// The task's budgets in their windows at `now`, from its stored rows.
pub fn current(task: &Task, stored: &[BudgetWindow], now: i64) -> Vec<BudgetState> {
    task.payload
        .budgets
        .iter()
        .filter_map(|budget| {
            let window = budget_window::window(budget.period, task.zone_in_force, now)?;
            let row = stored
                .iter()
                .find(|w| w.key == budget.key && w.period == budget.period.as_str());
            let kept = row.filter(|w| w.window_start == window.start);
            Some(BudgetState {
                budget: budget.clone(),
                window,
                spent: kept.map_or(0.0, |w| w.spent),
                told_at: kept.and_then(|w| w.told_at),
                told_before: row.filter(|_| kept.is_none()).and_then(|w| w.told_at),
                changed: row.is_some() && kept.is_none(),
            })
        })
        .collect()
}

/// The task's budgets now: one lookup by its id, none without budgets.
pub fn read(tx: &mut dyn Tx, task: &Task, now: i64) -> Result<Vec<BudgetState>> {
    if task.payload.budgets.is_empty() {
        return Ok(Vec::new());
    }
    let stored = tx.budget_windows(&task.task_id)?;
    Ok(current(task, &stored, now))
}

/// Applies the budgets to a claim's plan: a run about to start becomes
/// `skipped_budget` when a budget is spent (settled now, like a missed
/// run: the schedule has moved on, a retry it was ends); otherwise the
/// run counts in the `runs` budgets.
pub fn apply(plan: &mut Plan, task: &Task, budgets: Vec<BudgetState>, now: i64) {
    plan.budgets = budgets;
    let Some(run) = plan
        .runs
        .iter_mut()
        .find(|r| r.status == RunStatus::Running)
    else {
        return;
    };
    match plan.budgets.iter().find(|b| b.is_spent()) {
        Some(spent) => {
            hold_back(run, &reason(spent, task), now);
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
    run.status = RunStatus::SkippedBudget;
    run.reason = Some(reason.to_string());
    run.finished_at = Some(now);
    run.lease_token = None;
    run.lease_until = None;
    run.runner = None;
    run.started_at = None;
    run.queued_seconds = None;
}

/// "budget usd=1/day spent (1.2 of 1); the window resets at 2026-03-09
/// 00:00 -03", and for a task that expects successes, that it will be
/// overdue meanwhile: the one notice that says so (tick/overdue.rs holds
/// its own back).
pub fn reason(b: &BudgetState, task: &Task) -> String {
    let overdue = task
        .payload
        .expect_success_seconds
        .map(|expect| {
            format!(
                "; no run succeeds until then, so it may be overdue (it expects a success within {})",
                crate::text::human_duration(expect)
            )
        })
        .unwrap_or_default();
    format!(
        "budget {} spent ({} of {}); the window resets at {}{overdue}",
        b.budget.spelling(),
        amount_words(b.spent),
        amount_words(b.budget.limit),
        crate::text::wall_time(b.window.end, task.zone_in_force)
    )
}

/// The budget whose notice a `skipped_budget` run makes, and whether that
/// notice was made already (then it is held back): the first spent
/// budget. A budget is told once per change (docs/CONTRACT.md §16): spent
/// again in a later window, it is news only when a run succeeded since it
/// was told (`last_success_at`, from the task's memory); otherwise the
/// told instant is carried into the new window. Marks it told.
pub fn tell(plan: &mut Plan, last_success_at: Option<i64>, now: i64) -> Option<bool> {
    if !plan
        .runs
        .iter()
        .any(|r| r.status == RunStatus::SkippedBudget)
    {
        return None;
    }
    let spent = plan.budgets.iter_mut().find(|b| b.is_spent())?;
    let told_at = spent.told_at.or(spent.told_before);
    let told = told_at.is_some_and(|at| last_success_at.is_none_or(|success| success < at));
    let marked = if told { told_at } else { Some(now) };
    if spent.told_at != marked {
        spent.told_at = marked;
        spent.changed = true;
    }
    Some(told)
}

/// `tell`, reading the task's last success only when a run is skipped
/// for its budget (one lookup by the task's id).
pub fn tell_in(tx: &mut dyn Tx, plan: &mut Plan, task_id: &str, now: i64) -> Result<bool> {
    if !plan
        .runs
        .iter()
        .any(|r| r.status == RunStatus::SkippedBudget)
    {
        return Ok(false);
    }
    let last_success_at = tx.task_memory(task_id)?.and_then(|m| m.last_success_at);
    Ok(tell(plan, last_success_at, now).unwrap_or(false))
}

/// Writes the windows the claim changed.
pub fn save(tx: &mut dyn Tx, task_id: &str, budgets: &[BudgetState]) -> Result<()> {
    for b in budgets.iter().filter(|b| b.changed) {
        tx.save_budget_window(&b.row(task_id))?;
    }
    Ok(())
}

/// Records what a settling run's executor reported spending, in the
/// settling transaction: on the run (added to what it reported before
/// parking, if it did), in the tenant's totals, and in each budget window
/// of the task counting one of its keys (the window holding `now`).
pub fn record_usage(
    tx: &mut dyn Tx,
    task: Option<&Task>,
    run: &Run,
    usage: &Usage,
    now: i64,
) -> Result<()> {
    if usage.is_empty() {
        return Ok(());
    }
    let on_run = usage.added_to(tx.run_usage(&run.run_id)?.as_deref());
    tx.set_run_usage(&run.run_id, &on_run.to_json().to_string())?;
    for (key, amount) in &usage.amounts {
        tx.add_usage_total(&run.tenant_key, key, *amount)?;
    }
    let Some(task) = task else { return Ok(()) };
    let counts = |key: &str| usage.amounts.iter().find(|(k, _)| k == key).map(|a| a.1);
    if !task
        .payload
        .budgets
        .iter()
        .any(|b| counts(&b.key).is_some())
    {
        return Ok(());
    }
    let mut budgets = read(tx, task, now)?;
    for b in &mut budgets {
        if let Some(amount) = counts(&b.budget.key) {
            b.spent += amount;
            b.changed = true;
        }
    }
    save(tx, &task.task_id, &budgets)
}

/// The active tasks whose window of a budget is spent now, with that
/// budget (`status`): one read along the windows, each task by its key.
pub fn spent_now(
    tx: &mut dyn Tx,
    tenant: Option<&str>,
    now: i64,
) -> Result<Vec<(Task, BudgetState)>> {
    let rows = tx.active_budget_windows(tenant)?;
    let mut ids: Vec<&str> = rows.iter().map(|r| r.task_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut spent = Vec::new();
    for id in ids {
        let Some(Ok(task)) = tx.task(id)? else {
            continue;
        };
        let own: Vec<BudgetWindow> = rows.iter().filter(|r| r.task_id == id).cloned().collect();
        for state in current(&task, &own, now)
            .into_iter()
            .filter(BudgetState::is_spent)
        {
            spent.push((task.clone(), state));
        }
    }
    Ok(spent)
}

/// One budget as `show --json` and `status --json` name it.
pub fn state_json(b: &BudgetState, task: &Task) -> Value {
    json!({
        "key": b.budget.key,
        "limit": decimal(b.budget.limit),
        "period": b.budget.period.as_str(),
        "spent": decimal(b.spent),
        "remaining": decimal(b.remaining()),
        "resets_at": crate::schedule::format_local(b.window.end, task.zone_in_force),
    })
}

/// The executor's `limits` (docs/CONTRACT.md §5): its time limit and, per
/// budget, what is left of the window and when it resets.
pub fn limits(timeout_seconds: u64, budgets: &[BudgetState], task: &Task) -> Value {
    let budgets: Vec<Value> = budgets.iter().map(|b| state_json(b, task)).collect();
    json!({"timeout_seconds": timeout_seconds, "budgets": budgets})
}

/// Records `new` (what the run reported beyond what was recorded) in one
/// transaction guarded by the run's lease: on the run, its budget windows
/// and the tenant's totals. None when the lease is not ours any more (left
/// to the settle and the reconcile); else the budget the run took past its
/// limit, if one.
pub fn record_reported(
    store: &mut dyn crate::store::Store,
    task: &Task,
    run: &Run,
    token: &str,
    new: &Usage,
    now: i64,
) -> Result<Option<Option<String>>> {
    store.write(|tx| {
        if !tx.lease_holds(&run.run_id, token, now)? {
            return Ok(None);
        }
        record_usage(tx, Some(task), run, new, now)?;
        let states = read(tx, task, now)?;
        let passed = states.iter().find(|b| {
            b.spent > b.budget.limit && new.amounts.iter().any(|(k, _)| *k == b.budget.key)
        });
        Ok(Some(passed.map(|b| {
            format!(
                "budget {} spent during the run ({} of {})",
                b.budget.spelling(),
                crate::limits::amount_words(b.spent),
                crate::limits::amount_words(b.budget.limit)
            )
        })))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(budgets: &[&str], zone: &str) -> Task {
        let canonical = json!({
            "budgets": budgets, "grace_seconds": 90, "instruction": "x", "max_retries": 0,
            "name": "b", "owner_keys": ["unix:alice"], "policy": "read_only",
            "retry_backoff_seconds": 60, "schedule": {"kind": "interval", "seconds": 3600,
            "anchor_at": 0}, "target": "chat:1", "tenant_key": "default", "timezone": zone,
        });
        let payload = crate::payload::Payload::from_canonical(&canonical.to_string()).unwrap();
        let zone = payload.zone.named();
        payload.new_task("t".into(), "h".into(), 60, zone, 0)
    }

    fn row(key: &str, period: &str, start: i64, spent: f64) -> BudgetWindow {
        BudgetWindow {
            task_id: "t".into(),
            key: key.into(),
            period: period.into(),
            window_start: start,
            spent,
            told_at: Some(start + 1),
        }
    }

    #[test]
    fn a_stored_window_counts_only_while_it_is_the_current_one() {
        let task = task(&["runs=2/week", "usd=1/day"], "UTC");
        let now = 1_772_971_200; // 2026-03-08T12:00:00Z, a Sunday
        let today = 1_772_928_000;
        let stored = [
            row("usd", "day", today, 0.6),
            row("runs", "week", today - 6 * 86400 - 86400, 2.0),
        ];
        let states = current(&task, &stored, now);
        let usd = states.iter().find(|s| s.budget.key == "usd").unwrap();
        assert_eq!(
            (usd.spent, usd.told_at, usd.changed),
            (0.6, Some(today + 1), false)
        );
        // Last week's runs count nothing this week, and the row is reset.
        let runs = states.iter().find(|s| s.budget.key == "runs").unwrap();
        assert_eq!((runs.spent, runs.told_at, runs.changed), (0.0, None, true));
        assert_eq!(runs.window.start, today - 6 * 86400);
    }

    /// A plan whose run was skipped for `usd=1/day`, spent in the window
    /// of `now` (its stored row from the window starting `stored_start`).
    fn skipped(task: &Task, stored_start: i64, told_at: Option<i64>, now: i64) -> Plan {
        let stored = [BudgetWindow {
            told_at,
            ..row("usd", "day", stored_start, 1.5)
        }];
        let mut states = current(task, &stored, now);
        states[0].spent = 1.5;
        let run = Run::new(task, now, now, 1, RunStatus::SkippedBudget, now, |_| {});
        crate::tick::claim::Plan {
            runs: vec![run],
            next_run_at: None,
            next_retry_at: None,
            retry_run_id: None,
            state: TaskState::Active,
            superseded_retry: None,
            consumed_trigger: None,
            budgets: states,
        }
    }

    #[test]
    fn a_budget_is_told_once_per_change_not_once_per_window() {
        let task = task(&["usd=1/day"], "UTC");
        let today = 1_772_928_000;
        let now = today + 3600;
        let yesterday = today - 86400;
        // Never told: told now.
        let mut plan = skipped(&task, today, None, now);
        assert_eq!(tell(&mut plan, None, now), Some(false));
        assert_eq!(plan.budgets[0].told_at, Some(now));
        // Told yesterday, no success since: today's skip holds its notice
        // back, and carries the told instant into today's window.
        let mut plan = skipped(&task, yesterday, Some(yesterday + 60), now);
        assert_eq!(tell(&mut plan, Some(yesterday - 10), now), Some(true));
        assert_eq!(plan.budgets[0].told_at, Some(yesterday + 60));
        // A run succeeded after it was told: spent again is news.
        let mut plan = skipped(&task, yesterday, Some(yesterday + 60), now);
        assert_eq!(tell(&mut plan, Some(yesterday + 600), now), Some(false));
        assert_eq!(plan.budgets[0].told_at, Some(now));
    }
}
