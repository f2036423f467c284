//! `plan`'s catch-up rule (docs/CONTRACT.md §6): a `catch_up: latest`
//! task whose occurrences passed their grace with no tick to decide them
//! runs the latest of them once, the earlier ones missed; any other task
//! records them all missed, as before.

use super::*;
use crate::limits::CatchUp;
use crate::model::{RunEnd, RunState};
use crate::payload::Payload;
use crate::schedule::Schedule;

/// A run that ended `end` at `at`, after running.
fn ended(end: RunEnd, at: i64) -> RunState {
    RunState::Ended {
        end,
        start: Some(crate::model::Start {
            at,
            queued_seconds: Some(0),
        }),
        finished_at: at,
    }
}

const DAY: i64 = 86_400;
/// 09:00 UTC on a day, the daily task's occurrence.
const D0: i64 = 1_796_000_000 - 1_796_000_000 % DAY + 9 * 3600;
const GRACE: i64 = 300;

/// A daily task at 09:00 UTC, next due at `next`, catching up or not.
fn daily(catch_up: CatchUp, next: i64) -> Task {
    let schedule = Schedule::Interval {
        seconds: DAY,
        anchor_at: D0,
    };
    let canonical = serde_json::json!({
        "grace_seconds": GRACE, "instruction": "the digest", "max_retries": 2,
        "name": "digest", "owner_keys": ["unix:alice"], "policy": "read_only",
        "retry_backoff_seconds": 60, "schedule": schedule.to_json(),
        "target": "chat:1", "tenant_key": "default", "timezone": "UTC",
    });
    let payload = Payload {
        catch_up,
        ..Payload::from_canonical(&canonical.to_string()).unwrap()
    };
    let zone = payload.zone.named();
    payload.new_task("t1".into(), "h".into(), next, zone, D0 - DAY)
}

fn at(now: i64) -> ClaimSettings {
    ClaimSettings {
        now,
        lease_seconds: 60,
        runner: None,
    }
}

/// What each run of the plan is: status, occurrence, occurrences it
/// stands for, whether it catches up.
fn shape(plan: &Plan) -> Vec<(RunStatus, i64, i64, bool)> {
    plan.runs
        .iter()
        .map(|r| {
            (
                r.status(),
                r.scheduled_for,
                r.skipped_occurrences,
                r.catch_up,
            )
        })
        .collect()
}

#[test]
fn after_three_days_without_ticks_the_latest_occurrence_catches_up_once() {
    let task = daily(CatchUp::Latest, D0);
    let now = D0 + 3 * DAY + 3600;
    let plan = plan(&task, None, None, None, None, at(now));
    assert_eq!(
        shape(&plan),
        [
            (RunStatus::Missed, D0, 3, false),
            (RunStatus::Running, D0 + 3 * DAY, 0, true),
        ]
    );
    assert_eq!(plan.next_run_at, Some(D0 + 4 * DAY), "the next is ahead");
    let missed = plan.runs[0].reason.as_deref().unwrap();
    assert!(
        missed.contains("3 occurrence(s) passed unclaimed"),
        "{missed}"
    );
    // The next tick finds nothing due: one catch-up, never a burst.
    let after = Task {
        next_run_at: plan.next_run_at,
        ..task
    };
    assert!(plan_at(&after, now + 60).runs.is_empty());
}

fn plan_at(task: &Task, now: i64) -> Plan {
    plan(task, None, None, None, None, at(now))
}

#[test]
fn without_catch_up_every_late_occurrence_is_missed_as_before() {
    let task = daily(CatchUp::None, D0);
    let plan = plan_at(&task, D0 + 3 * DAY + 3600);
    assert_eq!(shape(&plan), [(RunStatus::Missed, D0, 4, false)]);
    assert!(plan.running().is_none());
}

#[test]
fn one_late_occurrence_catches_up_alone() {
    let task = daily(CatchUp::Latest, D0);
    let plan = plan_at(&task, D0 + 3600);
    assert_eq!(shape(&plan), [(RunStatus::Running, D0, 0, true)]);
    let run = &plan.runs[0];
    assert_eq!(run.queued_seconds(), Some(3600));
    assert!(run.lease().is_some());
}

#[test]
fn within_grace_a_run_is_on_time_not_a_catch_up() {
    let task = daily(CatchUp::Latest, D0);
    let plan = plan_at(&task, D0 + GRACE);
    assert_eq!(shape(&plan), [(RunStatus::Running, D0, 0, false)]);
    // Earlier occurrences unclaimed, the latest within grace: as before.
    let plan = plan_at(&task, D0 + 2 * DAY + 10);
    assert_eq!(
        shape(&plan),
        [
            (RunStatus::Missed, D0, 2, false),
            (RunStatus::Running, D0 + 2 * DAY, 0, false),
        ]
    );
}

#[test]
fn a_blocked_task_does_not_catch_up() {
    let task = daily(CatchUp::Latest, D0);
    let blocker = Run::new(
        &task,
        D0 - DAY,
        D0 - DAY,
        1,
        ended(RunEnd::Unknown { continued: None }, D0),
        D0,
        |_| {},
    );
    let plan = plan(&task, Some(&blocker), None, None, None, at(D0 + DAY + 3600));
    assert_eq!(shape(&plan), [(RunStatus::Missed, D0, 2, false)]);
}

#[test]
fn a_queued_occurrence_overtaken_past_grace_catches_up_the_newest() {
    let task = daily(CatchUp::Latest, D0);
    let mark = QueueMark {
        due_at: D0,
        seen_at: D0 + 10,
        superseded_at: Some(D0 + DAY),
    };
    let now = D0 + DAY + 3600;
    let overtaken = plan(&task, None, None, Some(&mark), None, at(now));
    assert_eq!(
        shape(&overtaken),
        [
            (RunStatus::Missed, D0, 1, false),
            (RunStatus::Running, D0 + DAY, 0, true),
        ]
    );
    // Seen in time and still the newest: it runs on time, however late.
    let mark = QueueMark {
        due_at: D0,
        seen_at: D0 + 10,
        superseded_at: Some(D0 + DAY),
    };
    let seen = plan(&task, None, None, Some(&mark), None, at(D0 + 3600));
    assert_eq!(shape(&seen), [(RunStatus::Running, D0, 0, false)]);
}

#[test]
fn a_late_retry_is_missed_whatever_the_catch_up() {
    let task = daily(CatchUp::Latest, D0 + DAY);
    let failed = Run::new(&task, D0, D0, 1, ended(RunEnd::Failed, D0), D0, |_| {});
    let task = Task {
        next_retry_at: Some(D0 + 60),
        retry_run_id: Some(failed.run_id.clone()),
        ..task
    };
    let plan = plan(&task, None, Some(&failed), None, None, at(D0 + 3600));
    assert_eq!(shape(&plan), [(RunStatus::Missed, D0, 1, false)]);
}
