//! What a schedule's due occurrences come to (docs/CONTRACT.md §6), for
//! `plan`: the latest runs when a tick saw it due in time, or it is within
//! grace, or the task catches up (`catch_up: latest`); the occurrences
//! before it coalesce into one `missed` run whose reason says why (passed
//! unclaimed, superseded while queued, late past grace). A run that would
//! start while another blocks the task is `skipped_overlap` instead.
//!
//! Pure, like `plan`: the claim's transaction (claim/mod.rs) records what
//! this decides. At most one run per task starts, however long the outage,
//! so a catch-up is never a burst.

use crate::limits::CatchUp;
use crate::model::{Lease, Run, RunEnd, RunState, Start, Task};
use crate::store::QueueMark;
use crate::text::human_duration;

use super::ClaimSettings;

/// The runs for the `count` due occurrences from `first` to `latest`.
pub(super) fn decide_occurrences(
    task: &Task,
    first: i64,
    latest: i64,
    count: i64,
    queued: Option<&QueueMark>,
    blocking: Option<&Run>,
    s: ClaimSettings,
) -> Vec<Run> {
    let now = s.now;
    let grace = task.payload.grace_seconds;
    let coalesced = |skipped: i64, reason: String| {
        Run::new(
            task,
            first,
            first,
            1,
            RunState::not_run(RunEnd::Missed, now),
            now,
            |r| {
                r.skipped_occurrences = skipped;
                r.reason = Some(reason);
            },
        )
    };
    let mut runs = Vec::new();
    match queued {
        // Seen in time, still the newest: it runs whatever the queue wait.
        Some(mark) if mark.due_at == latest => {
            if count > 1 {
                runs.push(coalesced(count - 1, unclaimed(count - 1)));
            }
            runs.push(decided(task, latest, latest, 1, blocking, s));
        }
        // A newer occurrence overtook the queued one: only the newest may run.
        Some(mark) => {
            runs.push(coalesced(count - 1, superseded(mark, latest, count)));
            let late_by = now - latest;
            if late_by > grace && catches_up(task, blocking) {
                runs.push(caught_up(task, latest, s));
            } else if late_by > grace {
                runs.push(Run::new(
                    task,
                    latest,
                    latest,
                    1,
                    RunState::not_run(RunEnd::Missed, now),
                    now,
                    |r| {
                        r.skipped_occurrences = 1;
                        r.reason = Some(late(1, late_by, grace, 0));
                    },
                ));
            } else {
                runs.push(decided(task, latest, latest, 1, blocking, s));
            }
        }
        None => {
            let late_by = now - latest;
            let catch_up = late_by > grace && catches_up(task, blocking);
            if late_by > grace && !catch_up {
                runs.push(coalesced(count, late(count, late_by, grace, now - first)));
            } else {
                if count > 1 {
                    runs.push(coalesced(count - 1, unclaimed(count - 1)));
                }
                runs.push(match catch_up {
                    true => caught_up(task, latest, s),
                    false => decided(task, latest, latest, 1, blocking, s),
                });
            }
        }
    }
    runs
}

/// Whether a task runs its latest occurrence although its grace passed
/// with no tick to decide it (`catch_up: latest`, docs/CONTRACT.md §6):
/// only when nothing blocks it, so a catch-up is a run, never a skip; a
/// blocked task records the occurrence missed as any other.
fn catches_up(task: &Task, blocking: Option<&Run>) -> bool {
    task.payload.catch_up == CatchUp::Latest && blocking.is_none()
}

/// The catch-up run of the task's latest occurrence, past its grace: one
/// run, the occurrences before it coalesced missed beside it, so a tick
/// after a long outage starts at most one run per task, never a burst.
fn caught_up(task: &Task, latest: i64, s: ClaimSettings) -> Run {
    let mut run = decided(task, latest, latest, 1, None, s);
    run.catch_up = true;
    run
}

/// Why `count` occurrences, the newest late by `late_by` (the first by
/// `first_late`), were missed.
fn late(count: i64, late_by: i64, grace: i64, first_late: i64) -> String {
    if count > 1 {
        format!(
            "late by {} > grace {} ({count} occurrences coalesced, \
             the first late by {}); no tick saw them due within grace",
            human_duration(late_by),
            human_duration(grace),
            human_duration(first_late)
        )
    } else {
        format!(
            "late by {} > grace {}; no tick saw it due within grace",
            human_duration(late_by),
            human_duration(grace)
        )
    }
}

/// Why a queued occurrence did not run: a newer one, at `latest`,
/// overtook it while it waited for a slot.
fn superseded(mark: &QueueMark, latest: i64, count: i64) -> String {
    format!(
        "superseded while queued: the occurrence at {} (seen due at {}, waiting for a free slot) \
         was overtaken by the one at {}{}",
        crate::schedule::format_utc(mark.due_at),
        crate::schedule::format_utc(mark.seen_at),
        crate::schedule::format_utc(latest),
        if count > 2 {
            format!(" ({} occurrences coalesced)", count - 1)
        } else {
            String::new()
        }
    )
}

/// Why occurrences before the one that runs were not claimed. A tick that
/// failed (a full disk) leaves no trace, so this names both causes.
fn unclaimed(count: i64) -> String {
    format!(
        "{count} occurrence(s) passed unclaimed: no tick claimed them within grace \
         (cron was not running, or the ticks failed)"
    )
}

/// The run for an occurrence (or retry) that is within grace.
pub(super) fn decided(
    task: &Task,
    scheduled_for: i64,
    due_at: i64,
    attempt: i64,
    blocking: Option<&Run>,
    s: ClaimSettings,
) -> Run {
    match blocking {
        Some(blocker) => Run::new(
            task,
            scheduled_for,
            due_at,
            attempt,
            RunState::not_run(
                RunEnd::SkippedOverlap {
                    blocked_by: blocker.run_id.clone(),
                },
                s.now,
            ),
            s.now,
            |r| {
                r.reason = Some(format!(
                    "run {} is still {}",
                    blocker.run_id,
                    blocker.status()
                ));
            },
        ),
        // Claimed only when a slot is free: its executor starts now.
        None => Run::new(
            task,
            scheduled_for,
            due_at,
            attempt,
            RunState::Running {
                start: Start {
                    at: s.now,
                    queued_seconds: Some((s.now - due_at).max(0)),
                },
                lease: Lease {
                    token: uuid::Uuid::new_v4().to_string(),
                    until: s.now + s.lease_seconds,
                },
                continues: None,
            },
            s.now,
            |_| {},
        ),
    }
}
