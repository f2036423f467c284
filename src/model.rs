//! The domain values every layer shares: tasks, runs, drafts, notices and
//! their states, with the exact spellings stored and printed.
//!
//! Parsing a state from text is strict: an unknown spelling is an error the
//! store turns into a quarantine, never a default.

use crate::payload::Payload;
pub use crate::payload::{NoticePolicy, NotifyMode, Policy};
use crate::schedule::Tz;

use crate::vocabulary::string_enum;

mod run_state;
pub use run_state::{
    Approval, Lease, Parking, RunEnd, RunState, Start, StateColumns, Wait, WaitKind,
};

string_enum!(
    /// Lifecycle of a task (docs/CONTRACT.md §4).
    TaskState {
        Active = "active",
        Paused = "paused",
        Completed = "completed",
        Deleted = "deleted",
        Error = "error",
    }
);

string_enum!(
    /// Status of one run (docs/CONTRACT.md §5).
    RunStatus {
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        DeliveryFailed = "delivery_failed",
        AwaitingConfirmation = "awaiting_confirmation",
        AwaitingAuthorization = "awaiting_authorization",
        Unknown = "unknown",
        Missed = "missed",
        SkippedOverlap = "skipped_overlap",
        /// Not executed: a budget's window was spent (docs/CONTRACT.md §6).
        SkippedBudget = "skipped_budget",
        /// Not executed: the task's gate said there was nothing to do.
        SkippedGate = "skipped_gate",
        /// Not executed: the task's profile changed or is gone since its
        /// owner confirmed it (docs/CONTRACT.md §22).
        SkippedProfile = "skipped_profile",
    }
);

string_enum!(
    /// What made a run due (docs/CONTRACT.md §13): its schedule, a retry of a
    /// failed run, or a person's `trigger`.
    RunTrigger {
        Schedule = "schedule",
        Retry = "retry",
        Manual = "manual",
    }
);

string_enum!(
    /// State of one notice in the delivery ledger (docs/CONTRACT.md §7).
    /// `undeliverable`: never sent, the notifier kept answering "try later"
    /// (exit 75) past `--delivery-give-up`.
    DeliveryState {
        Pending = "pending",
        Sending = "sending",
        Delivered = "delivered",
        Unknown = "unknown",
        Undeliverable = "undeliverable",
        Suppressed = "suppressed",
    }
);

string_enum!(
    /// What a notice is about, as the notifier receives it (§16).
    NoticeKind {
        Failure = "failure",
        Recovery = "recovery",
        Success = "success",
        Unknown = "unknown",
        Missed = "missed",
        Skipped = "skipped",
        Parked = "parked",
        Paused = "paused",
        /// A budget's window was spent: once per window and key.
        Budget = "budget",
        /// No success within the task's `expect_success`: once per gap.
        Overdue = "overdue",
        /// Several tasks missed occurrences in one wake (tick/claim/gap.rs).
        Gap = "gap",
        /// The task's profile changed or is gone: once until it is
        /// confirmed again (docs/CONTRACT.md §22).
        Profile = "profile",
    }
);

impl RunStatus {
    /// Whether a run in this status stops the task's next occurrence from
    /// starting (it becomes `skipped_overlap`).
    pub fn blocks_next(self) -> bool {
        matches!(
            self,
            RunStatus::Running
                | RunStatus::AwaitingConfirmation
                | RunStatus::AwaitingAuthorization
                | RunStatus::Unknown
        )
    }

    /// Settled runs never change again, except `unknown` through reconcile.
    pub fn is_settled(self) -> bool {
        !self.blocks_next()
    }

    /// Whether a run in this status has finished: what
    /// `agentcron_runs_finished_total` counts (each run once).
    pub fn is_finished(self) -> bool {
        !matches!(self, RunStatus::Running) && !self.is_awaiting()
    }

    pub fn is_awaiting(self) -> bool {
        matches!(
            self,
            RunStatus::AwaitingConfirmation | RunStatus::AwaitingAuthorization
        )
    }
}

/// One confirmed schedule with its instruction: the payload the person
/// confirmed, whole (every confirmed field has its one home there), and
/// what the scheduler keeps beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub task_id: String,
    /// What the person confirmed; `payload_hash` is its SHA-256.
    pub payload: Payload,
    /// The zone in force: the payload's fixed zone, or for a task that
    /// follows its owner (docs/CONTRACT.md §18) the zone its last re-time set.
    pub zone_in_force: Tz,
    pub payload_hash: String,
    pub state: TaskState,
    /// Why the task is paused or quarantined, as given.
    pub state_reason: Option<String>,
    pub state_changed_at: i64,
    pub next_run_at: Option<i64>,
    pub revision: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub consecutive_failures: i64,
    pub next_retry_at: Option<i64>,
    /// The failed run the pending retry repeats.
    pub retry_run_id: Option<String>,
}

impl Task {
    pub fn is_owned_by(&self, keys: &[String]) -> bool {
        self.payload.owner_keys.iter().any(|k| keys.contains(k))
    }

    /// The identity key whose zone the task follows, when it follows one:
    /// its first owner key (docs/CONTRACT.md §18).
    pub fn follow_key(&self) -> Option<&str> {
        self.payload.follow_key()
    }

    /// The name when there is one, else the short id: how people refer to it.
    pub fn label(&self) -> String {
        match &self.payload.name {
            Some(name) => name.clone(),
            None => short_id(&self.task_id).to_string(),
        }
    }
}

/// One run of a task: an occurrence (or a retry of one) and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub run_id: String,
    pub task_id: String,
    pub tenant_key: String,
    pub scheduled_for: i64,
    pub scheduled_local: String,
    pub attempt: i64,
    /// When this run was due: the occurrence, or the retry time.
    pub due_at: i64,
    /// Where the run is, with what that state has (its status is read
    /// from it).
    pub state: RunState,
    pub payload_hash: String,
    pub created_at: i64,
    pub summary: Option<String>,
    /// Why the run ended as it did, in the tool's words (lease expired, denied…).
    pub reason: Option<String>,
    pub skipped_occurrences: i64,
    /// The end of the executor's stderr (`STDERR_MAX_CHARS`), raw.
    pub stderr_tail: Option<String>,
    pub delivery_status: Option<DeliveryState>,
    pub trigger: RunTrigger,
    /// A `catch_up: latest` task's latest occurrence, run although its
    /// grace had passed with no tick to decide it (docs/CONTRACT.md §6).
    pub catch_up: bool,
    /// What its executor reported spending, as recorded when it settled
    /// (docs/CONTRACT.md §6, Budgets); none when it reported nothing.
    pub usage: Option<serde_json::Value>,
}

impl Run {
    /// A new run row of `task` with the fields every decision shares
    /// (a fresh id, the task's payload hash, its occurrence on the task's
    /// wall clock); `fill` sets the rest.
    pub fn new(
        task: &Task,
        scheduled_for: i64,
        due_at: i64,
        attempt: i64,
        state: RunState,
        now: i64,
        fill: impl FnOnce(&mut Run),
    ) -> Run {
        let mut run = Run {
            run_id: uuid::Uuid::new_v4().to_string(),
            task_id: task.task_id.clone(),
            tenant_key: task.payload.tenant_key.clone(),
            scheduled_for,
            scheduled_local: crate::schedule::format_local(scheduled_for, task.zone_in_force),
            attempt,
            due_at,
            state,
            payload_hash: task.payload_hash.clone(),
            created_at: now,
            summary: None,
            reason: None,
            skipped_occurrences: 0,
            stderr_tail: None,
            catch_up: false,
            usage: None,
            delivery_status: None,
            trigger: if attempt > 1 {
                RunTrigger::Retry
            } else {
                RunTrigger::Schedule
            },
        };
        fill(&mut run);
        run
    }

    pub fn status(&self) -> RunStatus {
        self.state.status()
    }

    pub fn started_at(&self) -> Option<i64> {
        self.state.start().map(|s| s.at)
    }

    pub fn finished_at(&self) -> Option<i64> {
        self.state.finished_at()
    }

    pub fn queued_seconds(&self) -> Option<i64> {
        self.state.start().and_then(|s| s.queued_seconds)
    }

    pub fn wait(&self) -> Option<&Wait> {
        self.state.wait()
    }

    pub fn approval(&self) -> Option<&Approval> {
        self.state.approval()
    }

    pub fn lease(&self) -> Option<&Lease> {
        self.state.lease()
    }

    /// The run a skipped overlap names as still blocking its task.
    pub fn blocked_by(&self) -> Option<&str> {
        match &self.state {
            RunState::Ended {
                end: RunEnd::SkippedOverlap { blocked_by },
                ..
            } => Some(blocked_by),
            _ => None,
        }
    }
}

/// A drafted schedule waiting for its person to confirm the hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub draft_id: String,
    pub tenant_key: String,
    pub payload: String,
    pub payload_hash: String,
    pub created_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// Set when the draft replaces a task's payload (`draft --replace`).
    pub replaces: Option<Replaces>,
    /// The one-time confirmation code of an agent's draft (docs/CONTRACT.md
    /// §17): only its salted hash is kept.
    pub code: Option<CodeLock>,
}

/// What is kept of an agent draft's one-time code: a salted SHA-256 and
/// how many wrong codes were given so far (the third voids the draft).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLock {
    /// Lower-case hex SHA-256 of `salt:draft_id:code`.
    pub hash: String,
    /// 32 random hex digits.
    pub salt: String,
    pub wrong_attempts: i64,
}

/// The task a replacing draft was made from, at the revision it was read:
/// confirming it is refused once the task has moved on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaces {
    pub task_id: String,
    pub revision: i64,
}

/// One notice of a run's outcome in the delivery ledger (docs/CONTRACT.md §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub delivery_id: String,
    pub run_id: String,
    pub tenant_key: String,
    pub seq: i64,
    pub state: DeliveryState,
    pub target: String,
    pub message: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub claim_token: Option<String>,
    pub deadline: Option<i64>,
    pub attempts: i64,
    pub last_error: Option<String>,
    /// None for notices written before the notice policy (§16).
    pub kind: Option<NoticeKind>,
    /// How many notices of the task were suppressed since the last one sent
    /// (set on a notice that is sent).
    pub suppressed_since_last: i64,
    /// Why a `suppressed` notice was not sent.
    pub suppressed_reason: Option<String>,
}

/// The first eight characters of an id: enough to address it in a shell.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Keys are 1–256 characters with no control characters (docs/CONTRACT.md §1).
pub fn check_key(flag: &str, key: &str) -> anyhow::Result<()> {
    let count = key.chars().count();
    if count == 0 || count > 256 {
        return Err(crate::error::CmdError::usage(format!(
            "{flag} must be 1 to 256 characters (got {count})"
        ))
        .into());
    }
    if key
        .chars()
        .any(|c| c.is_control() || crate::text::is_bidi_control(c))
    {
        return Err(crate::error::CmdError::usage(format!(
            "{flag} must not contain control or bidirectional-override characters"
        ))
        .into());
    }
    Ok(())
}

// Beside `Task` rather than in payload.rs, so that the payload (a lower
// floor: what a person confirms) names nothing of the task it becomes.
impl Payload {
    /// The task confirming this payload creates: active, revision 1, its
    /// first occurrence at `next_run_at`.
    /// `zone` is the zone in force: the payload's own, or for a following
    /// payload its owner's current one (`ops::zones::zone_in_force`).
    pub fn new_task(
        &self,
        task_id: String,
        payload_hash: String,
        next_run_at: i64,
        zone: Tz,
        now: i64,
    ) -> Task {
        Task {
            task_id,
            payload: self.clone(),
            zone_in_force: self.zone.in_force(Some(zone)),
            payload_hash,
            state: TaskState::Active,
            state_reason: None,
            state_changed_at: now,
            next_run_at: Some(next_run_at),
            revision: 1,
            created_at: now,
            updated_at: now,
            consecutive_failures: 0,
            next_retry_at: None,
            retry_run_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(*s));
        }
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(*s));
        }
        assert_eq!(Policy::parse("rw"), None);
    }

    #[test]
    fn blocking_statuses_match_the_spec_table() {
        let blocking: Vec<_> = RunStatus::ALL.iter().filter(|s| s.blocks_next()).collect();
        assert_eq!(
            blocking,
            [
                &RunStatus::Running,
                &RunStatus::AwaitingConfirmation,
                &RunStatus::AwaitingAuthorization,
                &RunStatus::Unknown
            ]
        );
    }
}
