//! Reading the executor's answer (docs/CONTRACT.md §6 "Result") out of a finished child.
//!
//! Invariants: pure — no I/O, no clock; every `ChildOutcome` maps to exactly one
//! `ExecResult`; a summary is never longer than `SUMMARY_MAX_CHARS` characters and
//! never empty (absent instead); a run we killed, or that a signal killed, is
//! `Unknown` whatever it printed, because its side effects may be half done.
//!
//! Choices the spec leaves open:
//! - A JSON reply wins over the exit code: `{"status":"succeeded"}` followed by
//!   exit 1 is `Succeeded`. The reply is the executor's deliberate answer.
//! - A last line that is JSON but not a reply — not an object, no string `status`,
//!   or a status we do not know — is treated as ordinary output, and the exit
//!   code decides. An unknown status may come from a newer executor protocol;
//!   guessing its meaning would be worse than the plain exit-code rule.
//! - A known awaiting status without its `wait_id` / `wait_deadline` is `Failed`
//!   with a "malformed" reason, not a fallback: the executor clearly meant to
//!   reply, and parking a run nobody can resume would block its task forever.
//! - A non-string `summary` is ignored. A reply's summary keeps its *beginning*
//!   (a message leads with its point); output used as a summary keeps its *end*.
//! - A reply without `summary` has none: the stdout before it is not a message.
//! - The last line is decoded lossily: one byte that is not UTF-8 in a reply's
//!   summary must not turn `{"status":"failed",…}` into plain output that
//!   exit 0 would make a success.
//! - A last line that begins like a reply (`{` and a `"status"` key) but is
//!   not valid JSON is `Failed` ("malformed executor reply"): the executor
//!   meant to answer, and reading a garbled answer as success would hide
//!   exactly the failures it was trying to report.
//! - A last line longer than the capture cap (1 MiB of stdout, kept from
//!   its end) lost its beginning. When what is left ends like a JSON object
//!   (`}`), it may have been a reply, possibly `{"status":"failed",…}`: it is
//!   `Failed` ("malformed executor reply"), never left to the exit code. A
//!   cut line that cannot be a reply is ordinary output.

use serde_json::{Map, Value};

use crate::limits::Usage;
use crate::process::{ChildExit, ChildOutcome};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecStatus {
    Succeeded,
    Failed,
    DeliveryFailed,
    AwaitingConfirmation,
    AwaitingAuthorization,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecResult {
    pub status: ExecStatus,
    pub summary: Option<String>,
    pub wait_id: Option<String>,
    /// As the executor gave it; the caller parses the time.
    pub wait_deadline: Option<String>,
    /// Why, when we decided the status rather than the executor; for a
    /// failed reply, the class it named ("error kind: KIND").
    pub reason: Option<String>,
    /// The reply's `"notify"`: whether a success is worth a notice
    /// (docs/CONTRACT.md §16); the policy ignores it for anything else.
    pub notify: Option<bool>,
    /// What the reply says the run spent (checked; `limits::Usage::read`).
    pub usage: Usage,
}

pub const SUMMARY_MAX_CHARS: usize = 2000;

/// How a failed run's reason begins when the executor's reply gave an
/// `error_kind` (the rest of the reason is the kind).
pub const ERROR_KIND_PREFIX: &str = "error kind: ";

/// The most of the executor's stderr a run keeps (its end: errors come last).
pub const STDERR_MAX_CHARS: usize = 2000;

/// The end of what the child wrote on stderr, at most `STDERR_MAX_CHARS`
/// characters (invalid UTF-8 replaced, trailing blank space dropped), led by
/// `…` when cut; `None` when it wrote nothing. Kept raw: escaping is the
/// display's job, so JSON readers get the text as written.
pub fn stderr_tail(outcome: &ChildOutcome) -> Option<String> {
    let text = String::from_utf8_lossy(&outcome.stderr);
    let text = text.trim_end();
    if text.trim().is_empty() {
        return None;
    }
    let count = text.chars().count();
    if count <= STDERR_MAX_CHARS && !outcome.stderr_truncated {
        return Some(text.to_string());
    }
    let keep = count.min(STDERR_MAX_CHARS - 1);
    let tail: String = text.chars().skip(count - keep).collect();
    Some(format!("…{tail}"))
}

/// Turns a finished child into the run's result (see the module comment for the rules).
pub fn interpret(outcome: &ChildOutcome) -> ExecResult {
    let code = match outcome.exit {
        ChildExit::Exited(code) => code,
        ChildExit::Signaled(signal) => {
            return unknown(outcome, format!("killed by signal {signal}"))
        }
        ChildExit::TimedOut => {
            let ran = human_duration(outcome.elapsed);
            return unknown(outcome, format!("timed out after {ran}"));
        }
        ChildExit::Aborted => return unknown(outcome, "lease lost".to_string()),
    };
    if outcome.stdout_truncated && last_line_cut(&outcome.stdout) {
        return ExecResult {
            status: ExecStatus::Failed,
            summary: output_summary(outcome),
            wait_id: None,
            wait_deadline: None,
            reason: Some(
                "malformed executor reply: the last line is longer than the 1 MiB capture of stdout, so its beginning was lost"
                    .to_string(),
            ),
            notify: None,
            usage: Usage::default(),
        };
    }
    match last_line(&outcome.stdout).map(reply_of) {
        Some(Reply::Given(reply)) => return reply,
        // Meant as a reply, unreadable: failed, with the output as its summary.
        Some(Reply::Garbled(error)) => {
            return ExecResult {
                status: ExecStatus::Failed,
                summary: output_summary(outcome),
                wait_id: None,
                wait_deadline: None,
                reason: Some(format!(
                    "malformed executor reply: the last line begins like a JSON reply but is not valid JSON ({error})"
                )),
                notify: None,
                usage: Usage::default(),
            }
        }
        Some(Reply::Output) | None => {}
    }
    let (status, reason) = if code == 0 {
        (ExecStatus::Succeeded, None)
    } else {
        (ExecStatus::Failed, Some(format!("exit status {code}")))
    };
    ExecResult {
        status,
        summary: output_summary(outcome),
        wait_id: None,
        wait_deadline: None,
        reason,
        notify: None,
        usage: Usage::default(),
    }
}

fn unknown(outcome: &ChildOutcome, reason: String) -> ExecResult {
    ExecResult {
        status: ExecStatus::Unknown,
        // What it printed before dying helps whoever reconciles the run.
        summary: output_summary(outcome),
        wait_id: None,
        wait_deadline: None,
        reason: Some(reason),
        notify: None,
        usage: Usage::default(),
    }
}

/// The last line with anything but whitespace in it, trimmed.
fn last_line(stdout: &[u8]) -> Option<&[u8]> {
    stdout
        .split(|&byte| byte == b'\n')
        .map(<[u8]>::trim_ascii)
        .rfind(|line| !line.is_empty())
}

/// Whether the last line began before what a truncated capture kept (no
/// line break precedes it) and ends like a JSON object, so may have been a
/// reply whose beginning is lost.
fn last_line_cut(stdout: &[u8]) -> bool {
    let text = stdout.trim_ascii_end();
    !text.contains(&b'\n') && text.ends_with(b"}")
}

/// What the last line of stdout is.
enum Reply {
    /// The executor's reply.
    Given(ExecResult),
    /// Meant as a reply (it begins like one) but not JSON.
    Garbled(serde_json::Error),
    /// Ordinary output: the exit code decides.
    Output,
}

fn reply_of(line: &[u8]) -> Reply {
    let line = String::from_utf8_lossy(line);
    match parse_leniently(&line) {
        Ok(Value::Object(reply)) => given(&reply).map_or(Reply::Output, Reply::Given),
        Ok(_) => Reply::Output,
        Err(e) if looks_like_a_reply(&line) => Reply::Garbled(e),
        Err(_) => Reply::Output,
    }
}

/// The most numbers too large for a float one line may hold and still be
/// read (each costs a parse of the line).
const OUT_OF_RANGE_MAX: usize = 32;

/// The line as JSON, where a number too large for a float (`1e400`, or
/// `1.8e308`, which serde_json refuses as out of range) becomes a string
/// marked `limits::OUT_OF_RANGE`: such a number in a reply's `usage` is a
/// usage to ignore, not a reply to call malformed (docs/CONTRACT.md §20).
fn parse_leniently(line: &str) -> serde_json::Result<Value> {
    let mut text = std::borrow::Cow::Borrowed(line);
    let mut rewritten = 0;
    loop {
        let error = match serde_json::from_str::<Value>(&text) {
            Err(e) if e.to_string().starts_with("number out of range") => e,
            parsed => return parsed,
        };
        let Some(number) = number_at(&text, error.column()) else {
            return Err(error);
        };
        if rewritten == OUT_OF_RANGE_MAX {
            return Err(error);
        }
        let marked = Value::String(format!(
            "{}{}",
            crate::limits::OUT_OF_RANGE,
            &text[number.clone()]
        ));
        text.to_mut().replace_range(number, &marked.to_string());
        rewritten += 1;
    }
}

/// The byte range of the JSON number around a parse error's column (its
/// end, or within it), if there is one there.
fn number_at(text: &str, column: usize) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let in_number = |b: &u8| b.is_ascii_digit() || b".eE+-".contains(b);
    // The column counts from 1 and may point at the number's last byte or
    // at the one after it.
    [column, column.saturating_sub(1)]
        .into_iter()
        .find_map(|at| {
            let at = at.min(bytes.len());
            let start = at
                - bytes[..at]
                    .iter()
                    .rev()
                    .take_while(|b| in_number(b))
                    .count();
            let end = at + bytes[at..].iter().take_while(|b| in_number(b)).count();
            // `get`: a column inside a multi-byte character is no number.
            let number = text.get(start..end)?;
            number.parse::<f64>().is_ok().then_some(start..end)
        })
}

/// The executor's reply, if the object is one.
fn given(reply: &Map<String, Value>) -> Option<ExecResult> {
    let name = reply.get("status")?.as_str()?;
    let status = match name {
        "succeeded" => ExecStatus::Succeeded,
        "failed" => ExecStatus::Failed,
        "delivery_failed" => ExecStatus::DeliveryFailed,
        "awaiting_confirmation" => ExecStatus::AwaitingConfirmation,
        "awaiting_authorization" => ExecStatus::AwaitingAuthorization,
        _ => return None,
    };
    let summary = reply
        .get("summary")
        .and_then(Value::as_str)
        .and_then(head_summary);
    let awaiting = matches!(
        status,
        ExecStatus::AwaitingConfirmation | ExecStatus::AwaitingAuthorization
    );
    let notify = reply.get("notify").and_then(Value::as_bool);
    // A usage it could not read is ignored and said in the summary; the
    // status the executor gave stands.
    let (usage, ignored) = reply.get("usage").map(Usage::read).unwrap_or_default();
    let summary = with_note(summary, ignored);
    if !awaiting {
        let reason = match status {
            ExecStatus::Failed | ExecStatus::DeliveryFailed => error_kind(reply),
            _ => None,
        };
        return Some(ExecResult {
            status,
            summary,
            wait_id: None,
            wait_deadline: None,
            reason,
            notify,
            usage,
        });
    }
    Some(waiting(reply, status, name, summary, usage))
}

/// A failed reply's `error_kind` (docs/PROTOCOLS.md), recorded as the
/// run's reason "error kind: KIND": the class of the failure the notice
/// policy tells once per state (docs/CONTRACT.md §16), where the summary
/// varies. One line of at most 64 characters; an empty or non-string one
/// is no kind.
fn error_kind(reply: &Map<String, Value>) -> Option<String> {
    let kind = reply.get("error_kind")?.as_str()?;
    let kind = kind.lines().next().unwrap_or("").trim();
    (!kind.is_empty()).then(|| format!("{ERROR_KIND_PREFIX}{}", crate::text::clip(kind, 64)))
}

/// The reply of an executor that asks to wait (`status` is awaiting): its
/// `wait_id` and an RFC 3339 `wait_deadline`, or a failed run saying what
/// is missing or malformed.
fn waiting(
    reply: &Map<String, Value>,
    status: ExecStatus,
    name: &str,
    summary: Option<String>,
    usage: Usage,
) -> ExecResult {
    match (field(reply, "wait_id"), field(reply, "wait_deadline")) {
        (Some(_), Some(wait_deadline)) if !is_rfc3339(&wait_deadline) => ExecResult {
            status: ExecStatus::Failed,
            summary,
            wait_id: None,
            wait_deadline: None,
            reason: Some(format!(
                "malformed executor reply: wait_deadline \"{}\" is not an RFC 3339 time \
                 such as 2026-12-04T10:00:00Z",
                crate::text::clip(&wait_deadline, 64)
            )),
            notify: None,
            usage,
        },
        (Some(wait_id), Some(wait_deadline)) => ExecResult {
            status,
            summary,
            wait_id: Some(wait_id),
            wait_deadline: Some(wait_deadline),
            reason: None,
            notify: None,
            usage,
        },
        (wait_id, wait_deadline) => {
            let missing: Vec<&str> = [
                ("\"wait_id\"", wait_id),
                ("\"wait_deadline\"", wait_deadline),
            ]
            .into_iter()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| key)
            .collect();
            ExecResult {
                status: ExecStatus::Failed,
                summary,
                wait_id: None,
                wait_deadline: None,
                reason: Some(format!(
                    "malformed executor reply: status \"{name}\" needs a non-empty string {}",
                    missing.join(" and ")
                )),
                notify: None,
                usage,
            }
        }
    }
}

/// The summary with a note on what was ignored of the reply, kept within
/// `SUMMARY_MAX_CHARS` (the summary gives up its end, the note is whole).
fn with_note(summary: Option<String>, note: Option<String>) -> Option<String> {
    let Some(note) = note else { return summary };
    let note = crate::text::clip(&note, SUMMARY_MAX_CHARS / 2);
    match summary {
        None => Some(note),
        Some(text) => {
            let room = SUMMARY_MAX_CHARS - note.chars().count() - 3;
            let kept: String = text.chars().take(room).collect();
            Some(format!("{} ({note})", kept.trim_end()))
        }
    }
}

/// `wait_deadline`'s one format (docs/CONTRACT.md §6): RFC 3339 with its
/// offset, so that no zone is guessed for a deadline.
fn is_rfc3339(text: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(text).is_ok()
}

/// Whether a line that is not JSON was meant as a reply: an object with a
/// `"status"` key.
fn looks_like_a_reply(line: &str) -> bool {
    line.starts_with('{') && line.contains("\"status\"")
}

/// A non-blank string field, as given.
fn field(reply: &Map<String, Value>, key: &str) -> Option<String> {
    let value = reply.get(key)?.as_str()?;
    (!value.trim().is_empty()).then(|| value.to_string())
}

/// At most `SUMMARY_MAX_CHARS` characters from the start of a reply's summary.
fn head_summary(text: &str) -> Option<String> {
    let text = text.trim();
    let end = text
        .char_indices()
        .nth(SUMMARY_MAX_CHARS)
        .map_or(text.len(), |(index, _)| index);
    non_empty(text[..end].trim_end())
}

/// At most `SUMMARY_MAX_CHARS` characters from the end of stdout.
fn output_summary(outcome: &ChildOutcome) -> Option<String> {
    let mut bytes = outcome.stdout.as_slice();
    if outcome.stdout_truncated {
        // The capture cap may have cut a character in two; drop its orphaned
        // continuation bytes rather than show a replacement character.
        let orphans = bytes
            .iter()
            .take(3)
            .take_while(|&&byte| byte & 0xC0 == 0x80)
            .count();
        bytes = &bytes[orphans..];
    }
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let start = text
        .char_indices()
        .rev()
        .nth(SUMMARY_MAX_CHARS - 1)
        .map_or(0, |(index, _)| index);
    non_empty(text[start..].trim_start())
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_string())
}

/// "30m", "1h2m5s", "250ms": how long a killed run had been going.
fn human_duration(duration: std::time::Duration) -> String {
    let secs = duration.as_secs();
    if secs == 0 {
        return format!("{}ms", duration.as_millis());
    }
    let parts = [(secs / 3600, "h"), (secs / 60 % 60, "m"), (secs % 60, "s")];
    parts
        .iter()
        .filter(|(amount, _)| *amount > 0)
        .map(|(amount, unit)| format!("{amount}{unit}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn outcome(exit: ChildExit, stdout: &[u8]) -> ChildOutcome {
        ChildOutcome {
            exit,
            stdout: stdout.to_vec(),
            stderr: Vec::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            elapsed: Duration::from_millis(1500),
        }
    }

    fn exited(code: i32, stdout: &str) -> ExecResult {
        interpret(&outcome(ChildExit::Exited(code), stdout.as_bytes()))
    }

    fn result(status: ExecStatus, summary: Option<&str>, reason: Option<&str>) -> ExecResult {
        ExecResult {
            status,
            summary: summary.map(str::to_string),
            wait_id: None,
            wait_deadline: None,
            reason: reason.map(str::to_string),
            notify: None,
            usage: Usage::default(),
        }
    }

    #[test]
    fn every_reply_status_is_understood() {
        let cases = [
            ("succeeded", ExecStatus::Succeeded),
            ("failed", ExecStatus::Failed),
            ("delivery_failed", ExecStatus::DeliveryFailed),
        ];
        for (name, status) in cases {
            let stdout = format!(r#"{{"status":"{name}","summary":"done it"}}"#);
            assert_eq!(
                exited(0, &stdout),
                result(status, Some("done it"), None),
                "{name}"
            );
        }
    }

    #[test]
    fn the_last_line_reply_wins_after_other_output() {
        let stdout = "working...\n{\"status\":\"failed\"}\nstill working\n{\"status\":\"delivery_failed\",\"summary\":\"sent? unsure\"}\n";
        assert_eq!(
            exited(0, stdout),
            result(ExecStatus::DeliveryFailed, Some("sent? unsure"), None)
        );
    }

    #[test]
    fn trailing_blank_lines_and_carriage_returns_are_skipped() {
        let stdout = "log\r\n  {\"status\":\"failed\",\"summary\":\"no disk\"}  \r\n\n   \n\t\n";
        assert_eq!(
            exited(0, stdout),
            result(ExecStatus::Failed, Some("no disk"), None)
        );
    }

    #[test]
    fn a_reply_wins_over_the_exit_code() {
        let stdout = r#"{"status":"succeeded"}"#;
        assert_eq!(exited(1, stdout), result(ExecStatus::Succeeded, None, None));
        let stdout = r#"{"status":"failed","summary":"nope"}"#;
        assert_eq!(
            exited(0, stdout),
            result(ExecStatus::Failed, Some("nope"), None)
        );
    }

    #[test]
    fn a_reply_that_is_not_the_last_line_is_just_output() {
        let stdout = "{\"status\":\"failed\"}\nall good after all\n";
        let expected = result(ExecStatus::Succeeded, Some(stdout.trim()), None);
        assert_eq!(exited(0, stdout), expected);
    }

    #[test]
    fn json_that_is_not_an_object_falls_back_to_the_exit_code() {
        for line in [
            r#"["status","failed"]"#,
            r#""failed""#,
            "42",
            "null",
            "true",
        ] {
            assert_eq!(
                exited(0, line),
                result(ExecStatus::Succeeded, Some(line), None)
            );
            assert_eq!(
                exited(2, line),
                result(ExecStatus::Failed, Some(line), Some("exit status 2"))
            );
        }
    }

    #[test]
    fn an_object_without_a_known_string_status_falls_back_to_the_exit_code() {
        for line in [
            r#"{"status":"exploded"}"#,
            r#"{"status":"SUCCEEDED"}"#,
            r#"{"status":1}"#,
            r#"{"status":null}"#,
            r#"{"summary":"no status"}"#,
        ] {
            assert_eq!(
                exited(4, line),
                result(ExecStatus::Failed, Some(line), Some("exit status 4")),
                "{line}"
            );
        }
    }

    #[test]
    fn awaiting_replies_carry_their_wait() {
        let stdout = r#"{"status":"awaiting_confirmation","wait_id":"w-1","wait_deadline":"2030-01-01T00:00:00Z","summary":"ok?"}"#;
        let expected = ExecResult {
            status: ExecStatus::AwaitingConfirmation,
            summary: Some("ok?".to_string()),
            wait_id: Some("w-1".to_string()),
            wait_deadline: Some("2030-01-01T00:00:00Z".to_string()),
            reason: None,
            notify: None,
            usage: Usage::default(),
        };
        assert_eq!(exited(0, stdout), expected);

        let stdout =
            r#"{"status":"awaiting_authorization","wait_id":"w-2","wait_deadline":"tomorrow"}"#;
        let got = exited(0, stdout);
        assert_eq!(
            got.status,
            ExecStatus::Failed,
            "only RFC 3339 is a deadline"
        );
        assert_eq!(
            got.reason.as_deref(),
            Some(
                "malformed executor reply: wait_deadline \"tomorrow\" is not an RFC 3339 time \
                 such as 2026-12-04T10:00:00Z"
            )
        );
        for loose in ["2030-01-01 00:00", "2030-01-01T00:00:00", "1893456000"] {
            let stdout = format!(
                r#"{{"status":"awaiting_authorization","wait_id":"w","wait_deadline":"{loose}"}}"#
            );
            assert_eq!(exited(0, &stdout).status, ExecStatus::Failed, "{loose}");
        }
        let stdout = r#"{"status":"awaiting_authorization","wait_id":"w","wait_deadline":"2030-01-01T08:00:00+08:00"}"#;
        assert_eq!(exited(0, stdout).status, ExecStatus::AwaitingAuthorization);
    }

    #[test]
    fn a_reply_may_say_whether_it_is_worth_a_notice() {
        let said = |text: &str| exited(0, text).notify;
        assert_eq!(
            said(r#"{"status":"succeeded","notify":false}"#),
            Some(false)
        );
        assert_eq!(said(r#"{"status":"succeeded","notify":true}"#), Some(true));
        assert_eq!(said(r#"{"status":"succeeded","notify":"no"}"#), None);
        assert_eq!(said(r#"{"status":"succeeded"}"#), None);
    }

    #[test]
    fn awaiting_without_its_wait_is_a_malformed_failure() {
        let cases = [
            (
                r#"{"status":"awaiting_confirmation","wait_deadline":"x"}"#,
                "\"wait_id\"",
            ),
            (
                r#"{"status":"awaiting_confirmation","wait_id":"","wait_deadline":"x"}"#,
                "\"wait_id\"",
            ),
            (
                r#"{"status":"awaiting_confirmation","wait_id":"  ","wait_deadline":"x"}"#,
                "\"wait_id\"",
            ),
            (
                r#"{"status":"awaiting_authorization","wait_id":7,"wait_deadline":"x"}"#,
                "\"wait_id\"",
            ),
            (
                r#"{"status":"awaiting_authorization","wait_id":"w"}"#,
                "\"wait_deadline\"",
            ),
            (
                r#"{"status":"awaiting_authorization"}"#,
                "\"wait_id\" and \"wait_deadline\"",
            ),
        ];
        for (line, missing) in cases {
            let got = exited(0, line);
            assert_eq!(got.status, ExecStatus::Failed, "{line}");
            assert_eq!((got.wait_id, got.wait_deadline), (None, None), "{line}");
            let reason = got.reason.expect("a reason");
            assert!(
                reason.starts_with("malformed executor reply: status \"awaiting_"),
                "{reason}"
            );
            assert!(
                reason.ends_with(&format!("needs a non-empty string {missing}")),
                "{reason}"
            );
        }
    }

    #[test]
    fn wait_fields_on_a_settled_reply_are_ignored() {
        let stdout = r#"{"status":"succeeded","wait_id":"w","wait_deadline":"d"}"#;
        assert_eq!(exited(0, stdout), result(ExecStatus::Succeeded, None, None));
    }

    #[test]
    fn a_reply_summary_that_is_not_a_string_or_is_blank_is_absent() {
        for summary in ["null", "42", "[\"a\"]", "{}", "\"\"", "\"  \\n \""] {
            let stdout = format!(r#"{{"status":"succeeded","summary":{summary}}}"#);
            assert_eq!(exited(0, &stdout).summary, None, "{summary}");
        }
    }

    #[test]
    fn a_reply_summary_keeps_its_first_2000_characters() {
        let long = format!("{}{}", "é".repeat(SUMMARY_MAX_CHARS - 1), "漢字");
        let stdout = serde_json::json!({"status": "failed", "summary": long}).to_string();
        let summary = exited(0, &stdout).summary.expect("a summary");
        assert_eq!(summary.chars().count(), SUMMARY_MAX_CHARS);
        assert_eq!(summary, format!("{}漢", "é".repeat(SUMMARY_MAX_CHARS - 1)));

        let exact = "ü".repeat(SUMMARY_MAX_CHARS);
        let stdout = serde_json::json!({"status": "failed", "summary": exact}).to_string();
        assert_eq!(exited(0, &stdout).summary, Some(exact));
    }

    #[test]
    fn exit_codes_decide_without_a_reply() {
        assert_eq!(
            exited(0, "all fine\n"),
            result(ExecStatus::Succeeded, Some("all fine"), None)
        );
        assert_eq!(
            exited(3, "broke\n"),
            result(ExecStatus::Failed, Some("broke"), Some("exit status 3"))
        );
        assert_eq!(
            exited(255, ""),
            result(ExecStatus::Failed, None, Some("exit status 255"))
        );
        assert_eq!(
            exited(0, " \n\n"),
            result(ExecStatus::Succeeded, None, None)
        );
    }

    #[test]
    fn the_output_summary_is_the_trimmed_tail() {
        let stdout = "\n  first\nsecond  \n\n";
        assert_eq!(exited(0, stdout).summary.as_deref(), Some("first\nsecond"));
    }

    #[test]
    fn the_output_summary_keeps_the_last_2000_characters_counting_chars() {
        // 2000 three-byte characters fit exactly; one more pushes out the first.
        let exact = "€".repeat(SUMMARY_MAX_CHARS);
        assert_eq!(exited(0, &exact).summary.as_deref(), Some(exact.as_str()));

        let over = format!("ab{}", "€".repeat(SUMMARY_MAX_CHARS - 1));
        let summary = exited(0, &over).summary.expect("a summary");
        assert_eq!(summary.chars().count(), SUMMARY_MAX_CHARS);
        assert_eq!(summary, format!("b{}", "€".repeat(SUMMARY_MAX_CHARS - 1)));
    }

    #[test]
    fn the_output_summary_is_trimmed_after_the_cut() {
        let ys = |n| "y".repeat(n);
        // 2002 characters: the cut keeps "c " and the y's.
        let stdout = format!("abc {}", ys(SUMMARY_MAX_CHARS - 2));
        let summary = exited(0, &stdout).summary.expect("a summary");
        assert_eq!(summary, format!("c {}", ys(SUMMARY_MAX_CHARS - 2)));
        // 2003 characters: the cut starts at the space, which is trimmed away.
        let stdout = format!("abc {}", ys(SUMMARY_MAX_CHARS - 1));
        let summary = exited(0, &stdout).summary.expect("a summary");
        assert_eq!(summary, ys(SUMMARY_MAX_CHARS - 1));
    }

    #[test]
    fn invalid_utf8_output_is_replaced_lossily() {
        let got = interpret(&outcome(ChildExit::Exited(1), b"bad \xff\xfe bytes\n"));
        assert_eq!(
            got,
            result(
                ExecStatus::Failed,
                Some("bad \u{fffd}\u{fffd} bytes"),
                Some("exit status 1")
            )
        );
    }

    #[test]
    fn a_reply_line_with_invalid_utf8_is_decoded_lossily() {
        let got = interpret(&outcome(
            ChildExit::Exited(0),
            b"{\"status\":\"failed\",\"summary\":\"bad \xff\"}",
        ));
        assert_eq!(got, result(ExecStatus::Failed, Some("bad \u{fffd}"), None));
    }

    #[test]
    fn usage_too_large_for_a_float_is_ignored_and_the_status_stands() {
        for (usage, says) in [
            ("1e400", "usd 1e400 is over the limit of 1e15"),
            ("1.8e308", "usd 1.8e308 is over the limit of 1e15"),
            ("-1e400", "usd -1e400 is negative"),
            ("1e16", "usd 1e16 is over the limit of 1e15"),
            ("\"NaN\"", "usd \"NaN\" is not a number"),
            ("-1", "usd -1 is negative"),
        ] {
            let line = format!(
                r#"{{"status":"succeeded","summary":"ok","usage":{{"tokens":3,"usd":{usage},"é":1e999}}}}"#
            );
            let got = exited(1, &line);
            assert_eq!(got.status, ExecStatus::Succeeded, "{line}");
            let summary = got.summary.unwrap();
            assert!(summary.starts_with("ok (usage ignored: "), "{summary}");
            assert!(summary.contains(says), "{summary}");
            assert_eq!(got.usage.amounts, [("tokens".to_string(), 3.0)]);
        }
        // Out of range anywhere else: the rest of the reply still counts.
        let got = exited(1, r#"{"status":"succeeded","extra":[1e400,2e500]}"#);
        assert_eq!(got.status, ExecStatus::Succeeded);
        // A reply whose status is unreadable stays malformed.
        let got = exited(0, r#"{"status":"succeeded","usage":{"usd":1e400}"#);
        assert_eq!(got.status, ExecStatus::Failed);
    }

    #[test]
    fn a_line_that_begins_like_a_reply_but_does_not_parse_is_a_failure() {
        for line in [
            r#"{"status":"failed","summary":"cut sho"#,
            r#"{"status": succeeded}"#,
            r#"{"summary":"x", "status":"failed",}"#,
            // Even a success, garbled, is not taken for one.
            r#"{"status":"succeeded"} trailing"#,
            r#"{"status":"succeeded""#,
        ] {
            let got = interpret(&outcome(ChildExit::Exited(0), line.as_bytes()));
            assert_eq!(got.status, ExecStatus::Failed, "{line}");
            let reason = got.reason.unwrap_or_default();
            assert!(
                reason.starts_with(
                    "malformed executor reply: the last line begins like a JSON reply"
                ),
                "{line}: {reason}"
            );
        }
        // Output that merely starts with a brace is output.
        let got = interpret(&outcome(ChildExit::Exited(0), b"{ progress 50% }"));
        assert_eq!(got.status, ExecStatus::Succeeded);
    }

    #[test]
    fn a_character_cut_by_the_capture_cap_is_dropped() {
        // "é" is C3 A9: a capture that kept only its second byte starts mid-character.
        let mut cut = outcome(ChildExit::Exited(0), b"\xa9t\xc3\xa9");
        cut.stdout_truncated = true;
        assert_eq!(interpret(&cut).summary.as_deref(), Some("té"));
        cut.stdout_truncated = false;
        assert_eq!(interpret(&cut).summary.as_deref(), Some("\u{fffd}té"));
    }

    #[test]
    fn a_reply_survives_truncated_output() {
        let mut big = outcome(ChildExit::Exited(0), b"ing\n{\"status\":\"failed\"}\n");
        big.stdout_truncated = true;
        assert_eq!(interpret(&big), result(ExecStatus::Failed, None, None));
    }

    #[test]
    fn a_cut_last_line_that_may_have_been_a_reply_is_malformed() {
        // The tail of `{"status":"failed","summary":"xxx…"}` past the cap.
        let mut cut = outcome(ChildExit::Exited(0), b"xxxxxxxx\"}\n");
        cut.stdout_truncated = true;
        let got = interpret(&cut);
        assert_eq!(got.status, ExecStatus::Failed);
        assert!(got.reason.unwrap().starts_with("malformed executor reply"));
        // A cut line that cannot end a JSON object is output: the exit code decides.
        let mut plain = outcome(ChildExit::Exited(0), b"xxxxxxxx done\n");
        plain.stdout_truncated = true;
        assert_eq!(interpret(&plain).status, ExecStatus::Succeeded);
        // Whole lines after the cut one are read as ever.
        let mut whole = outcome(ChildExit::Exited(0), b"xx\"}\n{\"status\":\"succeeded\"}\n");
        whole.stdout_truncated = true;
        assert_eq!(interpret(&whole).status, ExecStatus::Succeeded);
    }

    #[test]
    fn a_signal_makes_the_run_unknown_even_after_a_reply() {
        let got = interpret(&outcome(
            ChildExit::Signaled(9),
            b"{\"status\":\"succeeded\"}\n",
        ));
        let expected = result(
            ExecStatus::Unknown,
            Some("{\"status\":\"succeeded\"}"),
            Some("killed by signal 9"),
        );
        assert_eq!(got, expected);
    }

    #[test]
    fn a_timeout_is_unknown_and_says_how_long_it_ran() {
        let mut timed_out = outcome(ChildExit::TimedOut, b"");
        let cases = [
            (Duration::from_secs(1800), "timed out after 30m"),
            (Duration::from_millis(1_805_300), "timed out after 30m5s"),
            (Duration::from_secs(3723), "timed out after 1h2m3s"),
            (Duration::from_secs(7200), "timed out after 2h"),
            (Duration::from_millis(250), "timed out after 250ms"),
        ];
        for (elapsed, reason) in cases {
            timed_out.elapsed = elapsed;
            assert_eq!(
                interpret(&timed_out),
                result(ExecStatus::Unknown, None, Some(reason))
            );
        }
    }

    #[test]
    fn an_abort_is_unknown_because_the_lease_was_lost() {
        let got = interpret(&outcome(ChildExit::Aborted, b"half done\n"));
        assert_eq!(
            got,
            result(ExecStatus::Unknown, Some("half done"), Some("lease lost"))
        );
    }

    #[test]
    fn a_failed_replys_error_kind_is_its_reason_and_a_successs_is_ignored() {
        let failed =
            r#"{"status":"failed","summary":"used 1234 tokens","error_kind":"rate_limited\nmore"}"#;
        assert_eq!(
            exited(1, failed),
            result(
                ExecStatus::Failed,
                Some("used 1234 tokens"),
                Some("error kind: rate_limited")
            )
        );
        let blank = r#"{"status":"failed","error_kind":"  "}"#;
        assert_eq!(exited(1, blank).reason, None);
        let success = r#"{"status":"succeeded","error_kind":"quota"}"#;
        assert_eq!(exited(0, success).reason, None);
    }
}
