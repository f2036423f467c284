//! A run's child: what the executor (and the task's gate before it) is
//! given, how it runs, and what its end comes to. `execute.rs` owns the
//! job's lifecycle around it (the workers, the lease, the recorded outcome,
//! the notice); this file owns the child itself, so what a run's process
//! sees is read in one place:
//!
//! - its standard input (docs/CONTRACT.md §6): the task, the run, the
//!   lease token, the continuation, the previous run and `limits` (the
//!   executor's own time limit and what is left of each budget); the gate
//!   reads the very same stdin, its limits included;
//! - its environment: the allowlist of `Executor::launch` and the run's own
//!   variables (docs/CONTRACT.md §19), never the store's location; the lease
//!   endpoint, answered from the tick's memory of the leases;
//! - its time limit: the task's own timeout held to the tick's
//!   (tick/time_limit.rs), the gate's `--gate-timeout`;
//! - the gate first, when the task has one and the run is not a
//!   continuation (tick/gate.rs), then the executor, watching the lease and
//!   the stop signal at every heartbeat;
//! - the `Outcome` its answer, or its failure to give one, maps onto.
//!
//! Imports run one way: `execute` uses this file, never the reverse.

use std::time::Duration;

use serde_json::{json, Value};

use crate::executor_result::{self, ExecResult, ExecStatus};
use crate::model::{Run, RunStatus, Task, Wait, WaitKind};
use crate::process::{self, endpoint::Endpoint, ChildSpec, Heartbeat, Launch};
use crate::schedule;
use crate::wire as json;

use super::budget;
use super::gate;
use super::leases::{self, lease_lost, Leases};
use super::settle::Outcome;
use super::time_limit::TimeLimit;
use super::usage_reports;
use crate::limits::gate::{Gate, CLOSED};

/// The reason recorded on a run whose tick was told to stop.
pub const INTERRUPTED: &str = "tick interrupted";

/// How to run the executor.
#[derive(Debug, Clone)]
pub struct Executor {
    /// None when no executor is configured: claimed runs then fail saying so.
    pub argv: Option<Vec<String>>,
    pub timeout: Duration,
    /// How long a task's gate may run (`limits::GATE_TIMEOUT_SECONDS` at
    /// most).
    pub gate_timeout: Duration,
    pub kill_grace: Duration,
    pub lease: Duration,
    pub jobs: usize,
    pub output_cap: usize,
    /// The environment the executor starts from, and as whom it runs.
    pub launch: Launch,
    /// What a profile's run may be given of the tick's environment (every
    /// variable but those no run may have): it gets the base allowlist and
    /// its profile's passed names from here (docs/CONTRACT.md §22).
    pub profile_env: Vec<(String, String)>,
}

/// One claimed run to execute.
#[derive(Debug, Clone)]
pub struct Job {
    pub task: Task,
    /// Running under the lease whose token the executor is given.
    pub run: Run,
    pub continuation: Value,
    /// The task's last settled run (docs/CONTRACT.md §16), or null.
    pub previous: Value,
    /// The task's budgets as the claim left them, for the executor's
    /// `limits` (tick/budget.rs).
    pub budgets: Vec<budget::BudgetState>,
}

impl Job {
    /// The token of the lease the job's run holds (empty for a run that
    /// holds none, which no claim hands a worker).
    pub fn token(&self) -> &str {
        self.run.lease().map_or("", |l| l.token.as_str())
    }
}

/// Why there is no executor result.
pub(super) enum Failure {
    NotStarted(String),
    Lost(String),
    /// A stop signal: the executor was killed (or, for a continuation,
    /// never spawned).
    Interrupted,
    /// A stop signal seen before the spawn: nothing ran.
    NotSpawned,
    /// The task's gate exited 1: nothing to do, the executor not started
    /// (its first line of stdout).
    GateClosed(Option<String>),
}

/// What the executor answered and the end of its stderr, or why there is
/// no answer.
pub(super) type Executed = Result<(ExecResult, Option<String>), Failure>;

/// The run's lease endpoint, answered from `leases`; None (the executor
/// then has no endpoint, and its `lease check` answers 5) when the system
/// refuses one.
pub(super) fn open_endpoint(leases: &Leases, job: &Job) -> Option<Endpoint> {
    let (leases, run_id) = (leases.clone(), job.run.run_id.clone());
    let answer = Box::new(move |token: &str, reports: &[&str]| {
        let usage = super::usage_reports::parse(reports);
        crate::interrupt::received().is_none()
            && leases.lock().is_ok_and(|mut l| {
                l.get_mut(&run_id).is_some_and(|s| {
                    let holds = s.answer(token);
                    if holds {
                        s.report(&usage);
                    }
                    holds
                })
            })
    });
    Endpoint::open(&job.run.run_id, answer).ok()
}

/// What the executor's run came to, after the task's gate if it has one
/// (not for a continuation: its gate opened before it parked), and the
/// words of a gate that failed open.
pub(super) fn gate_then_execute(
    endpoint: Option<&Endpoint>,
    executor: &Executor,
    leases: &Leases,
    job: &Job,
    reports: Reports<'_>,
) -> (Executed, Option<String>) {
    // A task with a profile runs the profile's command, folder, user and
    // variables (tick/profile.rs); the gate runs as the executor would.
    let with_profile;
    let executor = match job.task.payload.profile.is_some() {
        false => executor,
        true => match super::profile::runner(
            &executor.argv,
            &executor.launch,
            &executor.profile_env,
            &job.task,
        ) {
            Ok((argv, launch)) => {
                with_profile = Executor {
                    argv,
                    launch,
                    ..executor.clone()
                };
                &with_profile
            }
            Err(why) => return (Err(Failure::NotStarted(why)), None),
        },
    };
    let opened = match (&job.task.payload.gate, &executor.argv) {
        (Some(command), Some(_)) if job.continuation.is_null() => {
            let spec = child_spec(endpoint, executor, job, executor.gate_timeout);
            gate::run(command, spec, leases, &job.run.run_id)
        }
        _ => Gate::Open,
    };
    match opened {
        Gate::Open => (execute(endpoint, executor, leases, job, reports), None),
        Gate::FailedOpen(words) => (
            execute(endpoint, executor, leases, job, reports),
            Some(words),
        ),
        Gate::Closed(said) => (Err(Failure::GateClosed(said)), None),
        // Nothing of the run was started: it is taken back, due again.
        Gate::Stopped { interrupted: true } => (Err(Failure::NotSpawned), None),
        Gate::Stopped { interrupted: false } => (
            Err(Failure::Lost("lease lost while the gate ran".into())),
            None,
        ),
    }
}

/// The child the run starts (the executor, or its gate first): the
/// executor's stdin and environment, its launch, held to `timeout`; its
/// argv is the caller's to set.
fn child_spec(
    endpoint: Option<&Endpoint>,
    executor: &Executor,
    job: &Job,
    timeout: Duration,
) -> ChildSpec {
    ChildSpec {
        argv: executor.argv.clone().unwrap_or_default(),
        // The gate reads what the executor will: its stdin names the
        // executor's own time limit.
        stdin: format!("{}\n", stdin_for(job, executor_limit(executor, job))).into_bytes(),
        env: environment(endpoint, job),
        launch: executor.launch.clone(),
        timeout,
        kill_grace: executor.kill_grace,
        output_cap: executor.output_cap,
        lease_root: endpoint.map(Endpoint::root),
    }
}

/// The executor's own time limit: the task's, held to the tick's.
fn executor_limit(executor: &Executor, job: &Job) -> Duration {
    TimeLimit::of(executor.timeout, &job.task.payload).duration
}

/// Where the usage a run reports as it goes is recorded: the worker's own
/// connection, on the tick's clock (`usage_reports.rs`).
pub(super) struct Reports<'a> {
    pub store: &'a mut dyn crate::store::Store,
    pub clock: &'a crate::clock::Clock,
}

/// Spawns the executor and waits for it, watching the lease and recording
/// the usage it reports as it goes.
/// What the executor answered, and the end of its stderr.
fn execute(
    endpoint: Option<&Endpoint>,
    executor: &Executor,
    leases: &Leases,
    job: &Job,
    reports: Reports<'_>,
) -> Executed {
    if executor.argv.is_none() {
        return Err(Failure::NotStarted(
            "no executor is configured (pass --executor CMD or set AGENTCRON_EXECUTOR)".to_string(),
        ));
    }
    let limit = TimeLimit::of(executor.timeout, &job.task.payload);
    let spec = child_spec(endpoint, executor, job, limit.duration);
    let run_id = job.run.run_id.clone();
    // Claimed, but the tick was told to stop before the spawn: a
    // continuation stays uncertain (its approval is spent), anything else
    // is taken back.
    if crate::interrupt::received().is_some() {
        return Err(if job.continuation.is_null() {
            Failure::NotSpawned
        } else {
            Failure::Interrupted
        });
    }
    let mut interrupted = false;
    let mut spent: Option<String> = None;
    let Reports { store, clock } = reports;
    let mut heartbeat = || {
        // The first heartbeat comes once the child is running.
        #[cfg(feature = "test-hooks")]
        crate::hooks::at("after_spawn");
        if lease_lost(leases, &run_id) {
            Heartbeat::Abort
        } else if crate::interrupt::received().is_some() {
            interrupted = true;
            Heartbeat::Abort
        } else if let Some(reason) = record_reports(store, leases, job, clock.now()) {
            spent = Some(reason);
            Heartbeat::Abort
        } else {
            Heartbeat::Continue
        }
    };
    let ran = process::run_child(&spec, Duration::from_millis(100), &mut heartbeat);
    if interrupted {
        return Err(Failure::Interrupted);
    }
    ran.map(|out| {
        let mut result = executor_result::interpret(&out);
        if matches!(out.exit, process::ChildExit::TimedOut) {
            result = limit.passed(job.task.payload.policy, result);
        }
        if let (process::ChildExit::Aborted, Some(reason)) = (out.exit, &spent) {
            result = usage_reports::stopped(job.task.payload.policy, result, reason);
        }
        (result, executor_result::stderr_tail(&out))
    })
    .map_err(|e| match e {
        process::SpawnError::Lost(message) => Failure::Lost(message),
        other => Failure::NotStarted(other.to_string()),
    })
}

/// Records what the run reported since the last heartbeat
/// (`usage_reports.rs`); the budget it took past its limit, if it did.
fn record_reports(
    store: &mut dyn crate::store::Store,
    leases: &Leases,
    job: &Job,
    now: i64,
) -> Option<String> {
    let new = match leases::unrecorded(leases, &job.run.run_id) {
        Ok(new) if new.is_empty() => return None,
        Ok(new) => new,
        Err(spent) => return Some(spent),
    };
    // Not written (busy, the lease gone): tried again at the next beat, or
    // left to the settle and the reconcile.
    let Ok(Some(spent)) =
        budget::record_reported(store, &job.task, &job.run, job.token(), &new, now)
    else {
        return None;
    };
    leases::recorded(leases, &job.run.run_id, &new, spent.clone());
    spent
}

/// The executor's standard input (docs/CONTRACT.md §6): `limits` says
/// the time it has (the task's own timeout held to the tick's) and what is
/// left of each budget.
fn stdin_for(job: &Job, timeout: Duration) -> Value {
    json!({
        "task": json::task(&job.task),
        "run": json::run(&job.run),
        "instruction": job.task.payload.instruction,
        "policy": job.task.payload.policy.as_str(),
        "timezone": job.task.zone_in_force.name(),
        "lease_token": job.token(),
        "payload_hash": job.task.payload_hash,
        "continuation": job.continuation,
        "previous": job.previous,
        "limits": budget::limits(timeout.as_secs(), &job.budgets, &job.task),
    })
}

/// The run's own variables (docs/CONTRACT.md §6, §19), added to the
/// allowlisted environment of `Executor::launch`.
fn environment(endpoint: Option<&Endpoint>, job: &Job) -> Vec<(String, String)> {
    let mut vars = vec![
        (
            "AGENTCRON_TENANT".into(),
            job.task.payload.tenant_key.clone(),
        ),
        ("AGENTCRON_TASK_ID".into(), job.task.task_id.clone()),
        ("AGENTCRON_RUN_ID".into(), job.run.run_id.clone()),
        ("AGENTCRON_LEASE_TOKEN".into(), job.token().to_string()),
    ];
    if let Some(endpoint) = endpoint {
        vars.push((
            crate::process::endpoint::VARIABLE.into(),
            endpoint.address(),
        ));
    }
    vars
}

/// The outcome to record for how the executor ended, and the error when
/// it could not start.
pub(super) fn outcome_of_result(result: &Executed) -> (Outcome, Option<String>) {
    match result {
        Ok((r, stderr)) => (
            Outcome {
                stderr: stderr.clone(),
                ..outcome_of(r)
            },
            None,
        ),
        // It ran, but we could not see how it ended: uncertain, never retried.
        Err(Failure::Lost(e)) => (
            Outcome::settled(RunStatus::Unknown, None, Some(e.clone())),
            None,
        ),
        // Killed mid-run because this tick must stop: uncertain too.
        Err(Failure::Interrupted | Failure::NotSpawned) => (
            Outcome::settled(RunStatus::Unknown, None, Some(INTERRUPTED.into())),
            None,
        ),
        Err(Failure::GateClosed(said)) => (
            Outcome::settled(RunStatus::SkippedGate, said.clone(), Some(CLOSED.into())),
            None,
        ),
        Err(Failure::NotStarted(e)) => (
            Outcome::settled(
                RunStatus::Failed,
                None,
                Some(format!("executor could not start: {e}")),
            ),
            Some(e.clone()),
        ),
    }
}

/// Maps the executor's answer onto a run outcome.
fn outcome_of(r: &ExecResult) -> Outcome {
    let status = match r.status {
        ExecStatus::Succeeded => RunStatus::Succeeded,
        ExecStatus::Failed => RunStatus::Failed,
        ExecStatus::DeliveryFailed => RunStatus::DeliveryFailed,
        ExecStatus::AwaitingConfirmation => RunStatus::AwaitingConfirmation,
        ExecStatus::AwaitingAuthorization => RunStatus::AwaitingAuthorization,
        ExecStatus::Unknown => RunStatus::Unknown,
    };
    if status.is_awaiting() {
        let deadline = r
            .wait_deadline
            .as_deref()
            .and_then(|d| schedule::parse_instant(d).ok());
        let (Some(wait_id), Some(deadline)) = (r.wait_id.clone(), deadline) else {
            return Outcome::settled(
                RunStatus::Failed,
                r.summary.clone(),
                Some("the executor asked to wait without a valid wait_id and wait_deadline".into()),
            );
        };
        let kind = if status == RunStatus::AwaitingConfirmation {
            WaitKind::Confirmation
        } else {
            WaitKind::Authorization
        };
        return Outcome {
            status,
            summary: r.summary.clone(),
            reason: None,
            wait: Some(Wait {
                kind,
                id: wait_id,
                deadline,
            }),
            stderr: None,
            retryable: true,
            notify: None,
            usage: r.usage.clone(),
        };
    }
    Outcome {
        notify: r.notify,
        usage: r.usage.clone(),
        ..Outcome::settled(status, r.summary.clone(), r.reason.clone())
    }
}
