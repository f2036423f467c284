//! The overdue clock (docs/CONTRACT.md §6, §16), pure: when a task that
//! expects a success within DUR (`expect_success_seconds`) runs out of
//! time, and the words its notice says. The tick keeps the clock in the
//! store (tick/overdue.rs) and decides it (tick/overdue_step.rs).

use chrono_tz::Tz;

use crate::text::{human_duration, wall_time};

/// When the clock of a task, confirmed, replaced or resumed at `now`, runs
/// out: DUR after its next occurrence (`next_run_at`), or after `now` when
/// that is later (or there is none). None when the task expects no
/// successes (`expect` is None).
pub fn first_due(expect: Option<i64>, next_run_at: Option<i64>, now: i64) -> Option<i64> {
    let expect = expect?;
    let start = next_run_at.map_or(now, |next| next.max(now));
    Some(start.saturating_add(expect))
}

/// When the clock runs out again after a run succeeded at `finished_at`;
/// None when the task expects no successes.
pub fn after_success(expect: Option<i64>, finished_at: i64) -> Option<i64> {
    expect.map(|expect| finished_at.saturating_add(expect))
}

/// What a task is, for its overdue message.
pub struct Silent<'a> {
    /// Its name, or its short id.
    pub label: &'a str,
    pub created_at: i64,
    pub expect_success_seconds: Option<i64>,
    pub zone: Tz,
}

/// "digest (1a2b3c4d) is overdue: no run has succeeded for 3 d (last
/// success 2026-12-01 09:00 CET); it expects one within 1 d".
pub fn message(task: &Silent<'_>, last_success_at: Option<i64>, now: i64) -> String {
    let zone = task.zone;
    let since = match last_success_at {
        Some(at) => format!(
            "no run has succeeded for {} (last success {})",
            human_duration(now - at),
            wall_time(at, zone)
        ),
        None => format!(
            "no run has succeeded since it was confirmed {} ago ({})",
            human_duration(now - task.created_at),
            wall_time(task.created_at, zone)
        ),
    };
    let expect = task.expect_success_seconds.unwrap_or_default();
    format!(
        "{} is overdue: {since}; it expects one within {}",
        task.label,
        human_duration(expect)
    )
}

/// Why an overdue caused by a spent budget is held back: the budget's one
/// notice says the task will be overdue (`budget::reason`).
pub const BUDGET_SAYS_IT: &str = "told in the budget notice";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_starts_at_the_later_of_now_and_the_next_occurrence() {
        assert_eq!(first_due(Some(60), Some(1_000), 500), Some(1_060));
        assert_eq!(first_due(Some(60), Some(100), 500), Some(560));
        assert_eq!(first_due(Some(60), None, 500), Some(560));
        assert_eq!(first_due(None, Some(1_000), 500), None);
        assert_eq!(after_success(Some(60), 700), Some(760));
        assert_eq!(after_success(None, 700), None);
    }
}
