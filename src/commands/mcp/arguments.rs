//! A tool's arguments, read by the CLI's own definitions: the JSON object
//! an agent sends becomes the command line of the subcommand it stands for
//! (`{"task": "backup", "count": 3}` → `next --count=3 -- backup`), which
//! clap parses into the same Args struct the shell fills. Every check,
//! message and default of the command line holds for the agent too.
//!
//! Only the subcommand's own arguments exist here: the global ones
//! (`--as`, `--tenant`, `--db`) are the server's, fixed when it started,
//! and a property the tool's schema does not list is refused. Values go
//! as `--flag=value` and positionals after `--`, so no value is ever read
//! as a flag.

use anyhow::Result;
use clap::{Args, FromArgMatches};
use serde_json::{Map, Value};

use crate::error::{fail, CmdError};

/// The JSON object of a tool call, as an agent sent it.
pub type JsonObject = Map<String, Value>;

/// A schema property that stands for another clap argument: `draft_replace`'s
/// `task` is `draft --replace`.
pub struct Renamed {
    pub property: &'static str,
    pub arg: &'static str,
}

/// The clap command of `A` alone: no binary name to skip, no help flag, no
/// colour in its messages.
pub fn command_of<A: Args>() -> clap::Command {
    A::augment_args(
        clap::Command::new("tool")
            .disable_help_flag(true)
            .color(clap::ColorChoice::Never),
    )
}

/// The clap argument a schema property stands for: the option whose long
/// name it spells (`max_retries` is `--max-retries`), or the positional of
/// its name.
pub fn arg_of<'c>(
    command: &'c clap::Command,
    property: &str,
    renamed: &[Renamed],
) -> Option<&'c clap::Arg> {
    let id = renamed
        .iter()
        .find(|r| r.property == property)
        .map_or(property, |r| r.arg);
    let long = id.replace('_', "-");
    command.get_arguments().find(|arg| match arg.get_long() {
        Some(l) => l == long,
        None => arg.is_positional() && arg.get_id().as_str() == id,
    })
}

/// Parses `arguments` as the Args of `tool`, allowing the properties of
/// `schema` only.
pub fn parse<A: Args + FromArgMatches>(
    tool: &str,
    schema: &JsonObject,
    arguments: &JsonObject,
    renamed: &[Renamed],
) -> Result<A> {
    let command = command_of::<A>();
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut argv = vec![tool.to_string()];
    let mut positionals = Vec::new();
    for (property, value) in arguments {
        let known = properties.is_some_and(|p| p.contains_key(property));
        let Some(arg) = known.then(|| arg_of(&command, property, renamed)).flatten() else {
            return fail(
                CmdError::usage(format!(
                    "{tool} has no argument '{}'",
                    crate::text::escape(property)
                ))
                .with_hint("the tool's input schema lists its arguments"),
            );
        };
        let takes_value = arg.get_action().takes_values();
        let mut texts = values(property, value)?;
        // A LIST (`days`) is one comma-separated value on the command line;
        // an agent may send it as a JSON array, as the schema allows.
        if is_list(arg) && value.is_array() {
            texts = vec![texts.join(",")];
        }
        for text in texts {
            match arg.get_long() {
                None => positionals.push(text),
                // A flag: `true` sets it, `false` leaves it out.
                Some(long) if !takes_value => {
                    if text == "true" {
                        argv.push(format!("--{long}"));
                    } else if text != "false" {
                        return fail(CmdError::usage(format!(
                            "{property} is true or false, not '{}'",
                            crate::text::escape(&text)
                        )));
                    }
                }
                Some(long) => argv.push(format!("--{long}={text}")),
            }
        }
    }
    if !positionals.is_empty() {
        argv.push("--".into());
        argv.extend(positionals);
    }
    let matches = command.try_get_matches_from(argv).map_err(clap_error)?;
    Ok(A::from_arg_matches(&matches).map_err(clap_error)?)
}

/// Whether the argument takes a comma-separated list (its value name is
/// LIST, as `--days`).
pub fn is_list(arg: &clap::Arg) -> bool {
    arg.get_value_names()
        .is_some_and(|names| names.iter().any(|n| n.as_str() == "LIST"))
}

/// The texts a JSON value gives an argument: a scalar one, a list each of
/// its scalars, null none.
fn values(property: &str, value: &Value) -> Result<Vec<String>> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => fail(CmdError::usage(format!(
            "{property} must be a string, a number or true/false"
        ))),
    };
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(scalar).collect(),
        other => Ok(vec![scalar(other)?]),
    }
}

/// clap's complaint as one usage error: its first paragraph, on one line.
fn clap_error(err: clap::Error) -> CmdError {
    let text = err.render().to_string();
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = first.join(" ");
    let message = message.trim_start_matches("error: ");
    CmdError::usage(crate::text::escape(message))
        .with_hint("the tool's input schema lists its arguments and their values")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::next::NextArgs;
    use serde_json::json;

    fn schema() -> JsonObject {
        json!({"properties": {"task": {}, "count": {}}})
            .as_object()
            .unwrap()
            .clone()
    }

    fn object(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn properties_become_the_command_line() {
        let args: NextArgs = parse(
            "next",
            &schema(),
            &object(json!({"task": "--as=x", "count": 3})),
            &[],
        )
        .unwrap();
        assert_eq!(args.task, "--as=x");
        assert_eq!(args.count, 3);
    }

    #[test]
    fn a_list_may_come_as_an_array() {
        use crate::commands::draft::DraftArgs;
        let schema = json!({"properties": {"instruction": {}, "daily": {}, "days": {}}});
        let args: DraftArgs = parse(
            "draft",
            schema.as_object().unwrap(),
            &object(json!({"instruction": "x", "daily": "09:30", "days": ["mon", "tue"]})),
            &[],
        )
        .unwrap();
        assert_eq!(args.days.as_deref(), Some("mon,tue"));
    }

    #[test]
    fn a_global_flag_or_a_bad_value_is_refused_with_the_clis_words() {
        let global = parse::<NextArgs>("next", &schema(), &object(json!({"as": "x"})), &[]);
        assert!(global.unwrap_err().to_string().contains("no argument 'as'"));
        let bad = parse::<NextArgs>(
            "next",
            &schema(),
            &object(json!({"task": "t", "count": 0})),
            &[],
        )
        .unwrap_err();
        assert!(bad.to_string().contains("--count"), "{bad}");
        assert!(!bad.to_string().contains('\n'));
    }
}
