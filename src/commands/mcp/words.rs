//! The short human text beside each tool's JSON: what an agent reads first
//! and may repeat to its person. The draft's text says what to tell the
//! person — what was drafted, when it runs, its hash, and that *they*
//! confirm it with the code they received — and never that the agent should
//! run `confirm`.

use serde_json::Value;

use super::code_notice::Sent;

fn text(value: &Value, key: &str) -> String {
    match &value[key] {
        Value::String(s) => crate::text::escape(s),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// The draft's `warnings` (words that are not what they look like), each
/// one line, escaped again: they quote the agent's words.
fn warnings(value: &Value) -> Vec<String> {
    value["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(crate::text::escape)
        .collect()
}

fn count(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

/// What to tell the person about a draft just made.
pub fn draft(value: &Value, target: &str, sent: &Sent) -> String {
    // On the task's own wall clock, in its zone, as the person lives it.
    let runs: Vec<String> = value["next_runs_local"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["at"].as_str())
        .map(crate::text::escape)
        .collect();
    let instruction = value["payload"]
        .as_str()
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|p| p["instruction"].as_str().map(|i| crate::text::clip(i, 80)))
        .unwrap_or_default();
    let what = if value.get("replaces").is_some() {
        format!("a change to task {}", text(&value["replaces"], "task_id"))
    } else {
        "a task".to_string()
    };
    let what = format!("{what} ({})", crate::text::quoted(&instruction));
    let mut lines = vec![
        format!(
            "Drafted {what}; nothing is scheduled until the person confirms it. \
             Tell them: it runs {} in {} (next: {}); payload hash {}; the draft expires {}; \
             they can read it in full with {}.",
            text(value, "summary"),
            text(value, "zone"),
            runs.join(", "),
            text(value, "payload_hash"),
            text(value, "expires_at"),
            text(value, "show_command"),
        ),
        match sent {
            Sent::Delivered => format!(
                "A one-time code was sent to {target}. To schedule it, the person runs, \
                 themselves: {} — with the code from the message they received in place of \
                 NNNNNN.",
                text(value, "confirm_command")
            ),
            Sent::Nothing(why) | Sent::Unknown(why) => format!(
                "The one-time code could not be sent to {target} ({why}). The person can \
                 confirm at their own terminal: {} without --code shows them a code there to \
                 type back.",
                text(value, "confirm_command").replace(" --code NNNNNN", "")
            ),
        },
        "You cannot confirm it: agentcron refuses a confirmation from the agent that drafted."
            .to_string(),
    ];
    // What the person's message warns of, the agent is told too.
    lines.extend(warnings(value));
    lines.retain(|l| !l.is_empty());
    lines.join("\n")
}

/// The first line of a draft's text when how its code went could not be
/// recorded: the draft exists all the same.
pub fn unrecorded(draft_id: &str, error: &str) -> String {
    format!(
        "Draft {} exists; do not draft it again. (agentcron could not record how its \
         one-time code went: {}.)",
        crate::text::escape(draft_id),
        crate::text::escape(error)
    )
}

pub fn draft_status(value: &Value) -> String {
    let id = text(value, "draft_id");
    match value["state"].as_str() {
        Some("waiting") => format!(
            "Draft {id} is waiting for the person's confirmation until {}.",
            text(value, "expires_at")
        ),
        Some("expired") => format!(
            "Draft {id} expired at {} unconfirmed; draft again if the person still wants it.",
            text(value, "expires_at")
        ),
        Some("confirmed") => format!("Draft {id} was confirmed: task {}.", text(value, "task_id")),
        Some("void") => format!("Draft {id} is void: three wrong codes were given."),
        _ => format!("Draft {id}: {}.", text(value, "state")),
    }
}

pub fn list(value: &Value) -> String {
    let mut lines = vec![format!("{} task(s).", count(value))];
    for task in value.as_array().into_iter().flatten().take(20) {
        let label = match &task["name"] {
            Value::String(name) => crate::text::escape(name),
            _ => text(task, "task_id"),
        };
        lines.push(format!(
            "- {label}: {}, next run {}",
            text(task, "state"),
            text(task, "next_run_at")
        ));
    }
    lines.join("\n")
}

pub fn show(value: &Value) -> String {
    if value.get("draft_id").is_some() {
        let mut lines = vec![format!(
            "Draft {} is {}: it runs {} in {}; payload hash {}; expires {}.",
            text(value, "draft_id"),
            text(value, "state"),
            text(value, "summary"),
            text(value, "zone"),
            text(value, "payload_hash"),
            text(value, "expires_at"),
        )];
        lines.extend(warnings(value));
        return lines.join("\n");
    }
    format!(
        "Task {} ({}): {}, next run {}, payload hash {}; {} recent run(s).",
        text(value, "task_id"),
        text(value, "name"),
        text(value, "state"),
        text(value, "next_run_at"),
        text(value, "payload_hash"),
        count(&value["runs"])
    )
}

pub fn runs(value: &Value) -> String {
    let mut lines = vec![format!("{} run(s), newest first.", count(value))];
    for run in value.as_array().into_iter().flatten().take(20) {
        lines.push(format!(
            "- {} {}: {}",
            text(run, "scheduled_for"),
            text(run, "status"),
            text(run, "summary")
        ));
    }
    lines.join("\n")
}

pub fn next(value: &Value) -> String {
    let times: Vec<String> = value["next"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| text(o, "at"))
        .collect();
    match times.is_empty() {
        true => format!("Task {} has no occurrence left.", text(value, "task_id")),
        false => format!("Next occurrences: {}.", times.join(", ")),
    }
}

pub fn upcoming(value: &Value) -> String {
    let mut lines = vec![format!("{} coming occurrence(s).", count(value))];
    for row in value.as_array().into_iter().flatten().take(20) {
        lines.push(format!("- {} {}", text(row, "at"), text(row, "name")));
    }
    lines.join("\n")
}

pub fn explain(value: &Value) -> String {
    text(value, "explanation")
}

pub fn profiles(value: &Value) -> String {
    let mut lines = vec![format!(
        "{} profile(s); draft with one by giving its name as `profile`.",
        count(value)
    )];
    for p in value.as_array().into_iter().flatten() {
        let described = match &p["description"] {
            Value::String(d) => format!(": {}", crate::text::escape(d)),
            _ => String::new(),
        };
        lines.push(format!(
            "- {}{described} (runs `{}`)",
            text(p, "name"),
            text(p, "command")
        ));
    }
    lines.join("\n")
}

pub fn status(value: &Value) -> String {
    format!(
        "Last tick {}{}; {} active task(s), {} due, {} unknown run(s).",
        text(value, "last_tick_at"),
        if value["stale"] == Value::Bool(true) {
            " (stale: is cron running agentcron tick?)"
        } else {
            ""
        },
        text(&value["tasks"], "active"),
        text(value, "due"),
        text(&value["runs"], "unknown"),
    )
}

pub fn pause(value: &Value) -> String {
    let changed = value["changed"] != Value::Bool(false);
    format!(
        "Task {} {} (revision {}); only a person can resume it.",
        text(value, "task_id"),
        if changed {
            "is paused"
        } else {
            "was already paused"
        },
        text(value, "revision")
    )
}
