//! Settling a run: the guarded status change, the task's bookkeeping
//! (failure streak, retry, completion) and the run's notice, all in the
//! caller's one transaction.

use anyhow::Result;
use serde_json::json;

use super::notice_policy::{self, Facts};
use crate::audit::{AuditAction, Event};
use crate::model::{
    DeliveryState, Notice, NoticeKind, Run, RunState, RunStatus, Task, TaskState, Wait,
};
use crate::store::{NoticeStart, RunFinish, TaskAdvance, TaskMemory, TaskTransition, Tx};
use crate::text::{clip, first_line, wall_time};

/// Longest retry delay, whatever the backoff doubles to.
pub const MAX_RETRY_DELAY: i64 = 3600;

/// How a run ended, as the tick decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: RunStatus,
    pub summary: Option<String>,
    pub reason: Option<String>,
    /// What a parked run waits for (an `awaiting_*` status only).
    pub wait: Option<Wait>,
    /// The end of the executor's stderr, when it ran and wrote some.
    pub stderr: Option<String>,
    /// Whether a failure may be retried: not when a person decided it
    /// (denied, reconciled), since that would replay a judged run.
    pub retryable: bool,
    /// The executor's `"notify"` (docs/CONTRACT.md §16): heeded for a
    /// success only.
    pub notify: Option<bool>,
    /// What the executor's reply says the run spent: recorded with the
    /// outcome, in its transaction (tick/budget.rs).
    pub usage: crate::limits::Usage,
}

impl Outcome {
    pub fn settled(status: RunStatus, summary: Option<String>, reason: Option<String>) -> Outcome {
        Outcome {
            status,
            summary,
            reason,
            wait: None,
            stderr: None,
            retryable: true,
            notify: None,
            usage: crate::limits::Usage::default(),
        }
    }

    /// The state this outcome leaves `run` in, recorded at `now`.
    pub fn state_after(&self, run: &Run, now: i64) -> Result<RunState> {
        run.state
            .after(self.status, self.wait.clone(), now)
            .map_err(|why| anyhow::anyhow!("settling run {}: {why}", run.run_id))
    }

    pub fn final_decision(status: RunStatus, reason: String) -> Outcome {
        Outcome {
            retryable: false,
            ..Outcome::settled(status, None, Some(reason))
        }
    }
}

/// When the notice is to be sent right after the commit, its claim rides in
/// the same transaction (one durable commit fewer per run).
#[derive(Clone, Copy)]
pub struct NoticeClaim<'a> {
    pub token: &'a str,
    pub deadline: i64,
}

/// Delay before retry number `attempt` (1 = first retry).
pub fn retry_delay(backoff: i64, attempt: i64) -> i64 {
    let exponent = (attempt - 1).clamp(0, 30) as u32;
    backoff
        .saturating_mul(1i64 << exponent)
        .min(MAX_RETRY_DELAY)
}

/// Records `outcome` for `run`, which must still be `from` (under `token`
/// when leased). Returns the notice created, if any.
#[allow(clippy::too_many_arguments)]
pub fn settle(
    tx: &mut dyn Tx,
    run: &Run,
    from: RunStatus,
    token: Option<&str>,
    outcome: &Outcome,
    actor: &str,
    now: i64,
    claim: Option<NoticeClaim<'_>>,
) -> Result<Notice> {
    let recorded = record(tx, run, from, token, outcome, actor, now)?;
    let context = NoticeContext {
        executor_says: outcome.notify,
        paused: recorded.paused.as_deref(),
        ..NoticeContext::default()
    };
    let task = recorded.task.as_ref();
    add_notice_from(
        tx,
        &recorded.settled,
        task,
        now,
        claim,
        context,
        recorded.notice_start,
    )
}

/// What `record` did and read.
pub struct Recorded {
    /// The run's task, when it is still stored and readable.
    pub task: Option<Task>,
    /// The run as the outcome left it.
    pub settled: Run,
    /// The reason the task paused itself, when this failure ended its
    /// `--pause-after` streak.
    pub paused: Option<String>,
    /// What the run's next notice starts from (its number, whether one is
    /// being sent, the task's memory), read with the task: nothing
    /// `record` writes touches the run's notices or the task's memory.
    pub notice_start: NoticeStart,
}

/// The guarded change, the task's bookkeeping and the audit event, without a
/// notice (reconcile: the run's notice went out when it became unknown).
pub fn record(
    tx: &mut dyn Tx,
    run: &Run,
    from: RunStatus,
    token: Option<&str>,
    outcome: &Outcome,
    actor: &str,
    now: i64,
) -> Result<Recorded> {
    tx.finish_run(&RunFinish {
        run_id: &run.run_id,
        from,
        token,
        to: outcome.status,
        summary: outcome.summary.as_deref(),
        reason: outcome.reason.as_deref(),
        wait_kind: outcome.wait.as_ref().map(|w| w.kind.as_str()),
        wait_id: outcome.wait.as_ref().map(|w| w.id.as_str()),
        wait_deadline: outcome.wait.as_ref().map(|w| w.deadline),
        stderr: outcome.stderr.as_deref(),
        now,
    })?;
    let (notice_start, task) = tx.notice_start_and_task(&run.run_id, &run.task_id)?;
    let task = match task {
        Some(Ok(task)) => Some(task),
        _ => None,
    };
    let paused = match &task {
        Some(task) => bookkeep(tx, task, run, outcome, now)?,
        None => None,
    };
    super::budget::record_usage(tx, task.as_ref(), run, &outcome.usage, now)?;
    if let (Some(task), RunStatus::Succeeded) = (&task, outcome.status) {
        super::overdue::succeeded(tx, task, now)?;
    }
    tx.append_event(&Event::of_run(
        AuditAction::Finish,
        run,
        actor,
        now,
        json!({"from": from.as_str(), "status": outcome.status.as_str(),
               "reason": outcome.reason, "attempt": run.attempt}),
    ))?;
    let mut settled = run.clone();
    settled.state = outcome.state_after(run, now)?;
    settled.summary = outcome.summary.clone().or(settled.summary);
    settled.reason = outcome.reason.clone();
    settled.stderr_tail = outcome.stderr.clone().or(settled.stderr_tail);
    Ok(Recorded {
        task,
        settled,
        paused,
        notice_start,
    })
}

/// The task side of a settled run: failure streak, retry, completion, and
/// the pause that ends a `--pause-after` streak (whose reason it returns).
fn bookkeep(
    tx: &mut dyn Tx,
    task: &Task,
    run: &Run,
    outcome: &Outcome,
    now: i64,
) -> Result<Option<String>> {
    let status = outcome.status;
    // A run of a payload since replaced says nothing of the current one
    // (below), paused or not.
    let current = run.payload_hash == task.payload_hash;
    if task.state == TaskState::Paused {
        if !current {
            return Ok(None);
        }
        return count_while_paused(tx, task, status, now).map(|()| None);
    }
    if task.state != TaskState::Active {
        return Ok(None);
    }
    let mut failures = task.consecutive_failures;
    let mut next_retry_at = task.next_retry_at;
    let mut retry_run_id = task.retry_run_id.clone();
    // A run of a payload since replaced says nothing of the current one:
    // its outcome is neither the new payload's streak nor worth a retry
    // (which would run the new payload for the old one's failure).
    match status {
        _ if !current => {}
        RunStatus::Succeeded | RunStatus::DeliveryFailed => failures = 0,
        RunStatus::Failed => {
            failures += 1;
            if run.attempt <= task.payload.max_retries
                && outcome.retryable
                && next_retry_at.is_none()
            {
                next_retry_at =
                    Some(now + retry_delay(task.payload.retry_backoff_seconds, run.attempt));
                retry_run_id = Some(run.run_id.clone());
            }
        }
        _ => {}
    }
    let pause_after = task.payload.notice.pause_after;
    if current && status == RunStatus::Failed && pause_after.is_some_and(|n| failures >= n) {
        return pause_for_failures(tx, task, outcome, failures, now).map(Some);
    }
    let finished = task.next_run_at.is_none() && next_retry_at.is_none() && status.is_settled();
    let state = if finished {
        TaskState::Completed
    } else {
        TaskState::Active
    };
    if (failures, next_retry_at, &retry_run_id, state)
        == (
            task.consecutive_failures,
            task.next_retry_at,
            &task.retry_run_id,
            task.state,
        )
    {
        return Ok(None);
    }
    // Nothing later in the outcome's transaction waits on it: on
    // PostgreSQL it goes with the next statement (one round trip fewer).
    tx.advance_task_later(&TaskAdvance {
        task_id: &task.task_id,
        expected_state: task.state,
        expected_next_run_at: task.next_run_at,
        expected_next_retry_at: task.next_retry_at,
        state,
        next_run_at: task.next_run_at,
        next_retry_at,
        retry_run_id: retry_run_id.as_deref(),
        consecutive_failures: failures,
        now,
    })?;
    Ok(None)
}

/// A run that settles while its task is paused (a person paused it while
/// the run was in flight) still counts in the streak, so that a later
/// `--pause-after` reason counts every failure in a row; nothing else
/// changes: no retry, no pause (the task is paused already).
fn count_while_paused(tx: &mut dyn Tx, task: &Task, status: RunStatus, now: i64) -> Result<()> {
    let failures = match status {
        RunStatus::Succeeded | RunStatus::DeliveryFailed => 0,
        RunStatus::Failed => task.consecutive_failures + 1,
        _ => return Ok(()),
    };
    if failures == task.consecutive_failures {
        return Ok(());
    }
    tx.advance_task(&TaskAdvance {
        task_id: &task.task_id,
        expected_state: task.state,
        expected_next_run_at: task.next_run_at,
        expected_next_retry_at: task.next_retry_at,
        state: task.state,
        next_run_at: task.next_run_at,
        next_retry_at: task.next_retry_at,
        retry_run_id: task.retry_run_id.as_deref(),
        consecutive_failures: failures,
        now,
    })
}

/// The task pauses itself after `failures` consecutive failures, as its
/// `--pause-after` says: no retry, no next run until a person's `resume`.
/// The streak is spent by the pause (a resumed task starts counting again).
fn pause_for_failures(
    tx: &mut dyn Tx,
    task: &Task,
    outcome: &Outcome,
    failures: i64,
    now: i64,
) -> Result<String> {
    let last = details(outcome.reason.as_deref(), outcome.summary.as_deref())
        .unwrap_or_else(|| "failed".into());
    let reason = format!("paused after {failures} consecutive failures; last: {last}");
    tx.advance_task(&TaskAdvance {
        task_id: &task.task_id,
        expected_state: task.state,
        expected_next_run_at: task.next_run_at,
        expected_next_retry_at: task.next_retry_at,
        state: task.state,
        next_run_at: task.next_run_at,
        next_retry_at: None,
        retry_run_id: None,
        consecutive_failures: 0,
        now,
    })?;
    tx.transition_task(&TaskTransition {
        task_id: &task.task_id,
        from: TaskState::Active,
        revision: task.revision,
        to: TaskState::Paused,
        reason: Some(&reason),
        next_run_at: None,
        now,
    })?;
    tx.append_event(&Event::of_task(
        AuditAction::Pause,
        task,
        "agentcron:tick",
        now,
        json!({"reason": reason, "consecutive_failures": failures}),
    ))?;
    Ok(reason)
}

/// What the notice policy needs to know beyond the run and its task.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoticeContext<'a> {
    /// The executor's `"notify"` in its result.
    pub executor_says: Option<bool>,
    /// Set when this run's failure paused the task (`--pause-after`): the
    /// pause's reason.
    pub paused: Option<&'a str>,
    /// A `skipped_budget` run whose budget's notice was made already.
    pub already_told: bool,
    /// A coalesced `missed` run whose catch-up ran in the same claim.
    pub caught_up: bool,
    /// A `missed` run's place in its wake, and the gap notice's words when
    /// it carries it (tick/claim/gap.rs).
    pub in_gap: notice_policy::InGap,
    pub gap_message: Option<&'a str>,
}

/// Adds the notice of a run that left `running` (or never ran: missed,
/// skipped), as the task's notice policy decides (docs/CONTRACT.md §16).
pub fn add_notice(
    tx: &mut dyn Tx,
    run: &Run,
    task: Option<&Task>,
    now: i64,
    claim: Option<NoticeClaim<'_>>,
) -> Result<Notice> {
    add_decided_notice(tx, run, task, now, claim, NoticeContext::default())
}

/// `add_notice`, with what the executor said and whether the task paused.
pub fn add_decided_notice(
    tx: &mut dyn Tx,
    run: &Run,
    task: Option<&Task>,
    now: i64,
    claim: Option<NoticeClaim<'_>>,
    context: NoticeContext<'_>,
) -> Result<Notice> {
    // One read for the memory, the next number and whether one is being sent.
    let start = tx.notice_start(&run.run_id, &run.task_id)?;
    add_notice_from(tx, run, task, now, claim, context, start)
}

/// `add_decided_notice` from what `notice_start` read.
fn add_notice_from(
    tx: &mut dyn Tx,
    run: &Run,
    task: Option<&Task>,
    now: i64,
    claim: Option<NoticeClaim<'_>>,
    context: NoticeContext<'_>,
    start: NoticeStart,
) -> Result<Notice> {
    let target = task
        .map(|t| t.payload.target.clone())
        .unwrap_or_else(|| run.tenant_key.clone());
    let before = start
        .memory
        .unwrap_or_else(|| TaskMemory::new(&run.task_id));
    let policy = task.map(|t| t.payload.notice).unwrap_or_default();
    let last_skip_sent = last_skip_sent(tx, run, now - policy.realert())?;
    let decision = notice_policy::decide(
        &Facts {
            run,
            policy,
            executor_says: context.executor_says,
            paused_task: context.paused.is_some(),
            already_told: context.already_told,
            caught_up: context.caught_up,
            in_gap: context.in_gap,
            last_skip_sent,
            now,
        },
        before.clone(),
    );
    tx.save_task_memory(&decision.memory)?;
    let mut text = match context.paused {
        Some(reason) => format!("{}: {reason}", label_of(run, task)),
        None if decision.reminder => reminder(run, task, &before),
        None if decision.kind == NoticeKind::Gap => context.gap_message.unwrap_or_default().into(),
        None => message(run, task),
    };
    if decision.suppressed.is_none() && !decision.reminder {
        let since = before.suppressed_since.map(|at| when(at, task));
        let since = since.unwrap_or_default();
        if let Some(note) = notice_policy::held_back_note(&before, decision.kind, &since) {
            text.push_str(&format!(" ({note})"));
        }
    }
    // A run's notices go out one at a time: while an earlier one is still
    // being sent, this one waits as pending (a later tick sends it).
    let claim = match claim {
        Some(c) if decision.suppressed.is_none() && !start.sending => Some(c),
        _ => None,
    };
    let (state, token, deadline, attempts) = delivery_start(decision.suppressed, claim);
    let notice = Notice {
        delivery_id: uuid::Uuid::new_v4().to_string(),
        run_id: run.run_id.clone(),
        tenant_key: run.tenant_key.clone(),
        seq: start.seq,
        state,
        target,
        message: text,
        created_at: now,
        updated_at: now,
        claim_token: token,
        deadline,
        attempts,
        last_error: None,
        kind: Some(decision.kind),
        suppressed_since_last: decision.suppressed_since_last,
        suppressed_reason: decision.suppressed.map(str::to_string),
    };
    tx.insert_notice(&notice)?;
    Ok(notice)
}

/// Only a skip needs the ledger: the last skip notice of the run's task
/// sent since `since`, as the notice policy compares it.
fn last_skip_sent(tx: &mut dyn Tx, run: &Run, since: i64) -> Result<Option<(String, i64)>> {
    Ok(match run.status() {
        RunStatus::SkippedOverlap | RunStatus::SkippedGate => {
            tx.last_skip_sent(&run.task_id, since)?.map(|s| {
                let key =
                    notice_policy::dedup_key(&s.status, s.reason.as_deref(), s.summary.as_deref());
                (key, s.at)
            })
        }
        _ => None,
    })
}

/// How a new notice starts: held back, claimed for sending now (its
/// token, deadline, and the attempt counted), or pending.
fn delivery_start(
    suppressed: Option<&str>,
    claim: Option<NoticeClaim<'_>>,
) -> (DeliveryState, Option<String>, Option<i64>, i64) {
    match (suppressed, claim) {
        (Some(_), _) => (DeliveryState::Suppressed, None, None, 0),
        (None, Some(c)) => (
            DeliveryState::Sending,
            Some(c.token.to_string()),
            Some(c.deadline),
            1,
        ),
        (None, None) => (DeliveryState::Pending, None, None, 0),
    }
}

fn label_of(run: &Run, task: Option<&Task>) -> String {
    task.map(Task::label)
        .unwrap_or_else(|| crate::model::short_id(&run.task_id).into())
}

/// `at` on the task's wall clock; in UTC when the task cannot be read.
fn when(at: i64, task: Option<&Task>) -> String {
    match task {
        Some(t) => wall_time(at, t.zone_in_force),
        None => crate::schedule::format_utc(at),
    }
}

/// The first lines of a run's reason and summary, joined and clipped; None
/// when neither says anything. A summary the reason already says ("timed
/// out after 5 s" beside "timed out after 5 s; process group killed") is
/// said once.
fn details(reason: Option<&str>, summary: Option<&str>) -> Option<String> {
    let reason = reason.and_then(first_line);
    let summary = summary
        .and_then(first_line)
        .filter(|s| !reason.is_some_and(|r| r.contains(s)));
    let lines: Vec<&str> = [reason, summary].into_iter().flatten().collect();
    (!lines.is_empty()).then(|| clip(&lines.join(" — "), 200))
}

/// The occurrences a coalesced missed run stands for, first and last:
/// "2026-12-02 09:00 UTC … 2026-12-02 16:00 UTC".
fn span(run: &Run, task: &Task) -> String {
    let first = run.scheduled_for;
    let until = run.finished_at().unwrap_or(run.created_at);
    let limit = run.skipped_occurrences.max(1) as u64;
    let (_, last) = crate::schedule::count_between(
        &task.payload.schedule,
        task.zone_in_force,
        first - 1,
        until,
        limit,
    );
    match last.filter(|at| *at > first) {
        Some(last) => format!("{} … {}", when(first, Some(task)), when(last, Some(task))),
        None => when(first, Some(task)),
    }
}

/// A failure of the state already told, past its window: "job is still
/// failing: 13 more failed runs since the last notice (09:00 UTC); the
/// last (10:00 UTC): exit status 1 — <its summary>".
fn reminder(run: &Run, task: Option<&Task>, before: &TaskMemory) -> String {
    let runs = before.suppressed_failures + 1;
    let since = before
        .last_failure_sent_at
        .map(|at| format!(" since the last notice ({})", when(at, task)))
        .unwrap_or_default();
    let last = details(run.reason.as_deref(), run.summary.as_deref())
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    format!(
        "{} is still failing: {runs} more failed run{}{since}; the last ({}){last}",
        label_of(run, task),
        if runs == 1 { "" } else { "s" },
        when(run.scheduled_for, task)
    )
}

/// The one-line human text of a run's outcome.
pub fn message(run: &Run, task: Option<&Task>) -> String {
    let label = label_of(run, task);
    let when = match (run.status(), task) {
        (RunStatus::Missed, Some(task)) if run.skipped_occurrences > 1 => span(run, task),
        _ => when(run.scheduled_for, task),
    };
    let status = match run.status() {
        RunStatus::AwaitingConfirmation | RunStatus::AwaitingAuthorization => format!(
            "is waiting for approval (agentcron approve {} --wait-id {})",
            run.run_id,
            run.wait().map(|w| w.id.as_str()).unwrap_or("?")
        ),
        RunStatus::Unknown => "has an unknown outcome; reconcile it".to_string(),
        other => other.to_string(),
    };
    let mut text = format!("{label} ({when}) {status}");
    if let Some(details) = details(run.reason.as_deref(), run.summary.as_deref()) {
        text.push_str(": ");
        text.push_str(&details);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::retry_delay;

    #[test]
    fn backoff_doubles_and_caps_at_an_hour() {
        assert_eq!(retry_delay(60, 1), 60);
        assert_eq!(retry_delay(60, 2), 120);
        assert_eq!(retry_delay(60, 3), 240);
        assert_eq!(retry_delay(60, 7), 3600);
        assert_eq!(retry_delay(60, 1000), 3600);
        assert_eq!(retry_delay(i64::MAX / 2, 5), 3600);
    }
}
