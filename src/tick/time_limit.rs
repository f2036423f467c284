//! The time a run may take (docs/CONTRACT.md §6): its task's own
//! `timeout_seconds`, capped by the tick's `--timeout`, and what passing
//! it makes of the run. Either way the process group gets TERM, then KILL
//! after the grace (`process::run_child`).
//!
//! Past its task's own limit a `read_only` run has failed: it was told to
//! change nothing, so it is retried like any failure. A `confirm_writes`
//! run is `unknown` (it may have written). Past the tick's limit every run
//! is `unknown`, as it was before tasks had a limit of their own.

use std::time::Duration;

use crate::executor_result::{ExecResult, ExecStatus};
use crate::payload::{Payload, Policy};

/// The limit one run is held to, and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLimit {
    pub duration: Duration,
    /// The task's own limit (not longer than the tick's), not the tick's.
    own: bool,
}

impl TimeLimit {
    /// The shorter of the task's own limit and the tick's (the task's when
    /// they are equal: its rule is the one the person confirmed).
    /// A profile's time limit (docs/CONTRACT.md §22) bounds the task's own:
    /// both were confirmed, so the shorter is the task's rule.
    pub fn of(tick: Duration, payload: &Payload) -> TimeLimit {
        let profile = payload
            .profile
            .as_ref()
            .and_then(|p| p.definition.timeout_seconds);
        let own = [payload.timeout_seconds, profile]
            .into_iter()
            .flatten()
            .min()
            .map(|seconds| Duration::from_secs(seconds.max(1) as u64));
        match own {
            Some(own) if own <= tick => TimeLimit {
                duration: own,
                own: true,
            },
            _ => TimeLimit {
                duration: tick,
                own: false,
            },
        }
    }

    /// What a run killed at this limit ended as, from what the executor's
    /// output says (`executor_result::interpret`: unknown).
    pub fn passed(&self, policy: Policy, result: ExecResult) -> ExecResult {
        let words = format!("timed out after {} s", self.duration.as_secs());
        let reason = Some(format!("{words}; process group killed"));
        if self.own && policy == Policy::ReadOnly {
            return ExecResult {
                status: ExecStatus::Failed,
                summary: Some(words),
                wait_id: None,
                wait_deadline: None,
                reason,
                notify: None,
                usage: crate::limits::Usage::default(),
            };
        }
        ExecResult { reason, ..result }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(timeout_seconds: Option<i64>) -> Payload {
        let text = r#"{"grace_seconds":90,"instruction":"x","max_retries":3,"name":null,"owner_keys":["unix:a"],"policy":"read_only","retry_backoff_seconds":60,"schedule":{"kind":"once","run_at":1800000000},"target":"unix:a","tenant_key":"default","timezone":"UTC"}"#;
        Payload {
            timeout_seconds,
            ..Payload::from_canonical(text).unwrap()
        }
    }

    fn killed() -> ExecResult {
        ExecResult {
            status: ExecStatus::Unknown,
            summary: Some("half done".into()),
            wait_id: None,
            wait_deadline: None,
            reason: Some("timed out after 2s".into()),
            notify: None,
            usage: crate::limits::Usage::default(),
        }
    }

    #[test]
    fn the_shorter_limit_holds_and_an_equal_one_is_the_tasks() {
        let tick = Duration::from_secs(1800);
        let of = |s| TimeLimit::of(tick, &payload(s));
        assert_eq!(of(None).duration, tick);
        assert!(!of(None).own);
        assert_eq!(of(Some(2)).duration, Duration::from_secs(2));
        assert!(of(Some(2)).own);
        assert!(of(Some(1800)).own);
        assert_eq!(of(Some(3600)).duration, tick);
        assert!(!of(Some(3600)).own);
    }

    #[test]
    fn past_its_own_limit_a_read_only_run_failed_and_a_writing_one_is_unknown() {
        let own = TimeLimit::of(Duration::from_secs(1800), &payload(Some(2)));
        let failed = own.passed(Policy::ReadOnly, killed());
        assert_eq!(failed.status, ExecStatus::Failed);
        assert_eq!(failed.summary.as_deref(), Some("timed out after 2 s"));
        let unknown = own.passed(Policy::ConfirmWrites, killed());
        assert_eq!(unknown.status, ExecStatus::Unknown);
        assert_eq!(unknown.summary.as_deref(), Some("half done"));
        assert_eq!(
            unknown.reason.as_deref(),
            Some("timed out after 2 s; process group killed")
        );
    }

    #[test]
    fn past_the_ticks_limit_every_run_is_unknown_as_before() {
        let ticks = TimeLimit::of(Duration::from_secs(1), &payload(Some(2)));
        for policy in [Policy::ReadOnly, Policy::ConfirmWrites] {
            let result = ticks.passed(policy, killed());
            assert_eq!(result.status, ExecStatus::Unknown);
            assert_eq!(
                result.reason.as_deref(),
                Some("timed out after 1 s; process group killed")
            );
        }
    }
}
