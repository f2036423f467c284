//! `interpret` on any finished child, checked against the invariants in
//! `executor_result`'s module comment and docs/CONTRACT.md §6 "Result".
//!
//! Input: a header line, then the child's stdout (any bytes, to the end).
//! The header is `exit CODE`, `signal N`, `timeout MILLIS` or `aborted`,
//! optionally followed by `truncated` (the capture cap cut stdout). A header
//! that reads as none of these is `exit` with the first byte as the code.

use std::time::Duration;

use crate::executor_result::{interpret, ExecResult, ExecStatus, SUMMARY_MAX_CHARS};
use crate::process::{ChildExit, ChildOutcome};

pub fn check_executor_result(data: &[u8]) {
    let (header, stdout) = match data.iter().position(|&b| b == b'\n') {
        Some(end) => (&data[..end], &data[end + 1..]),
        None => (data, &[][..]),
    };
    let words = String::from_utf8_lossy(header);
    let words: Vec<&str> = words.split_whitespace().collect();
    let number = words.get(1).and_then(|w| w.parse::<i64>().ok());
    let exit = match (words.first().copied(), number) {
        (Some("exit"), Some(code)) => ChildExit::Exited(code as i32),
        (Some("signal"), Some(signal)) => ChildExit::Signaled(signal as i32),
        (Some("timeout"), _) => ChildExit::TimedOut,
        (Some("aborted"), _) => ChildExit::Aborted,
        _ => ChildExit::Exited(i32::from(header.first().copied().unwrap_or(0))),
    };
    let outcome = ChildOutcome {
        exit,
        stdout: stdout.to_vec(),
        // interpret must not look at stderr: give it something misleading.
        stderr: br#"{"status":"succeeded","summary":"from stderr"}"#.to_vec(),
        stdout_truncated: words.contains(&"truncated"),
        stderr_truncated: false,
        elapsed: Duration::from_millis(number.map_or(1500, |n| n.unsigned_abs() % (1 << 40))),
    };
    let result = interpret(&outcome);
    holds(&outcome, &result);

    // Blank lines after the output change nothing: the reply is the last
    // non-empty line, and the summary is trimmed.
    if !outcome.stdout_truncated {
        let mut padded = outcome.clone();
        padded.stdout.extend_from_slice(b"\n \t\r\n\n");
        assert_eq!(
            interpret(&padded),
            result,
            "blank lines appended to {stdout:?}"
        );
    }
}

fn holds(outcome: &ChildOutcome, result: &ExecResult) {
    let context = format!("{outcome:?} gave {result:?}");
    if let Some(summary) = &result.summary {
        assert!(!summary.is_empty(), "{context}: Some(\"\") summary");
        assert!(
            summary.chars().count() <= SUMMARY_MAX_CHARS,
            "{context}: summary too long"
        );
        assert_eq!(summary.trim(), summary, "{context}: summary not trimmed");
    }
    let awaiting = matches!(
        result.status,
        ExecStatus::AwaitingConfirmation | ExecStatus::AwaitingAuthorization
    );
    if awaiting {
        let blank = |v: &Option<String>| v.as_deref().is_none_or(|v| v.trim().is_empty());
        assert!(
            !blank(&result.wait_id),
            "{context}: awaiting without wait_id"
        );
        assert!(
            !blank(&result.wait_deadline),
            "{context}: awaiting without deadline"
        );
        assert_eq!(result.reason, None, "{context}");
    } else {
        assert_eq!(
            (&result.wait_id, &result.wait_deadline),
            (&None, &None),
            "{context}"
        );
    }
    match outcome.exit {
        ChildExit::Signaled(_) | ChildExit::TimedOut | ChildExit::Aborted => {
            assert_eq!(result.status, ExecStatus::Unknown, "{context}");
            assert!(
                result.reason.is_some(),
                "{context}: unknown without a reason"
            );
            // Whatever it printed, its summary is the tail of its output.
            let text = String::from_utf8_lossy(&outcome.stdout);
            let text = text.trim();
            let summary = result.summary.as_deref().unwrap_or("");
            assert!(
                text.ends_with(summary),
                "{context}: summary is not the tail"
            );
            if !outcome.stdout_truncated && text.chars().count() <= SUMMARY_MAX_CHARS {
                assert_eq!(summary, text, "{context}: short output kept whole");
            }
        }
        ChildExit::Exited(code) => {
            assert_ne!(result.status, ExecStatus::Unknown, "{context}");
            match result.reason.as_deref() {
                None => {}
                Some(reason) if reason.starts_with("malformed executor reply: ") => {
                    assert_eq!(result.status, ExecStatus::Failed, "{context}");
                }
                Some(reason) => {
                    assert_eq!(reason, format!("exit status {code}"), "{context}");
                    assert_ne!(code, 0, "{context}: exit 0 is not a failure");
                    assert_eq!(result.status, ExecStatus::Failed, "{context}");
                }
            }
        }
    }
}
