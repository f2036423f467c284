//! Answering a run parked on a continuation: approve it (the next tick runs
//! it again with the decision), approve it here (claim it and run the
//! executor in this process, under a lease, as a tick would), or deny it
//! (settled failed, "denied"). A continuation is claimed at most once.
//!
//! `answer` is the one entry for all three, so the command reaches no
//! further into the tick than this: a person's decision about a parked run
//! goes through the tick's own claim, execute, settle and deliver. Every
//! check (owner, wait id, deadline, the task's state) runs inside the
//! transaction that records the decision; no transaction is held while the
//! executor or the notifier runs.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::clock::Clock;
use crate::error::{fail, CmdError};
use crate::model::{Approval, Lease, Run, RunEnd, RunState, RunStatus, Start, Task, TaskState};
use crate::ops::access::{owned_run, Caller};
use crate::process::Launch;
use crate::store::shared::SharedStore;
use crate::store::{Store, Tx};
use crate::tick::{
    approved_continuation, deliver_pending, previous_run, settle_outcome, Executor, Finished, Job,
    Notifier, Outcome,
};

/// The parked run a person answers, and who answers when.
pub struct Parked<'a> {
    pub caller: Caller<'a>,
    /// The run: its id, or a unique prefix (4+ characters).
    pub run: &'a str,
    /// The wait id the executor gave.
    pub wait_id: &'a str,
    pub now: i64,
}

/// What the person decided.
pub enum Decision {
    /// Record the approval; the next tick runs the continuation.
    Approve,
    /// Claim the continuation and run the executor here, at once.
    ApproveHere(Box<Here>),
    /// Settle the run failed; with a notifier, send its notice here too
    /// (without, the notice stays pending for the tick's notifier).
    Deny(Option<Notifier>),
}

/// How `approve --here` runs the executor: what its flags say. The rest is
/// a tick's: one job, the same output cap and kill grace.
pub struct Here {
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub lease: Duration,
    pub launch: Launch,
    /// What a profile's run may be given of this environment (`Executor::profile_env`).
    pub profile_env: Vec<(String, String)>,
    pub notifier: Option<Notifier>,
}

/// What became of the parked run.
pub enum Answered {
    /// Approved: the run as approving left it, for the next tick.
    Approved(Run),
    /// Run here: each run the executor's outcome was recorded for, with the
    /// status it settled at; `not_started` when the executor could not be
    /// started (the run is then recorded failed).
    Ran {
        settled: Vec<(Run, RunStatus)>,
        not_started: bool,
    },
    /// Denied: the run as denying left it (failed, "denied"), with the state
    /// of its notice.
    Denied(Run),
}

/// Answers the parked run `parked` names with `decision`. `clock` paces
/// what runs after the decision is recorded (lease renewals, the notice).
pub fn answer(
    store: &SharedStore,
    clock: Clock,
    parked: &Parked<'_>,
    decision: Decision,
) -> Result<Answered> {
    match decision {
        Decision::Approve => approve(&mut store.clone(), parked).map(Answered::Approved),
        Decision::ApproveHere(here) => approve_here(store, clock, parked, *here),
        Decision::Deny(notifier) => deny(&mut store.clone(), clock, parked, notifier.as_ref()),
    }
}

fn approve(store: &mut dyn Store, parked: &Parked<'_>) -> Result<Run> {
    let (actor, now) = (&parked.caller.identity[0], parked.now);
    store.write(|tx| {
        let (task, mut run) = find_parked(tx, parked)?;
        if let Some(Approval { by, .. }) = run.approval() {
            return fail(
                CmdError::conflict(format!(
                    "run {} is already approved (by {}); the next tick runs it",
                    run.run_id,
                    crate::text::escape(by)
                ))
                .with_hint("`agentcron deny` still cancels it until a tick claims it"),
            );
        }
        runnable(&task, &run)?;
        tx.approve_parked(&run.run_id, parked.wait_id, actor, now)?;
        tx.append_event(&approve_event(&run, actor, now, "next_tick"))?;
        if let RunState::Awaiting { parking, .. } = &mut run.state {
            parking.approval = Some(Approval {
                at: now,
                by: actor.clone(),
            });
        }
        Ok(run)
    })
}

/// Claims the continuation and runs the executor in this process, under a
/// lease, as a tick would.
fn approve_here(
    store: &SharedStore,
    clock: Clock,
    parked: &Parked<'_>,
    here: Here,
) -> Result<Answered> {
    let executor = Executor {
        argv: Some(here.argv),
        timeout: here.timeout,
        // A continuation's gate opened before it parked: none runs here.
        gate_timeout: Duration::from_secs(crate::limits::GATE_TIMEOUT_SECONDS),
        kill_grace: Duration::from_secs(5),
        lease: here.lease,
        jobs: 1,
        output_cap: 1 << 20,
        launch: here.launch,
        profile_env: here.profile_env,
    };
    // From the claim on, Ctrl-C must not leave the executor running under a
    // live lease: the signal is noted and the run settled unknown.
    crate::interrupt::catch_stop_signals()
        .map_err(|e| anyhow::anyhow!("cannot catch stop signals: {e}"))?;
    // As a tick: nothing the executor leaves behind outlives its run.
    let _subreaper = crate::process::become_subreaper(executor.kill_grace)
        .map_err(|e| anyhow::anyhow!("cannot become the child subreaper: {e}"))?;
    let job = claim_here(&mut store.clone(), parked, executor.lease)?;
    let finished = crate::tick::run_jobs(
        store,
        &executor,
        here.notifier.as_ref(),
        vec![job],
        clock,
        &mut |_| {},
    )?;
    let not_started = finished
        .iter()
        .any(|f| matches!(f, Finished::NotStarted { .. }));
    let settled = finished
        .into_iter()
        .filter_map(|f| match f {
            Finished::Recorded { run, outcome, .. } => Some((run, outcome.status)),
            _ => None,
        })
        .collect();
    Ok(Answered::Ran {
        settled,
        not_started,
    })
}

/// The claim of `approve --here`: the parked run becomes running under a
/// lease of this process, ready to hand the executor.
fn claim_here(store: &mut dyn Store, parked: &Parked<'_>, lease: Duration) -> Result<Job> {
    let (actor, now) = (&parked.caller.identity[0], parked.now);
    let token = uuid::Uuid::new_v4().to_string();
    let lease_until = now + lease.as_secs().max(1) as i64;
    let (task, run, previous, budgets) = store.write(|tx| {
        let (task, mut run) = find_parked(tx, parked)?;
        runnable(&task, &run)?;
        tx.reclaim_parked(&run.run_id, parked.wait_id, &token, lease_until, now)?;
        if let Some(runner) = crate::process::runner_identity() {
            tx.mark_runner(&run.run_id, runner)?;
        }
        tx.append_event(&approve_event(&run, actor, now, "here"))?;
        let start = Start {
            at: now,
            queued_seconds: run.queued_seconds(),
        };
        let lease = Lease {
            token,
            until: lease_until,
        };
        run.state = run
            .state
            .continued(start, lease)
            .ok_or_else(|| anyhow::anyhow!("run {} is not parked", run.run_id))?;
        let previous = previous_run(tx, &task.task_id)?;
        // A continuation is not a new start: it counts in no budget.
        let budgets = crate::tick::budgets_now(tx, &task, now)?;
        Ok((task, run, previous, budgets))
    })?;
    Ok(Job {
        continuation: approved_continuation(&run),
        previous,
        budgets,
        task,
        run,
    })
}

fn deny(
    store: &mut dyn Store,
    clock: Clock,
    parked: &Parked<'_>,
    notifier: Option<&Notifier>,
) -> Result<Answered> {
    let (actor, now) = (&parked.caller.identity[0], parked.now);
    let (mut run, notice) = store.write(|tx| {
        let (_, run) = find_parked(tx, parked)?;
        // The person's decision is its own event; the run's settling
        // follows as the usual `finish`.
        tx.append_event(&Event::of_run(
            AuditAction::Deny,
            &run,
            actor,
            now,
            wait_json(&run),
        ))?;
        let outcome = Outcome::final_decision(RunStatus::Failed, "denied".into());
        let notice = settle_outcome(tx, &run, run.status(), None, &outcome, actor, now, None)?;
        Ok((run, notice))
    })?;
    let mut delivery = Some(notice.state);
    if let Some(n) = notifier {
        if let Some(d) = deliver_pending(store, n, &notice, &clock)? {
            delivery = Some(d.state);
        }
    }
    // The run as denying left it (read before the change).
    run.state = RunState::Ended {
        end: RunEnd::Failed,
        start: run.state.start(),
        finished_at: now,
    };
    run.reason = Some("denied".into());
    run.delivery_status = delivery;
    Ok(Answered::Denied(run))
}

/// Finds the parked run, checks ownership and the wait id.
fn find_parked(tx: &mut dyn Tx, parked: &Parked<'_>) -> Result<(Task, Run)> {
    let (task, run) = owned_run(tx, &parked.caller, parked.run)?;
    let run_id = run.run_id.clone();
    if !run.status().is_awaiting() {
        return fail(CmdError::conflict(format!(
            "run {run_id} is {}, not waiting for approval",
            run.status()
        )));
    }
    let wait = run.wait();
    if wait.map(|w| w.id.as_str()) != Some(parked.wait_id) {
        return fail(
            CmdError::conflict(format!(
                "run {run_id} is not waiting on '{}'",
                crate::text::escape(parked.wait_id)
            ))
            .with_hint("use the wait id from the notice"),
        );
    }
    if wait.is_some_and(|w| w.deadline < parked.now) && run.approval().is_none() {
        return fail(CmdError::conflict(format!(
            "the continuation of run {run_id} has expired"
        )));
    }
    Ok((task, run))
}

/// Approving runs the executor again, and a paused, deleted or quarantined
/// task must not run anything: its parked run stays parked (denying it stays
/// allowed).
fn runnable(task: &Task, run: &Run) -> Result<()> {
    let why = match task.state {
        TaskState::Active | TaskState::Completed => return Ok(()),
        TaskState::Paused => "is paused; resume the task first",
        TaskState::Deleted => "is deleted and never runs again",
        TaskState::Error => "is quarantined (error) and never runs again",
    };
    fail(
        CmdError::conflict(format!(
            "run {} stays parked: its task {} {why}",
            run.run_id,
            task.label()
        ))
        .with_hint("`agentcron deny` settles the run without running anything"),
    )
}

/// The audit record of an approval; `ran` says where the continuation
/// runs: `next_tick`, or `here` (approve --here).
fn approve_event(run: &Run, actor: &str, now: i64, ran: &str) -> Event {
    let mut detail = wait_json(run);
    detail["ran"] = json!(ran);
    Event::of_run(AuditAction::Approve, run, actor, now, detail)
}

/// The audit detail naming the wait a person decided.
fn wait_json(run: &Run) -> serde_json::Value {
    let wait = run.wait();
    json!({"wait_id": wait.map(|w| &w.id), "wait_kind": wait.map(|w| w.kind.as_str())})
}
