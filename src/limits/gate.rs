//! The gate's decision (docs/CONTRACT.md §6): what a gate's end means
//! for its run, pure. The tick runs the gate (tick/gate.rs) and hands its
//! end here.
//!
//! Exit 0 opens it: the executor runs. Exit 1 closes it: no executor, and
//! the run settles `skipped_gate` with the gate's first line of stdout as
//! its summary. Anything else fails open: the executor runs, and the run's
//! summary says "gate failed: …" first, so a broken gate never silently
//! stops the work the person confirmed.

use std::time::Duration;

use crate::process::{ChildExit, ChildOutcome, SpawnError};

/// The reason a closed gate's run records.
pub const CLOSED: &str = "the gate found nothing to do (exit 1)";
/// The most characters kept of the gate's first line.
pub const SAID_MAX_CHARS: usize = 200;

/// What the gate decided for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// No gate, or it exited 0: the executor runs.
    Open,
    /// It exited 1: the executor does not run. Its first line of stdout,
    /// when it wrote one (and it was not lost to the output cap).
    Closed(Option<String>),
    /// It failed (another exit, a signal, the time limit, it could not
    /// start): the executor runs anyway; these words say why, after
    /// "gate failed: ".
    FailedOpen(String),
    /// The lease was lost, or the tick told to stop, while it ran: its
    /// group is killed and nothing more runs for the claim.
    Stopped { interrupted: bool },
}

/// What the gate's end means (pure, for the tests).
pub fn decide(ran: Result<ChildOutcome, SpawnError>, limit: Duration, interrupted: bool) -> Gate {
    let out = match ran {
        Ok(out) => out,
        // It ran, but someone else reaped it: its answer is not known.
        Err(SpawnError::Lost(e)) => return Gate::FailedOpen(e),
        Err(e) => return Gate::FailedOpen(format!("cannot start: {e}")),
    };
    match out.exit {
        ChildExit::Exited(0) => Gate::Open,
        ChildExit::Exited(1) => Gate::Closed(first_line(&out)),
        ChildExit::Exited(code) => Gate::FailedOpen(format!("exit {code}")),
        ChildExit::Signaled(signal) => Gate::FailedOpen(format!("killed by signal {signal}")),
        ChildExit::TimedOut => Gate::FailedOpen(format!("timed out after {} s", limit.as_secs())),
        ChildExit::Aborted => Gate::Stopped { interrupted },
    }
}

/// The gate's first non-blank line of stdout, at most `SAID_MAX_CHARS`
/// characters; None when it wrote none or the capture kept only the end.
fn first_line(out: &ChildOutcome) -> Option<String> {
    if out.stdout_truncated {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    crate::text::first_line(&text).map(|line| line.chars().take(SAID_MAX_CHARS).collect())
}

/// The run's summary when its gate failed open: the gate's failure first,
/// then what the executor said.
pub fn failed_open_summary(words: &str, summary: Option<&str>) -> String {
    match summary.filter(|s| !s.is_empty()) {
        Some(said) => format!("gate failed: {words}; {said}"),
        None => format!("gate failed: {words}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(exit: ChildExit, stdout: &str) -> Result<ChildOutcome, SpawnError> {
        Ok(ChildOutcome {
            exit,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            elapsed: Duration::from_millis(5),
        })
    }

    const LIMIT: Duration = Duration::from_secs(30);

    #[test]
    fn exit_0_opens_exit_1_closes_with_its_first_line() {
        assert_eq!(
            decide(ended(ChildExit::Exited(0), "x"), LIMIT, false),
            Gate::Open
        );
        let closed = decide(
            ended(ChildExit::Exited(1), "\n  inbox empty \nmore"),
            LIMIT,
            false,
        );
        assert_eq!(closed, Gate::Closed(Some("inbox empty".into())));
        assert_eq!(
            decide(ended(ChildExit::Exited(1), ""), LIMIT, false),
            Gate::Closed(None)
        );
        let long = "é".repeat(SAID_MAX_CHARS + 5);
        let Gate::Closed(Some(said)) = decide(ended(ChildExit::Exited(1), &long), LIMIT, false)
        else {
            panic!("closed")
        };
        assert_eq!(said.chars().count(), SAID_MAX_CHARS);
    }

    #[test]
    fn anything_else_fails_open_and_says_why() {
        let failed = |ran, limit| match decide(ran, limit, false) {
            Gate::FailedOpen(words) => words,
            other => panic!("{other:?}"),
        };
        assert_eq!(failed(ended(ChildExit::Exited(3), ""), LIMIT), "exit 3");
        assert_eq!(
            failed(ended(ChildExit::Signaled(9), ""), LIMIT),
            "killed by signal 9"
        );
        assert_eq!(
            failed(ended(ChildExit::TimedOut, ""), Duration::from_secs(1)),
            "timed out after 1 s"
        );
        let missing = failed(Err(SpawnError::NotFound("/no/gate".into())), LIMIT);
        assert!(
            missing.starts_with("cannot start: `/no/gate` does not exist"),
            "{missing}"
        );
    }

    #[test]
    fn a_lost_lease_or_a_stop_signal_stops_the_claim() {
        assert_eq!(
            decide(ended(ChildExit::Aborted, ""), LIMIT, true),
            Gate::Stopped { interrupted: true }
        );
        assert_eq!(
            decide(ended(ChildExit::Aborted, ""), LIMIT, false),
            Gate::Stopped { interrupted: false }
        );
    }

    #[test]
    fn a_failed_gate_comes_first_in_the_summary() {
        assert_eq!(
            failed_open_summary("exit 3", Some("done")),
            "gate failed: exit 3; done"
        );
        assert_eq!(failed_open_summary("exit 3", None), "gate failed: exit 3");
        assert_eq!(
            failed_open_summary("exit 3", Some("")),
            "gate failed: exit 3"
        );
    }
}
