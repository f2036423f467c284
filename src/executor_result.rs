//! Reading the executor's answer (SPEC section 6): the last non-empty line
//! of stdout when it is a JSON object with a known `status`, otherwise the
//! exit code. A JSON line with an unknown status is not a result: the exit
//! code decides, so a chatty executor printing JSON logs stays readable.

use serde_json::Value;

use crate::process::{ChildExit, ChildOutcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// As the executor wrote it; the caller parses the time.
    pub wait_deadline: Option<String>,
    /// Why, in agentcron's words (killed, timed out, exit status, malformed).
    pub reason: Option<String>,
}

pub const SUMMARY_MAX_CHARS: usize = 2000;

pub fn interpret(outcome: &ChildOutcome) -> ExecResult {
    let unknown = |reason: String| ExecResult {
        status: ExecStatus::Unknown,
        summary: tail_summary(&outcome.stdout),
        wait_id: None,
        wait_deadline: None,
        reason: Some(reason),
    };
    let code = match outcome.exit {
        ChildExit::Exited(code) => code,
        ChildExit::Signaled(signal) => {
            return unknown(format!("executor killed by signal {signal}"))
        }
        ChildExit::TimedOut => return unknown("executor timed out; process group killed".into()),
        ChildExit::Aborted => return unknown("lease lost; process group killed".into()),
    };
    let text = String::from_utf8_lossy(&outcome.stdout);
    if let Some(result) = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .and_then(json_result)
    {
        return result;
    }
    ExecResult {
        status: if code == 0 {
            ExecStatus::Succeeded
        } else {
            ExecStatus::Failed
        },
        summary: tail_summary(&outcome.stdout),
        wait_id: None,
        wait_deadline: None,
        reason: (code != 0).then(|| format!("executor exited with status {code}")),
    }
}

fn json_result(line: &str) -> Option<ExecResult> {
    let value: Value = serde_json::from_str(line.trim()).ok()?;
    let obj = value.as_object()?;
    let status = match obj.get("status")?.as_str()? {
        "succeeded" => ExecStatus::Succeeded,
        "failed" => ExecStatus::Failed,
        "delivery_failed" => ExecStatus::DeliveryFailed,
        "awaiting_confirmation" => ExecStatus::AwaitingConfirmation,
        "awaiting_authorization" => ExecStatus::AwaitingAuthorization,
        _ => return None,
    };
    let text = |key: &str| {
        obj.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    };
    let summary = text("summary").map(|s| cap_chars(&s));
    let mut result = ExecResult {
        status,
        summary,
        wait_id: None,
        wait_deadline: None,
        reason: None,
    };
    if matches!(
        status,
        ExecStatus::AwaitingConfirmation | ExecStatus::AwaitingAuthorization
    ) {
        match (text("wait_id"), text("wait_deadline")) {
            (Some(id), Some(deadline)) => {
                result.wait_id = Some(id);
                result.wait_deadline = Some(deadline);
            }
            _ => {
                result.status = ExecStatus::Failed;
                result.reason =
                    Some("the executor asked to wait without wait_id and wait_deadline".into());
            }
        }
    }
    Some(result)
}

/// The last SUMMARY_MAX_CHARS characters of stdout, trimmed; None if empty.
fn tail_summary(stdout: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stdout);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let count = trimmed.chars().count();
    Some(
        trimmed
            .chars()
            .skip(count.saturating_sub(SUMMARY_MAX_CHARS))
            .collect(),
    )
}

fn cap_chars(text: &str) -> String {
    text.chars().take(SUMMARY_MAX_CHARS).collect()
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
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn the_last_json_line_wins_over_the_exit_code() {
        let r = interpret(&outcome(
            ChildExit::Exited(1),
            b"log\n{\"status\":\"succeeded\",\"summary\":\"ok\"}\n\n",
        ));
        assert_eq!(r.status, ExecStatus::Succeeded);
        assert_eq!(r.summary.as_deref(), Some("ok"));
        let r = interpret(&outcome(
            ChildExit::Exited(0),
            b"{\"status\":\"failed\"}\nnot json",
        ));
        assert_eq!(
            r.status,
            ExecStatus::Succeeded,
            "only the last non-empty line counts"
        );
    }

    #[test]
    fn without_a_result_line_the_exit_code_decides() {
        let r = interpret(&outcome(ChildExit::Exited(0), b"all fine\n"));
        assert_eq!(
            (r.status, r.summary.as_deref()),
            (ExecStatus::Succeeded, Some("all fine"))
        );
        let r = interpret(&outcome(ChildExit::Exited(2), b""));
        assert_eq!(r.status, ExecStatus::Failed);
        assert_eq!(r.reason.as_deref(), Some("executor exited with status 2"));
        let r = interpret(&outcome(
            ChildExit::Exited(0),
            b"[1,2]\n\"text\"\n{\"status\":\"weird\"}",
        ));
        assert_eq!(r.status, ExecStatus::Succeeded);
    }

    #[test]
    fn awaiting_needs_a_wait_id_and_deadline() {
        let ok = br#"{"status":"awaiting_confirmation","wait_id":"w","wait_deadline":"2026-12-02T09:00:00Z"}"#;
        let r = interpret(&outcome(ChildExit::Exited(0), ok));
        assert_eq!(r.status, ExecStatus::AwaitingConfirmation);
        assert_eq!(r.wait_id.as_deref(), Some("w"));
        let r = interpret(&outcome(
            ChildExit::Exited(0),
            br#"{"status":"awaiting_authorization"}"#,
        ));
        assert_eq!(r.status, ExecStatus::Failed);
    }

    #[test]
    fn summaries_are_capped_at_2000_characters_on_char_boundaries() {
        let long = "é".repeat(2500);
        let r = interpret(&outcome(ChildExit::Exited(0), long.as_bytes()));
        assert_eq!(
            r.summary.as_ref().unwrap().chars().count(),
            SUMMARY_MAX_CHARS
        );
        let json = format!("{{\"status\":\"succeeded\",\"summary\":\"{long}\"}}");
        let r = interpret(&outcome(ChildExit::Exited(0), json.as_bytes()));
        assert_eq!(r.summary.unwrap().chars().count(), SUMMARY_MAX_CHARS);
        let r = interpret(&outcome(ChildExit::Exited(0), b"\xff\xfeok"));
        assert!(r.summary.unwrap().ends_with("ok"));
    }

    #[test]
    fn killed_timed_out_and_aborted_children_are_unknown() {
        for exit in [
            ChildExit::Signaled(9),
            ChildExit::TimedOut,
            ChildExit::Aborted,
        ] {
            let r = interpret(&outcome(exit, b"{\"status\":\"succeeded\"}"));
            assert_eq!(r.status, ExecStatus::Unknown, "{exit:?}");
            assert!(r.reason.is_some());
        }
    }
}
