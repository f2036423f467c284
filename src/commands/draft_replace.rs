//! What `draft --replace` shows: each field of the confirmed payload that
//! the draft changes (old → new), the next runs before and after, both
//! hashes and the confirm line (docs/CONTRACT.md §13).

use anyhow::Result;
use serde_json::json;

use crate::context::Ctx;
use crate::model::{Draft, Task};
use crate::output::human::in_words;
use crate::payload::{changes, Payload};
use crate::schedule::{self, Occurrence, Tz};
use crate::text::{escape, relative, wall_time};
use crate::wire::time;

pub fn print(
    ctx: &Ctx,
    draft: &Draft,
    task: &Task,
    payload: &Payload,
    zone: Tz,
    upcoming: &[Occurrence],
) -> Result<()> {
    let old = Payload::of_task(task);
    let now = ctx.clock.now();
    // Each side in its zone in force (a following task's is its owner's).
    let old_upcoming = schedule::upcoming(&old.schedule, task.timezone, now, 3);
    let diff = changes(&old, payload);
    let confirm = super::draft::confirm_line(ctx, draft);
    if ctx.out.json {
        let runs = |occ: &[Occurrence]| occ.iter().map(|o| time(Some(o.at))).collect::<Vec<_>>();
        let mut document = super::draft::document(ctx, draft, payload, zone, upcoming);
        document["replaces"] = json!({
                "task_id": task.task_id,
                "name": task.name,
                "revision": task.revision,
                "payload_hash": task.payload_hash,
                "summary": old.schedule.describe(task.timezone),
                "next_runs": runs(&old_upcoming),
        });
        document["diff"] = json!(diff
            .iter()
            .map(|c| json!({"field": c.field, "old": c.old, "new": c.new}))
            .collect::<Vec<_>>());
        return ctx.out.document(&document);
    }
    let mut text = format!(
        "Draft {} — replaces task {} ({}) at revision {} — expires {} ({})\n\nChanges:\n",
        draft.draft_id,
        escape(&task.label()),
        task.task_id,
        task.revision,
        wall_time(draft.expires_at, zone),
        relative(draft.expires_at, now)
    );
    for c in &diff {
        text.push_str(&format!(
            "  {:<22} {} → {}\n",
            c.field,
            in_words(&c.field, &old, &c.old),
            in_words(&c.field, payload, &c.new)
        ));
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
    text.push_str(&runs("Next runs now", &old_upcoming, &old, task.timezone));
    text.push_str(&runs("Next runs after", upcoming, payload, zone));
    text.push_str(&format!("\nOld payload hash: {}\n", task.payload_hash));
    text.push_str(&format!("New payload hash: {}\n", draft.payload_hash));
    text.push_str(&format!("\nTo confirm, run:\n  {confirm}"));
    ctx.out.line(&text)
}
