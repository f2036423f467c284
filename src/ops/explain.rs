//! Why an occurrence did or did not run, in one paragraph, from what the
//! store recorded: `explain_named` gathers the facts in one read
//! transaction, and `explain`, pure, names the rule.

use anyhow::Result;

use crate::audit::AuditAction;
use crate::error::{classify, fail, CmdError, ErrorKind};
use crate::model::{Run, RunStatus, Task};
use crate::ops::access::{owned_run, owned_task, Caller};
use crate::schedule::{self, Occurrence};
use crate::store::Tx;

/// One occurrence explained: the task, the occurrence, its final run.
pub struct Explained {
    pub task: Task,
    pub occurrence: Occurrence,
    /// The last run of the occurrence, or the coalesced missed run standing
    /// for it.
    pub run: Option<Run>,
    pub explanation: Explanation,
}

/// Explains the occurrence of the task or run `arg` names: a task's at or
/// before `at_text` (RFC 3339, or local in the task's zone; default `now`),
/// a run's own. `noted_tick`: the last tick the store's idle note holds
/// (`store::idle`), later than the store's own record when ticks since
/// found nothing to do.
pub fn explain_named(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    arg: &str,
    at_text: Option<&str>,
    now: i64,
    noted_tick: Option<i64>,
) -> Result<Explained> {
    let (task, run_at) = task_or_run(tx, caller, arg)?;
    let at = instant_asked(&task, at_text, run_at, now)?;
    // A following task's occurrences before a re-time were in the zone
    // then in force (docs/CONTRACT.md §18).
    let retimes = retimes(tx, &task)?;
    let Some(occurrence) = occurrence_at_or_before(&task, &retimes, at) else {
        return fail(CmdError::not_found(format!(
            "task {} has no occurrence at or before {}",
            task.label(),
            schedule::format_utc(at)
        )));
    };
    let facts = gather(tx, &task, occurrence.clone(), retimes, now, noted_tick)?;
    let explanation = explain(&facts);
    let final_run = facts.runs.last().cloned().or(facts.covering.clone());
    Ok(Explained {
        task: task.clone(),
        occurrence,
        run: final_run,
        explanation,
    })
}

/// The instant whose occurrence is explained: `--at` for a task (RFC 3339,
/// or local in the task's zone), a run's own occurrence, else `now`.
fn instant_asked(task: &Task, at_text: Option<&str>, run_at: Option<i64>, now: i64) -> Result<i64> {
    Ok(match (at_text, run_at) {
        (Some(_), Some(_)) => {
            return fail(CmdError::usage(
                "--at is for a task; a run already names its occurrence",
            ))
        }
        (Some(text), None) => {
            schedule::parse_time(text, task.zone_in_force).map_err(CmdError::from)?
        }
        (None, Some(occurrence)) => occurrence,
        (None, None) => now,
    })
}

/// What the store recorded about the task's `occurrence`.
fn gather<'a>(
    tx: &mut dyn Tx,
    task: &'a Task,
    occurrence: Occurrence,
    retimes: Vec<Retime>,
    now: i64,
    noted_tick: Option<i64>,
) -> Result<Facts<'a>> {
    let runs = tx.occurrence_runs(&task.task_id, occurrence.at)?;
    let covering = if runs.is_empty() {
        tx.run_at_or_before(&task.task_id, occurrence.at)?
            .filter(|r| {
                r.status() == RunStatus::Missed
                    && r.skipped_occurrences > 1
                    && r.created_at >= occurrence.at
            })
    } else {
        None
    };
    let blocker = match runs.last().and_then(|r| r.blocked_by().map(str::to_string)) {
        Some(id) => tx.run(&id)?,
        // Not yet claimed: a run that blocks the task now (an unknown one,
        // a manual trigger's too) is why it will not run.
        None if runs.is_empty() && covering.is_none() => tx
            .blocking_run(&task.task_id)?
            .filter(|b| b.status() != RunStatus::Running && b.scheduled_for <= occurrence.at),
        None => None,
    };
    let pause = tx
        .last_pause_change(&task.task_id, occurrence.at)?
        .map(|e| {
            let reason = e
                .event
                .detail
                .get("reason")
                .and_then(|r| r.as_str())
                .map(str::to_string);
            (e.event.action, e.event.at, reason)
        });
    let recorded = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
    let last_tick = recorded.max(noted_tick);
    let queued = tx
        .queue_mark(&task.task_id)?
        .filter(|m| m.due_at == occurrence.at);
    Ok(Facts {
        retime: retimes.into_iter().rfind(|r| r.at <= now),
        queued,
        task,
        occurrence,
        runs,
        covering,
        blocker,
        pause,
        last_tick,
        now,
    })
}

/// A move of a following task from one zone to another (a `retime` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retime {
    pub at: i64,
    pub from: schedule::Tz,
    pub to: schedule::Tz,
}

/// The task's re-times, oldest first; an event whose zones do not read is
/// left out (the trail is kept as written, the explanation does without).
fn retimes(tx: &mut dyn Tx, task: &Task) -> Result<Vec<Retime>> {
    if task.payload.zone.fallback().is_none() {
        return Ok(Vec::new());
    }
    let zone = |e: &crate::audit::Event, key: &str| {
        e.detail
            .get(key)
            .and_then(|v| v.as_str())
            .and_then(|z| schedule::parse_zone(z).ok())
    };
    Ok(tx
        .retimes(&task.task_id)?
        .into_iter()
        .filter_map(|e| {
            Some(Retime {
                at: e.event.at,
                from: zone(&e.event, "from_zone")?,
                to: zone(&e.event, "to_zone")?,
            })
        })
        .collect())
}

/// The last occurrence at or before `at` as the task had it: each zone for
/// the span it was in force (docs/CONTRACT.md §18). Right after a move, the
/// new zone's last occurrence before the move never happened; the old
/// zone's, the run that just ran, did.
fn occurrence_at_or_before(
    task: &Task,
    retimes: &[Retime],
    at: i64,
) -> Option<schedule::Occurrence> {
    let mut end = at;
    for era in retimes.iter().rev().filter(|r| r.at <= at) {
        match schedule::last_at_or_before(&task.payload.schedule, era.to, end) {
            Some(o) if o.at >= era.at => return Some(o),
            _ => end = era.at - 1,
        }
    }
    let first_zone = retimes.first().map_or(task.zone_in_force, |r| r.from);
    schedule::last_at_or_before(&task.payload.schedule, first_zone, end)
}

/// The task `arg` names, or else the task of the run it names with that
/// run's occurrence. A name or id of a task wins over a run's id prefix.
fn task_or_run(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<(Task, Option<i64>)> {
    match owned_task(tx, caller, arg) {
        Ok(task) => Ok((task, None)),
        Err(task_err) if classify(&task_err).0 == ErrorKind::NotFound => {
            match owned_run(tx, caller, arg) {
                Ok((task, run)) => Ok((task, Some(run.scheduled_for))),
                Err(run_err) if classify(&run_err).0 == ErrorKind::NotFound => Err(task_err),
                Err(run_err) => Err(run_err),
            }
        }
        Err(task_err) => Err(task_err),
    }
}

/// Everything the store knows that bears on one occurrence.
pub struct Facts<'a> {
    pub task: &'a Task,
    pub occurrence: Occurrence,
    /// Runs scheduled for exactly this occurrence, by attempt.
    pub runs: Vec<Run>,
    /// A coalesced missed run that stands for this occurrence.
    pub covering: Option<Run>,
    /// For a skipped run: the run that blocked it, as it is now.
    pub blocker: Option<Run>,
    /// The last pause or resume at or before the occurrence: (action, at, reason).
    pub pause: Option<(AuditAction, i64, Option<String>)>,
    pub last_tick: Option<i64>,
    /// A following task's latest move to another zone, when it has moved.
    pub retime: Option<Retime>,
    /// A tick saw this occurrence due within grace but had no free slot.
    pub queued: Option<crate::store::QueueMark>,
    pub now: i64,
}

/// The verdict: a machine-readable rule and the paragraph for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub rule: &'static str,
    pub paragraph: String,
}

pub fn explain(f: &Facts<'_>) -> Explanation {
    let tz = f.task.zone_in_force;
    let when = |at: i64| schedule::format_wall(at, tz);
    let occ = f.occurrence.at;
    let mut text = format!(
        "The occurrence at {} ({})",
        when(occ),
        schedule::format_utc(occ)
    );
    if let Some(wall) = &f.occurrence.shifted_from {
        text.push_str(&format!(
            ", DST-shifted from wall time {wall}, which did not exist that day,"
        ));
    }
    let (rule, body) = decide(f, &when);
    text.push(' ');
    text.push_str(&body);
    if !text.ends_with('.') {
        text.push('.');
    }
    if let (Some(r), Some(key)) = (&f.retime, f.task.follow_key()) {
        text.push_str(&format!(
            " The task follows {}: it was re-timed from {} to {} at {}.",
            crate::text::escape(key),
            r.from.name(),
            r.to.name(),
            schedule::format_wall(r.at, r.to)
        ));
    }
    Explanation {
        rule,
        paragraph: text,
    }
}

fn decide(f: &Facts<'_>, when: &dyn Fn(i64) -> String) -> (&'static str, String) {
    let occ = f.occurrence.at;
    if occ > f.now {
        return ("future", "has not happened yet".into());
    }
    // Confirm schedules the first occurrence strictly after its own moment.
    if occ <= f.task.created_at {
        return (
            "created_after",
            format!(
                "came before the task existed: it was confirmed at {}",
                when(f.task.created_at)
            ),
        );
    }
    if let Some(last) = f.runs.last() {
        return describe_runs(f, last, when);
    }
    if let Some(verdict) = held_back(f, when) {
        return verdict;
    }
    unclaimed(f, when)
}

/// The occurrence's runs: earlier attempts superseded by a retry, then
/// the last one in full.
fn describe_runs(
    f: &Facts<'_>,
    last: &Run,
    when: &dyn Fn(i64) -> String,
) -> (&'static str, String) {
    let mut text = String::new();
    for earlier in &f.runs[..f.runs.len() - 1] {
        text.push_str(&format!(
            "attempt {} {}{} and was superseded by a retry; ",
            earlier.attempt,
            earlier.status(),
            detail(earlier)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ));
    }
    let (rule, body) = describe_run(f, last, when);
    text.push_str(&body);
    (rule, text)
}

/// An occurrence without a run of its own that something held back: a
/// coalesced missed run, a blocking run, a full queue, a pause.
fn held_back(f: &Facts<'_>, when: &dyn Fn(i64) -> String) -> Option<(&'static str, String)> {
    if let Some(cover) = &f.covering {
        return Some((
            "missed_coalesced",
            format!(
                "was not run: it is one of {} occurrences recorded together as missed run {} ({})",
                cover.skipped_occurrences,
                cover.run_id,
                cover.reason.as_deref().unwrap_or("late")
            ),
        ));
    }
    if let (Some(b), true) = (&f.blocker, f.runs.is_empty()) {
        let how = match b.trigger {
            crate::model::RunTrigger::Schedule => String::new(),
            other => format!(", a {} trigger's run", other.as_str()),
        };
        return Some((
            "blocked",
            format!(
                "has not run: run {} ({}{how}) blocks the task until a person settles it \
                 (`agentcron reconcile`, or approve/deny for a parked run)",
                b.run_id,
                b.status()
            ),
        ));
    }
    if let Some(mark) = &f.queued {
        return Some((
            "queued",
            format!(
                "is queued: a tick saw it due at {} (within its grace of {} s) but had no free slot; \
                 it runs when one frees, however long that takes (waiting {} so far)",
                when(mark.seen_at),
                f.task.payload.grace_seconds,
                crate::text::human_duration(f.now - f.occurrence.at)
            ),
        ));
    }
    if let Some((action, at, reason)) = &f.pause {
        if *action == AuditAction::Pause {
            let why = reason
                .as_deref()
                .map(|r| format!(" with reason \"{r}\""))
                .unwrap_or_default();
            return Some((
                "paused",
                format!(
                    "did not run because the task was paused since {}{why}",
                    when(*at)
                ),
            ));
        }
    }
    None
}

/// Nothing recorded for the occurrence: no tick since it, or none ever,
/// or its run is gone.
fn unclaimed(f: &Facts<'_>, when: &dyn Fn(i64) -> String) -> (&'static str, String) {
    match f.last_tick {
        Some(tick) if tick < f.occurrence.at => (
            "no_tick",
            format!(
                "has not been claimed: no tick has run since it (the last tick was at {})",
                when(tick)
            ),
        ),
        None => (
            "no_tick",
            "has not been claimed: no tick has ever run against this database".into(),
        ),
        Some(_) => (
            "no_run",
            "has no run recorded (it may have been pruned)".into(),
        ),
    }
}

fn detail(run: &Run) -> Option<String> {
    run.reason.clone().or_else(|| {
        run.summary
            .as_ref()
            .and_then(|s| s.lines().next().map(str::to_string))
    })
}

/// What became of the occurrence's run, in words, by its status.
fn describe_run(f: &Facts<'_>, run: &Run, when: &dyn Fn(i64) -> String) -> (&'static str, String) {
    let id = &run.run_id;
    let started = started_words(f, run, when);
    let why = detail(run).map(|d| format!(": {d}")).unwrap_or_default();
    match run.status() {
        RunStatus::Succeeded => ("succeeded", format!("ran as run {id} (attempt {}) at {started} and succeeded", run.attempt)),
        RunStatus::DeliveryFailed => (
            "delivery_failed",
            format!("ran as run {id} at {started}; the work was done but the executor's own reply failed{why}"),
        ),
        RunStatus::Failed => {
            let retry = retry_words(f, run, when);
            ("failed", format!("ran as run {id} (attempt {}) at {started} and failed{why}{retry}", run.attempt))
        }
        RunStatus::Missed => ("missed", format!("was not run and is recorded as missed run {id}{why}")),
        RunStatus::SkippedBudget => ("skipped_budget", format!("was not run: its budget was spent, recorded as run {id}{why}")),
        RunStatus::SkippedProfile => ("skipped_profile", format!("was not run: its profile is not the one confirmed, recorded as run {id}{why}")),
        RunStatus::SkippedGate => {
            let said = run.summary.as_deref().map(|s| format!(" (it said \"{}\")", crate::text::escape(s))).unwrap_or_default();
            ("skipped_gate", format!("was not run: its gate found nothing to do, recorded as run {id}{said}"))
        }
        RunStatus::SkippedOverlap => {
            let blocker = blocker_words(f, run, when);
            ("skipped_overlap", format!("was skipped as run {id}: {blocker}"))
        }
        RunStatus::Unknown => (
            "unknown",
            format!(
                "ran as run {id} at {started}, but its outcome is unknown{why}; it blocks later occurrences until `agentcron reconcile {id}` settles it"
            ),
        ),
        RunStatus::Running => (
            "running",
            format!("is running as run {id} under a lease until {}", run.lease().map(|l| l.until).map(when).unwrap_or_default()),
        ),
        RunStatus::AwaitingConfirmation | RunStatus::AwaitingAuthorization
            if run.approval().is_some() =>
        (
            "awaiting",
            format!(
                "ran as run {id} and was approved by {} at {} (wait id {}); the next tick runs it again with the decision",
                run.approval().map(|a| a.by.as_str()).unwrap_or("?"),
                run.approval().map(|a| a.at).map(when).unwrap_or_default(),
                run.wait().map(|w| w.id.as_str()).unwrap_or("?"),
            ),
        ),
        RunStatus::AwaitingConfirmation | RunStatus::AwaitingAuthorization => (
            "awaiting",
            format!(
                "ran as run {id} and is waiting for approval (wait id {}, until {})",
                run.wait().map(|w| w.id.as_str()).unwrap_or("?"),
                run.wait().map(|w| w.deadline).map(when).unwrap_or_default()
            ),
        ),
    }
}

/// When the run started and, capacity not being lateness, how long it
/// waited for a slot (or that it caught up past its grace).
fn started_words(f: &Facts<'_>, run: &Run, when: &dyn Fn(i64) -> String) -> String {
    let started = run.started_at().map(when).unwrap_or_else(|| "?".into());
    match run.queued_seconds() {
        // Past its grace with no tick to decide it: the task catches up.
        Some(wait) if run.catch_up => format!(
            "{started}, {} after it was due, as a catch-up (its grace passed with no tick to decide it, \
             and the task runs its latest missed occurrence once: catch-up latest)",
            crate::text::human_duration(wait)
        ),
        Some(wait) if wait > f.task.payload.grace_seconds => format!(
            "{started}, {} after it was due (it waited for a free slot; a tick had seen it due within grace)",
            crate::text::human_duration(wait)
        ),
        Some(wait) if wait > 0 => format!("{started}, {} after it was due", crate::text::human_duration(wait)),
        _ => started,
    }
}

/// What follows a failed run: the retry due for it, or that none is left.
fn retry_words(f: &Facts<'_>, run: &Run, when: &dyn Fn(i64) -> String) -> String {
    match (&f.task.retry_run_id, f.task.next_retry_at) {
        (Some(r), Some(at)) if *r == run.run_id => format!("; a retry is due at {}", when(at)),
        _ if run.attempt > f.task.payload.max_retries => {
            format!("; no retry is left (max {})", f.task.payload.max_retries)
        }
        _ => String::new(),
    }
}

/// What blocked a skipped_overlap run: the blocking run now, or the
/// reason recorded when it was skipped.
fn blocker_words(f: &Facts<'_>, run: &Run, when: &dyn Fn(i64) -> String) -> String {
    match &f.blocker {
        Some(b) => format!(
            "blocked by run {} which is {} (since {})",
            b.run_id,
            b.status(),
            when(b.finished_at().or(b.started_at()).unwrap_or(b.created_at))
        ),
        None => run
            .reason
            .clone()
            .unwrap_or_else(|| "blocked by an earlier run".into()),
    }
}
