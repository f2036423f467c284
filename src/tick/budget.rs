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
//! What a budget's state means is `limits::budget` (pure); how the claim
//! applies it is `claim/budgets.rs`.

use anyhow::Result;
use serde_json::{json, Value};

use crate::limits::budget::state_json;
pub use crate::limits::budget::BudgetState;
use crate::limits::window as budget_window;
use crate::limits::Usage;
use crate::model::{Run, Task};
use crate::store::{BudgetWindow, Tx};

/// The stored row of a budget's window.
fn row(b: &BudgetState, task_id: &str) -> BudgetWindow {
    BudgetWindow {
        task_id: task_id.to_string(),
        key: b.budget.key.clone(),
        period: b.budget.period.as_str().to_string(),
        window_start: b.window.start,
        spent: b.spent,
        told_at: b.told_at,
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

/// Writes the windows the claim changed.
pub fn save(tx: &mut dyn Tx, task_id: &str, budgets: &[BudgetState]) -> Result<()> {
    for b in budgets.iter().filter(|b| b.changed) {
        tx.save_budget_window(&row(b, task_id))?;
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

/// The executor's `limits` (docs/CONTRACT.md §5): its time limit and, per
/// budget, what is left of the window and when it resets.
pub fn limits(timeout_seconds: u64, budgets: &[BudgetState], task: &Task) -> Value {
    let budgets: Vec<Value> = budgets
        .iter()
        .map(|b| state_json(b, task.zone_in_force))
        .collect();
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
}
