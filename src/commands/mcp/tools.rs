//! The tools `agentcron mcp` offers (docs/CONTRACT.md §17), each the
//! subcommand of the same name: its input schema is derived from the
//! subcommand's Args struct (the types and `///` words of the command line;
//! which properties are required and their defaults, from its clap
//! definition), and the read-only ones say so. `pause` is offered only with
//! `--allow pause`; nothing that confirms, applies, resumes, triggers,
//! deletes, reconciles, approves or denies is ever offered.

use std::sync::Arc;

use clap::Args;
use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

use super::arguments::{arg_of, command_of, JsonObject, Renamed};
use crate::commands::{
    draft::DraftArgs, explain::ExplainArgs, list::ListArgs, next::NextArgs, pause::PauseArgs,
    runs::RunsArgs, show::ShowArgs, status::StatusArgs, upcoming::UpcomingArgs,
};

/// The tools that only read, in the order they are listed.
pub const READ_ONLY: [&str; 8] = [
    "draft_status",
    "list",
    "show",
    "runs",
    "next",
    "upcoming",
    "explain",
    "status",
];

/// The tools `--allow` can add: only `pause`, which stops a task and never
/// makes one run.
pub const ALLOWABLE: [&str; 1] = ["pause"];

/// `draft_status`'s argument: a draft the agent made.
#[derive(Debug, Args, JsonSchema)]
pub struct DraftStatusArgs {
    /// The draft id the `draft` tool returned, or a unique prefix of it (4+ characters)
    pub draft_id: String,
}

/// `draft_replace` names the task it replaces as `task` (the CLI's `--replace`).
pub const REPLACE_TASK: &[Renamed] = &[Renamed {
    property: "task",
    arg: "replace",
}];

/// The tools this server offers, in order.
pub fn offered(allow_pause: bool) -> Vec<Tool> {
    let mut names = vec!["draft", "draft_replace"];
    names.extend(READ_ONLY);
    if allow_pause {
        names.push("pause");
    }
    names.into_iter().map(tool).collect()
}

/// One tool's definition.
fn tool(name: &'static str) -> Tool {
    let read_only = READ_ONLY.contains(&name);
    let annotations = ToolAnnotations::new().read_only(read_only);
    // A draft only adds; a pause changes a task but never makes it run.
    let annotations = match name {
        "draft" | "draft_replace" => annotations.destructive(false).idempotent(false),
        "pause" => annotations.destructive(false).idempotent(true),
        _ => annotations,
    };
    Tool::new(name, description(name), schema(name)).with_annotations(annotations.open_world(false))
}

/// The input schema of tool `name`.
pub fn schema(name: &str) -> Arc<JsonObject> {
    match name {
        // No `target`: the task's notices, and so its one-time code, go to
        // the person (the server's first key), never where the agent says.
        "draft" => schema_of::<DraftArgs>(&[], &["replace", "target"], &[]),
        "draft_replace" => schema_of::<DraftArgs>(REPLACE_TASK, &["target"], &["task"]),
        "draft_status" => schema_of::<DraftStatusArgs>(&[], &[], &[]),
        "list" => schema_of::<ListArgs>(&[], &[], &[]),
        "show" => schema_of::<ShowArgs>(&[], &[], &[]),
        "runs" => schema_of::<RunsArgs>(&[], &[], &[]),
        "next" => schema_of::<NextArgs>(&[], &[], &[]),
        "upcoming" => schema_of::<UpcomingArgs>(&[], &[], &[]),
        "explain" => schema_of::<ExplainArgs>(&[], &[], &[]),
        "status" => schema_of::<StatusArgs>(&[], &[], &[]),
        "pause" => schema_of::<PauseArgs>(&[], &["expect_revision"], &["reason"]),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The schema schemars derives from `A`, with clap's word on what is
/// required and on defaults; `renamed` properties renamed, `dropped` ones
/// left out, `required` ones added to the required.
fn schema_of<A: Args + JsonSchema + 'static>(
    renamed: &[Renamed],
    dropped: &[&str],
    required: &[&str],
) -> Arc<JsonObject> {
    let mut schema = rmcp::handler::server::common::schema_for_input::<A>()
        .map(|s| s.as_ref().clone())
        .unwrap_or_default();
    let command = command_of::<A>();
    let mut properties = match schema.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => JsonObject::new(),
    };
    for r in renamed {
        if let Some(value) = properties.remove(r.arg) {
            properties.insert(r.property.to_string(), value);
        }
    }
    properties.retain(|property, _| !dropped.contains(&property.as_str()));
    let mut needed: Vec<Value> = Vec::new();
    let mut kept = JsonObject::new();
    for (property, mut value) in properties {
        let Some(arg) = arg_of(&command, &property, renamed) else {
            continue;
        };
        if arg.is_hide_set() {
            continue;
        }
        if arg.is_required_set() || required.contains(&property.as_str()) {
            needed.push(Value::String(property.clone()));
        }
        if let (true, Value::Object(fields)) = (super::arguments::is_list(arg), &mut value) {
            fields.insert(
                "type".into(),
                serde_json::json!(["string", "array", "null"]),
            );
            fields.insert("items".into(), serde_json::json!({"type": "string"}));
        }
        if let (Some(default), Value::Object(fields)) =
            (arg.get_default_values().first(), &mut value)
        {
            let text = default.to_string_lossy().into_owned();
            let number = fields.get("type").and_then(Value::as_str) == Some("integer");
            let default = match text.parse::<i64>() {
                Ok(n) if number => Value::from(n),
                _ => Value::String(text),
            };
            fields.insert("default".into(), default);
        }
        kept.insert(property, value);
    }
    schema.insert("properties".into(), Value::Object(kept));
    schema.insert("required".into(), Value::Array(needed));
    schema.insert("additionalProperties".into(), Value::Bool(false));
    Arc::new(schema)
}

/// What each tool does, in words for the agent.
fn description(name: &str) -> &'static str {
    match name {
        "draft" => {
            "Draft a scheduled task for the person you work for. Nothing runs until that \
             person confirms it: agentcron sends them a one-time code, and they run \
             `agentcron confirm … --code` themselves. You cannot confirm; tell the person \
             what you drafted (the result says what to tell them). Exactly one schedule: \
             at, in, every, daily or cron."
        }
        "draft_replace" => {
            "Draft a change to one of the person's tasks (named by `task`): only the \
             properties given change. The person confirms it with the code they receive, \
             as for `draft`; until then the task runs unchanged."
        }
        "draft_status" => {
            "Whether a draft you made is still waiting for the person, expired, confirmed \
             (and as which task) or void (three wrong codes)."
        }
        "list" => "List the person's tasks, the next to run first.",
        "show" => "Show one task and its last 10 runs.",
        "runs" => "Show run history, newest first.",
        "next" => "Show a task's next occurrences on its own wall clock.",
        "upcoming" => "Show the coming occurrences of all the person's tasks, in time order.",
        "explain" => "Explain why a task's occurrence (at or before a moment) did or did not run.",
        "status" => {
            "Report the scheduler's health: the last tick, the due backlog, stuck runs and \
             undelivered notices."
        }
        "pause" => {
            "Pause one of the person's tasks, saying why (the reason is required and shown \
             to the person). Only a person can resume it."
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_are_exactly_the_allowed_set() {
        let names = |allow| -> Vec<String> {
            offered(allow)
                .into_iter()
                .map(|t| t.name.to_string())
                .collect()
        };
        assert_eq!(names(false).len(), 10);
        assert!(!names(false).contains(&"pause".to_string()));
        assert_eq!(names(true).last().map(String::as_str), Some("pause"));
    }

    #[test]
    fn schemas_come_from_the_clis_args_with_its_defaults() {
        let draft = schema("draft");
        let properties = draft["properties"].as_object().unwrap();
        assert!(properties.contains_key("in"), "{draft:?}");
        assert!(properties.contains_key("max_retries"));
        assert!(!properties.contains_key("replace"));
        assert!(!properties.contains_key("target"));
        assert_eq!(properties["ttl"]["default"], "30m");
        assert_eq!(draft["required"], Value::Array(Vec::new()));
        let replace = schema("draft_replace");
        assert_eq!(replace["required"], serde_json::json!(["task"]));
        let runs = schema("runs");
        assert_eq!(runs["properties"]["limit"]["default"], 50);
        assert_eq!(
            schema("pause")["required"],
            serde_json::json!(["reason", "task"])
        );
    }
}
