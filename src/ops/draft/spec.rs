//! What a draft asks for, as plain values (`DraftSpec`), and every limit a
//! draft's values must keep, checked here once: the instruction's size, the
//! name's form, the durations, the retries and notice settings. `draft` fills
//! a spec from its flags, a tasks file deserializes each of its tasks into one,
//! the MCP `draft` tool reads its arguments with `draft`'s own flags.

use anyhow::Result;

use crate::error::{fail, CmdError};
use crate::limits::{
    self, Budget, CatchUp, EXPECT_SUCCESS_MAX_SECONDS, EXPECT_SUCCESS_MIN_SECONDS,
};
use crate::model::{NotifyMode, Policy};
use crate::payload::TIMEOUT_SECONDS_MAX;
use crate::schedule;
use crate::text::escape;

/// The longest instruction a task may carry.
pub const INSTRUCTION_MAX_BYTES: usize = 32768;

/// What a draft asks for: each value as given (None when not given), text
/// parsed here, with the flag's name in every error. The schedule is one of
/// `at`, `in_`, `every` (with `start`), `daily` (with `days`) or `cron`.
///
/// `draft` fills one from its flags; a tasks file's table deserializes into
/// one (its keys are the flags, `_` for `-`; a key it does not know is
/// refused), and `declared` is this same value serialized, so the keys
/// serialize in the file's spelling. The fields are in the order a tasks
/// file's refusal of an unknown key lists them.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct DraftSpec {
    /// The instruction itself (a handler reads `-` from stdin first);
    /// required in a tasks file.
    #[serde(deserialize_with = "required")]
    pub instruction: Option<String>,
    pub every: Option<String>,
    pub start: Option<String>,
    pub daily: Option<String>,
    pub days: Option<String>,
    pub cron: Option<String>,
    pub at: Option<String>,
    pub tz: Option<String>,
    pub grace: Option<String>,
    pub max_retries: Option<u32>,
    pub retry_backoff: Option<String>,
    /// A run's own wall-clock limit, 1 s to 24 h (`timeout_seconds`);
    /// `none` removes it in a replacement.
    pub timeout: Option<String>,
    /// `KEY=N/PERIOD` each (`budgets`); `["none"]` removes them. A tasks
    /// file may give one as a string.
    #[serde(default, deserialize_with = "one_or_many")]
    pub budget: Option<Vec<String>>,
    /// The command run before the executor (`gate`); `none` removes it.
    pub gate: Option<String>,
    /// `none` or `latest` (`catch_up`).
    pub catch_up: Option<String>,
    /// How long the task may go without a success (`expect_success_seconds`);
    /// `none` removes it.
    pub expect_success: Option<String>,
    /// `read_only` or `confirm_writes`.
    pub policy: Option<String>,
    /// The profile that runs the task (docs/CONTRACT.md §22), bound at its
    /// current version; `none` removes it in a replacement.
    pub profile: Option<String>,
    pub target: Option<String>,
    pub until: Option<String>,
    pub count: Option<u32>,
    pub spread: Option<String>,
    /// A `NotifyMode` spelling.
    pub notify: Option<String>,
    pub realert: Option<String>,
    pub pause_after: Option<u32>,
    /// `--in`: not in a tasks file, whose payload must not depend on "now".
    #[serde(skip)]
    pub in_: Option<String>,
    /// `--name`: a tasks file names each task by its table.
    #[serde(skip)]
    pub name: Option<String>,
}

/// A list a tasks file may give as one string.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(Some(
        match <OneOrMany as serde::Deserialize>::deserialize(d)? {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        },
    ))
}

/// A value a tasks file must give (serde's "missing field" otherwise).
fn required<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    <String as serde::Deserialize>::deserialize(d).map(Some)
}

/// The most retries of a failed run.
pub const MAX_RETRIES_MAX: u32 = 100;
/// The most consecutive failures `pause_after` may wait for.
pub const PAUSE_AFTER_MAX: u32 = 1000;
/// The most occurrences `count` may end a schedule after.
pub const COUNT_MAX: u32 = 100_000;
/// The longest name, in bytes (of `[A-Za-z0-9._-]`).
pub const NAME_MAX_BYTES: usize = 64;
/// The longest `spread`.
pub const SPREAD_MAX_SECONDS: i64 = 3600;

/// The limits of a draft's numbers and the end's two forms, each refusal
/// naming its key as a tasks file spells it. The command line's flags hold
/// the same ranges (their value parsers name these constants), so there a
/// refusal comes from clap first.
pub fn check_limits(spec: &DraftSpec) -> Result<(), (&'static str, String)> {
    if spec
        .pause_after
        .is_some_and(|n| !(1..=PAUSE_AFTER_MAX).contains(&n))
    {
        return Err(("pause_after", format!("from 1 to {PAUSE_AFTER_MAX}")));
    }
    if spec.max_retries.is_some_and(|n| n > MAX_RETRIES_MAX) {
        return Err(("max_retries", format!("at most {MAX_RETRIES_MAX}")));
    }
    if spec.count.is_some_and(|n| !(1..=COUNT_MAX).contains(&n)) {
        return Err(("count", format!("from 1 to {COUNT_MAX}")));
    }
    if spec.until.is_some() && spec.count.is_some() {
        return Err(("count", "until and count do not go together".into()));
    }
    if let Some(text) = spec.timeout.as_deref().filter(|t| !is_none(t)) {
        timeout_seconds(text).map_err(|message| ("timeout", message))?;
    }
    spend_limits(spec)
}

/// The spending limits (docs/CONTRACT.md §6), each as its payload field
/// will hold it.
fn spend_limits(spec: &DraftSpec) -> Result<(), (&'static str, String)> {
    if let Some(list) = &spec.budget {
        budgets(list).map_err(|message| ("budget", message))?;
    }
    if let Some(gate) = spec.gate.as_deref().filter(|g| !is_none(g)) {
        limits::check_gate(gate).map_err(|message| ("gate", message))?;
    }
    if let Some(text) = &spec.catch_up {
        catch_up(text).map_err(|message| ("catch_up", message))?;
    }
    if let Some(text) = spec.expect_success.as_deref().filter(|t| !is_none(t)) {
        expect_success_seconds(text).map_err(|message| ("expect_success", message))?;
    }
    Ok(())
}

/// `none`: the value that removes a limit in a replacement (and sets none
/// in a new draft).
pub fn is_none(text: &str) -> bool {
    text.trim() == "none"
}

/// The budgets a draft names (`none` alone: no budget).
pub fn budgets(list: &[String]) -> Result<Vec<Budget>, String> {
    match list {
        [only] if is_none(only) => Ok(Vec::new()),
        _ => limits::budgets(list),
    }
}

/// `none` or `latest`.
pub fn catch_up(text: &str) -> Result<CatchUp, String> {
    CatchUp::parse(text.trim())
        .ok_or_else(|| format!("'{}' is not one of {}", escape(text), CatchUp::spellings()))
}

/// How long a task may go without a success, a minute to a year.
pub fn expect_success_seconds(text: &str) -> Result<i64, String> {
    let seconds = schedule::parse_duration(text.trim()).map_err(|e| e.message)?;
    match (EXPECT_SUCCESS_MIN_SECONDS..=EXPECT_SUCCESS_MAX_SECONDS).contains(&seconds) {
        true => Ok(seconds),
        false => Err("must be from 1 min to 366 d".to_string()),
    }
}

/// A task's own timeout in seconds, from 1 s to 24 h. `0` is read as a
/// duration out of range (not as a misspelled one), so its refusal says
/// the range.
pub fn timeout_seconds(text: &str) -> Result<i64, String> {
    let range = || "must be from 1 s to 24 h".to_string();
    let seconds = match text.trim() {
        "0" | "0s" => return Err(range()),
        other => schedule::parse_duration(other).map_err(|e| e.message)?,
    };
    match (1..=TIMEOUT_SECONDS_MAX).contains(&seconds) {
        true => Ok(seconds),
        false => Err(range()),
    }
}

/// `check_limits` for a draft's flags: the refusal names `--flag`.
pub fn check_flag_limits(spec: &DraftSpec) -> Result<()> {
    check_limits(spec).map_err(|(key, message)| {
        CmdError::usage(format!("--{}: {message}", key.replace('_', "-"))).into()
    })
}

/// The policy a draft names, parsed.
pub fn policy(text: &str) -> Result<Policy> {
    Policy::parse(text).ok_or_else(|| {
        CmdError::usage(format!(
            "unknown policy '{text}': use read_only or confirm_writes"
        ))
        .into()
    })
}

/// The notice mode a draft names, parsed.
pub fn notify_mode(text: &str) -> Result<NotifyMode> {
    NotifyMode::parse(text).ok_or_else(|| {
        CmdError::usage(format!(
            "unknown notice mode '{text}': use {}",
            NotifyMode::spellings()
        ))
        .into()
    })
}

/// How late a run may start and still run, unless the draft says: a tick
/// per minute sees an occurrence up to 60 s after it is due, plus the
/// tick's own start-up and a claim queued behind another tick's, so 90 s.
pub const DEFAULT_GRACE_SECONDS: i64 = 90;

/// A new draft's retries of a failed run, unless it says.
pub const DEFAULT_MAX_RETRIES: i64 = 3;
/// A new draft's first retry delay, unless it says.
pub const DEFAULT_RETRY_BACKOFF_SECONDS: i64 = 60;

pub fn check_instruction(text: &str) -> Result<()> {
    if text.len() > INSTRUCTION_MAX_BYTES {
        return fail(CmdError::usage(format!(
            "the instruction is {} bytes; at most {INSTRUCTION_MAX_BYTES} are allowed",
            text.len()
        )));
    }
    if text.contains('\0') {
        return fail(CmdError::usage("the instruction contains a NUL byte"));
    }
    if text.trim().is_empty() {
        return fail(
            CmdError::usage("the instruction is empty").with_hint("say what the agent should do"),
        );
    }
    Ok(())
}

pub fn check_name(name: &str) -> Result<String> {
    let valid = (1..=NAME_MAX_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !valid {
        return fail(
            CmdError::usage(format!("invalid --name '{}'", escape(name)))
                .with_hint("use 1–64 of the characters A-Z a-z 0-9 . _ -"),
        );
    }
    Ok(name.to_string())
}

/// A duration value of `flag` in seconds; `0` only when `zero_ok`.
pub fn duration_flag(flag: &str, text: &str, zero_ok: bool) -> Result<i64> {
    if zero_ok && matches!(text.trim(), "0" | "0s") {
        return Ok(0);
    }
    schedule::parse_duration(text)
        .map_err(|e| CmdError::usage(format!("{flag}: {}", e.message)).into())
}

/// The longest a draft may wait for confirmation.
pub const TTL_MAX_SECONDS: i64 = 7 * 86400;

/// `--ttl`: how long a draft waits for confirmation, at most 7 days.
pub fn ttl_seconds(text: &str) -> Result<i64> {
    let ttl = duration_flag("--ttl", text, false)?;
    if ttl > TTL_MAX_SECONDS {
        return fail(CmdError::usage("--ttl must be at most 7 days"));
    }
    Ok(ttl)
}
