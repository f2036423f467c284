//! The words between a tick and the supervisor of one child
//! (docs/CONTRACT.md §19.4), over the socket that is the supervisor's
//! standard input — the one channel that crosses sudo untouched, and that
//! only the tick holds the other end of.
//!
//! Tick → supervisor: one request line (JSON: the argv, the whole
//! environment, the kill grace, the length of the child's stdin), then
//! exactly that many bytes of stdin; later, `term` to stop the child, or
//! `kill` once the child ended and its leftovers no longer hold its output.
//! The end of the stream (the tick exited or was killed) means `term`.
//!
//! Supervisor → tick: `exit N` or `signal N` as soon as the child ends, or
//! `spawn notfound|notexec|other MESSAGE` when it never started; then `done`
//! once nothing it started is left.

use serde::{Deserialize, Serialize};

use super::{ChildExit, SpawnError};

/// The longest request line (argv and environment).
pub(super) const REQUEST_LINE_CAP: u64 = 1 << 20;
/// The most stdin a child is handed (the executor's document is capped far below).
pub(super) const STDIN_CAP: u64 = 256 << 20;
/// The tick's word for "stop the child": TERM, then KILL after the grace.
pub(super) const TERM: &[u8] = b"term\n";
/// The tick's word for "kill what is left now": the child ended and its
/// leftovers no longer hold its output.
pub(super) const KILL: &[u8] = b"kill\n";

/// What the supervisor runs, and how it stops it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Request {
    pub argv: Vec<String>,
    /// The child's whole environment (it inherits none of the supervisor's).
    pub env: Vec<(String, String)>,
    /// Between TERM and KILL; also how long leftovers of a child that ended
    /// by itself may run on before they are killed.
    pub grace_ms: u64,
    /// How many bytes of stdin follow the request line.
    pub stdin_len: u64,
    /// The folder the child starts in (`Launch::cwd`); absent: the
    /// supervisor's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One line the supervisor says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Report {
    Ended(ChildExit),
    NotStarted(SpawnKind, String),
    Done,
}

/// Why a child did not start, as a word that crosses the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpawnKind {
    NotFound,
    NotExecutable,
    Other,
}

impl Report {
    pub(super) fn line(&self) -> String {
        match self {
            Report::Ended(ChildExit::Exited(code)) => format!("exit {code}\n"),
            Report::Ended(ChildExit::Signaled(signal)) => format!("signal {signal}\n"),
            // The supervisor never reports a stop of its own: the tick knows
            // when it asked for one.
            Report::Ended(_) => "signal 9\n".to_string(),
            Report::NotStarted(kind, message) => {
                let word = match kind {
                    SpawnKind::NotFound => "notfound",
                    SpawnKind::NotExecutable => "notexec",
                    SpawnKind::Other => "other",
                };
                format!("spawn {word} {}\n", message.replace('\n', " "))
            }
            Report::Done => "done\n".to_string(),
        }
    }

    pub(super) fn parse(line: &str) -> Option<Report> {
        let (word, rest) = line
            .trim_end()
            .split_once(' ')
            .unwrap_or((line.trim_end(), ""));
        match word {
            "exit" => Some(Report::Ended(ChildExit::Exited(rest.parse().ok()?))),
            "signal" => Some(Report::Ended(ChildExit::Signaled(rest.parse().ok()?))),
            "done" => Some(Report::Done),
            "spawn" => {
                let (kind, message) = rest.split_once(' ').unwrap_or((rest, ""));
                let kind = match kind {
                    "notfound" => SpawnKind::NotFound,
                    "notexec" => SpawnKind::NotExecutable,
                    _ => SpawnKind::Other,
                };
                Some(Report::NotStarted(kind, message.to_string()))
            }
            _ => None,
        }
    }
}

/// Whether the supervisor said the child ended (or never started).
pub(super) fn ended(said: &[u8]) -> bool {
    String::from_utf8_lossy(said).lines().any(|line| {
        matches!(
            Report::parse(line),
            Some(Report::Ended(_) | Report::NotStarted(..))
        )
    })
}

/// How the child ended, from everything the supervisor said: its exit, or
/// why it never started; None when it said neither (it was killed first).
pub(super) fn outcome(said: &[u8], program: &str) -> Option<Result<ChildExit, SpawnError>> {
    let text = String::from_utf8_lossy(said);
    text.lines().find_map(|line| match Report::parse(line)? {
        Report::Ended(exit) => Some(Ok(exit)),
        Report::NotStarted(SpawnKind::NotFound, _) => {
            Some(Err(SpawnError::NotFound(program.to_string())))
        }
        Report::NotStarted(SpawnKind::NotExecutable, _) => {
            Some(Err(SpawnError::NotExecutable(program.to_string())))
        }
        Report::NotStarted(SpawnKind::Other, message) => Some(Err(SpawnError::Other(message))),
        Report::Done => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_reads_back_as_written() {
        for report in [
            Report::Ended(ChildExit::Exited(0)),
            Report::Ended(ChildExit::Exited(75)),
            Report::Ended(ChildExit::Signaled(15)),
            Report::NotStarted(SpawnKind::NotFound, "x".into()),
            Report::NotStarted(SpawnKind::Other, "could not start `x`: boom".into()),
            Report::Done,
        ] {
            assert_eq!(Report::parse(&report.line()), Some(report));
        }
        assert_eq!(Report::parse("garbage"), None);
    }

    #[test]
    fn the_outcome_is_the_first_end_said() {
        assert_eq!(
            outcome(b"exit 3\ndone\n", "x"),
            Some(Ok(ChildExit::Exited(3)))
        );
        assert_eq!(
            outcome(b"spawn notfound x\n", "x"),
            Some(Err(SpawnError::NotFound("x".into())))
        );
        assert_eq!(outcome(b"done\n", "x"), None);
        assert_eq!(outcome(b"", "x"), None);
    }
}
