//! Whether a settled run is worth telling a person (docs/CONTRACT.md §16):
//! the notice's kind, and whether the task's policy sends it or holds it
//! back (and why), from the run, the task's memory and the clock alone. The
//! caller applies the decision in the transaction that settles the run.

use crate::executor_result::ERROR_KIND_PREFIX;
use crate::model::{NoticeKind, NoticePolicy, NotifyMode, Run, RunStatus};
use crate::payload::hash_hex;
use crate::store::TaskMemory;
use crate::text::first_line;

/// Why a notice was held back; stored on its `suppressed` ledger row.
pub const DUPLICATE_FAILURE: &str = "duplicate failure";
/// A skip for the same reason (the same blocking run, still in the same
/// state) as one sent within the re-alert window: the same news.
pub const DUPLICATE_SKIP: &str = "duplicate skip";
pub const UNCHANGED_CONTENT: &str = "unchanged content";
pub const POLICY: &str = "policy";
/// A missed run a gap notice of its wake named (tick/claim/gap.rs).
pub const TOLD_IN_GAP: &str = "told in the gap notice";
/// The executor said `"notify":false` of a success.
pub const EXECUTOR: &str = "executor";
/// A budget whose notice was made by an earlier skip, with no success
/// since: the task is still in the state that notice told.
pub const BUDGET_TOLD: &str = "budget window told";
/// A task held for its profile, told by an earlier skip of the payload
/// its owner confirmed: told once until they confirm again.
pub const PROFILE_TOLD: &str = "profile change told";

/// What happens to one settled run's notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub kind: NoticeKind,
    /// None: send it. Some: hold it back, for this reason.
    pub suppressed: Option<&'static str>,
    /// What a sent notice says was held back before it.
    pub suppressed_since_last: i64,
    /// A sent failure of the state already told (past the re-alert
    /// window): a reminder, which says how many runs it covers.
    pub reminder: bool,
    /// The memory as it is after this run.
    pub memory: TaskMemory,
}

/// A `missed` run's place in its wake (tick/claim/gap.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InGap {
    /// Its own notice: the only task that missed, or not under `attention`.
    #[default]
    Alone,
    /// The first of several: its notice is the wake's `gap` notice.
    Carrier,
    /// A gap notice of its wake named it.
    Told,
}

/// What the decision reads of the run beyond its status.
pub struct Facts<'a> {
    pub run: &'a Run,
    pub policy: NoticePolicy,
    /// The executor's `"notify"` (heeded for a success only).
    pub executor_says: Option<bool>,
    /// This failure paused the task (`--pause-after`).
    pub paused_task: bool,
    /// The key and time of the task's last skip notice sent within the
    /// re-alert window (the caller reads it from the ledger).
    pub last_skip_sent: Option<(String, i64)>,
    /// A `skipped_budget` run whose budget's notice was made already,
    /// with no success since (tick/budget.rs `tell`); a `skipped_profile`
    /// run whose task was held for its profile already, under the payload
    /// its owner confirmed.
    pub already_told: bool,
    /// A coalesced `missed` run whose task ran its catch-up in the same
    /// claim: a designed outcome.
    pub caught_up: bool,
    /// A `missed` run's place in its wake (tick/claim/gap.rs): its notice
    /// names every task that missed (`Carrier`), or one did (`Told`).
    pub in_gap: InGap,
    pub now: i64,
}

/// Decides the notice of `facts.run`, a run that just settled (or parked).
pub fn decide(facts: &Facts<'_>, memory: TaskMemory) -> Decision {
    let run = facts.run;
    let failing = memory.last_failure_reason.is_some();
    let kind = match kind_of(run.status(), failing, facts.paused_task) {
        NoticeKind::Missed if facts.in_gap == InGap::Carrier => NoticeKind::Gap,
        kind => kind,
    };
    let mode = facts.policy.mode();
    let suppressed = match kind {
        // They need a person: nothing silences them.
        NoticeKind::Unknown | NoticeKind::Parked | NoticeKind::Paused => None,
        NoticeKind::Failure => match mode {
            NotifyMode::Never => Some(POLICY),
            NotifyMode::Always => None,
            NotifyMode::Attention | NotifyMode::Failures => duplicate(
                &memory,
                &failure_key(run),
                facts.policy.realert(),
                facts.now,
            ),
        },
        NoticeKind::Recovery => match (mode, facts.executor_says) {
            // A recovery is a success: the executor may silence or force it.
            (_, Some(false)) => Some(EXECUTOR),
            (NotifyMode::Never, None) => Some(POLICY),
            _ => None,
        },
        // A missed run whose catch-up ran is a designed outcome: the
        // task did its work.
        NoticeKind::Missed => match mode {
            NotifyMode::Always => None,
            NotifyMode::Attention if facts.caught_up => Some(POLICY),
            NotifyMode::Attention if facts.in_gap == InGap::Told => Some(TOLD_IN_GAP),
            NotifyMode::Attention => None,
            NotifyMode::Failures | NotifyMode::Never => Some(POLICY),
        },
        // A gate's skip is a designed outcome (the gate said there is
        // nothing to do). A task blocked by an unknown run is skipped at
        // every occurrence until someone reconciles: the first skip is
        // news, the next ones behind the same run within the window are not.
        NoticeKind::Skipped => match mode {
            NotifyMode::Always => None,
            NotifyMode::Attention if run.status() == RunStatus::SkippedGate => Some(POLICY),
            NotifyMode::Attention => same_skip(facts, &skip_key(run)),
            NotifyMode::Failures | NotifyMode::Never => Some(POLICY),
        },
        // A budget's window is told once (later skips of the window are
        // held back); an overdue task once per gap (the tick makes one
        // notice). `never` holds both back.
        NoticeKind::Budget => match held_back_by_mode(facts.policy) {
            None if facts.already_told => Some(BUDGET_TOLD),
            by_mode => by_mode,
        },
        // A held task is told once (docs/CONTRACT.md §22): its owner must
        // confirm again, and every later skip would say the same.
        NoticeKind::Profile => match held_back_by_mode(facts.policy) {
            None if facts.already_told => Some(PROFILE_TOLD),
            by_mode => by_mode,
        },
        NoticeKind::Overdue => held_back_by_mode(facts.policy),
        // Made only under `attention`, for the first missed run of a wake.
        NoticeKind::Gap => None,
        NoticeKind::Success => match facts.executor_says {
            Some(true) => None,
            Some(false) => Some(EXECUTOR),
            None => match mode {
                NotifyMode::Always => None,
                NotifyMode::Attention if is_new_content(run, &memory) => None,
                NotifyMode::Attention => Some(UNCHANGED_CONTENT),
                NotifyMode::Failures | NotifyMode::Never => Some(POLICY),
            },
        },
    };
    let suppressed_since_last = if suppressed.is_none() {
        memory.suppressed_count
    } else {
        0
    };
    // The same state told again, past its window: a reminder.
    let reminder = suppressed.is_none()
        && kind == NoticeKind::Failure
        && memory.last_failure_sent_at.is_some()
        && memory.last_failure_reason.as_deref() == Some(&failure_key(run));
    let memory = remember(memory, facts, kind, suppressed);
    Decision {
        kind,
        suppressed,
        suppressed_since_last,
        reminder,
        memory,
    }
}

/// A notice the tick makes once per window or gap (`budget`, `overdue`):
/// sent under every mode but `never`, which holds it back.
pub fn held_back_by_mode(policy: NoticePolicy) -> Option<&'static str> {
    match policy.mode() {
        NotifyMode::Never => Some(POLICY),
        _ => None,
    }
}

fn kind_of(status: RunStatus, failing: bool, paused_task: bool) -> NoticeKind {
    match status {
        _ if paused_task => NoticeKind::Paused,
        RunStatus::Failed | RunStatus::DeliveryFailed => NoticeKind::Failure,
        RunStatus::Succeeded if failing => NoticeKind::Recovery,
        RunStatus::Succeeded => NoticeKind::Success,
        RunStatus::Missed => NoticeKind::Missed,
        RunStatus::SkippedOverlap | RunStatus::SkippedGate => NoticeKind::Skipped,
        RunStatus::SkippedBudget => NoticeKind::Budget,
        RunStatus::SkippedProfile => NoticeKind::Profile,
        RunStatus::AwaitingConfirmation | RunStatus::AwaitingAuthorization => NoticeKind::Parked,
        // Running never settles a notice; treat it as the uncertain case.
        RunStatus::Unknown | RunStatus::Running => NoticeKind::Unknown,
    }
}

/// A failure's key (docs/CONTRACT.md §16, "States, not text"): the task
/// is failing, and how — the executor's `error_kind`, or the class of how
/// it ended (exit status, signal, timeout, a malformed reply) — never the
/// summary, whose words (a token count, a time) vary from run to run.
pub fn failure_key(run: &Run) -> String {
    format!(
        "failing: {}: {}",
        run.status().as_str(),
        failure_class(run.reason.as_deref())
    )
}

/// The class of a failure from its reason: the executor's error kind as
/// given; "exit status 1", "killed by signal 9" as they are; "timeout"
/// for any time limit; otherwise the reason's words before their first
/// `:` or `;` (what follows is the detail of one run). A failure the
/// executor reported without a kind is "reported".
pub fn failure_class(reason: Option<&str>) -> String {
    let Some(line) = reason.and_then(first_line) else {
        return "reported".into();
    };
    if let Some(kind) = line.strip_prefix(ERROR_KIND_PREFIX) {
        return format!("error_kind {}", kind.trim());
    }
    if line.starts_with("timed out") {
        return "timeout".into();
    }
    line.split([':', ';'])
        .next()
        .unwrap_or(line)
        .trim()
        .to_string()
}

/// A skip's key: its status, reason (which names the blocking run and
/// its state) and first line.
pub fn skip_key(run: &Run) -> String {
    dedup_key(
        run.status().as_str(),
        run.reason.as_deref(),
        run.summary.as_deref(),
    )
}

/// `skip_key` from a stored run's words (the ledger's last skip).
pub fn dedup_key(status: &str, reason: Option<&str>, summary: Option<&str>) -> String {
    format!(
        "{status}: {} | {}",
        reason.and_then(first_line).unwrap_or(""),
        summary.and_then(first_line).unwrap_or("")
    )
}

/// A skip whose key is the last one sent, less than a window ago.
fn same_skip(facts: &Facts<'_>, key: &str) -> Option<&'static str> {
    let (sent_key, at) = facts.last_skip_sent.as_ref()?;
    let age = facts.now - at;
    (sent_key == key && (0..facts.policy.realert()).contains(&age)).then_some(DUPLICATE_SKIP)
}

/// Suppressed as a duplicate when, within the streak, the last failure
/// sent had the same key less than a window ago. A failure before the last
/// sent one is new: the clock went back, and the window measured from a
/// time that was wrong would hold notices back for as long as it was wrong.
fn duplicate(memory: &TaskMemory, key: &str, realert: i64, now: i64) -> Option<&'static str> {
    let same = memory.last_failure_reason.as_deref() == Some(key);
    let recent = memory
        .last_failure_sent_at
        .is_some_and(|sent| (0..realert).contains(&(now - sent)));
    (same && recent).then_some(DUPLICATE_FAILURE)
}

fn fingerprint(summary: &str) -> String {
    hash_hex(summary.as_bytes())
}

/// A success with a summary other than the last one sent; an empty
/// summary is never new content.
fn is_new_content(run: &Run, memory: &TaskMemory) -> bool {
    match run.summary.as_deref().map(str::trim) {
        None | Some("") => false,
        Some(summary) => memory.last_success_fingerprint.as_deref() != Some(&fingerprint(summary)),
    }
}

fn remember(
    mut m: TaskMemory,
    facts: &Facts<'_>,
    kind: NoticeKind,
    suppressed: Option<&str>,
) -> TaskMemory {
    let run = facts.run;
    match suppressed {
        Some(_) => {
            m.suppressed_count += 1;
            if kind == NoticeKind::Failure {
                m.suppressed_failures += 1;
            }
            m.suppressed_since = m.suppressed_since.or(Some(facts.now));
        }
        None => {
            m.suppressed_count = 0;
            m.suppressed_failures = 0;
            m.suppressed_since = None;
        }
    }
    match kind {
        NoticeKind::Failure | NoticeKind::Paused => {
            let key = failure_key(run);
            // The window starts at the last failure *sent*; a held-back
            // one does not extend it.
            if suppressed.is_none() || m.last_failure_reason.as_deref() != Some(&key) {
                if suppressed.is_none() {
                    m.last_failure_sent_at = Some(facts.now);
                }
                m.last_failure_reason = Some(key);
            }
        }
        NoticeKind::Success | NoticeKind::Recovery => {
            m.last_failure_reason = None;
            m.last_failure_sent_at = None;
            if suppressed.is_none() {
                if let Some(summary) = run.summary.as_deref().map(str::trim) {
                    if !summary.is_empty() {
                        m.last_success_fingerprint = Some(fingerprint(summary));
                    }
                }
            }
        }
        _ => {}
    }
    if !run.status().is_awaiting() && run.status() != RunStatus::Running {
        m.last_settled_run_id = Some(run.run_id.clone());
    }
    if run.status() == RunStatus::Succeeded {
        m.last_success_at = Some(run.finished_at().unwrap_or(facts.now));
    }
    m
}

/// The memory after a person settled an unknown run (`reconcile`): no
/// notice goes out (its notice went out when it became unknown), but a
/// confirmed success is the task's last success and ends the failure
/// streak, as a success the executor reported would.
pub fn reconciled(mut m: TaskMemory, run: &Run, now: i64) -> TaskMemory {
    m.last_settled_run_id = Some(run.run_id.clone());
    if run.status() == RunStatus::Succeeded {
        m.last_failure_reason = None;
        m.last_failure_sent_at = None;
        m.last_success_at = Some(run.finished_at().unwrap_or(now));
    }
    m
}

/// What a sent failure (or pause) adds to its message about the failures
/// held back before it: counts belong on a notice of the same state, so
/// any other kind (a recovery, a budget, a success) says nothing of them,
/// and a reminder says its count in its own words.
pub fn held_back_note(
    memory_before: &TaskMemory,
    kind: NoticeKind,
    since_text: &str,
) -> Option<String> {
    let n = memory_before.suppressed_failures;
    if n == 0 || !matches!(kind, NoticeKind::Failure | NoticeKind::Paused) {
        return None;
    }
    let (what, verb) = if n == 1 {
        ("similar failure", "was")
    } else {
        ("similar failures", "were")
    };
    Some(format!("{n} {what} since {since_text} {verb} not sent"))
}

/// The state a notice tells (the notifier's `state`, docs/PROTOCOLS.md):
/// what the task is in after the run, not what the run said.
pub fn state_of(kind: NoticeKind) -> &'static str {
    match kind {
        NoticeKind::Failure => "failing",
        NoticeKind::Recovery | NoticeKind::Success => "healthy",
        NoticeKind::Unknown => "unknown",
        NoticeKind::Missed | NoticeKind::Gap => "missed",
        NoticeKind::Skipped => "skipped",
        NoticeKind::Parked => "waiting",
        NoticeKind::Paused => "paused",
        NoticeKind::Budget => "budget_spent",
        NoticeKind::Profile => "held",
        NoticeKind::Overdue => "overdue",
    }
}

#[cfg(test)]
mod tests;
