//! The words and JSON Lines of `agentcron tick`'s report: one line (or
//! one JSON event) per `TickEvent`, naming the run and its task as cron
//! mails them ("run 5e6f7a8b of task digest (1a2b3c4d)"), everything that
//! came from the database or a child escaped. `commands/tick.rs` decides
//! which events print and where; this module only builds their text.

use serde_json::{json, Value};

use crate::model::{short_id, Run, RunStatus, Task};
use crate::text::{escape, wall_time};
use crate::tick::{Delivery, Finished, HeldBack, TaskRef, TickEvent, NOT_STARTED};
use crate::wire::{run as run_json, time};

/// What the report needs of a claimed run's task.
pub struct ClaimedTask {
    pub task: TaskRef,
    pub max_retries: i64,
}

impl ClaimedTask {
    pub fn of(task: &crate::model::Task) -> ClaimedTask {
        ClaimedTask {
            task: TaskRef::of(task),
            max_retries: task.payload.max_retries,
        }
    }
}

pub type ClaimedRuns = std::collections::HashMap<String, ClaimedTask>;

/// One JSON Lines event. `name_of` gives the task name of a run this tick
/// claimed (events about its outcome carry no task).
pub fn event_json(event: &TickEvent, name_of: &dyn Fn(&str) -> Option<String>) -> Value {
    match event {
        TickEvent::SchedulerGap {
            previous,
            now,
            due_tasks,
        } => json!({"event": "scheduler_gap",
            "previous_tick": time(Some(*previous)), "now": time(Some(*now)), "due_tasks": due_tasks}),
        TickEvent::LeaseExpired { run, task } => json!({"event": "lease_expired",
            "task_name": task.as_ref().and_then(|t| t.payload.name.clone()), "run": run_json(run)}),
        TickEvent::WouldExpireLease { run, task } => json!({"event": "would_expire_lease",
            "task_name": task.as_ref().and_then(|t| t.payload.name.clone()), "run": run_json(run)}),
        TickEvent::NoticeUndeliverable { notice, task } => {
            json!({"event": "delivery_undeliverable",
            "delivery_id": notice.delivery_id, "run_id": notice.run_id,
            "task_id": task.as_ref().map(|t| &t.task_id), "task_name": task.as_ref().and_then(|t| t.name.as_ref()),
            "attempts": notice.attempts, "error": notice.last_error})
        }
        TickEvent::Queued { count, reason } => json!({"event": "queued", "count": count,
            "reason": reason.as_str()}),
        TickEvent::NoticeExpired { notice, task } => json!({"event": "delivery_unknown",
            "delivery_id": notice.delivery_id, "run_id": notice.run_id,
            "task_id": task.as_ref().map(|t| &t.task_id), "task_name": task.as_ref().and_then(|t| t.name.as_ref())}),
        TickEvent::Delivered(d) => json!({"event": "delivery", "delivery_id": d.notice.delivery_id,
            "run_id": d.notice.run_id, "task_id": d.task.as_ref().map(|t| &t.task_id),
            "task_name": d.task.as_ref().and_then(|t| t.name.as_ref()),
            "state": d.state.as_str(), "error": d.error}),
        TickEvent::NoticesUndelivered { count } => {
            json!({"event": "notices_pending", "count": count,
            "reason": "no notifier configured"})
        }
        TickEvent::ContinuationExpired { run, task } => {
            json!({"event": "continuation_expired",
                "task_name": task.as_ref().and_then(|t| t.name.as_ref()), "run": run_json(run)})
        }
        TickEvent::Decided { task, run } => {
            json!({"event": "claimed", "task_name": task.payload.name,
            "decision": run.status().as_str(), "run": run_json(run)})
        }
        TickEvent::Continued { task, run } => json!({"event": "continued",
            "task_name": task.payload.name, "run": run_json(run)}),
        TickEvent::WouldContinue { task, run } => json!({"event": "would_continue",
            "task_name": task.payload.name, "run": run_json(run)}),
        TickEvent::WouldDecide { task, run } => would_claim_json(task, run),
        TickEvent::Quarantined { task_id, problem } => {
            json!({"event": "quarantined", "task_id": task_id, "problem": problem})
        }
        TickEvent::Overdue {
            task,
            since,
            message,
            notice,
            ..
        } => json!({"event": "overdue", "task_id": task.task_id, "task_name": task.name,
            "overdue_since": time(Some(*since)), "message": message,
            "delivery_id": notice.as_ref().map(|n| n.delivery_id.clone()),
            "notice_state": notice.as_ref().map(|n| n.state.as_str())}),
        TickEvent::Finished(f) => finished_json(f, name_of),
    }
}

/// The dry run's `would_claim` event: what step 4 would decide, and the
/// gate it would run first for a run it would start.
fn would_claim_json(task: &Task, run: &Run) -> Value {
    // A dry run records nothing: the id it drew for the run is never used.
    let mut run = run_json(run);
    run["run_id"] = Value::Null;
    let mut event = json!({"event": "would_claim", "task_name": task.payload.name,
           "decision": run["status"], "run": run});
    // The gate it would run first, for a run it would start.
    if let (Some(gate), "running") = (&task.payload.gate, run["status"].as_str().unwrap_or("")) {
        event["gate"] = json!(gate);
    }
    event
}

/// The event of an executor's end: its outcome recorded, discarded (the
/// lease lost), not started, or the run taken back. `name_of` gives the
/// task name of a run this tick claimed.
fn finished_json(f: &Finished, name_of: &dyn Fn(&str) -> Option<String>) -> Value {
    match f {
        Finished::Recorded { run, .. } => json!({"event": "finished",
            "task_name": name_of(&run.run_id), "run": run_json(run)}),
        Finished::LeaseLost { run, claimed } => {
            json!({"event": "outcome_discarded", "task_name": name_of(&run.run_id),
            "run": run_json(run), "reason": "lease lost",
            "executor_said": format!("{:?}", claimed.status)})
        }
        Finished::NotStarted { run, error, .. } => json!({"event": "executor_not_started",
            "task_name": name_of(&run.run_id), "run": run_json(run), "error": error}),
        Finished::Released { run } => json!({"event": "released",
            "task_name": name_of(&run.run_id), "run": run_json(run),
            "reason": NOT_STARTED}),
    }
}

/// What became of a notice, naming its run and task.
pub fn delivery_line(d: &Delivery) -> String {
    let run = run_of(&d.notice.run_id, d.task.as_ref());
    match &d.error {
        None => format!("notice for {run} delivered to {}", escape(&d.notice.target)),
        Some(e) => format!("notice for {run}: {} ({})", d.state, escape(e)),
    }
}

/// "run 5e6f7a8b of task digest (1a2b3c4d)": what cron mails names both.
fn run_of(run_id: &str, task: Option<&TaskRef>) -> String {
    match task {
        Some(task) => format!("run {} of task {}", short_id(run_id), escape(&task.label())),
        None => format!("run {}", short_id(run_id)),
    }
}

/// The reconcile command for an unknown run, with the store, tenant and
/// owner key that reach it (as `status` prints it), ready to paste;
/// `db_flag` is how it begins (the prefix, `agentcron`, the store's --db).
fn reconcile_command(run: &crate::model::Run, owner: Option<&str>, db_flag: &[String]) -> String {
    let mut words = db_flag.to_vec();
    if run.tenant_key != "default" {
        words.extend(["--tenant".into(), run.tenant_key.clone()]);
    }
    if let Some(owner) = owner {
        words.extend(["--as".into(), owner.to_string()]);
    }
    words.extend(["reconcile".into(), run.run_id.clone(), "--decision".into()]);
    format!(
        "{} confirmed_succeeded|confirmed_failed|abandoned --reason TEXT",
        escape(&shell_words::join(&words))
    )
}

/// The line an event prints (stdout, `--log`); None for one printed as a
/// warning instead (the scheduler gap).
pub fn event_line(event: &TickEvent, claimed: &ClaimedRuns, db_flag: &[String]) -> Option<String> {
    let line = match event {
        TickEvent::SchedulerGap { .. } => return None,
        TickEvent::LeaseExpired { run, task } => lease_expired_line(run, task.as_deref(), db_flag),
        TickEvent::WouldExpireLease { run, task } => format!(
            "would freeze {}: lease expired, outcome unknown (`agentcron reconcile` settles it once you know what happened)",
            run_of(&run.run_id, Some(&task_ref(run, task.as_deref())))
        ),
        TickEvent::NoticeUndeliverable { notice, task } => format!(
            "notice for {}: undeliverable after {} attempt(s); the notifier kept answering \"try later\" (exit 75)",
            run_of(&notice.run_id, task.as_ref()), notice.attempts
        ),
        TickEvent::Queued { count, reason } => format!(
            "{count} due run(s) queued: {reason}; they keep their place and run when {}",
            match reason {
                HeldBack::LockedRows => "their rows are free",
                HeldBack::MaxRunning
                | HeldBack::MaxRuns
                | HeldBack::JobsBusy
                | HeldBack::HostJobs => "a slot frees",
                HeldBack::ClaimWindow => "the next tick starts",
                HeldBack::ProfileFull => "a run of their profile ends",
            }
        ),
        TickEvent::NoticeExpired { notice, task } => format!(
            "notice for {}: delivery deadline passed; it may or may not have been sent, and will not be resent",
            run_of(&notice.run_id, task.as_ref())
        ),
        TickEvent::Delivered(d) => delivery_line(d),
        TickEvent::NoticesUndelivered { count } => format!(
            "{count} notice(s) pending: no notifier configured (pass --notifier or set AGENTCRON_NOTIFIER)"
        ),
        TickEvent::ContinuationExpired { run, task } => format!(
            "{}: continuation expired, now failed", run_of(&run.run_id, task.as_ref())
        ),
        TickEvent::Decided { task, run } => decided_line("", task, run),
        TickEvent::WouldDecide { task, run } => decided_line("would ", task, run),
        TickEvent::Continued { task, run } => continued_line("running", task, run),
        TickEvent::WouldContinue { task, run } => continued_line("would", task, run),
        TickEvent::Quarantined { task_id, problem } => format!(
            "task {} quarantined (state error): {}", short_id(task_id), escape(problem)
        ),
        TickEvent::Overdue { message, .. } => escape(message).to_string(),
        TickEvent::Finished(f) => finished_line(f, claimed),
    };
    Some(line)
}

/// The warning of the first tick after a gap, once per gap: "the previous
/// tick was 15 h 15 min ago (at 2026-10-19T21:00:00Z): the host slept or
/// cron was not running; 3 task(s) had occurrences due".
pub fn gap_warning(previous: i64, now: i64, due_tasks: i64) -> String {
    format!(
        "the previous tick was {} ago (at {}): the host slept or cron was not running; \
         {due_tasks} task(s) had occurrences due",
        gap_words(now - previous),
        crate::schedule::format_utc(previous)
    )
}

/// A gap to the minute, as a person says it: "2 d 3 h", "15 h 15 min",
/// "5 min", "40 s".
fn gap_words(seconds: i64) -> String {
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    let parts: Vec<String> = [(days, "d"), (hours, "h"), (minutes, "min")]
        .into_iter()
        .skip_while(|(n, _)| *n == 0)
        .take(2)
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect();
    match parts.is_empty() {
        true => format!("{seconds} s"),
        false => parts.join(" "),
    }
}

/// The task of a run whose task may be gone: at least its id.
fn task_ref(run: &Run, task: Option<&Task>) -> TaskRef {
    task.map(TaskRef::of).unwrap_or(TaskRef {
        task_id: run.task_id.clone(),
        name: None,
    })
}

/// A run frozen `unknown`, with the command that settles it.
fn lease_expired_line(run: &Run, task: Option<&Task>, db_flag: &[String]) -> String {
    let owner = task.and_then(|t| t.payload.owner_keys.first());
    format!(
        "{}: lease expired, outcome unknown; once you know what happened, settle it with `{}`",
        run_of(&run.run_id, Some(&task_ref(run, task))),
        reconcile_command(run, owner.map(String::as_str), db_flag)
    )
}

/// What step 4 decided for an occurrence (`verb`: "would " in a dry run).
fn decided_line(verb: &str, task: &Task, run: &Run) -> String {
    let when = wall_time(run.scheduled_for, task.zone_in_force);
    let label = escape(&task.label());
    match run.status() {
        // A dry run's run id is never used: it is not shown. It names the
        // gate it would run first (and does not run it).
        RunStatus::Running if !verb.is_empty() => format!(
            "{verb}run {label} for {when} (attempt {}{}){}",
            run.attempt,
            catching_up(run),
            gate_words(task)
        ),
        RunStatus::Running => format!(
            "{verb}run {label} for {when} (run {}, attempt {}{})",
            short_id(&run.run_id),
            run.attempt,
            catching_up(run)
        ),
        RunStatus::Missed => format!(
            "{verb}record {label} for {when} missed: {}",
            escape(run.reason.as_deref().unwrap_or(""))
        ),
        RunStatus::SkippedOverlap => format!(
            "{verb}skip {label} for {when}: {}",
            escape(run.reason.as_deref().unwrap_or(""))
        ),
        other => format!("{verb}record {label} for {when}: {other}"),
    }
}

/// ", catching up": a run whose occurrence passed its grace unclaimed.
fn catching_up(run: &Run) -> &'static str {
    match run.catch_up {
        true => ", catching up a missed occurrence",
        false => "",
    }
}

/// " after its gate `CMD`" for a gated task: the command, quoted, escaped.
fn gate_words(task: &Task) -> String {
    task.payload
        .gate
        .as_deref()
        .map(|gate| format!(" after its gate `{}`", escape(gate)))
        .unwrap_or_default()
}

/// An approved continuation run again (`verb`: "would" in a dry run).
fn continued_line(verb: &str, task: &Task, run: &Run) -> String {
    format!(
        "{verb} run {} of {} again: approved by {}, continuing wait {}",
        short_id(&run.run_id),
        escape(&task.label()),
        escape(run.approval().map(|a| a.by.as_str()).unwrap_or("an owner")),
        escape(run.wait().map(|w| w.id.as_str()).unwrap_or(""))
    )
}

/// What became of a run this tick started.
fn finished_line(finished: &Finished, claimed: &ClaimedRuns) -> String {
    let task_of = |run_id: &str| claimed.get(run_id).map(|c| &c.task);
    match finished {
        Finished::Recorded { run, outcome, .. } => {
            let mut line = format!(
                "{} {}",
                run_of(&run.run_id, task_of(&run.run_id)),
                outcome.status
            );
            if let Some(text) = outcome.summary.as_deref().or(outcome.reason.as_deref()) {
                line.push_str(": ");
                line.push_str(&crate::text::clip(&escape(text), 120));
            }
            line
        }
        Finished::LeaseLost { run, .. } => format!(
            "{}: lease lost; its outcome was not recorded (the run is or will be unknown)",
            run_of(&run.run_id, task_of(&run.run_id))
        ),
        Finished::NotStarted { run, error, .. } => format!(
            "{} failed: executor could not start: {}",
            run_of(&run.run_id, task_of(&run.run_id)),
            escape(error)
        ),
        Finished::Released { run } => format!(
            "run {} taken back: {}; it is due again",
            short_id(&run.run_id),
            NOT_STARTED
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::gap_words;

    #[test]
    fn a_gap_is_said_to_the_minute() {
        assert_eq!(gap_words(54_900), "15 h 15 min");
        assert_eq!(gap_words(3 * 86_400 + 7200 + 59), "3 d 2 h");
        assert_eq!(gap_words(301), "5 min");
        assert_eq!(gap_words(7200), "2 h");
        assert_eq!(gap_words(40), "40 s");
    }
}
