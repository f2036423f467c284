//! A budget as it stands in its current window, and what the claim decides
//! of it (docs/CONTRACT.md §6, Budgets; §16, told once per change): pure,
//! plain values in and out. The tick reads and writes the windows
//! (tick/budget.rs) and applies these decisions to its claim
//! (tick/claim/budgets.rs).

use chrono_tz::Tz;
use serde_json::{json, Value};

use super::window::Window;
use super::{amount_words, decimal, Budget};

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
}

/// "budget usd=1/day spent (1.2 of 1); the window resets at 2026-03-09
/// 00:00 -03", and for a task that expects successes (within `expect`
/// seconds), that it will be overdue meanwhile: the one notice that says
/// so (the overdue clock holds its own back, `overdue::BUDGET_SAYS_IT`).
pub fn reason(b: &BudgetState, expect_success_seconds: Option<i64>, zone: Tz) -> String {
    let overdue = expect_success_seconds
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
        crate::text::wall_time(b.window.end, zone)
    )
}

/// For a run skipped for its budget: whether the notice of the first spent
/// budget was made already (then it is held back). A budget is told once
/// per change (docs/CONTRACT.md §16): spent again in a later window, it is
/// news only when a run succeeded since it was told (`last_success_at`);
/// otherwise the told instant is carried into the new window. Marks it
/// told. None when no budget is spent.
pub fn tell(budgets: &mut [BudgetState], last_success_at: Option<i64>, now: i64) -> Option<bool> {
    let spent = budgets.iter_mut().find(|b| b.is_spent())?;
    let told_at = spent.told_at.or(spent.told_before);
    let told = told_at.is_some_and(|at| last_success_at.is_none_or(|success| success < at));
    let marked = if told { told_at } else { Some(now) };
    if spent.told_at != marked {
        spent.told_at = marked;
        spent.changed = true;
    }
    Some(told)
}

/// One budget as `show --json`, `status --json` and the executor's
/// `limits` name it, its reset in the task's `zone`.
pub fn state_json(b: &BudgetState, zone: Tz) -> Value {
    json!({
        "key": b.budget.key,
        "limit": decimal(b.budget.limit),
        "period": b.budget.period.as_str(),
        "spent": decimal(b.spent),
        "remaining": decimal(b.remaining()),
        "resets_at": crate::schedule::format_local(b.window.end, zone),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::BudgetPeriod;

    fn spent_usd(window_start: i64, told_at: Option<i64>) -> BudgetState {
        BudgetState {
            budget: Budget::parse("usd=1/day").unwrap(),
            window: Window {
                start: window_start,
                end: window_start + 86400,
            },
            spent: 1.5,
            told_at,
            told_before: None,
            changed: false,
        }
    }

    #[test]
    fn a_budget_is_told_once_per_change_not_once_per_window() {
        let today = 1_772_928_000;
        let now = today + 3600;
        let yesterday = today - 86400;
        assert_eq!(spent_usd(today, None).budget.period, BudgetPeriod::Day);
        // Never told: told now.
        let mut budgets = [spent_usd(today, None)];
        assert_eq!(tell(&mut budgets, None, now), Some(false));
        assert_eq!(budgets[0].told_at, Some(now));
        // Told yesterday, no success since: today's skip holds its notice
        // back, and carries the told instant into today's window.
        let told_yesterday = || BudgetState {
            told_at: None,
            told_before: Some(yesterday + 60),
            changed: true,
            ..spent_usd(today, None)
        };
        let mut budgets = [told_yesterday()];
        assert_eq!(tell(&mut budgets, Some(yesterday - 10), now), Some(true));
        assert_eq!(budgets[0].told_at, Some(yesterday + 60));
        // A run succeeded after it was told: spent again is news.
        let mut budgets = [told_yesterday()];
        assert_eq!(tell(&mut budgets, Some(yesterday + 600), now), Some(false));
        assert_eq!(budgets[0].told_at, Some(now));
        // Nothing spent: nothing to tell.
        let mut budgets = [BudgetState {
            spent: 0.5,
            ..spent_usd(today, None)
        }];
        assert_eq!(tell(&mut budgets, None, now), None);
    }
}
