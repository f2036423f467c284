//! What `draft --replace` shows: each field of the confirmed payload that
//! the draft changes (old → new, in words, step-ups and what silences
//! first, as `output::confirmed` reviews them), the next runs before and after, both
//! hashes and the confirm line (docs/CONTRACT.md §13). `draft` calls it
//! with what it made; it calls nothing of `draft`'s.

use anyhow::Result;
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::model::Task;
use crate::ops::draft::Made;
use crate::output::confirmed;
use crate::payload::Payload;
use crate::schedule::{self, Occurrence, Tz};
use crate::text::{escape, relative, wall_time};
use crate::wire::time;

/// What `draft --replace --json` adds to `draft --json`'s document: the
/// task it replaces, with its schedule and next runs now, and the diff.
pub fn add_replaced(document: &mut Value, task: &Task, payload: &Payload, now: i64) {
    let old = &task.payload;
    // In the task's zone in force (a following task's is its owner's).
    let old_upcoming = schedule::upcoming(&old.schedule, task.zone_in_force, now, 3);
    document["replaces"] = json!({
            "task_id": task.task_id,
            "name": task.payload.name,
            "revision": task.revision,
            "payload_hash": task.payload_hash,
            "summary": old.schedule.describe(task.zone_in_force),
            "next_runs": old_upcoming.iter().map(|o| time(Some(o.at))).collect::<Vec<_>>(),
    });
    // Step-ups first, as the person reads them (docs/CONTRACT.md §17).
    document["diff"] = json!(confirmed::review(old, payload)
        .into_iter()
        .map(
            |r| json!({"field": r.change.field, "label": r.label, "old": r.change.old,
                        "new": r.change.new, "step_up": r.why.map(|w| w.words())})
        )
        .collect::<Vec<_>>());
}

/// The text `draft --replace` prints; `confirm` is the confirm line.
pub fn print(ctx: &Ctx, made: &Made, task: &Task, confirm: &str) -> Result<()> {
    let (draft, payload, zone, upcoming) = (&made.draft, &made.payload, made.zone, &made.upcoming);
    let old = &task.payload;
    // The instant the draft was made: one clock read for the command.
    let now = draft.created_at;
    // Each side in its zone in force (a following task's is its owner's).
    let old_upcoming = schedule::upcoming(&old.schedule, task.zone_in_force, now, 3);
    let mut text = format!(
        "Draft {} — replaces task {} ({}) at revision {} — expires {} ({})\n\nChanges:\n",
        draft.draft_id,
        escape(&task.label()),
        task.task_id,
        task.revision,
        wall_time(draft.expires_at, zone),
        relative(draft.expires_at, now)
    );
    // In words, what adds power or silences first, each with why.
    for line in confirmed::change_lines(old, payload, usize::MAX) {
        text.push_str(&format!("  {line}\n"));
    }
    for warning in confirmed::warnings(payload) {
        text.push_str(&format!("  {warning}\n"));
    }
    let runs = |title: &str, occ: &[Occurrence], p: &Payload, zone: Tz| {
        let mut block = format!("\n{title}:\n");
        for o in occ {
            let last = if schedule::is_last(&p.schedule, zone, o.at) {
                "  (the last)"
            } else {
                ""
            };
            block.push_str(&format!(
                "  {}  ({}){last}\n",
                wall_time(o.at, zone),
                relative(o.at, now)
            ));
        }
        block
    };
    text.push_str(&runs(
        "Next runs now",
        &old_upcoming,
        old,
        task.zone_in_force,
    ));
    text.push_str(&runs("Next runs after", upcoming, payload, zone));
    text.push_str(&format!("\nOld payload hash: {}\n", task.payload_hash));
    text.push_str(&format!("New payload hash: {}\n", draft.payload_hash));
    text.push_str(&format!("\nTo confirm, run:\n  {confirm}"));
    ctx.out.line(&text)
}
