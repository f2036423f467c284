//! `agentcron explain`: why an occurrence did or did not run.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::context::Ctx;
use crate::error::{classify, fail, CmdError, ErrorKind};
use crate::model::{RunStatus, Task};
use crate::ops::access::{owned_run, owned_task, Caller};
use crate::ops::explain::{self, Facts};
use crate::output::json::{run as run_json, time};
use crate::schedule;
use crate::store::Tx;

/// Explain why the occurrence at or before TIME did or did not run
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Task id, unique id prefix (4+ characters), or name; or a run id (or
    /// unique prefix) to explain that run's occurrence
    #[arg(value_name = "TASK|RUN", add = clap_complete::ArgValueCompleter::new(crate::completion::tasks_or_runs))]
    pub task: String,

    /// The moment to look back from (RFC 3339, or local in the task's zone) [default: now]
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
}

pub fn run(ctx: &mut Ctx, args: ExplainArgs) -> Result<()> {
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.now);
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let at_text = args.at.clone();
    let (facts_owned, explanation) = ctx.store()?.read(|tx| {
        let (task, run_at) = task_or_run(tx, &caller, &args.task)?;
        let at = match (&at_text, run_at) {
            (Some(_), Some(_)) => {
                return fail(CmdError::usage(
                    "--at is for a task; a run already names its occurrence",
                ))
            }
            (Some(text), None) => {
                schedule::parse_time(text, task.timezone).map_err(CmdError::from)?
            }
            (None, Some(occurrence)) => occurrence,
            (None, None) => now,
        };
        let Some(occurrence) = schedule::last_at_or_before(&task.schedule, task.timezone, at)
        else {
            return fail(CmdError::not_found(format!(
                "task {} has no occurrence at or before {}",
                task.label(),
                schedule::format_utc(at)
            )));
        };
        let runs = tx.occurrence_runs(&task.task_id, occurrence.at)?;
        let covering = if runs.is_empty() {
            tx.run_at_or_before(&task.task_id, occurrence.at)?
                .filter(|r| {
                    r.status == RunStatus::Missed
                        && r.skipped_occurrences > 1
                        && r.created_at >= occurrence.at
                })
        } else {
            None
        };
        let blocker = match runs.last().and_then(|r| r.blocked_by.clone()) {
            Some(id) => tx.run(&id)?,
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
        let last_tick = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
        let queued = tx
            .queue_mark(&task.task_id)?
            .filter(|m| m.due_at == occurrence.at);
        let facts = Facts {
            queued,
            task: &task,
            occurrence: occurrence.clone(),
            runs,
            covering,
            blocker,
            pause,
            last_tick,
            now,
        };
        let explanation = explain::explain(&facts);
        let final_run = facts.runs.last().cloned().or(facts.covering.clone());
        Ok(((task.clone(), occurrence, final_run), explanation))
    })?;
    let (task, occurrence, run) = facts_owned;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "task_id": task.task_id,
            "occurrence": time(Some(occurrence.at)),
            "occurrence_local": schedule::format_local(occurrence.at, task.timezone),
            "dst_shifted_from": occurrence.shifted_from,
            "rule": explanation.rule,
            "explanation": explanation.paragraph,
            "run": run.as_ref().map(run_json),
        }));
    }
    ctx.out
        .line(&crate::output::escape(&explanation.paragraph))?;
    match run.as_ref().and_then(crate::output::human::stderr_block) {
        Some(block) => ctx.out.line(&block),
        None => Ok(()),
    }
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
