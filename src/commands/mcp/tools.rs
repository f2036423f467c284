//! The tools `agentcron mcp` offers (docs/CONTRACT.md §17), in one table:
//! `ToolName` spells them, `TOOLS` gives each its access, description and
//! schema, and everything else derives from the two: the listing and its
//! annotations, what `--allow` can add, and `call`'s exhaustive dispatch.
//! Each tool is the subcommand of the same name: its input schema is
//! derived from the subcommand's Args struct (the types and `///` words of
//! the command line; which properties are required and their defaults,
//! from its clap definition), and the read-only ones say so. `pause` is
//! offered only with `--allow pause`; nothing that confirms, applies,
//! resumes, triggers, deletes, reconciles, approves or denies is ever
//! offered.

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

crate::vocabulary::string_enum!(
    /// Every tool `agentcron mcp` can offer, in the order it lists them;
    /// each is the subcommand of the same name. `TOOLS` says the rest.
    ToolName {
        Draft = "draft",
        DraftReplace = "draft_replace",
        DraftStatus = "draft_status",
        Profiles = "profiles",
        List = "list",
        Show = "show",
        Runs = "runs",
        Next = "next",
        Upcoming = "upcoming",
        Explain = "explain",
        Status = "status",
        Pause = "pause",
    }
);

/// What a tool may do, which decides its annotations and whether it is
/// offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Adds a draft (the first one makes the store); changes no task.
    Drafts,
    /// Only reads.
    Reads,
    /// Changes a task but never makes one run: offered only with
    /// `--allow` (the only tool `--allow` can add).
    Pauses,
}

/// One row of the table.
pub struct Spec {
    pub name: ToolName,
    pub access: Access,
    /// It names one of the person's tasks or runs: one of another owner
    /// is, to the agent, one that does not exist.
    pub names_one: bool,
    /// What it does, in words for the agent.
    pub description: &'static str,
    /// Its input schema, from its subcommand's Args.
    schema: fn() -> Arc<JsonObject>,
}

/// The table: one row per tool, in `ToolName`'s order (checked as it
/// compiles, below).
const TOOLS: [Spec; ToolName::ALL.len()] = [
    Spec {
        name: ToolName::Draft,
        access: Access::Drafts,
        names_one: false,
        // No `target`: the task's notices, and so its one-time code, go to
        // the person (the server's first key), never where the agent says.
        schema: || schema_of::<DraftArgs>(&[], &["replace", "target"], &[]),
        description: "Draft a scheduled task for the person you work for. Nothing runs until \
            that person confirms it: agentcron sends them a one-time code, and they run \
            `agentcron confirm … --code` themselves. You cannot confirm; tell the person what \
            you drafted (the result says what to tell them). Exactly one schedule: at, in, \
            every, daily or cron.",
    },
    Spec {
        name: ToolName::DraftReplace,
        access: Access::Drafts,
        names_one: true,
        schema: || schema_of::<DraftArgs>(REPLACE_TASK, &["target"], &["task"]),
        description: "Draft a change to one of the person's tasks (named by `task`): only the \
            properties given change. The person confirms it with the code they receive, as for \
            `draft`; until then the task runs unchanged.",
    },
    Spec {
        name: ToolName::DraftStatus,
        access: Access::Reads,
        names_one: false,
        schema: || schema_of::<DraftStatusArgs>(&[], &[], &[]),
        description: "Whether a draft you made is still waiting for the person, expired, \
            confirmed (and as which task) or void (three wrong codes).",
    },
    Spec {
        name: ToolName::Profiles,
        access: Access::Reads,
        names_one: false,
        schema: || schema_of::<ProfilesArgs>(&[], &[], &[]),
        description: "List the profiles the operator offers: named ways to run an agent (its \
            command, folder, user and limits). Give one as `profile` to `draft` when the task \
            needs that agent; the person confirms the profile with the task.",
    },
    Spec {
        name: ToolName::List,
        access: Access::Reads,
        names_one: false,
        schema: || schema_of::<ListArgs>(&[], &[], &[]),
        description: "List the person's tasks, the next to run first.",
    },
    Spec {
        name: ToolName::Show,
        access: Access::Reads,
        names_one: true,
        schema: || schema_of::<ShowArgs>(&[], &[], &[]),
        description: "Show one task and its last 10 runs.",
    },
    Spec {
        name: ToolName::Runs,
        access: Access::Reads,
        names_one: true,
        schema: || schema_of::<RunsArgs>(&[], &[], &[]),
        description: "Show run history, newest first.",
    },
    Spec {
        name: ToolName::Next,
        access: Access::Reads,
        names_one: true,
        schema: || schema_of::<NextArgs>(&[], &[], &[]),
        description: "Show a task's next occurrences on its own wall clock.",
    },
    Spec {
        name: ToolName::Upcoming,
        access: Access::Reads,
        names_one: false,
        schema: || schema_of::<UpcomingArgs>(&[], &[], &[]),
        description: "Show the coming occurrences of all the person's tasks, in time order.",
    },
    Spec {
        name: ToolName::Explain,
        access: Access::Reads,
        names_one: true,
        schema: || schema_of::<ExplainArgs>(&[], &[], &[]),
        description: "Explain why a task's occurrence (at or before a moment) did or did not run.",
    },
    Spec {
        name: ToolName::Status,
        access: Access::Reads,
        names_one: false,
        schema: || schema_of::<StatusArgs>(&[], &[], &[]),
        description: "Report the scheduler's health: the last tick, the due backlog, stuck runs \
            and undelivered notices.",
    },
    Spec {
        name: ToolName::Pause,
        access: Access::Pauses,
        names_one: true,
        schema: || schema_of::<PauseArgs>(&[], &["expect_revision"], &["reason"]),
        description: "Pause one of the person's tasks, saying why (the reason is required and \
            shown to the person). Only a person can resume it.",
    },
];

// A row out of order (or a tool without one) does not compile.
const _: () = {
    let mut i = 0;
    while i < TOOLS.len() {
        assert!(TOOLS[i].name as usize == i, "TOOLS is in ToolName's order");
        i += 1;
    }
};

impl ToolName {
    pub fn spec(self) -> &'static Spec {
        &TOOLS[self as usize]
    }

    /// Whether a server started with (or without) `--allow pause` offers it.
    pub fn offered(self, allow_pause: bool) -> bool {
        self.spec().access != Access::Pauses || allow_pause
    }

    /// The input schema.
    pub fn schema(self) -> Arc<JsonObject> {
        (self.spec().schema)()
    }

    /// Its definition as the server lists it.
    fn tool(self) -> Tool {
        let annotations = ToolAnnotations::new().read_only(self.spec().access == Access::Reads);
        // A draft only adds; a pause changes a task but never makes it run.
        let annotations = match self.spec().access {
            Access::Drafts => annotations.destructive(false).idempotent(false),
            Access::Pauses => annotations.destructive(false).idempotent(true),
            Access::Reads => annotations,
        };
        Tool::new(self.as_str(), self.spec().description, self.schema())
            .with_annotations(annotations.open_world(false))
    }
}

/// Whether `--allow NAME` can add this tool: only `pause`, which stops a
/// task and never makes one run.
pub fn allowable(name: &str) -> bool {
    ToolName::parse(name).is_some_and(|t| t.spec().access == Access::Pauses)
}

/// `draft_status`'s argument: a draft the agent made.
#[derive(Debug, Args, JsonSchema)]
pub struct DraftStatusArgs {
    /// The draft id the `draft` tool returned, or a unique prefix of it (4+ characters)
    pub draft_id: String,
}

/// `profiles` takes no argument.
#[derive(Debug, Args, JsonSchema)]
pub struct ProfilesArgs {}

/// `draft_replace` names the task it replaces as `task` (the CLI's `--replace`).
pub const REPLACE_TASK: &[Renamed] = &[Renamed {
    property: "task",
    arg: "replace",
}];

/// The tools this server offers, in order.
pub fn offered(allow_pause: bool) -> Vec<Tool> {
    ToolName::ALL
        .iter()
        .filter(|t| t.offered(allow_pause))
        .map(|t| t.tool())
        .collect()
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
        assert_eq!(names(false).len(), 11);
        assert!(!names(false).contains(&"pause".to_string()));
        assert_eq!(names(true).last().map(String::as_str), Some("pause"));
    }

    #[test]
    fn schemas_come_from_the_clis_args_with_its_defaults() {
        let draft = ToolName::Draft.schema();
        let properties = draft["properties"].as_object().unwrap();
        assert!(properties.contains_key("in"), "{draft:?}");
        assert!(properties.contains_key("max_retries"));
        assert!(!properties.contains_key("replace"));
        assert!(!properties.contains_key("target"));
        assert_eq!(properties["ttl"]["default"], "30m");
        assert_eq!(draft["required"], Value::Array(Vec::new()));
        let replace = ToolName::DraftReplace.schema();
        assert_eq!(replace["required"], serde_json::json!(["task"]));
        let runs = ToolName::Runs.schema();
        assert_eq!(runs["properties"]["limit"]["default"], 50);
        assert_eq!(
            ToolName::Pause.schema()["required"],
            serde_json::json!(["reason", "task"])
        );
    }
}
