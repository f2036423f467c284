//! `agentcron show DRAFT`: a pending draft in full, as `show` prints a task
//! (docs/CONTRACT.md §17) — what the person is asked to confirm, and for a
//! replacement each field it changes, step-ups first. The instruction is
//! quoted whole and escaped: an agent's words never reach the terminal as
//! control characters, nor read as agentcron's own. An interactive
//! `confirm` of an agent's draft prints this same text before it asks for
//! the code.

use anyhow::Result;
use serde_json::{json, Value};

use super::draft::{confirm_line, Made};
use crate::context::Ctx;
use crate::model::TaskState;
use crate::ops::access::{owned_draft, Caller};
use crate::output::confirmed;
use crate::payload::Payload;
use crate::schedule::{self, Occurrence, Tz};
use crate::text::{escape, relative, wall_time};

/// How many next runs are shown.
const NEXT_RUNS: usize = 3;

/// The caller's pending draft `arg` names (id or unique prefix), with the
/// zone it is read in, its next runs from now, and the task it replaces.
pub fn pending(ctx: &mut Ctx, arg: &str) -> Result<Made> {
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    ctx.store()?.read(|tx| {
        let (draft, payload) = owned_draft(tx, &caller, arg)?;
        let replacing = match &draft.replaces {
            Some(r) => tx.task(&r.task_id)?.and_then(Result::ok),
            None => None,
        };
        let zone = match payload.follow_key() {
            Some(key) => {
                crate::ops::zones::current_zone(tx, &tenant, key)?.unwrap_or(payload.zone.named())
            }
            None => payload.zone.named(),
        };
        let upcoming = schedule::upcoming(&payload.schedule, zone, now, NEXT_RUNS);
        Ok(Made {
            draft,
            payload,
            zone,
            upcoming,
            replacing,
        })
    })
}

/// `show DRAFT`: the text, or with --json the document.
pub fn print(ctx: &Ctx, made: &Made) -> Result<()> {
    if ctx.out.json {
        return ctx.out.document(&document(ctx, made));
    }
    ctx.out.line(&detail(ctx, made, ctx.clock.now()))
}

/// The draft as `show DRAFT --json` prints it: `draft --json`'s document,
/// its state and every payload field, and for a replacement the task it
/// replaces and the changes (each with `step_up`, why it must be read first).
pub fn document(ctx: &Ctx, made: &Made) -> Value {
    let (draft, payload) = (&made.draft, &made.payload);
    let mut value = super::draft::document(ctx, draft, payload, made.zone, &made.upcoming);
    let now = ctx.clock.now();
    value["state"] = json!(if now >= draft.expires_at {
        "expired"
    } else {
        "waiting"
    });
    value["zone"] = json!(made.zone.name());
    value["fields"] = payload.to_value();
    value["wrong_codes"] = json!(draft.code.as_ref().map_or(0, |c| c.wrong_attempts));
    if let Some(r) = &draft.replaces {
        value["replaces"] = json!({
            "task_id": r.task_id,
            "revision": r.revision,
            "name": made.replacing.as_ref().and_then(|t| t.payload.name.clone()),
        });
        value["changes"] = json!(changes(made));
    }
    value["warnings"] = json!(confirmed::warnings(payload));
    value
}

/// A replacement's changes against the task as it is now, step-ups first,
/// as `--json` and the notifier get them: `field` (the payload key),
/// `label` (in words), `old`, `new`, `step_up` (why it is read first:
/// "step-up: …", "silenced: …"; else null).
pub fn changes(made: &Made) -> Vec<Value> {
    let Some(task) = &made.replacing else {
        return Vec::new();
    };
    confirmed::review(&task.payload, &made.payload)
        .into_iter()
        .map(|r| {
            json!({"field": r.change.field, "label": r.label, "old": r.change.old,
                   "new": r.change.new, "step_up": r.why.map(|w| w.words())})
        })
        .collect()
}

/// A replacement's changes in words, one line each: "policy: read_only →
/// confirm_writes  [step-up: …]"; an instruction quoted, its first
/// `instruction_chars` characters (then "…").
pub fn change_lines(made: &Made, instruction_chars: usize) -> Vec<String> {
    match &made.replacing {
        Some(task) => confirmed::change_lines(&task.payload, &made.payload, instruction_chars),
        None => Vec::new(),
    }
}

/// The draft in full, for a person, with the confirm command behind the
/// prefix that makes it work as printed (docs/CONTRACT.md §17).
pub fn detail(ctx: &Ctx, made: &Made, now: i64) -> String {
    detail_text(made, now, &confirm_line(ctx, &made.draft))
}

/// `detail` with the confirm command given.
pub fn detail_text(made: &Made, now: i64, confirm: &str) -> String {
    let (payload, zone) = (&made.payload, made.zone);
    let mut text = heading(made, now);
    for (label, value) in field_rows(made, now) {
        text.push_str(&format!("{label:<13} {value}\n"));
    }
    text.push_str(&format!("\nNext runs ({}):\n", zone.name()));
    text.push_str(&next_runs(payload, zone, &made.upcoming, now));
    text.push_str(&format!("\nTo confirm, run:\n  {confirm}"));
    text
}

/// What the draft is and whether it still waits; for a replacement, the
/// task's state when not active and the changes, step-ups first.
fn heading(made: &Made, now: i64) -> String {
    let draft = &made.draft;
    let what = match (&draft.replaces, &made.replacing) {
        (Some(r), Some(task)) => format!(
            "a change to task {} ({}) at revision {}",
            escape(&task.label()),
            task.task_id,
            r.revision
        ),
        (Some(r), None) => format!("a change to task {}, which is gone", r.task_id),
        (None, _) => "a new task".to_string(),
    };
    let state = if now >= draft.expires_at {
        "expired"
    } else {
        "waiting for confirmation"
    };
    let mut text = format!("Draft {} — {what} — {state}\n\n", draft.draft_id);
    if let Some(task) = made
        .replacing
        .as_ref()
        .filter(|t| t.state != TaskState::Active)
    {
        text.push_str(&format!("The task is {} now.\n\n", task.state));
    }
    let changes = change_lines(made, usize::MAX);
    if !changes.is_empty() {
        text.push_str("Changes (old → new), what adds power or silences first:\n");
        for line in &changes {
            text.push_str(&format!("  {line}\n"));
        }
        text.push('\n');
    }
    text
}

/// (label, value) for every field a person confirms (`confirmed::fields`),
/// a warning below the instruction when its words are not what they look
/// like, the instruction's size, and the hashes.
fn field_rows(made: &Made, now: i64) -> Vec<(&'static str, String)> {
    let (draft, payload, zone) = (&made.draft, &made.payload, made.zone);
    let mut rows: Vec<(&str, String)> = Vec::new();
    for field in confirmed::fields(payload, zone) {
        let instruction = field.label == "instruction";
        rows.push((field.label, field.value));
        if instruction {
            rows.extend(confirmed::warnings(payload).into_iter().map(|w| ("", w)));
            rows.push(("length", instruction_size(&payload.instruction)));
        }
    }
    rows.extend([
        (
            "expires",
            format!(
                "{} ({})",
                wall_time(draft.expires_at, zone),
                relative(draft.expires_at, now)
            ),
        ),
        ("payload hash", draft.payload_hash.clone()),
    ]);
    if let Some(task) = &made.replacing {
        rows.push(("replaces hash", task.payload_hash.clone()));
    }
    if let Some(wrong) = draft
        .code
        .as_ref()
        .map(|c| c.wrong_attempts)
        .filter(|n| *n > 0)
    {
        rows.push(("wrong codes", format!("{wrong} of 3")));
    }
    rows
}

/// "1234 bytes, 1200 characters, SHA-256 …": how to tell that what one
/// read is all of it.
pub fn instruction_size(instruction: &str) -> String {
    format!(
        "{} bytes, {} characters, SHA-256 {}",
        instruction.len(),
        instruction.chars().count(),
        crate::payload::hash_hex(instruction.as_bytes())
    )
}

/// The next runs, one indented line each, on the zone's wall clock.
pub fn next_runs(payload: &Payload, zone: Tz, upcoming: &[Occurrence], now: i64) -> String {
    if upcoming.is_empty() {
        return "  none: the schedule has no occurrence left\n".into();
    }
    let mut text = String::new();
    for o in upcoming {
        text.push_str(&format!(
            "  {}  ({})",
            wall_time(o.at, zone),
            relative(o.at, now)
        ));
        if schedule::is_last(&payload.schedule, zone, o.at) {
            text.push_str("  (the last)");
        }
        text.push('\n');
    }
    text
}
