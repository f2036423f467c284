//! Step 4 of a tick: deciding a due occurrence, retry or manual trigger.
//! `plan` is pure (the dry run prints it); `claim_due` applies it in the
//! claim's IMMEDIATE transaction together with the advance of the task's
//! clock, so each occurrence is decided exactly once however many ticks
//! race for it. Which task comes next is tick/queue.rs's question.
//!
//! Beside it: `occurrences` (what a schedule's due occurrences come to:
//! on time, coalesced missed, superseded while queued, caught up; pure,
//! part of `plan`) and `continuation` (an approved parked run claimed
//! again, and the `previous` every executor is told).

mod budgets;
mod continuation;
mod gap;
mod occurrences;
mod profile;

use crate::audit::{AuditAction, Event};
use crate::text::human_duration;
use anyhow::Result;
use serde_json::json;

use super::budget;
use super::notice_policy::InGap;
use crate::limits::budget::BudgetState;
use crate::model::{NotifyMode, Run, RunEnd, RunState, RunStatus, RunTrigger, Task, TaskState};
use crate::schedule;
use crate::store::{CorruptRow, DueRow, DueTask, QueueMark, TaskAdvance, Trigger, Tx};

pub use continuation::{approved_continuation, continue_approved, previous_of, previous_run};
use occurrences::{decide_occurrences, decided};

/// The most occurrences one coalesced `missed` run counts exactly; beyond
/// it the count is a lower bound (a minutely cron down for two years).
const COUNT_LIMIT: u64 = 1_000_000;

/// What claiming one due task does.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Runs to record, in order: a coalesced missed run, then at most one
    /// decided occurrence (running, missed or skipped_overlap).
    pub runs: Vec<Run>,
    pub next_run_at: Option<i64>,
    pub next_retry_at: Option<i64>,
    pub retry_run_id: Option<String>,
    pub state: TaskState,
    /// A pending retry dropped because a newer occurrence is being decided.
    pub superseded_retry: Option<String>,
    /// The manual trigger (its `trigger_at`) this plan decides.
    pub consumed_trigger: Option<i64>,
    /// The task's budgets in their current windows, as this claim leaves
    /// them (tick/budget.rs); empty for a task without budgets.
    pub budgets: Vec<BudgetState>,
    /// The task's profile, when it has `--max-concurrent` runs running:
    /// the plan is not recorded, and the task waits as capacity.
    pub waits_for_profile: Option<String>,
}

/// A pending manual trigger and the `scheduled_for` its run takes: the
/// trigger's second, unless a run or an occurrence still to be decided
/// holds it, then the nearest free second before it (runs are unique by
/// task, scheduled_for and attempt; occurrences are at least 60 s apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerSlot {
    pub trigger: Trigger,
    pub scheduled_for: i64,
}

impl Plan {
    pub fn running(&self) -> Option<&Run> {
        self.runs.iter().find(|r| r.status() == RunStatus::Running)
    }

    /// The run about to start, for a limit that may hold it back.
    fn running_mut(&mut self) -> Option<&mut Run> {
        self.runs
            .iter_mut()
            .find(|r| r.status() == RunStatus::Running)
    }
}

/// Settings of the claim that do not come from the task.
#[derive(Debug, Clone, Copy)]
pub struct ClaimSettings {
    pub now: i64,
    pub lease_seconds: i64,
    /// The process that will run what is claimed (`process::runner_identity`),
    /// recorded on each running run.
    pub runner: Option<&'static str>,
}

/// Decides what the due task gets. `blocking` is a run of the task that
/// blocks the next one; `failed` is the run a due retry repeats; `queued`
/// is what a tick saw due within grace but could not start (docs/CONTRACT.md §6,
/// "Capacity is not lateness").
pub fn plan(
    task: &Task,
    blocking: Option<&Run>,
    failed: Option<&Run>,
    queued: Option<&QueueMark>,
    trigger: Option<&TriggerSlot>,
    s: ClaimSettings,
) -> Plan {
    let now = s.now;
    let mut plan = Plan {
        runs: Vec::new(),
        next_run_at: task.next_run_at,
        next_retry_at: task.next_retry_at,
        retry_run_id: task.retry_run_id.clone(),
        state: TaskState::Active,
        superseded_retry: None,
        consumed_trigger: None,
        budgets: Vec::new(),
        waits_for_profile: None,
    };
    let occurrence_due = task.next_run_at.filter(|at| *at <= now);
    if let Some(first) = occurrence_due {
        // Every occurrence from `first` to now: earlier ones coalesce into one
        // missed run; the latest runs if a tick saw it within grace.
        let (count, last) = schedule::count_between(
            &task.payload.schedule,
            task.zone_in_force,
            first - 1,
            now,
            COUNT_LIMIT,
        );
        let count = count.max(1) as i64;
        let latest = last.unwrap_or(first).max(first);
        let queued = queued.filter(|m| (first..=latest).contains(&m.due_at));
        plan.runs = decide_occurrences(task, first, latest, count, queued, blocking, s);
        plan.next_run_at =
            schedule::next_after(&task.payload.schedule, task.zone_in_force, now).map(|o| o.at);
        if task.next_retry_at.is_some() {
            plan.superseded_retry = task.retry_run_id.clone();
            plan.next_retry_at = None;
            plan.retry_run_id = None;
        }
    } else if let (Some(retry_at), Some(failed)) = (
        task.next_retry_at
            .filter(|at| *at <= now || trigger.is_none()),
        failed,
    ) {
        let seen_in_time = queued.is_some_and(|m| m.due_at == retry_at);
        plan.runs
            .push(retry(task, failed, retry_at, seen_in_time, blocking, s));
        plan.next_retry_at = None;
        plan.retry_run_id = None;
    } else if let Some(slot) = trigger.filter(|t| t.trigger.at <= now) {
        // An extra run a person asked for: decided like an occurrence at
        // the trigger's time, its grace counted from it; the schedule's own
        // clock does not move.
        let seen_in_time = queued.is_some_and(|m| m.due_at == slot.trigger.at);
        plan.runs
            .push(triggered(task, slot, blocking, seen_in_time, s));
        plan.consumed_trigger = Some(slot.trigger.at);
    } else if trigger.is_none() || task.next_retry_at.is_some_and(|at| at <= now) {
        // A retry whose failed run is gone (pruned): drop the retry.
        plan.next_retry_at = None;
        plan.retry_run_id = None;
    }
    let nothing_left = plan.next_run_at.is_none() && plan.next_retry_at.is_none();
    if nothing_left && plan.running().is_none() && blocking.is_none() {
        plan.state = TaskState::Completed;
    }
    plan
}

/// The run of a due retry of `failed`: missed when it is past grace and
/// no tick saw it due in time.
fn retry(
    task: &Task,
    failed: &Run,
    retry_at: i64,
    seen_in_time: bool,
    blocking: Option<&Run>,
    s: ClaimSettings,
) -> Run {
    let now = s.now;
    let attempt = failed.attempt + 1;
    let late_by = now - retry_at;
    if late_by > task.payload.grace_seconds && !seen_in_time {
        Run::new(
            task,
            failed.scheduled_for,
            retry_at,
            attempt,
            RunState::not_run(RunEnd::Missed, now),
            now,
            |r| {
                r.reason = Some(format!(
                    "retry late by {} > grace {}",
                    human_duration(late_by),
                    human_duration(task.payload.grace_seconds)
                ));
                r.skipped_occurrences = 1;
            },
        )
    } else {
        decided(task, failed.scheduled_for, retry_at, attempt, blocking, s)
    }
}

/// The run of a manual trigger.
fn triggered(
    task: &Task,
    slot: &TriggerSlot,
    blocking: Option<&Run>,
    seen_in_time: bool,
    s: ClaimSettings,
) -> Run {
    let at = slot.trigger.at;
    let late_by = s.now - at;
    let mut run = if late_by > task.payload.grace_seconds && !seen_in_time {
        Run::new(
            task,
            slot.scheduled_for,
            at,
            1,
            RunState::not_run(RunEnd::Missed, s.now),
            s.now,
            |r| {
                r.reason = Some(format!(
                    "late by {late_by} s > grace {} s after the trigger",
                    task.payload.grace_seconds
                ));
                r.skipped_occurrences = 1;
            },
        )
    } else {
        decided(task, slot.scheduled_for, at, 1, blocking, s)
    };
    run.trigger = RunTrigger::Manual;
    run
}

/// What one claim transaction did.
#[derive(Debug)]
pub enum Claimed {
    Planned {
        task: Box<Task>,
        plan: Plan,
        /// What the executor is told of the task's last settled run.
        previous: serde_json::Value,
    },
    Quarantined {
        task_id: String,
        problem: String,
    },
    /// A due task whose profile has `--max-concurrent` runs running:
    /// nothing was recorded; its due work waits as capacity.
    Waiting {
        task: Box<Task>,
        profile: String,
    },
    /// An approved continuation, back to `running` under a new lease: its
    /// executor runs again with `continuation`.
    Continued {
        task: Box<Task>,
        run: Box<Run>,
        continuation: serde_json::Value,
        previous: serde_json::Value,
        /// The task's budgets now, for the executor's `limits`.
        budgets: Vec<BudgetState>,
    },
}

/// The claim event's detail; `catch_up` only when the run catches up.
fn claim_detail(run: &Run) -> serde_json::Value {
    let mut detail = json!({"decision": run.status().as_str(), "attempt": run.attempt,
           "scheduled_for": run.scheduled_for, "reason": run.reason,
           "skipped_occurrences": run.skipped_occurrences,
           "queued_seconds": run.queued_seconds(),
           "trigger": run.trigger.as_str()});
    if run.catch_up {
        detail["catch_up"] = json!(true);
    }
    detail
}

/// Reads what `plan` needs for one due task inside `tx`.
pub fn prepare(
    tx: &mut dyn Tx,
    due: &DueTask,
    s: ClaimSettings,
) -> Result<Option<Result<(Task, Plan), CorruptRow>>> {
    match read_due(tx, due)? {
        Some(row) => prepare_read(tx, row, s),
        None => Ok(None),
    }
}

/// The due task's row, read alone: every flag set, so that each thing
/// `prepare_read` may need is looked up.
fn read_due(tx: &mut dyn Tx, due: &DueTask) -> Result<Option<DueRow>> {
    Ok(tx.task(&due.task_id)?.map(|task| DueRow {
        due: due.clone(),
        task,
        mark: None,
        noted: true,
        triggered: true,
        blocked: true,
        last_settled: None,
    }))
}

/// `prepare` for a task whose row the claim has read (`QueueTx::due_in`):
/// what the row says is absent is not looked up.
pub fn prepare_read(
    tx: &mut dyn Tx,
    row: DueRow,
    s: ClaimSettings,
) -> Result<Option<Result<(Task, Plan), CorruptRow>>> {
    let task = match row.task {
        Ok(task) => task,
        Err(corrupt) => return Ok(Some(Err(corrupt))),
    };
    if task.state != TaskState::Active {
        return Ok(None);
    }
    let blocking = match row.blocked {
        true => tx.blocking_run(&task.task_id)?,
        false => None,
    };
    let failed = match &task.retry_run_id {
        Some(id) => tx.run(id)?,
        None => None,
    };
    let queued = match row.noted {
        true => tx.queue_mark(&task.task_id)?,
        false => row.mark,
    };
    let trigger = match row.triggered {
        true => tx.pending_trigger(&task.task_id)?,
        false => None,
    };
    let trigger = match trigger {
        Some(trigger) => Some(trigger_slot(tx, &task, trigger)?),
        None => None,
    };
    let mut plan = plan(
        &task,
        blocking.as_ref(),
        failed.as_ref(),
        queued.as_ref(),
        trigger.as_ref(),
        s,
    );
    // Only a run about to start asks its profile (held, or waiting for
    // capacity), then the budgets (a task without either reads nothing).
    if let profile::Check::Full { profile } = profile::check(tx, &mut plan, &task, s.now)? {
        plan.waits_for_profile = Some(profile);
        return Ok(Some(Ok((task, plan))));
    }
    if plan.running().is_some() && !task.payload.budgets.is_empty() {
        let budgets = budget::read(tx, &task, s.now)?;
        budgets::apply(&mut plan, &task, budgets, s.now);
    }
    Ok(Some(Ok((task, plan))))
}

/// Where a trigger's run goes: see `TriggerSlot`.
fn trigger_slot(tx: &mut dyn Tx, task: &Task, trigger: Trigger) -> Result<TriggerSlot> {
    let mut at = trigger.at;
    loop {
        // An occurrence not decided yet (at or after next_run_at) will
        // take its second; a passed one without a run never will.
        let is_occurrence = task.next_run_at.is_some_and(|next| next <= at)
            && schedule::next_after(&task.payload.schedule, task.zone_in_force, at - 1)
                .is_some_and(|o| o.at == at);
        let taken = tx
            .occurrence_runs(&task.task_id, at)?
            .iter()
            .any(|r| r.attempt == 1);
        if !is_occurrence && !taken {
            return Ok(TriggerSlot {
                trigger,
                scheduled_for: at,
            });
        }
        at -= 1;
    }
}

/// Runs that never ran have notices too; the task's policy decides
/// whether they are sent (docs/CONTRACT.md §16). A budget is told once
/// per change (`already_told`: an earlier skip told it, and no run
/// succeeded since); a missed run whose catch-up ran (`caught_up`) is a
/// designed outcome.
fn never_ran_notice(
    tx: &mut dyn Tx,
    run: &Run,
    task: &Task,
    already_told: bool,
    caught_up: bool,
    s: ClaimSettings,
) -> Result<()> {
    let never_ran = matches!(
        run.status(),
        RunStatus::Missed
            | RunStatus::SkippedOverlap
            | RunStatus::SkippedBudget
            | RunStatus::SkippedProfile
    );
    if never_ran {
        let in_gap = match run.status() {
            RunStatus::Missed
                if !caught_up && task.payload.notice.mode() == NotifyMode::Attention =>
            {
                gap::place(tx, task, run, s)?
            }
            _ => gap::InGap::Alone,
        };
        let (in_gap, gap_message) = match &in_gap {
            gap::InGap::Alone => (InGap::Alone, None),
            gap::InGap::Carrier(message) => (InGap::Carrier, Some(message.as_str())),
            gap::InGap::Told => (InGap::Told, None),
        };
        let context = super::settle::NoticeContext {
            already_told,
            caught_up,
            in_gap,
            gap_message,
            ..Default::default()
        };
        super::settle::add_decided_notice(tx, run, Some(task), s.now, None, context)?;
    }
    Ok(())
}

/// Claims the earliest due task of the whole store, if any, in the
/// caller's write transaction.
pub fn claim_next(
    tx: &mut dyn Tx,
    tenant: Option<&str>,
    s: ClaimSettings,
    notices_for_missed: bool,
) -> Result<Option<Claimed>> {
    let Some(due) = tx.due_tasks(s.now, tenant, 1)?.into_iter().next() else {
        return Ok(None);
    };
    claim_due(tx, &due, s, notices_for_missed)
}

/// Decides one due task and records the decision.
pub fn claim_due(
    tx: &mut dyn Tx,
    due: &DueTask,
    s: ClaimSettings,
    notices_for_missed: bool,
) -> Result<Option<Claimed>> {
    match read_due(tx, due)? {
        Some(row) => claim_read(tx, row, s, notices_for_missed),
        None => Ok(None),
    }
}

/// `claim_due` for a task whose row the claim has read (`QueueTx::due_in`).
pub fn claim_read(
    tx: &mut dyn Tx,
    row: DueRow,
    s: ClaimSettings,
    notices_for_missed: bool,
) -> Result<Option<Claimed>> {
    let last_settled = row.last_settled.clone();
    match prepare_read(tx, row, s)? {
        None => Ok(None),
        Some(Err(CorruptRow {
            id: task_id,
            tenant_key,
            problem,
        })) => {
            tx.quarantine_task(&task_id, &problem, s.now)?;
            // The row cannot be read as a task: its id and tenant are all.
            tx.append_event(&Event {
                task_id: Some(task_id.clone()),
                ..Event::of_tenant(
                    AuditAction::Quarantine,
                    &tenant_key,
                    "agentcron:tick",
                    s.now,
                    json!({"problem": problem}),
                )
            })?;
            Ok(Some(Claimed::Quarantined { task_id, problem }))
        }
        Some(Ok((task, plan))) if plan.waits_for_profile.is_some() => Ok(Some(Claimed::Waiting {
            profile: plan.waits_for_profile.unwrap_or_default(),
            task: Box::new(task),
        })),
        Some(Ok((task, mut plan))) => {
            // A budget is told once per change (docs/CONTRACT.md §16):
            // later skips hold theirs back until a run succeeds; a task
            // held for its profile once until its owner confirms again.
            let already_told = budgets::tell_in(tx, &mut plan, &task.task_id, s.now)?
                || profile::told_in(tx, &plan, &task)?;
            let profile_name = task.payload.profile.as_ref().map(|p| p.name.as_str());
            let caught_up = plan.runs.iter().any(|r| r.catch_up);
            for run in &plan.runs {
                let runner = run.lease().and(s.runner);
                tx.insert_run(run, runner, profile_name)?;
                tx.append_event(&Event::of_run(
                    AuditAction::Claim,
                    run,
                    "agentcron:tick",
                    s.now,
                    claim_detail(run),
                ))?;
                if notices_for_missed {
                    never_ran_notice(tx, run, &task, already_told, caught_up, s)?;
                }
            }
            // A task overdue before it had any run is told with its first
            // runs (the overdue step before the claims had no run to carry it).
            if let Some(first) = plan.runs.first() {
                super::overdue::at_claim(tx, &task, first, s.now)?;
            }
            budget::save(tx, &task.task_id, &plan.budgets)?;
            if let Some(at) = plan.consumed_trigger {
                tx.clear_trigger(&task.task_id, at)?;
            }
            tx.advance_task(&TaskAdvance {
                task_id: &task.task_id,
                expected_state: task.state,
                expected_next_run_at: task.next_run_at,
                expected_next_retry_at: task.next_retry_at,
                state: plan.state,
                next_run_at: plan.next_run_at,
                next_retry_at: plan.next_retry_at,
                retry_run_id: plan.retry_run_id.as_deref(),
                consecutive_failures: task.consecutive_failures,
                now: s.now,
            })?;
            // Read with the due row, unless this claim may have written
            // the task's memory since: another run recorded (its notice),
            // or the overdue notice its first run carries.
            let unchanged = plan.runs.len() == 1 && task.payload.expect_success_seconds.is_none();
            let previous = match (plan.running(), last_settled) {
                (None, _) => serde_json::Value::Null,
                (Some(_), Some(read)) if unchanged => previous_of(read),
                (Some(_), _) => previous_run(tx, &task.task_id)?,
            };
            Ok(Some(Claimed::Planned {
                task: Box::new(task),
                plan,
                previous,
            }))
        }
    }
}

#[cfg(test)]
mod tests;
