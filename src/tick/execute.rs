//! Steps 4–6 of a tick: the executor workers. At most `jobs` executors run
//! at once; the main loop (tick/mod.rs) claims a run only when a slot is
//! free and hands it to an idle worker, which spawns the executor at once.
//! The main loop renews every lease this tick holds every lease/3 in one
//! transaction. A run whose lease is lost has its process group killed, and
//! its outcome is recorded only if its token still holds and has not
//! expired. No transaction is open while a child runs.
//!
//! A worker whose executor finished frees its slot first, then may deliver
//! the run's notice itself, but only while one of the tick's delivery lanes
//! is free: a hung notifier never holds an executor slot, and at most
//! `jobs` notifiers run at once from here.
//!
//! Every message about a run names it: the main loop counts each executor
//! it started as finished exactly once, by run id, whatever else a worker
//! reports (a notice whose result could not be recorded is not a second
//! finish). A stop signal (`crate::interrupt`) aborts the executors at
//! their next heartbeat; their runs are recorded `unknown` ("tick
//! interrupted") and their notices left pending.
//!
//! A run holds no key to the store (docs/CONTRACT.md §19): the executor
//! gets the allowlisted environment of `Executor::launch` and the run's own
//! variables, never the store's location, and asks `lease check` through
//! the run's lease endpoint, which this tick answers from its memory of
//! the leases (held, lost, settled) until the run is settled.
//!
//! This file is the job's lifecycle: dispatch, the lease it runs under, the
//! outcome recorded, the notice delivered. What the child itself is given
//! (its stdin, environment, time limit, the gate before it) and what its
//! answer maps onto is tick/child.rs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::clock::Clock;
use crate::error::BusyStep;
use crate::executor_result::{ExecResult, ExecStatus};
use crate::model::{DeliveryState, Notice, Run, RunStatus};
use crate::store::{shared::SharedStore, Store};

use super::child::{self, Failure};
pub use super::child::{Executor, Job, INTERRUPTED};
use super::deliver::{self, Delivery, Notifier};
use super::leases::{end_lease, lease_lost};
pub use super::leases::{Leases, Renewals, Slot};
use super::release;
use super::settle::{self, NoticeClaim, Outcome};

/// What happened to one job.
#[derive(Debug, Clone)]
pub enum Finished {
    Recorded {
        run: Run,
        outcome: Outcome,
        notice: Notice,
    },
    /// The lease was lost: the outcome was not recorded.
    LeaseLost { run: Run, claimed: ExecResult },
    /// The executor could not be started; the run is recorded failed.
    NotStarted {
        run: Run,
        error: String,
        notice: Notice,
    },
    /// The tick was told to stop before the executor started: the run was
    /// taken back and what it was claimed for is due again (tick/release.rs).
    Released { run: Run },
}

/// What the tick's threads tell its main loop.
#[derive(Debug)]
pub enum Message {
    /// The executor slot of `run_id` is free again (the run's outcome, or
    /// why it was not recorded). Sent exactly once per dispatched run.
    Finished {
        run_id: String,
        result: Result<Box<Finished>>,
    },
    /// A notice went out (or did not).
    Delivered(Box<Delivery>),
    /// A worker ran the notifier for the notice of `run_id` but could not
    /// record the result: the notice stays claimed, and a later tick
    /// freezes it as `unknown` past its deadline (never sent again).
    NoticeNotRecorded {
        run_id: String,
        error: anyhow::Error,
    },
    /// The pending-notice lane has stopped.
    LaneDone(Result<()>),
}

impl Finished {
    /// The run's notice, when its outcome was recorded.
    pub fn notice(&self) -> Option<&Notice> {
        match self {
            Finished::Recorded { notice, .. } | Finished::NotStarted { notice, .. } => Some(notice),
            Finished::LeaseLost { .. } | Finished::Released { .. } => None,
        }
    }
}

/// Delivery lanes: how many notifiers the workers may run at once.
#[derive(Debug)]
pub struct Lanes {
    busy: AtomicUsize,
    capacity: usize,
}

impl Lanes {
    pub fn new(capacity: usize) -> Lanes {
        Lanes {
            busy: AtomicUsize::new(0),
            capacity,
        }
    }

    fn try_reserve(&self) -> bool {
        self.busy
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.capacity).then_some(n + 1)
            })
            .is_ok()
    }

    fn release(&self) {
        self.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What every worker shares.
struct Shared {
    /// The tick's one connection.
    store: SharedStore,
    executor: Executor,
    notifier: Option<Notifier>,
    leases: Leases,
    lanes: Lanes,
    clock: Clock,
    idle: AtomicUsize,
    messages: mpsc::Sender<Message>,
}

/// The tick's executor workers, spawned as runs are dispatched (all on the
/// tick's one connection), at most `2 × jobs`: `jobs` running executors and
/// as many delivering their run's notice.
pub struct Workers {
    shared: Arc<Shared>,
    queue: Option<mpsc::Sender<Job>>,
    receiver: Arc<Mutex<mpsc::Receiver<Job>>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    pub fn new(
        store: &SharedStore,
        executor: &Executor,
        notifier: Option<&Notifier>,
        clock: Clock,
        messages: mpsc::Sender<Message>,
    ) -> Workers {
        let (queue, receiver) = mpsc::channel();
        Workers {
            shared: Arc::new(Shared {
                store: store.clone(),
                executor: executor.clone(),
                notifier: notifier.cloned(),
                leases: Arc::new(Mutex::new(HashMap::new())),
                lanes: Lanes::new(executor.jobs.max(1)),
                clock,
                idle: AtomicUsize::new(0),
                messages,
            }),
            queue: Some(queue),
            receiver: Arc::new(Mutex::new(receiver)),
            handles: Vec::new(),
        }
    }

    /// The leases of the runs handed out and not yet finished.
    pub fn leases(&self) -> &Leases {
        &self.shared.leases
    }

    /// Hands a claimed run to an idle worker, starting one when none is idle.
    pub fn dispatch(&mut self, job: Job) {
        // The stored deadline, on the monotonic clock.
        let lease = self.shared.executor.lease.as_secs().max(1) as i64;
        let now = self.shared.clock.now();
        let left = job.run.lease().map(|l| l.until).unwrap_or(now + lease) - now;
        let until = Instant::now() + Duration::from_secs(left.max(0) as u64);
        if let Ok(mut leases) = self.shared.leases.lock() {
            leases.insert(
                job.run.run_id.clone(),
                Slot::new(job.token().to_string(), until),
            );
        }
        // The main loop keeps fewer than `jobs` executors in flight and the
        // lanes let at most `jobs` workers deliver, so below this limit a
        // worker is always idle or can be started.
        let limit = 2 * self.shared.executor.jobs.max(1);
        let took_idle = self
            .shared
            .idle
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if !took_idle && self.handles.len() < limit {
            self.spawn_worker();
        }
        if let Some(queue) = &self.queue {
            let _ = queue.send(job);
        }
    }

    fn spawn_worker(&mut self) {
        let (shared, receiver) = (self.shared.clone(), self.receiver.clone());
        self.handles.push(std::thread::spawn(move || {
            let mut store = shared.store.handle();
            loop {
                let job = match receiver.lock() {
                    Ok(r) => r.recv(),
                    Err(_) => return,
                };
                let Ok(job) = job else { return };
                let (finished, to_deliver) = run_one(store.as_mut(), &shared, &job);
                if let Ok(mut l) = shared.leases.lock() {
                    l.remove(&job.run.run_id);
                }
                let _ = shared.messages.send(Message::Finished {
                    run_id: job.run.run_id.clone(),
                    result: finished.map(Box::new),
                });
                if let (Some((notice, token, told)), Some(notifier)) =
                    (to_deliver, &shared.notifier)
                {
                    let delivery = deliver::deliver_claimed(
                        store.as_mut(),
                        notifier,
                        &notice,
                        &token,
                        told,
                        &shared.clock,
                        deliver::RESULT_WAIT,
                    );
                    shared.lanes.release();
                    match delivery {
                        Ok(d) => {
                            let _ = shared.messages.send(Message::Delivered(Box::new(d)));
                        }
                        Err(e) => {
                            let _ = shared.messages.send(Message::NoticeNotRecorded {
                                run_id: job.run.run_id.clone(),
                                error: e.busy_during("recording a notice's delivery"),
                            });
                        }
                    }
                }
                shared.idle.fetch_add(1, Ordering::AcqRel);
            }
        }));
    }

    /// Waits for every worker (and the notices they are delivering).
    pub fn join(mut self) {
        self.queue = None;
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

/// Runs the jobs (a continuation's `approve --here`) to the end, renewing
/// their leases; returns what happened, in completion order.
pub fn run_jobs(
    shared: &SharedStore,
    executor: &Executor,
    notifier: Option<&Notifier>,
    jobs: Vec<Job>,
    clock: Clock,
    on_finish: &mut dyn FnMut(&Finished),
) -> Result<Vec<Finished>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let keeper: &mut dyn Store = &mut shared.clone();
    let (sender, messages) = mpsc::channel();
    let mut workers = Workers::new(shared, executor, notifier, clock, sender);
    let mut pending = jobs.into_iter();
    let slots = executor.jobs.max(1);
    // The runs dispatched and not yet finished, by id: each is counted out
    // once, whatever else its worker reports.
    let mut in_flight = std::collections::HashSet::new();
    for job in pending.by_ref().take(slots) {
        in_flight.insert(job.run.run_id.clone());
        workers.dispatch(job);
    }
    let mut renewals = Renewals::new(executor.lease);
    let mut done = Vec::new();
    let mut first_error = None;
    while !in_flight.is_empty() {
        match messages.recv_timeout(renewals.wait()) {
            // Counted out once by run id; anything else changes nothing.
            Ok(Message::Finished { run_id, result }) if in_flight.remove(&run_id) => {
                match result {
                    Ok(f) => {
                        on_finish(&f);
                        done.push(*f);
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
                // A stop signal: what was not started stays parked.
                if crate::interrupt::received().is_none() {
                    if let Some(job) = pending.next() {
                        in_flight.insert(job.run.run_id.clone());
                        workers.dispatch(job);
                    }
                }
            }
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        renewals.renew_if_due(keeper, workers.leases(), &clock);
    }
    workers.join();
    match first_error {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

/// A notice this worker claimed in its outcome's transaction: the notice,
/// the claim's token, and what its notifier is told of, read there too.
type ToDeliver = (Notice, String, Option<deliver::Told>);

/// Runs one job to its recorded outcome. Returns the outcome and, when a
/// delivery lane was free, the notice claimed in the outcome's transaction
/// for this worker to deliver.
fn run_one(
    store: &mut dyn Store,
    shared: &Shared,
    job: &Job,
) -> (Result<Finished>, Option<ToDeliver>) {
    // Removed when this function returns: the run is settled by then.
    let endpoint = child::open_endpoint(&shared.leases, job);
    let reports = child::Reports {
        store: &mut *store,
        clock: &shared.clock,
    };
    let (result, gate_failed) = child::gate_then_execute(
        endpoint.as_ref(),
        &shared.executor,
        &shared.leases,
        job,
        reports,
    );
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("before_outcome");
    let clock = &shared.clock;
    let now = clock.now();
    if matches!(result, Err(Failure::NotSpawned)) {
        let taken = store.write(|tx| {
            release::take_back(tx, &job.task, &job.run, job.token(), clock.now().max(now))
        });
        let finished = taken.map(|()| Finished::Released {
            run: job.run.clone(),
        });
        return (finished, None);
    }
    let (mut outcome, not_started) = child::outcome_of_result(&result);
    // What the run reported as it went is counted already.
    outcome.usage = super::leases::left_to_count(
        &shared.leases,
        &job.run.run_id,
        std::mem::take(&mut outcome.usage),
    );
    if let Some(words) = gate_failed {
        outcome.summary = Some(crate::limits::gate::failed_open_summary(
            &words,
            outcome.summary.as_deref(),
        ));
    }
    if lease_lost(&shared.leases, &job.run.run_id) {
        return (lost(store, job, result.ok().map(|(r, _)| r), now), None);
    }
    let lane = NoticeLane::reserve(shared, now);
    let recorded = record_outcome(store, shared, job, &outcome, lane.claim(), now);
    // Settled (or not recordable): `lease check` answers 5 from now on.
    end_lease(&shared.leases, &job.run.run_id);
    drop(endpoint);
    let (notice, told) = match recorded {
        Ok(recorded) => recorded,
        Err(e) if deliver::is_conflict(&e) => {
            lane.release(shared, false);
            return (lost(store, job, result.ok().map(|(r, _)| r), now), None);
        }
        Err(e) => {
            lane.release(shared, false);
            return (Err(e.busy_during("recording an outcome")), None);
        }
    };
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_outcome");
    // Claimed in the outcome's transaction (unless an earlier notice of
    // the run was still being sent: then it waits as pending).
    let to_deliver = match &lane.token {
        Some(t) if notice.state == DeliveryState::Sending => {
            Some((notice.clone(), t.clone(), told))
        }
        _ => None,
    };
    lane.release(shared, to_deliver.is_some());
    let run = match settled_run(job, &outcome, now) {
        Ok(run) => run,
        Err(e) => return (Err(e), to_deliver),
    };
    let finished = match not_started {
        Some(error) => Finished::NotStarted { run, error, notice },
        None => Finished::Recorded {
            run,
            outcome,
            notice,
        },
    };
    (Ok(finished), to_deliver)
}

/// A delivery lane this worker reserved to send its run's notice right
/// after the outcome, with the claim that rides in the outcome's
/// transaction (one durable commit fewer per run).
struct NoticeLane<'a> {
    notifier: Option<&'a Notifier>,
    token: Option<String>,
    deadline: i64,
}

impl<'a> NoticeLane<'a> {
    /// Reserves a lane when one is free; a tick told to stop sends nothing
    /// more and leaves the notice pending.
    fn reserve(shared: &'a Shared, now: i64) -> NoticeLane<'a> {
        let notifier = shared
            .notifier
            .as_ref()
            .filter(|_| crate::interrupt::received().is_none())
            .filter(|_| shared.lanes.try_reserve());
        NoticeLane {
            notifier,
            token: notifier.map(|_| uuid::Uuid::new_v4().to_string()),
            deadline: notifier.map_or(0, |n| now + deliver::deadline_seconds(n)),
        }
    }

    fn claim(&self) -> Option<NoticeClaim<'_>> {
        self.token.as_deref().map(|token| NoticeClaim {
            token,
            deadline: self.deadline,
        })
    }

    /// Gives the lane back, unless it is kept to deliver the notice.
    fn release(&self, shared: &Shared, keep: bool) {
        if self.notifier.is_some() && !keep {
            shared.lanes.release();
        }
    }
}

/// Records the outcome under the run's lease, in a transaction it may share
/// with other workers' outcomes (one commit for all: `write_together`); it
/// returns once the outcome is committed, before its notice goes out. A
/// database busy past busy_timeout must not turn a finished run into an
/// unknown one: the write is tried again while the lease holds.
fn record_outcome(
    store: &mut dyn Store,
    shared: &Shared,
    job: &Job,
    outcome: &Outcome,
    claim: Option<NoticeClaim>,
    now: i64,
) -> Result<(Notice, Option<deliver::Told>)> {
    let clock = shared.clock;
    let claim = claim.map(|c| (c.token.to_string(), c.deadline));
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (run, outcome, claim) = (job.run.clone(), outcome.clone(), claim.clone());
        let result = store.write_together(move |tx| {
            // The lease is judged by the time once the write lock is held.
            let now = clock.now().max(now);
            let token = run.lease().map_or("", |l| l.token.as_str());
            let claim = claim.as_ref().map(|(token, deadline)| NoticeClaim {
                token,
                deadline: *deadline,
            });
            let notice = settle::settle(
                tx,
                &run,
                RunStatus::Running,
                Some(token),
                &outcome,
                "agentcron:tick",
                now,
                claim,
            )?;
            // A notice claimed here is sent right after the commit: what
            // its notifier is told of is read now, not in a transaction
            // of its own.
            let told = match (&claim, notice.state) {
                (Some(_), DeliveryState::Sending) => Some(deliver::read_told(tx, &notice)?),
                _ => None,
            };
            Ok((notice, told))
        });
        let retry = attempts < 10 && !lease_lost(&shared.leases, &job.run.run_id);
        match result {
            Err(e) if retry && is_busy(&e) => continue,
            // The connection broke (a database server restarting): the
            // outcome is known, so record it on a new connection (the
            // shared store opens one) while the lease still holds rather
            // than leave the run to become unknown.
            Err(e) if retry && crate::error::is_connection_lost(&e) => {
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
            other => return other,
        }
    }
}

/// The job's run as its outcome left it.
fn settled_run(job: &Job, outcome: &Outcome, now: i64) -> Result<Run> {
    let mut run = job.run.clone();
    run.state = outcome.state_after(&job.run, now)?;
    run.summary = outcome.summary.clone();
    run.reason = outcome.reason.clone();
    run.stderr_tail = outcome.stderr.clone().or(run.stderr_tail);
    Ok(run)
}

fn is_busy(err: &anyhow::Error) -> bool {
    crate::error::classify(err).0 == crate::error::ErrorKind::Busy
}

/// The lease is gone: keep what the executor said in the audit trail (it
/// helps whoever reconciles the run) but change no run.
fn lost(
    store: &mut dyn Store,
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
        notify: None,
        usage: crate::limits::Usage::default(),
    });
    store.write(|tx| {
        tx.append_event(&Event::of_run(
            AuditAction::OutcomeDiscarded,
            &job.run,
            "agentcron:tick",
            now,
            json!({"reason": "lease lost", "executor_status": format!("{:?}", claimed.status),
                   "summary": claimed.summary}),
        ))
    })?;
    Ok(Finished::LeaseLost {
        run: job.run.clone(),
        claimed,
    })
}
