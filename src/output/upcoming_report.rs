//! What `upcoming` prints: its JSON document and its table. Rows come in
//! instant order, each an occurrence (or a pending retry) of a task with
//! that task's latest run; nothing here reads the store or a clock.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::{json, Value};

use crate::model::{short_id, Run, RunStatus, Task};
use crate::schedule;
use crate::text::{escape, relative, wall_time};
use crate::wire::time;

/// One coming occurrence: when, of which task, and whether it is a retry.
pub type Coming = (i64, Rc<Task>, bool);

/// `upcoming --json`: one object per row, `left_seconds` from `now`.
pub fn document(rows: &[Coming], last_runs: &HashMap<String, Run>, now: i64) -> Value {
    json!(rows
        .iter()
        .map(|(at, task, retry)| {
            let last = last_runs.get(&task.task_id);
            json!({
                "at": time(Some(*at)),
                "retry": retry,
                "local": schedule::format_local(*at, task.zone_in_force),
                "left_seconds": at - now,
                "task_id": task.task_id,
                "name": task.payload.name,
                "last_run_id": last.map(|r| r.run_id.clone()),
                "last_scheduled_for": time(last.map(|r| r.scheduled_for)),
                "last_status": last.map(|r| r.status().as_str()),
            })
        })
        .collect::<Vec<_>>())
}

/// The table's header and cells, LEFT counted from `now`. Rows are in
/// instant order; in several zones their wall times are not, so UTC is
/// shown first for the order to read.
pub fn table(
    rows: &[Coming],
    last_runs: &HashMap<String, Run>,
    now: i64,
) -> (&'static [&'static str], Vec<Vec<String>>) {
    let zones: HashSet<_> = rows.iter().map(|(_, t, _)| t.zone_in_force).collect();
    let with_utc = zones.len() > 1;
    let cells = rows
        .iter()
        .map(|row| cells(row, last_runs.get(&row.1.task_id), with_utc, now))
        .collect();
    let header: &[&str] = match with_utc {
        true => &["utc", "next", "left", "last", "result", "task"],
        false => &["next", "left", "last", "result", "task"],
    };
    (header, cells)
}

/// One row's cells: NEXT in the task's zone ("(retry)" for a retry), LEFT,
/// LAST and RESULT of its latest run, TASK.
fn cells((at, task, retry): &Coming, last: Option<&Run>, with_utc: bool, now: i64) -> Vec<String> {
    let mut next = wall_time(*at, task.zone_in_force);
    if *retry {
        next.push_str(" (retry)");
    }
    let mut row = Vec::with_capacity(6);
    if with_utc {
        row.push(schedule::format_wall(*at, chrono_tz::UTC));
    }
    row.extend([
        next,
        relative(*at, now),
        last.map(|r| wall_time(last_occurrence(r, task), task.zone_in_force))
            .unwrap_or_else(|| "-".into()),
        last.map(|r| r.status().to_string())
            .unwrap_or_else(|| "-".into()),
        match &task.payload.name {
            Some(name) => escape(name),
            None => short_id(&task.task_id).to_string(),
        },
    ]);
    row
}

/// The occurrence LAST names: the run's own or, for a missed run that
/// stands for several coalesced occurrences (recorded at the first), the
/// last of them — found along the schedule, since all of them were due by
/// the time the run was recorded. A person reads "when did it last come
/// due", not when a gap began.
fn last_occurrence(run: &Run, task: &Task) -> i64 {
    let mut at = run.scheduled_for;
    if run.status() != RunStatus::Missed {
        return at;
    }
    for _ in 1..run.skipped_occurrences {
        match schedule::next_after(&task.payload.schedule, task.zone_in_force, at) {
            Some(next) if next.at <= run.created_at => at = next.at,
            _ => break,
        }
    }
    at
}
