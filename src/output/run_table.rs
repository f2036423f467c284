//! The `runs` table: one row per run with its task's label, the occurrence
//! on the task's wall clock, and the payload it ran under. Every stored
//! string passes through `escape`.

use crate::model::{short_id, Run, Task};
use crate::output::human;
use crate::text::{escape, relative, wall_time};

pub const RUN_HEADER: [&str; 9] = [
    "run",
    "task",
    "occurrence",
    "status",
    "attempt",
    "payload",
    "delivery",
    "when",
    "summary",
];

/// One `runs` row: the run, and its task when it is still readable (for
/// its zone and label); WHEN is counted from `now`.
pub fn run_row(r: &Run, task: Option<&Task>, now: i64) -> Vec<String> {
    let zone = task.map(|t| t.zone_in_force).unwrap_or(chrono_tz::UTC);
    vec![
        short_id(&r.run_id).to_string(),
        task.map(|t| escape(&t.label()))
            .unwrap_or_else(|| short_id(&r.task_id).into()),
        wall_time(r.scheduled_for, zone),
        r.status().to_string(),
        r.attempt.to_string(),
        // Which confirmed payload the run ran under (a replace changes it).
        r.payload_hash
            .get(..8)
            .unwrap_or(&r.payload_hash)
            .to_string(),
        r.delivery_status
            .map(|d| d.to_string())
            .unwrap_or_else(|| "-".into()),
        relative(
            r.finished_at().or(r.started_at()).unwrap_or(r.created_at),
            now,
        ),
        crate::text::clip(&human::run_summary(r), 50),
    ]
}
