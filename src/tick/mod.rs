//! The tick algorithm (docs/CONTRACT.md §6), in its order, each write its own
//! IMMEDIATE transaction:
//! 1. expired leases → unknown;  2. expired delivery attempts → unknown,
//!    notices never sent past `--delivery-give-up` → undeliverable;
//! 3. expired continuations → failed;
//! 4. claims, work-conserving: whenever one of the `--jobs` slots is free,
//!    the next due run (round robin over tenants) is claimed and its
//!    executor starts at once; due work that cannot start now is marked as
//!    seen, so the wait for a slot never counts as lateness;
//! 5. notices go out alongside, on their own lanes;
//! 6. leases renewed every lease/3; outcomes recorded under a live lease.
//!
//! Claim (transaction) → execute (no transaction held) → finish
//! (transaction) → deliver. A tick that dies leaves its runs to step 1 of a
//! later tick; nothing is ever replayed.
//!
//! A tick never hangs: the main loop counts every executor it started out
//! exactly once, by run id, and ends when none is in flight and no notice
//! lane runs. A write that fails once the tick has changed something is
//! reported with what the tick did (`TickSummary::problems`), not as
//! "nothing changed". A stop signal ends claiming; the workers kill their
//! children and settle the runs `unknown` ("tick interrupted").

pub mod claim;
pub mod deliver;
pub mod execute;
pub mod notice_policy;
pub mod queue;
pub mod release;
pub mod settle;

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::clock::Clock;
use crate::error::{BusyStep, CmdError};
use crate::model::{DeliveryState, Event, RunStatus};
use crate::store::{shared::SharedStore, Agenda, Store};

pub use deliver::Notifier;
pub use execute::Executor;

/// Meta keys: the uid the last tick's runs ran as, and the uid that held
/// the store then (`RunAuthority`).
pub const RUNS_UID: &str = "runs_uid";
pub const STORE_UID: &str = "store_uid";

/// Ticks further apart than this mean system cron was not running.
pub const SCHEDULER_GAP_SECONDS: i64 = 300;

/// Decisions other than `running` one tick makes at most, so that a store
/// with a huge backlog is drained over several ticks, each bounded in time.
pub const MAX_DECISIONS: usize = 1000;

/// Due tasks one pass of marking looks at.
const MARK_LIMIT: u32 = 20_000;

/// How often a tick that is out of capacity marks newly due work as seen,
/// and how often one with a free slot looks for newly due work.
const RECHECK: Duration = Duration::from_secs(1);

pub struct TickOptions {
    pub tenant: Option<String>,
    pub executor: Executor,
    pub notifier: Option<Notifier>,
    pub max_runs: usize,
    /// Runs `running` in the whole store at most (every tick of the host).
    pub max_running: Option<u64>,
    /// A notice still not sent this long after it was created is undeliverable.
    pub delivery_give_up: Duration,
    pub dry_run: bool,
    /// This host's name, recorded with this build at each tick for
    /// `status` (docs/CONTRACT.md §21).
    pub host: String,
    /// Who the runs run as, against who holds the store (recorded for
    /// `status`, docs/CONTRACT.md §19).
    pub authority: RunAuthority,
}

/// Which task an event concerns, so that every line cron mails names it
/// as well as the run: "digest (1a2b3c4d)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub task_id: String,
    pub name: Option<String>,
}

impl TaskRef {
    pub fn of(task: &crate::model::Task) -> TaskRef {
        TaskRef {
            task_id: task.task_id.clone(),
            name: task.payload.name.clone(),
        }
    }

    /// The task of `run_id`, when the run and its task can still be read.
    pub fn of_run(tx: &mut dyn crate::store::Tx, run_id: &str) -> Result<Option<TaskRef>> {
        let Some(run) = tx.run(run_id)? else {
            return Ok(None);
        };
        Ok(match tx.task(&run.task_id)? {
            Some(Ok(task)) => Some(TaskRef::of(&task)),
            _ => Some(TaskRef {
                task_id: run.task_id,
                name: None,
            }),
        })
    }

    /// "name (1a2b3c4d)", or the short id alone for a task with no name.
    pub fn label(&self) -> String {
        let id = crate::model::short_id(&self.task_id);
        match &self.name {
            Some(name) => format!("{name} ({id})"),
            None => id.to_string(),
        }
    }
}

/// The unix users behind a tick's runs and its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAuthority {
    /// The uid executor and notifier run as: the tick's own, or the user
    /// `--run-as` names.
    pub runs_uid: u32,
    /// The uid that holds the store's authority: the SQLite file's owner;
    /// on PostgreSQL the tick's own uid, whose environment and files hold
    /// the credentials.
    pub store_uid: u32,
}

impl RunAuthority {
    /// Whether a run can reach the store with the store's own authority:
    /// it runs as the user who holds it, or as root.
    pub fn runs_hold_store(self) -> bool {
        self.runs_uid == self.store_uid || self.runs_uid == 0
    }
}

/// Something the tick did, reported to the person (or script) as it happens.
#[derive(Debug, Clone)]
pub enum TickEvent {
    SchedulerGap {
        previous: i64,
        now: i64,
        due_tasks: i64,
    },
    LeaseExpired {
        run: crate::model::Run,
        task: Option<Box<crate::model::Task>>,
    },
    NoticeExpired {
        notice: crate::model::Notice,
        task: Option<TaskRef>,
    },
    NoticeUndeliverable {
        notice: crate::model::Notice,
        task: Option<TaskRef>,
    },
    Delivered(deliver::Delivery),
    NoticesUndelivered {
        count: u64,
    },
    ContinuationExpired {
        run: crate::model::Run,
        task: Option<TaskRef>,
    },
    Decided {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    /// An approved continuation claimed back to `running`.
    Continued {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    /// Due work this tick could not start now, marked as seen in time.
    Queued {
        count: usize,
        reason: &'static str,
    },
    Quarantined {
        task_id: String,
        problem: String,
    },
    Finished(Box<execute::Finished>),
    /// Dry run only: a run whose lease expired, which step 1 would freeze.
    WouldExpireLease {
        run: crate::model::Run,
        task: Option<Box<crate::model::Task>>,
    },
    /// Dry run only: an approved continuation step 4 would run.
    WouldContinue {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    /// Dry run only: what step 4 would decide.
    WouldDecide {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
}

/// The tick's verdict for its exit status.
#[derive(Debug, Default)]
pub struct TickSummary {
    /// An executor or notifier could not be started.
    pub start_failures: usize,
    /// Runs this tick started (their executors were spawned or tried).
    pub started: usize,
    /// Runs this tick decided without starting (missed, skipped, quarantine).
    pub decided: usize,
    /// Writes that failed after the tick had changed something: each left
    /// its part for a later tick (a claim not made, a notice result not
    /// recorded), and none undoes what the tick did.
    pub problems: Vec<anyhow::Error>,
    /// The stop signal that ended the tick early.
    pub interrupted: Option<i32>,
}

const ACTOR: &str = "agentcron:tick";

pub fn run(
    shared: &SharedStore,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<TickSummary> {
    let store: &mut dyn Store = &mut shared.clone();
    if options.dry_run {
        return dry_run(store, options, clock, report);
    }
    let started = Instant::now();
    let mut summary = TickSummary::default();
    // Most ticks find nothing to do: one read says so, and they take no
    // write transaction for steps 1-4.
    let agenda = agenda(store, options, clock.now()).busy_during("looking for due work")?;
    if agenda.claims && options.executor.argv.is_none() {
        // Claiming would only burn the runs as failed for a missing flag.
        return Err(CmdError::usage(
            "runs are due but no executor is configured; nothing was claimed",
        )
        .with_hint("pass --executor CMD or set AGENTCRON_EXECUTOR (`agentcron crontab` prints the line cron needs)")
        .into());
    }
    // An idle tick's work is done by now: its duration goes with its
    // record, one small write (no fsync) instead of two.
    let idle = (!agenda.expiries && !agenda.claims).then(|| started.elapsed());
    let recorded =
        record_tick(store, options, clock.now(), idle, report).busy_during("recording the tick")?;
    let mut notices_waiting = recorded.notices_waiting;
    if agenda.claims || agenda.expiries || notices_waiting {
        // Under `--run-as` through sudo: refused before anything is claimed
        // or sent.
        preflight(options)?;
    }
    // Runs frozen or failed here have notices: they go out in this tick.
    let mut changed = false;
    if agenda.expiries {
        let expired =
            expire(store, options, clock, report).busy_during("expiring leases and notices")?;
        notices_waiting |= expired.notices_added;
        changed = expired.changed;
    }

    // From here on, nothing may stop this tick from executing what it
    // claimed: a busy database or a closed stdout is remembered and
    // reported at the end.
    let (sender, messages) = mpsc::channel();
    let mut lane = Lane {
        notifier: options.notifier.as_ref(),
        started: None,
        running: false,
        sender: sender.clone(),
    };
    if notices_waiting {
        lane.start(shared, options, clock);
    }
    let mut workers = execute::Workers::new(
        shared,
        &options.executor,
        options.notifier.as_ref(),
        clock,
        sender,
    );
    let mut scheduler = Scheduler {
        options,
        clock,
        round_robin: queue::RoundRobin::default(),
        in_flight: HashSet::new(),
        started: 0,
        decisions: 0,
        // Nothing was due a moment ago: the first claim would find nothing.
        nothing_due: !agenda.claims,
        at_limit: false,
        last_mark: None,
        last_note: None,
        problems: Vec::new(),
    };
    let mut renewals = execute::Renewals::new(options.executor.lease);
    loop {
        let decided_before = scheduler.decisions;
        if let Err(e) = scheduler.claim(store, &mut workers, report) {
            if !changed && scheduler.started == 0 && scheduler.decisions == 0 {
                lane.join();
                workers.join();
                return Err(e);
            }
            scheduler.problems.push(e);
            scheduler.nothing_due = true;
        }
        // Missed and skipped runs have notices: they go out in this tick.
        if scheduler.decisions > decided_before {
            lane.start(shared, options, clock);
        }
        scheduler.mark_if_out_of_capacity(store, report);
        if scheduler.in_flight.is_empty() && scheduler.finished_claiming() {
            if !lane.running {
                break;
            }
            lane.executors_done();
        }
        let wait = renewals.wait().min(RECHECK);
        match messages.recv_timeout(wait) {
            // Each executor is counted out once, whatever else its worker
            // reports (a run id not in flight changes nothing; the loop
            // goes on to the renewals all the same).
            Ok(execute::Message::Finished { run_id, result })
                if scheduler.in_flight.remove(&run_id) =>
            {
                // A free slot: what became due meanwhile may be claimed.
                scheduler.nothing_due = false;
                scheduler.at_limit = false;
                match result {
                    Ok(f) => {
                        if matches!(*f, execute::Finished::NotStarted { .. }) {
                            summary.start_failures += 1;
                        }
                        if f.notice()
                            .is_some_and(|n| n.state == DeliveryState::Pending)
                        {
                            lane.start(shared, options, clock);
                        }
                        scheduler.tell(report, &TickEvent::Finished(f));
                    }
                    Err(e) => scheduler.problems.push(e),
                }
            }
            Ok(execute::Message::Finished { .. }) => {}
            Ok(execute::Message::Delivered(delivery)) => {
                scheduler.delivered(*delivery, &mut summary, report);
            }
            Ok(execute::Message::NoticeNotRecorded { run_id, error }) => {
                scheduler.problems.push(notice_not_recorded(&run_id, error));
            }
            Ok(execute::Message::LaneDone(result)) => {
                lane.running = false;
                if let Err(e) = result {
                    scheduler.problems.push(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Time passes: occurrences may have come due, the limit
                // may have room again.
                if !scheduler.in_flight.is_empty() || lane.running {
                    scheduler.nothing_due = false;
                    scheduler.at_limit = false;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        renewals.renew_if_due(store, workers.leases(), &clock);
    }
    lane.join();
    workers.join();
    // What the workers and the lane said while the loop was ending: the
    // notices workers delivered after their slots were freed.
    while let Ok(message) = messages.try_recv() {
        match message {
            execute::Message::Delivered(delivery) => {
                scheduler.delivered(*delivery, &mut summary, report);
            }
            execute::Message::NoticeNotRecorded { run_id, error } => {
                scheduler.problems.push(notice_not_recorded(&run_id, error));
            }
            execute::Message::Finished { result: Err(e), .. }
            | execute::Message::LaneDone(Err(e)) => scheduler.problems.push(e),
            _ => {}
        }
    }
    summary.started = scheduler.started;
    summary.decided = scheduler.decisions;
    summary.interrupted = crate::interrupt::received();
    summary.problems = scheduler.problems;
    let changed = changed || summary.started > 0 || summary.decided > 0;
    if !changed {
        // Nothing was claimed or expired: the first failure is the tick's.
        if let Some(e) = summary.problems.drain(..).next() {
            return Err(e);
        }
    }
    if let Err(e) = announce_undelivered(store, options, report)
        .busy_during("announcing notices that wait for a notifier")
    {
        summary.problems.push(e);
    }
    // For `metrics`. Only a number for monitoring: a failure to store it
    // must not turn a tick that did its work into a failed one.
    if !recorded.duration {
        let seconds = tick_seconds(started.elapsed());
        let _ = store.write_relaxed(|tx| tx.set_meta("last_tick_seconds", &seconds));
    }
    Ok(summary)
}

/// Refuses (exit 2) when a child could not be started as the `--run-as`
/// user without a password (docs/CONTRACT.md §19).
fn preflight(options: &TickOptions) -> Result<()> {
    let executor = options
        .executor
        .argv
        .as_ref()
        .map(|a| (&options.executor.launch, a));
    let notifier = options.notifier.as_ref().map(|n| (&n.launch, &n.argv));
    for (launch, argv) in executor.into_iter().chain(notifier) {
        launch
            .preflight(&argv[0])
            .map_err(|e| CmdError::usage(format!("{e}; nothing was claimed")))?;
    }
    Ok(())
}

/// The pending-notice lane, started the first time something waits.
struct Lane<'a> {
    notifier: Option<&'a Notifier>,
    started: Option<deliver::PendingLane>,
    running: bool,
    sender: mpsc::Sender<execute::Message>,
}

impl Lane<'_> {
    fn start(&mut self, shared: &SharedStore, options: &TickOptions, clock: Clock) {
        let Some(notifier) = self.notifier else {
            return;
        };
        if self.started.is_some() {
            return;
        }
        self.started = Some(deliver::PendingLane::start(
            shared,
            notifier,
            options.tenant.clone(),
            clock,
            self.sender.clone(),
        ));
        self.running = true;
    }

    fn executors_done(&self) {
        if let Some(lane) = &self.started {
            lane.executors_done();
        }
    }

    fn join(&mut self) {
        if let Some(lane) = self.started.take() {
            lane.join();
        }
    }
}

/// Step 4's state within one tick.
struct Scheduler<'a> {
    options: &'a TickOptions,
    clock: Clock,
    round_robin: queue::RoundRobin,
    /// The runs whose executors this tick started and that have not
    /// finished, by run id.
    in_flight: HashSet<String>,
    /// Runs this tick started (at most `--max-runs`).
    started: usize,
    /// Decisions that started nothing (missed, skipped).
    decisions: usize,
    /// The last claim found nothing due.
    nothing_due: bool,
    /// The last claim found `--max-running` runs running.
    at_limit: bool,
    last_mark: Option<Instant>,
    /// When `note_if_locked` last looked.
    last_note: Option<Instant>,
    /// Failures after the tick began its work, reported at its end.
    problems: Vec<anyhow::Error>,
}

impl Scheduler<'_> {
    fn free_slots(&self) -> usize {
        let slots = self
            .options
            .executor
            .jobs
            .max(1)
            .saturating_sub(self.in_flight.len());
        slots.min(self.options.max_runs.saturating_sub(self.started))
    }

    /// Whether this tick will claim nothing more.
    fn finished_claiming(&self) -> bool {
        crate::interrupt::received().is_some()
            // Nothing is claimed for a tick that could not run it (the
            // agenda refused it; this keeps what came due since unclaimed).
            || self.options.executor.argv.is_none()
            || self.nothing_due
            || self.at_limit
            || self.started >= self.options.max_runs
            || self.decisions >= MAX_DECISIONS
    }

    fn tell(&mut self, report: &mut dyn FnMut(&TickEvent) -> Result<()>, event: &TickEvent) {
        if let Err(e) = report(event) {
            self.problems.push(e);
        }
    }

    /// A notice went out (or did not); a notifier that would not start
    /// makes the tick exit 1.
    fn delivered(
        &mut self,
        delivery: deliver::Delivery,
        summary: &mut TickSummary,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        summary.start_failures += usize::from(delivery.notifier_did_not_start());
        self.tell(report, &TickEvent::Delivered(delivery));
    }

    /// Claims while slots are free and work is due, handing each started
    /// run to a worker as soon as its claim commits.
    fn claim(
        &mut self,
        store: &mut dyn Store,
        workers: &mut execute::Workers,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) -> Result<()> {
        while self.free_slots() > 0 && !self.finished_claiming() {
            let settings = claim::ClaimSettings {
                now: self.clock.now(),
                lease_seconds: self.options.executor.lease.as_secs().max(1) as i64,
                runner: crate::process::runner_identity(),
            };
            let slots = self.free_slots();
            let tenant = self.options.tenant.as_deref();
            let rr = &mut self.round_robin;
            let max_running = self.options.max_running;
            let batch = store
                .write(|tx| {
                    let batch = queue::claim_batch(tx, rr, tenant, slots, max_running, settings);
                    // Inside the claim's transaction, before its commit.
                    #[cfg(feature = "test-hooks")]
                    crate::hooks::at("during_claim");
                    batch
                })
                .busy_during("claiming due runs")?;
            // Claimed and committed; no executor started yet.
            #[cfg(feature = "test-hooks")]
            crate::hooks::at("after_claim");
            for claimed in batch.claimed {
                match claimed {
                    claim::Claimed::Quarantined { task_id, problem } => {
                        self.decisions += 1;
                        self.tell(report, &TickEvent::Quarantined { task_id, problem });
                    }
                    claim::Claimed::Continued {
                        task,
                        run,
                        continuation,
                        previous,
                    } => {
                        self.started += 1;
                        self.in_flight.insert(run.run_id.clone());
                        self.tell(
                            report,
                            &TickEvent::Continued {
                                task: task.clone(),
                                run: (*run).clone(),
                            },
                        );
                        workers.dispatch(execute::Job {
                            task: *task,
                            token: run.lease_token.clone().unwrap_or_default(),
                            run: *run,
                            continuation,
                            previous,
                        });
                    }
                    claim::Claimed::Planned {
                        task,
                        plan,
                        previous,
                    } => {
                        for run in plan.runs {
                            if run.status == RunStatus::Running {
                                self.started += 1;
                                self.in_flight.insert(run.run_id.clone());
                                workers.dispatch(execute::Job {
                                    task: (*task).clone(),
                                    token: run.lease_token.clone().unwrap_or_default(),
                                    run: run.clone(),
                                    continuation: serde_json::Value::Null,
                                    previous: previous.clone(),
                                });
                            } else {
                                self.decisions += 1;
                            }
                            self.tell(
                                report,
                                &TickEvent::Decided {
                                    task: task.clone(),
                                    run,
                                },
                            );
                        }
                    }
                }
            }
            match batch.stop {
                queue::Stop::NothingDue => {
                    self.nothing_due = true;
                    self.note_if_locked(store, report);
                }
                queue::Stop::AtLimit => self.at_limit = true,
                queue::Stop::Enough => {}
            }
        }
        Ok(())
    }

    /// When due work is left that this tick cannot start now, marks it as
    /// seen (at most once a second): it then runs later whatever the wait.
    fn mark_if_out_of_capacity(
        &mut self,
        store: &mut dyn Store,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        if self.nothing_due && !self.at_limit {
            return;
        }
        let reason = if self.at_limit {
            "--max-running runs are running"
        } else if self.started >= self.options.max_runs {
            "this tick started --max-runs runs"
        } else if self.free_slots() == 0 {
            "every --jobs slot is busy"
        } else {
            return;
        };
        if self.last_mark.is_some_and(|t| t.elapsed() < RECHECK) {
            return;
        }
        self.last_mark = Some(Instant::now());
        let now = self.clock.now();
        let tenant = self.options.tenant.as_deref();
        // Most passes find nothing new: look in a read snapshot before
        // taking the write lock.
        match store.read(|tx| tx.unmarked_due(now, tenant, 1)) {
            Ok(due) if due.is_empty() => return,
            Ok(_) => {}
            Err(_) => return,
        }
        match store.write(|tx| queue::mark_queued(tx, tenant, now, MARK_LIMIT)) {
            Ok(0) => {}
            Ok(count) => self.tell(report, &TickEvent::Queued { count, reason }),
            // Not fatal: a later pass (or tick) marks them while within grace.
            Err(e) if crate::error::classify(&e).0 == crate::error::ErrorKind::Busy => {}
            Err(e) => self.problems.push(e),
        }
    }

    /// The claims found nothing due: any due work still unclaimed was
    /// skipped because another session held its row locked (PostgreSQL).
    /// It was seen due all the same; note it (at most once a second, one
    /// read when there is none).
    fn note_if_locked(
        &mut self,
        store: &mut dyn Store,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        if !store.skips_locked_rows() || self.last_note.is_some_and(|t| t.elapsed() < RECHECK) {
            return;
        }
        self.last_note = Some(Instant::now());
        let now = self.clock.now();
        let tenant = self.options.tenant.as_deref();
        match store.read(|tx| tx.unmarked_due(now, tenant, 1)) {
            Ok(due) if due.is_empty() => return,
            Ok(_) => {}
            Err(_) => return,
        }
        match store.write(|tx| queue::note_locked(tx, tenant, now, MARK_LIMIT)) {
            Ok(0) => {}
            Ok(count) => self.tell(
                report,
                &TickEvent::Queued {
                    count,
                    reason: queue::LOCKED_ROWS,
                },
            ),
            Err(e) if crate::error::classify(&e).0 == crate::error::ErrorKind::Busy => {}
            Err(e) => self.problems.push(e),
        }
    }
}

/// A notice whose notifier ran but whose result could not be stored.
fn notice_not_recorded(run_id: &str, error: anyhow::Error) -> anyhow::Error {
    error.context(format!(
        "the notice of run {} was handed to the notifier, but the result could not be recorded; \
         a later tick freezes it as unknown at its deadline (it is never sent again)",
        crate::model::short_id(run_id)
    ))
}

/// Whether steps 1-3 and step 4 have anything to do at `now`.
fn agenda(store: &mut dyn Store, options: &TickOptions, now: i64) -> Result<Agenda> {
    let give_up_before = now - options.delivery_give_up.as_secs() as i64;
    store.read(|tx| tx.agenda(now, give_up_before, options.tenant.as_deref()))
}

/// What steps 1–3 changed.
struct Expired {
    /// Runs were settled: their notices wait to be sent.
    notices_added: bool,
    /// Anything at all was written.
    changed: bool,
}

/// Freezes as `unknown` every running run (of `tenant`, or all) whose lease
/// has passed, with its event and notice, in the caller's transaction: the
/// tick's first step, and `reconcile`'s before it lists or settles, so runs
/// left `running` by a restored copy can be settled before ticks restart.
pub fn freeze_expired_leases(
    tx: &mut dyn crate::store::Tx,
    now: i64,
    tenant: Option<&str>,
) -> Result<Vec<(crate::model::Run, Option<crate::model::Task>)>> {
    let runs = tx.expire_leases(now, tenant)?;
    let mut out = Vec::new();
    for run in runs {
        let task = tx.task(&run.task_id)?.and_then(Result::ok);
        tx.append_event(&event(
            now,
            &run,
            "lease_expired",
            json!({"lease_until": run.lease_until}),
        ))?;
        settle::add_notice(tx, &run, task.as_ref(), now, None)?;
        out.push((run, task));
    }
    Ok(out)
}

/// Steps 1–3: what expired since the last tick.
fn expire(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<Expired> {
    let tenant = options.tenant.as_deref();
    // 1. Expired leases: the outcome is uncertain, so the run is frozen.
    let now = clock.now();
    let expired = store.write(|tx| freeze_expired_leases(tx, now, tenant))?;
    let mut notices_added = !expired.is_empty();
    let mut changed = notices_added;
    for (run, task) in expired {
        report(&TickEvent::LeaseExpired {
            run,
            task: task.map(Box::new),
        })?;
    }

    // 2. Delivery attempts past their deadline: maybe sent, never resent.
    // Notices the notifier never took past the give-up age: never sent.
    let now = clock.now();
    let give_up_before = now - options.delivery_give_up.as_secs() as i64;
    let (expired, abandoned) = store.write(|tx| {
        let expired = tx.expire_notices(now, tenant)?;
        let named = |tx: &mut dyn crate::store::Tx, notices: Vec<crate::model::Notice>| {
            notices
                .into_iter()
                .map(|n| Ok((TaskRef::of_run(tx, &n.run_id)?, n)))
                .collect::<Result<Vec<_>>>()
        };
        for n in &expired {
            tx.append_event(&delivery_event(
                now,
                n,
                json!({"delivery_id": n.delivery_id, "state": "unknown",
                       "error": "delivery deadline passed"}),
            ))?;
        }
        let abandoned = tx.give_up_notices(give_up_before, now, tenant)?;
        for n in &abandoned {
            tx.append_event(&delivery_event(
                now,
                n,
                json!({"delivery_id": n.delivery_id, "state": "undeliverable",
                       "error": n.last_error, "attempts": n.attempts}),
            ))?;
        }
        Ok((named(tx, expired)?, named(tx, abandoned)?))
    })?;
    changed |= !expired.is_empty() || !abandoned.is_empty();
    for (task, notice) in expired {
        report(&TickEvent::NoticeExpired { notice, task })?;
    }
    for (task, notice) in abandoned {
        report(&TickEvent::NoticeUndeliverable { notice, task })?;
    }

    // 3. Continuations past their deadline fail; their notices go out with
    // the others.
    let now = clock.now();
    let parked = store.write(|tx| {
        let runs = tx.expired_continuations(now, tenant)?;
        for run in &runs {
            let outcome = settle::Outcome::settled(
                RunStatus::Failed,
                None,
                Some("continuation expired".into()),
            );
            settle::settle(tx, run, run.status, None, &outcome, ACTOR, now, None)?;
        }
        runs.into_iter()
            .map(|run| Ok((TaskRef::of_run(tx, &run.run_id)?, run)))
            .collect::<Result<Vec<_>>>()
    })?;
    notices_added |= !parked.is_empty();
    changed |= !parked.is_empty();
    for (task, run) in parked {
        report(&TickEvent::ContinuationExpired { run, task })?;
    }
    Ok(Expired {
        notices_added,
        changed,
    })
}

fn delivery_event(now: i64, n: &crate::model::Notice, detail: serde_json::Value) -> Event {
    Event {
        at: now,
        tenant_key: n.tenant_key.clone(),
        actor: ACTOR.into(),
        action: "delivery".into(),
        task_id: None,
        run_id: Some(n.run_id.clone()),
        detail,
    }
}

fn event(now: i64, run: &crate::model::Run, action: &str, detail: serde_json::Value) -> Event {
    Event {
        at: now,
        tenant_key: run.tenant_key.clone(),
        actor: ACTOR.into(),
        action: action.into(),
        task_id: Some(run.task_id.clone()),
        run_id: Some(run.run_id.clone()),
        detail,
    }
}

/// What `record_tick` found and wrote.
struct Recorded {
    /// Notices wait to be sent.
    notices_waiting: bool,
    /// The tick's duration is stored too: it was idle.
    duration: bool,
}

/// `last_tick_seconds`, as `metrics` reports it.
fn tick_seconds(elapsed: Duration) -> String {
    format!("{:.3}", elapsed.as_secs_f64())
}

/// Stores this tick's time (and its `--max-running`, for `status`);
/// reports a gap when the previous tick is old. A tick with nothing to do
/// (`idle_for`: how long it took to find that) stores its duration as well,
/// unless notices wait to be sent.
fn record_tick(
    store: &mut dyn Store,
    options: &TickOptions,
    now: i64,
    idle_for: Option<Duration>,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<Recorded> {
    let tenant = options.tenant.as_deref();
    // The heartbeat needs no fsync of its own: a power cut that loses it
    // loses nothing that matters, and the tick's first durable commit (a
    // claim, an outcome) syncs these frames too.
    let (gap, recorded) = store.write_relaxed(|tx| {
        let previous = tx.meta("last_tick_at")?.and_then(|v| v.parse::<i64>().ok());
        // A clock that went backwards must not move the record back.
        if previous.is_none_or(|p| now > p) {
            tx.set_meta("last_tick_at", &now.to_string())?;
        }
        tx.record_host(&options.host, &crate::store::schema::build(), now)?;
        let limit = options
            .max_running
            .map(|n| n.to_string())
            .unwrap_or_default();
        if tx.meta("max_running")?.unwrap_or_default() != limit {
            tx.set_meta("max_running", &limit)?;
        }
        // What `status` says of the deployment: the uids this tick's runs
        // ran as and that hold the store. Written when they change only.
        for (key, uid) in [
            (RUNS_UID, options.authority.runs_uid),
            (STORE_UID, options.authority.store_uid),
        ] {
            let uid = uid.to_string();
            if tx.meta(key)?.as_deref() != Some(uid.as_str()) {
                tx.set_meta(key, &uid)?;
            }
        }
        let waiting = options.notifier.is_some() && !tx.notices_to_send(now, tenant, 1)?.is_empty();
        let duration = match idle_for {
            Some(elapsed) if !waiting => {
                tx.set_meta("last_tick_seconds", &tick_seconds(elapsed))?;
                true
            }
            _ => false,
        };
        let gap = match previous {
            Some(previous) if now - previous > SCHEDULER_GAP_SECONDS => {
                let due_tasks = tx.due_count(now, tenant)?;
                tx.append_event(&Event {
                    at: now,
                    tenant_key: tenant.unwrap_or("*").to_string(),
                    actor: ACTOR.into(),
                    action: "scheduler_gap".into(),
                    task_id: None,
                    run_id: None,
                    detail: json!({"previous_tick": crate::wire::time(Some(previous)),
                                   "seconds": now - previous, "due_tasks": due_tasks}),
                })?;
                Some((previous, due_tasks))
            }
            _ => None,
        };
        Ok((
            gap,
            Recorded {
                notices_waiting: waiting,
                duration,
            },
        ))
    })?;
    if let Some((previous, due_tasks)) = gap {
        report(&TickEvent::SchedulerGap {
            previous,
            now,
            due_tasks,
        })?;
    }
    Ok(recorded)
}

/// Without a notifier, notices wait; say so once per notice.
fn announce_undelivered(
    store: &mut dyn Store,
    options: &TickOptions,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<()> {
    if options.notifier.is_some() {
        return Ok(());
    }
    let count = store.write(|tx| tx.announce_pending(options.tenant.as_deref()))?;
    if count > 0 {
        report(&TickEvent::NoticesUndelivered { count })?;
    }
    Ok(())
}

/// `tick --dry-run`: what this tick would do, from one read snapshot.
fn dry_run(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<TickSummary> {
    let now = clock.now();
    let tenant = options.tenant.as_deref();
    let lease_seconds = options.executor.lease.as_secs().max(1) as i64;
    let events = store.read(|tx| {
        let mut events = Vec::new();
        // Step 1 first, as the real tick: what it would freeze unknown.
        for run in tx.expired_leases(now, tenant)? {
            let task = tx.task(&run.task_id)?.and_then(Result::ok).map(Box::new);
            events.push(TickEvent::WouldExpireLease { run, task });
        }
        let limit = (options.max_runs + MAX_DECISIONS) as u32;
        let mut running = 0;
        for run in tx.approved_continuations(tenant, options.max_runs as u32)? {
            if let Some(Ok(task)) = tx.task(&run.task_id)? {
                running += 1;
                events.push(TickEvent::WouldContinue {
                    task: Box::new(task),
                    run,
                });
            }
        }
        for due in tx.due_tasks(now, tenant, limit)? {
            if running >= options.max_runs {
                break;
            }
            let settings = claim::ClaimSettings {
                now,
                lease_seconds,
                runner: None,
            };
            match claim::prepare(tx, &due, settings)? {
                Some(Ok((task, plan))) => {
                    for run in plan.runs {
                        running += usize::from(run.status == RunStatus::Running);
                        events.push(TickEvent::WouldDecide {
                            task: Box::new(task.clone()),
                            run,
                        });
                    }
                }
                Some(Err(corrupt)) => events.push(TickEvent::Quarantined {
                    task_id: corrupt.id,
                    problem: corrupt.problem,
                }),
                None => {}
            }
        }
        Ok(events)
    })?;
    for e in &events {
        report(e)?;
    }
    Ok(TickSummary::default())
}
