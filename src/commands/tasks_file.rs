//! The TOML tasks file of `plan` and `apply` (docs/CONTRACT.md §14): one table
//! per task, keyed by name, whose keys are the `draft` flags. Each task
//! deserializes into `draft`'s own `DraftSpec` and goes through the very
//! checks `draft` makes; a refusal names the file, the line, the task and
//! the key.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::ops::access::Caller;
use crate::ops::draft::{self, DraftSpec};
pub use crate::ops::plan::{Built, Desired};
use crate::schedule;

/// A tasks file: who it says it is, and its tasks.
pub struct TasksFile {
    /// The top-level `source = "…"` key: the name `--prune` goes by.
    pub source: Option<String>,
    pub tasks: Vec<Desired>,
}

/// `load`, with the caller's current zone for the tasks that say
/// `tz = "follow"` (docs/CONTRACT.md §18): the file is checked as a whole
/// first, and the store is read for the zone only when a task follows.
/// The tenant's profiles are read first: a task naming one binds its
/// current version (docs/CONTRACT.md §22).
pub fn load_with_zones(ctx: &mut Ctx, path: &std::path::Path) -> Result<TasksFile> {
    let tenant = ctx.tenant.clone();
    let profiles = ctx.store()?.read(|tx| tx.profiles(Some(&tenant)))?;
    let loaded = load(ctx, path, None, &profiles)?;
    let follows = loaded
        .tasks
        .iter()
        .any(|d| d.built.as_ref().is_ok_and(|b| b.payload.zone.follows()));
    if !follows {
        return Ok(loaded);
    }
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let follow = Some(crate::payload::FOLLOW);
    match ctx
        .store()?
        .read(|tx| draft::owner_zone(tx, &caller, follow, None))?
    {
        Some(zone) => load(ctx, path, Some(zone), &profiles),
        None => Ok(loaded),
    }
}

/// Reads and checks the whole file; any problem refuses all of it.
/// `owner_zone`: the caller's current zone, for following tasks.
pub fn load(
    ctx: &Ctx,
    path: &std::path::Path,
    owner_zone: Option<schedule::Tz>,
    profiles: &[crate::profile::Profile],
) -> Result<TasksFile> {
    let shown = path.display().to_string();
    let text = super::bounded::read_capped(path, "the tasks file", super::bounded::PLAN_MAX_BYTES)?;
    let (source, text) = take_source(&shown, &text)?;
    let specs: BTreeMap<String, DraftSpec> =
        toml::from_str(&text).map_err(|e| toml_refusal(&shown, &text, &e))?;
    let caller = Caller {
        tenant: &ctx.tenant,
        identity: &ctx.identity,
    };
    let mut drafter = draft::Drafter::of(&caller, ctx.clock.now(), ctx.default_zone, owner_zone);
    drafter.profiles = profiles.to_vec();
    let mut desired = Vec::with_capacity(specs.len());
    for (name, mut spec) in specs {
        let at = |key: &str, message: String| {
            CmdError::usage(format!(
                "{shown}:{}: task '{}', key '{key}': {message}",
                key_line(&text, &name, key),
                crate::text::escape(&name)
            ))
        };
        draft::check_name(&name).map_err(|e| at("name", e.to_string()))?;
        let schedule_key = schedule_key(&spec).map_err(|(key, message, hint)| {
            let refusal = at(key, message);
            match hint {
                Some(hint) => refusal.with_hint(hint),
                None => refusal,
            }
        })?;
        if spec.instruction.as_deref() == Some("-") {
            return fail(at(
                "instruction",
                "a file's instruction is text, not `-`".into(),
            ));
        }
        let zone = check_values(&spec, ctx).map_err(|(key, message)| at(key, message))?;
        let mut declared = declared(&spec, zone, ctx);
        // A profile is declared by name, but bound by its definition: the
        // profile's current hash belongs to what the file declares, so a
        // changed profile is a change to plan (and apply confirms it).
        if let Some(name) = &spec.profile {
            if let Some(p) = profiles.iter().find(|p| &p.name == name) {
                declared.push_str(&format!("\nprofile {}", p.sha256));
            }
        }
        spec.name = Some(name.clone());
        let built = draft::build_payload(&drafter, &spec, None)
            .map(|(payload, upcoming)| Built { payload, upcoming })
            .map_err(|e| {
                let message = e.to_string();
                let key = flag_in(&message).unwrap_or_else(|| schedule_key.to_string());
                at(&key, message)
            });
        desired.push(Desired {
            name,
            declared,
            built,
        });
    }
    Ok(TasksFile {
        source,
        tasks: desired,
    })
}

/// A refusal naming its key, with an optional hint.
type KeyRefusal = (&'static str, String, Option<&'static str>);

/// The one schedule key a file's task gives. The file must mean the same
/// payload at plan and at apply: an interval anchored "now" would differ
/// every time, so `every` needs its `start`.
fn schedule_key(spec: &DraftSpec) -> Result<&'static str, KeyRefusal> {
    let schedules: Vec<&'static str> = [
        ("every", spec.every.is_some()),
        ("daily", spec.daily.is_some()),
        ("cron", spec.cron.is_some()),
        ("at", spec.at.is_some()),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(k, _)| *k)
    .collect();
    let key = match schedules.as_slice() {
        [] => {
            return Err((
                "every",
                "the task has no schedule".into(),
                Some("give one of every (with start), daily, cron or at"),
            ))
        }
        [key] => *key,
        [first, second, ..] => {
            return Err((
                second,
                format!("two schedules for one task ({first} and {second})"),
                None,
            ))
        }
    };
    if spec.every.is_some() && spec.start.is_none() {
        return Err((
            "every",
            "an interval in a file needs a start".into(),
            Some("add start = \"2026-01-01T00:00:00Z\" (any past instant of the cycle)"),
        ));
    }
    Ok(key)
}

/// `Desired::declared`: the keys the task gives (a key added to the file
/// format later leaves it as it was), its zone and its target.
fn declared(spec: &DraftSpec, zone: schedule::Tz, ctx: &Ctx) -> String {
    let mut task = serde_json::to_value(spec).unwrap_or_default();
    if let Some(keys) = task.as_object_mut() {
        keys.retain(|_, value| !value.is_null());
    }
    // A following task declares "follow", not where its owner is today:
    // the owner moving is no change to the file.
    let zone = match spec.tz.as_deref() {
        Some(crate::payload::FOLLOW) => crate::payload::FOLLOW,
        _ => zone.name(),
    };
    serde_json::json!({
        "task": task,
        "zone": zone,
        "target": spec.target.as_deref().unwrap_or(ctx.actor()),
    })
    .to_string()
}

/// Checks each value alone, so that a refusal names its key; gives the
/// task's zone.
fn check_values(spec: &DraftSpec, ctx: &Ctx) -> Result<schedule::Tz, (&'static str, String)> {
    let zone = match spec.tz.as_deref() {
        // Times are checked in the default zone; the draft reads them in
        // the zone in force.
        Some(crate::payload::FOLLOW) | None => ctx.default_zone,
        Some(tz) => schedule::parse_zone(tz).map_err(|e| ("tz", e.message))?,
    };
    let durations = [
        ("every", &spec.every),
        ("grace", &spec.grace),
        ("retry_backoff", &spec.retry_backoff),
        ("spread", &spec.spread),
        ("realert", &spec.realert),
    ];
    for (key, value) in durations {
        if let Some(v) = value {
            if !(key == "grace" && matches!(v.trim(), "0" | "0s")) {
                schedule::parse_duration(v).map_err(|e| (key, e.message))?;
            }
        }
    }
    for (key, value) in [
        ("start", &spec.start),
        ("at", &spec.at),
        ("until", &spec.until),
    ] {
        if let Some(v) = value {
            schedule::parse_time(v, zone).map_err(|e| (key, e.message))?;
        }
    }
    if let Some(v) = &spec.daily {
        schedule::parse_hhmm(v).map_err(|e| ("daily", e.message))?;
    }
    if let Some(v) = &spec.days {
        schedule::parse_days(v).map_err(|e| ("days", e.message))?;
    }
    if let Some(v) = &spec.cron {
        schedule::parse_cron(v).map_err(|e| ("cron", e.message))?;
    }
    if let Some(v) = &spec.policy {
        draft::policy(v).map_err(|e| ("policy", e.to_string()))?;
    }
    if let Some(v) = &spec.notify {
        draft::notify_mode(v).map_err(|e| ("notify", e.to_string()))?;
    }
    draft::check_limits(spec)?;
    let instruction = spec.instruction.as_deref().unwrap_or_default();
    draft::check_instruction(instruction).map_err(|e| ("instruction", e.to_string()))?;
    Ok(zone)
}

/// The first `--flag` a draft error names, as a file key.
fn flag_in(message: &str) -> Option<String> {
    let at = message.find("--")?;
    let flag: String = message[at + 2..]
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '-')
        .collect();
    (!flag.is_empty()).then(|| flag.replace('-', "_"))
}

/// A TOML error in one line naming where it is: the task and the key
/// when the error lies inside one (a value of the wrong type, an unknown
/// key), else the text at the error (a syntax error).
fn toml_refusal(shown: &str, text: &str, e: &toml::de::Error) -> CmdError {
    let span = e.span();
    let line = span.as_ref().map_or(1, |s| line_of(text, s.start));
    let escape = crate::text::escape;
    let at = match span.as_ref().and_then(|s| task_and_key(text, s.start)) {
        Some((task, Some(key))) => format!("task '{}', key '{}'", escape(&task), escape(&key)),
        Some((task, None)) => format!("task '{}'", escape(&task)),
        None => {
            let near = span
                .and_then(|s| text.get(s))
                .filter(|k| !k.contains('\n') && k.len() <= 64)
                .unwrap_or("")
                .trim_matches('"');
            format!("key '{}'", escape(near))
        }
    };
    CmdError::usage(format!(
        "{shown}:{line}: {at}: {}",
        reworded(e.message().trim())
    ))
    .with_hint("each task is a [name] table of draft flags, e.g. instruction, daily, tz")
}

/// The task, and the key within it, whose name or value holds `offset`;
/// None when the text is not a TOML document at all.
fn task_and_key(text: &str, offset: usize) -> Option<(String, Option<String>)> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let holds = |span: std::ops::Range<usize>| span.contains(&offset);
    for (task, value) in doc.get_ref().iter() {
        if let toml::de::DeValue::Table(table) = value.get_ref() {
            for (key, v) in table.iter() {
                if holds(key.span()) || holds(v.span()) {
                    return Some((task.get_ref().to_string(), Some(key.get_ref().to_string())));
                }
            }
        }
    }
    doc.get_ref()
        .iter()
        .find(|(task, value)| holds(task.span()) || holds(value.span()))
        .map(|(task, _)| (task.get_ref().to_string(), None))
}

/// serde's "invalid type: string \"x\", expected u32" as a person would
/// say it: "expected a whole number, got string \"x\"".
fn reworded(message: &str) -> String {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "));
    let Some((got, expected)) = rest.and_then(|r| r.rsplit_once(", expected ")) else {
        return message.to_string();
    };
    let expected = match expected {
        "u32" | "u64" | "i64" => "a whole number",
        "a string" => "a string (in quotes)",
        other => other,
    };
    format!("expected {expected}, got {got}")
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line of `key` in the table `[task]`, else of the table, else 1.
fn key_line(text: &str, task: &str, key: &str) -> usize {
    let mut header = None;
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix('[') {
            let name = rest
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches(['"', '\'']);
            inside = name == task;
            if inside {
                header = Some(i + 1);
            }
        } else if inside {
            if let Some(after) = t.strip_prefix(key) {
                if after.trim_start().starts_with('=') {
                    return i + 1;
                }
            }
        }
    }
    header.unwrap_or(1)
}

/// The top-level `source = "…"` key, and the text with that key blanked
/// out byte for byte (so every later error keeps its line and column):
/// every other top-level key is a task's table.
fn take_source(shown: &str, text: &str) -> Result<(Option<String>, String)> {
    let Ok(doc) = toml::de::DeTable::parse(text) else {
        // Not TOML: the tasks' parse says where.
        return Ok((None, text.to_string()));
    };
    let Some((key, value)) = doc
        .get_ref()
        .iter()
        .find(|(key, _)| key.get_ref().as_ref() == "source")
    else {
        return Ok((None, text.to_string()));
    };
    let line = line_of(text, key.span().start);
    let toml::de::DeValue::String(name) = value.get_ref() else {
        return fail(
            CmdError::usage(format!("{shown}:{line}: key 'source': a name in quotes"))
                .with_hint("source = \"ops/schedules\" names what this file manages"),
        );
    };
    let name = name.to_string();
    if name.trim().is_empty() || name.len() > 256 || name.chars().any(char::is_control) {
        return fail(CmdError::usage(format!(
            "{shown}:{line}: key 'source': 1-256 characters, no control characters"
        )));
    }
    let (start, end) = (key.span().start, value.span().end);
    let mut blanked = text.as_bytes().to_vec();
    for byte in &mut blanked[start..end] {
        if *byte != b'\n' {
            *byte = b' ';
        }
    }
    let blanked = String::from_utf8(blanked).unwrap_or_else(|_| text.to_string());
    Ok((Some(name), blanked))
}
