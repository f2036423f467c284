//! Step 6 of a tick: running the executor for each claimed run, up to
//! `jobs` at once, while one lease keeper renews every lease this tick holds
//! (queued or running) every lease/3 in a single transaction. A run whose
//! lease is lost has its process group killed, and its outcome is recorded
//! only if its token still holds. No transaction is open while a child runs.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use serde_json::{json, Value};

use crate::context::{Clock, StoreOpener};
use crate::executor_result::{self, ExecResult, ExecStatus};
use crate::model::{DeliveryState, Event, Notice, Run, RunStatus, Task};
use crate::output::json;
use crate::process::{self, ChildSpec, Heartbeat};
use crate::schedule;

use super::deliver::{self, Delivery, Notifier};
use super::settle::{self, NoticeClaim, Outcome};

/// How to run the executor.
#[derive(Debug, Clone)]
pub struct Executor {
    /// None when no executor is configured: claimed runs then fail saying so.
    pub argv: Option<Vec<String>>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub lease: Duration,
    pub jobs: usize,
    pub output_cap: usize,
}

/// One claimed run to execute.
#[derive(Debug, Clone)]
pub struct Job {
    pub task: Task,
    pub run: Run,
    pub token: String,
    pub continuation: Value,
}

/// What happened to one job.
#[derive(Debug, Clone)]
pub enum Finished {
    Recorded {
        run: Run,
        outcome: Outcome,
        delivery: Option<Delivery>,
        notice: Notice,
    },
    /// The lease was lost: the outcome was not recorded.
    LeaseLost { run: Run, claimed: ExecResult },
    /// The executor could not be started; the run is recorded failed.
    NotStarted {
        run: Run,
        error: String,
        notice: Notice,
        delivery: Option<Delivery>,
    },
}

/// Why there is no executor result.
enum Failure {
    NotStarted(String),
    Lost(String),
}

struct Slot {
    token: String,
    lost: bool,
}

type Leases = Arc<Mutex<HashMap<String, Slot>>>;

/// Runs every job and returns what happened, in completion order.
pub fn run_jobs(
    opener: &StoreOpener,
    executor: &Executor,
    notifier: Option<&Notifier>,
    jobs: Vec<Job>,
    clock: Clock,
    on_finish: &mut dyn FnMut(&Finished),
) -> Result<Vec<Finished>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let leases: Leases = Arc::new(Mutex::new(
        jobs.iter()
            .map(|j| {
                (
                    j.run.run_id.clone(),
                    Slot {
                        token: j.token.clone(),
                        lost: false,
                    },
                )
            })
            .collect(),
    ));
    let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<VecDeque<Job>>()));
    let workers = executor
        .jobs
        .max(1)
        .min(queue.lock().map(|q| q.len()).unwrap_or(1));
    let (sender, results) = mpsc::channel::<Result<Finished>>();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (queue, leases, sender) = (queue.clone(), leases.clone(), sender.clone());
        let (opener, executor, notifier) = (opener.clone(), executor.clone(), notifier.cloned());
        handles.push(std::thread::spawn(move || {
            let mut store = match opener.open() {
                Ok(store) => store,
                Err(e) => {
                    let _ = sender.send(Err(e));
                    return;
                }
            };
            loop {
                let job = match queue.lock() {
                    Ok(mut q) => q.pop_front(),
                    Err(_) => None,
                };
                let Some(job) = job else { break };
                let finished = run_one(
                    &mut store,
                    &opener,
                    &executor,
                    notifier.as_ref(),
                    &job,
                    &leases,
                    &clock,
                );
                if let Ok(mut l) = leases.lock() {
                    l.remove(&job.run.run_id);
                }
                let _ = sender.send(finished);
            }
        }));
    }
    drop(sender);
    let mut keeper = opener.open()?;
    let period = (executor.lease / 3).max(Duration::from_millis(200));
    let lease_seconds = executor.lease.as_secs().max(1) as i64;
    let mut done = Vec::new();
    let mut first_error = None;
    let mut next_renewal = std::time::Instant::now() + period;
    loop {
        // Renew on schedule even when results keep arriving: a stream of
        // short runs must not starve the lease of a long one.
        let wait = next_renewal.saturating_duration_since(std::time::Instant::now());
        match results.recv_timeout(wait) {
            Ok(Ok(finished)) => {
                on_finish(&finished);
                done.push(finished);
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if std::time::Instant::now() >= next_renewal {
            if !renew_all(keeper.as_mut(), &leases, &clock, lease_seconds) {
                // The server went away; a new connection renews next time.
                if let Ok(fresh) = opener.open() {
                    keeper = fresh;
                }
            }
            next_renewal = std::time::Instant::now() + period;
        }
    }
    for handle in handles {
        let _ = handle.join();
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

/// Renews every live lease in one transaction; marks the ones lost. A busy
/// database is not a lost lease: it is tried again next period.
/// Returns false when the connection itself failed (not busy): the caller
/// reconnects before the next renewal.
fn renew_all(
    store: &mut dyn crate::store::Store,
    leases: &Leases,
    clock: &Clock,
    lease_seconds: i64,
) -> bool {
    let held: Vec<(String, String)> = match leases.lock() {
        Ok(l) => l
            .iter()
            .filter(|(_, s)| !s.lost)
            .map(|(id, s)| (id.clone(), s.token.clone()))
            .collect(),
        Err(_) => return true,
    };
    if held.is_empty() {
        return true;
    }
    let renewed = store.write(|tx| {
        // Read once the write lock is held: a renewal that waited for it
        // must not revive a lease that expired meanwhile.
        let now = clock.now();
        held.iter()
            .map(|(id, token)| {
                Ok((
                    id.clone(),
                    tx.renew_lease(id, token, now + lease_seconds, now)?,
                ))
            })
            .collect::<Result<Vec<_>>>()
    });
    match renewed {
        Ok(renewed) => {
            if let Ok(mut l) = leases.lock() {
                for (id, ok) in renewed {
                    if let (false, Some(slot)) = (ok, l.get_mut(&id)) {
                        slot.lost = true;
                    }
                }
            }
            true
        }
        Err(e) => !crate::error::is_connection_lost(&e),
    }
}

fn lease_lost(leases: &Leases, run_id: &str) -> bool {
    leases
        .lock()
        .map(|l| l.get(run_id).is_some_and(|s| s.lost))
        .unwrap_or(true)
}

fn run_one(
    store: &mut Box<dyn crate::store::Store>,
    opener: &StoreOpener,
    executor: &Executor,
    notifier: Option<&Notifier>,
    job: &Job,
    leases: &Leases,
    clock: &Clock,
) -> Result<Finished> {
    let result = match &executor.argv {
        None => Err(Failure::NotStarted(
            "no executor is configured (pass --executor CMD or set AGENTCRON_EXECUTOR)".to_string(),
        )),
        Some(argv) => {
            let spec = ChildSpec {
                argv: argv.clone(),
                stdin: format!("{}\n", stdin_for(job)).into_bytes(),
                // The full connection string (schema, password, sslmode), not the
                // redacted display: `lease check` must reach this same store.
                env: environment(opener.location.connection_string(), job),
                timeout: executor.timeout,
                kill_grace: executor.kill_grace,
                output_cap: executor.output_cap,
            };
            let run_id = job.run.run_id.clone();
            let mut heartbeat = || {
                // The first heartbeat comes once the child is running.
                #[cfg(feature = "test-hooks")]
                crate::hooks::at("after_spawn");
                if lease_lost(leases, &run_id) {
                    Heartbeat::Abort
                } else {
                    Heartbeat::Continue
                }
            };
            process::run_child(&spec, Duration::from_millis(100), &mut heartbeat)
                .map(|out| {
                    let mut result = executor_result::interpret(&out);
                    if matches!(out.exit, process::ChildExit::TimedOut) {
                        result.reason = Some(format!(
                            "timed out after {} s; process group killed",
                            executor.timeout.as_secs()
                        ));
                    }
                    result
                })
                .map_err(|e| match e {
                    process::SpawnError::Lost(message) => Failure::Lost(message),
                    other => Failure::NotStarted(other.to_string()),
                })
        }
    };
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("before_outcome");
    let now = clock.now();
    let (outcome, not_started) = match &result {
        Ok(r) => (outcome_of(r), None),
        // It ran, but we could not see how it ended: uncertain, never retried.
        Err(Failure::Lost(e)) => (
            Outcome::settled(RunStatus::Unknown, None, Some(e.clone())),
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
    };
    if lease_lost(leases, &job.run.run_id) {
        return lost(store.as_mut(), job, result.ok(), now);
    }
    let token = notifier.map(|_| uuid::Uuid::new_v4().to_string());
    let claim = match (&token, notifier) {
        (Some(t), Some(n)) => Some(NoticeClaim {
            token: t,
            deadline: now + deliver::deadline_seconds(n),
        }),
        _ => None,
    };
    // A database busy past busy_timeout must not turn a finished run into an
    // unknown one: the outcome write is tried again while the lease holds.
    let mut attempts = 0;
    let recorded = loop {
        attempts += 1;
        let result = store.write(|tx| {
            // The lease is judged by the time once the write lock is held.
            let now = clock.now().max(now);
            settle::settle(
                tx,
                &job.run,
                RunStatus::Running,
                Some(&job.token),
                &outcome,
                "agentcron:tick",
                now,
                claim,
            )
        });
        let retry = attempts < 10 && !lease_lost(leases, &job.run.run_id);
        match result {
            Err(e) if retry && is_busy(&e) => continue,
            // The connection broke (a database server restarting): the
            // outcome is known, so reconnect and record it while the lease
            // still holds rather than leave the run to become unknown.
            Err(e) if retry && crate::error::is_connection_lost(&e) => {
                std::thread::sleep(Duration::from_millis(500));
                if let Ok(fresh) = opener.open() {
                    *store = fresh;
                }
                continue;
            }
            other => break other,
        }
    };
    let notice = match recorded {
        Ok(notice) => notice,
        Err(e) if deliver::is_conflict(&e) => return lost(store.as_mut(), job, result.ok(), now),
        Err(e) => return Err(e),
    };
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_outcome");
    let delivery = match (notifier, &token) {
        // Claimed in the outcome's transaction (unless an earlier notice of
        // the run was still being sent: then it waits as pending).
        (Some(n), Some(t)) if notice.state == DeliveryState::Sending => Some(
            deliver::deliver_claimed(store.as_mut(), n, &notice, t, clock)?,
        ),
        _ => None,
    };
    let mut run = job.run.clone();
    run.status = outcome.status;
    run.summary = outcome.summary.clone();
    run.reason = outcome.reason.clone();
    run.finished_at = Some(now);
    Ok(match not_started {
        Some(error) => Finished::NotStarted {
            run,
            error,
            notice,
            delivery,
        },
        None => Finished::Recorded {
            run,
            outcome,
            delivery,
            notice,
        },
    })
}

fn is_busy(err: &anyhow::Error) -> bool {
    crate::error::classify(err).0 == crate::error::ErrorKind::Busy
}

/// The lease is gone: keep what the executor said in the audit trail (it
/// helps whoever reconciles the run) but change no run.
fn lost(
    store: &mut dyn crate::store::Store,
    job: &Job,
    claimed: Option<ExecResult>,
    now: i64,
) -> Result<Finished> {
    let claimed = claimed.unwrap_or(ExecResult {
        status: ExecStatus::Unknown,
        summary: None,
        wait_id: None,
        wait_deadline: None,
        reason: Some("lease lost before the executor started".into()),
    });
    store.write(|tx| {
        tx.append_event(&Event {
            at: now,
            tenant_key: job.run.tenant_key.clone(),
            actor: "agentcron:tick".into(),
            action: "outcome_discarded".into(),
            task_id: Some(job.run.task_id.clone()),
            run_id: Some(job.run.run_id.clone()),
            detail: json!({"reason": "lease lost", "executor_status": format!("{:?}", claimed.status),
                           "summary": claimed.summary}),
        })
    })?;
    Ok(Finished::LeaseLost {
        run: job.run.clone(),
        claimed,
    })
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
            "confirmation"
        } else {
            "authorization"
        };
        return Outcome {
            status,
            summary: r.summary.clone(),
            reason: None,
            wait_kind: Some(kind.into()),
            wait_id: Some(wait_id),
            wait_deadline: Some(deadline),
            retryable: true,
        };
    }
    Outcome::settled(status, r.summary.clone(), r.reason.clone())
}

/// The executor's standard input (SPEC section 6).
fn stdin_for(job: &Job) -> Value {
    json!({
        "task": json::task(&job.task),
        "run": json::run(&job.run),
        "instruction": job.task.instruction,
        "policy": job.task.policy.as_str(),
        "timezone": job.task.timezone.name(),
        "lease_token": job.token,
        "payload_hash": job.task.payload_hash,
        "continuation": job.continuation,
    })
}

fn environment(db: String, job: &Job) -> Vec<(String, String)> {
    vec![
        ("AGENTCRON_DB".into(), db),
        ("AGENTCRON_TENANT".into(), job.task.tenant_key.clone()),
        ("AGENTCRON_TASK_ID".into(), job.task.task_id.clone()),
        ("AGENTCRON_RUN_ID".into(), job.run.run_id.clone()),
        ("AGENTCRON_LEASE_TOKEN".into(), job.token.clone()),
    ]
}
