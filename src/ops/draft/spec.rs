//! What a draft asks for, as plain values (`DraftSpec`), and every limit a
//! draft's values must keep, checked here once: the instruction's size, the
//! name's form, the durations, the retries and notice settings. `draft` fills
//! a spec from its flags, a tasks file deserializes each of its tasks into one,
//! the MCP `draft` tool reads its arguments with `draft`'s own flags.

use anyhow::Result;

use crate::error::{fail, CmdError};
use crate::model::{NotifyMode, Policy};
use crate::schedule;
use crate::text::escape;

/// The longest instruction a task may carry.
pub const INSTRUCTION_MAX_BYTES: usize = 32768;

/// What a draft asks for: each value as given (None when not given). The
/// schedule is one of `at`, `in_`, `every` (with `start`), `daily` (with
/// `days`) or `cron`; text values are parsed here, with the flag's name in
/// every error.
#[derive(Debug, Clone, Default)]
pub struct DraftSpec {
    /// The instruction itself (a handler reads `-` from stdin first).
    pub instruction: Option<String>,
    pub at: Option<String>,
    pub in_: Option<String>,
    pub every: Option<String>,
    pub start: Option<String>,
    pub daily: Option<String>,
    pub days: Option<String>,
    pub cron: Option<String>,
    pub spread: Option<String>,
    pub until: Option<String>,
    pub count: Option<u32>,
    pub name: Option<String>,
    pub target: Option<String>,
    pub policy: Option<Policy>,
    pub tz: Option<String>,
    pub grace: Option<String>,
    pub max_retries: Option<u32>,
    pub retry_backoff: Option<String>,
    pub notify: Option<NotifyMode>,
    pub realert: Option<String>,
    pub pause_after: Option<u32>,
}

/// How late a run may start and still run, unless the draft says: a tick
/// per minute sees an occurrence up to 60 s after it is due, plus the
/// tick's own start-up and a claim queued behind another tick's, so 90 s.
pub const DEFAULT_GRACE_SECONDS: i64 = 90;

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
    let valid = (1..=64).contains(&name.len())
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
