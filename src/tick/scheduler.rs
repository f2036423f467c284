//! Step 4 of a tick, claiming (docs/CONTRACT.md §6): work-conserving,
//! whenever one of the `--jobs` slots is free the next due run (round
//! robin over tenants) is claimed in its own transaction and handed to a
//! worker at once. Due work that cannot start now (`--jobs`, `--max-runs`,
//! `--max-running`, rows locked by another session) is marked as seen, so
//! the wait for a slot never counts as lateness.
//!
//! `work` is the tick's main loop around it (steps 4-6): it claims, hears
//! what the workers and the pending lane say (`execute::Message`), renews
//! the leases, and ends once every executor it started is counted out,
//! exactly once by run id, and no notice lane runs.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::clock::Clock;
use crate::error::BusyStep;
use crate::model::{DeliveryState, RunStatus};
use crate::store::{shared::SharedStore, Store, Tx};

use super::events::TickEvent;
use super::execute::Message;
use super::lane::Lane;
use super::{claim, deliver, execute, queue, TickOptions, TickSummary};

/// Decisions other than `running` one tick makes at most, so that a store
/// with a huge backlog is drained over several ticks, each bounded in time.
pub const MAX_DECISIONS: usize = 1000;

/// Due tasks one pass of marking looks at.
const MARK_LIMIT: u32 = 20_000;

/// How often a tick that is out of capacity marks newly due work as seen,
/// and how often one with a free slot looks for newly due work.
pub const RECHECK: Duration = Duration::from_secs(1);

/// The longest a claim made while other runs are in flight waits for one
/// of their outcomes (or another write of the tick) to carry it in the
/// same commit. Each finished run frees a slot, and the claim that fills it
/// would otherwise be a commit of its own. The slot stays empty that long
/// at most: with one host of 16 one-fifth-second runs (the executors the
/// bound), 10, 15, 20 and 25 ms gave 70, 69, 68 and 66 runs/s and 1.33,
/// 1.25, 1.20 and 1.13 commits a run; with four such hosts (the machine
/// the bound), 15 ms and more gave 188-198 runs/s against 162-165 at
/// 10 ms, and about one commit a run (issue 46, docs/PERFORMANCE.md).
const CLAIM_WAIT: Duration = Duration::from_millis(15);

/// The claim's wait as a share of the run that freed its slot: runs of a
/// few milliseconds end close together and share commits without waiting,
/// and a wait longer than they ran would mostly leave their slots empty.
const CLAIM_WAIT_SHARE: u32 = 13;

/// How long a claim waits for company: not at all with nothing in flight
/// (no outcome is coming: a tick's first claim, `--jobs 1`), else a
/// thirteenth of the last run's time (about 7.5 % of a slot's time), at
/// most `CLAIM_WAIT`.
fn claim_wait(others_in_flight: bool, last_run_took: Option<Duration>) -> Duration {
    match last_run_took {
        Some(took) if others_in_flight => (took / CLAIM_WAIT_SHARE).min(CLAIM_WAIT),
        _ => Duration::ZERO,
    }
}

/// What the tick had done before step 4.
pub struct Before {
    /// Steps 1-3 wrote something: a failure from here on is reported with
    /// what the tick did, not as the tick's.
    pub changed: bool,
    /// Notices wait to be sent: the pending lane starts at once.
    pub notices_waiting: bool,
    /// Nothing was due a moment ago.
    pub nothing_due: bool,
    /// An executor is configured, or the store has profiles whose tasks
    /// run their own (docs/CONTRACT.md §22).
    pub may_claim: bool,
}

/// Steps 4-6: claims while work is due and slots are free, runs the
/// executors, sends notices alongside, renews leases; returns once every
/// executor it started is counted out and no notice lane runs.
///
/// From here on, nothing may stop this tick from executing what it
/// claimed: a busy database or a closed stdout is remembered and reported
/// at the end (`TickSummary::problems`).
pub fn work(
    shared: &SharedStore,
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    before: Before,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<TickSummary> {
    let (sender, messages) = mpsc::channel();
    let mut lane = Lane::new(shared, options, clock, sender.clone());
    if before.notices_waiting {
        lane.start();
    }
    let notifier = options.notifier.as_ref();
    let mut workers = execute::Workers::new(shared, &options.executor, notifier, clock, sender);
    let mut scheduler = Scheduler::new(options, clock, &before);
    let mut summary = TickSummary::default();
    let mut renewals = execute::Renewals::new(options.executor.lease);
    loop {
        let decided_before = scheduler.decisions;
        if let Err(e) = scheduler.claim(store, &mut workers, report) {
            if !before.changed && scheduler.started == 0 && scheduler.decisions == 0 {
                lane.join();
                workers.join();
                return Err(e);
            }
            scheduler.problems.push(e);
            scheduler.nothing_due = true;
        }
        // Missed and skipped runs have notices: they go out in this tick.
        if scheduler.decisions > decided_before {
            lane.start();
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
            Ok(message) => {
                scheduler.heard(message, &mut lane, &mut summary, report);
                // Outcomes committed together free their slots together:
                // hear them all, so that one claim fills every slot.
                while let Ok(message) = messages.try_recv() {
                    scheduler.heard(message, &mut lane, &mut summary, report);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Time passes: occurrences may have come due, the limit
                // may have room again.
                if !scheduler.in_flight.is_empty() || lane.running {
                    scheduler.nothing_due = false;
                    scheduler.at_limit = None;
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
        scheduler.heard_late(message, &mut summary, report);
    }
    summary.started = scheduler.started;
    summary.decided = scheduler.decisions;
    summary.interrupted = crate::interrupt::received();
    summary.problems = scheduler.problems;
    Ok(summary)
}

/// Step 4's state within one tick.
pub struct Scheduler<'a> {
    options: &'a TickOptions,
    clock: Clock,
    /// Shared with the claim's write, which may run on another thread.
    round_robin: std::sync::Arc<std::sync::Mutex<queue::RoundRobin>>,
    /// The runs whose executors this tick started and that have not
    /// finished, by run id, with when each was handed to a worker.
    in_flight: HashMap<String, Instant>,
    /// How long the last run counted out took, from its hand-off.
    last_run_took: Option<Duration>,
    /// Runs this tick started (at most `--max-runs`, when given).
    started: usize,
    /// Decisions that started nothing (missed, skipped).
    decisions: usize,
    /// The last claim found nothing due.
    nothing_due: bool,
    /// See `Before::may_claim`.
    may_claim: bool,
    /// This tick said already that tasks wait for their profile's capacity.
    told_profile_full: bool,
    /// The last claim found a limit on running runs reached, and which.
    at_limit: Option<queue::HeldBack>,
    /// When this tick began: it claims for `--claim-for` from then.
    began: Instant,
    last_mark: Option<Instant>,
    /// When `note_if_locked` last looked.
    last_note: Option<Instant>,
    /// Failures after the tick began its work, reported at its end.
    problems: Vec<anyhow::Error>,
}

impl<'a> Scheduler<'a> {
    /// `before`: whether anything was due a moment ago (if not, the first
    /// claim would find nothing) and whether this tick may claim at all.
    fn new(options: &'a TickOptions, clock: Clock, before: &Before) -> Scheduler<'a> {
        Scheduler {
            options,
            clock,
            round_robin: Default::default(),
            in_flight: HashMap::new(),
            last_run_took: None,
            started: 0,
            decisions: 0,
            nothing_due: before.nothing_due,
            may_claim: before.may_claim,
            told_profile_full: false,
            at_limit: None,
            began: Instant::now(),
            last_mark: None,
            last_note: None,
            problems: Vec::new(),
        }
    }

    fn free_slots(&self) -> usize {
        let slots = self
            .options
            .executor
            .jobs
            .max(1)
            .saturating_sub(self.in_flight.len());
        slots.min(self.options.max_runs.saturating_sub(self.started))
    }

    /// Whether this tick's `--claim-for` has passed: it starts nothing new.
    fn claim_window_passed(&self) -> bool {
        self.began.elapsed() >= self.options.claim_for
    }

    /// Whether this tick will claim nothing more.
    fn finished_claiming(&self) -> bool {
        crate::interrupt::received().is_some()
            // Nothing is claimed for a tick that could not run it (the
            // agenda refused it; this keeps what came due since unclaimed).
            || !self.may_claim
            || self.nothing_due
            || self.at_limit.is_some()
            || self.claim_window_passed()
            || self.started >= self.options.max_runs
            || self.decisions >= MAX_DECISIONS
    }

    fn tell(&mut self, report: &mut dyn FnMut(&TickEvent) -> Result<()>, event: &TickEvent) {
        if let Err(e) = report(event) {
            self.problems.push(e);
        }
    }

    /// What a worker or the lane said while the loop runs.
    fn heard(
        &mut self,
        message: Message,
        lane: &mut Lane,
        summary: &mut TickSummary,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        match message {
            // Each executor is counted out once, whatever else its worker
            // reports (a run id not in flight changes nothing; the loop
            // goes on to the renewals all the same).
            Message::Finished { run_id, result } if self.in_flight.contains_key(&run_id) => {
                self.last_run_took = self.in_flight.remove(&run_id).map(|at| at.elapsed());
                // A free slot: what became due meanwhile may be claimed.
                self.nothing_due = false;
                self.at_limit = None;
                match result {
                    Ok(f) => {
                        if matches!(*f, execute::Finished::NotStarted { .. }) {
                            summary.start_failures += 1;
                        }
                        if f.notice()
                            .is_some_and(|n| n.state == DeliveryState::Pending)
                        {
                            lane.start();
                        }
                        self.tell(report, &TickEvent::Finished(f));
                    }
                    Err(e) => self.problems.push(e),
                }
            }
            Message::Finished { .. } => {}
            Message::Delivered(delivery) => self.delivered(*delivery, summary, report),
            Message::NoticeNotRecorded { run_id, error } => {
                self.problems.push(notice_not_recorded(&run_id, error));
            }
            Message::LaneDone(result) => {
                lane.running = false;
                if let Err(e) = result {
                    self.problems.push(e);
                }
            }
        }
    }

    /// What a worker or the lane said as the loop ended: only deliveries
    /// and failures still count.
    fn heard_late(
        &mut self,
        message: Message,
        summary: &mut TickSummary,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        match message {
            Message::Delivered(delivery) => self.delivered(*delivery, summary, report),
            Message::NoticeNotRecorded { run_id, error } => {
                self.problems.push(notice_not_recorded(&run_id, error));
            }
            Message::Finished { result: Err(e), .. } | Message::LaneDone(Err(e)) => {
                self.problems.push(e)
            }
            _ => {}
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
            let tenant = self.options.tenant.clone();
            let rr = std::sync::Arc::clone(&self.round_robin);
            let limits = queue::RunningLimits {
                store: self.options.max_running,
                host: self.options.host_jobs,
            };
            // It may share its commit with the outcomes that freed its
            // slots; while other runs are in flight, it waits a little for
            // the next one's outcome to carry it.
            let wait = claim_wait(!self.in_flight.is_empty(), self.last_run_took);
            let batch = store
                .write_within(wait, move |tx| {
                    let mut rr = rr.lock().unwrap_or_else(|p| p.into_inner());
                    let batch =
                        queue::claim_batch(tx, &mut rr, tenant.as_deref(), slots, limits, settings);
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
                self.take(claimed, workers, report);
            }
            // Said once a tick: each later batch finds the same tasks waiting.
            if batch.waiting > 0 && !self.told_profile_full {
                self.told_profile_full = true;
                let reason = queue::HeldBack::ProfileFull;
                let event = TickEvent::Queued {
                    count: batch.waiting,
                    reason,
                };
                self.tell(report, &event);
            }
            match batch.stop {
                queue::Stop::NothingDue => {
                    self.nothing_due = true;
                    self.note_if_locked(store, report);
                }
                queue::Stop::AtLimit(reason) => self.at_limit = Some(reason),
                queue::Stop::Enough => {}
            }
        }
        Ok(())
    }

    /// Counts one claim's runs and hands each that started to a worker.
    fn take(
        &mut self,
        claimed: claim::Claimed,
        workers: &mut execute::Workers,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        match claimed {
            // Left by `claim_batch`, its due work marked; never handed here.
            claim::Claimed::Waiting { .. } => {}
            claim::Claimed::Quarantined { task_id, problem } => {
                self.decisions += 1;
                self.tell(report, &TickEvent::Quarantined { task_id, problem });
            }
            claim::Claimed::Continued {
                task,
                run,
                continuation,
                previous,
                budgets,
            } => {
                self.started += 1;
                self.in_flight.insert(run.run_id.clone(), Instant::now());
                self.tell(
                    report,
                    &TickEvent::Continued {
                        task: task.clone(),
                        run: (*run).clone(),
                    },
                );
                workers.dispatch(execute::Job {
                    task: *task,
                    run: *run,
                    continuation,
                    previous,
                    budgets,
                });
            }
            claim::Claimed::Planned {
                task,
                plan,
                previous,
            } => {
                for run in plan.runs {
                    if run.status() == RunStatus::Running {
                        self.started += 1;
                        self.in_flight.insert(run.run_id.clone(), Instant::now());
                        workers.dispatch(execute::Job {
                            task: (*task).clone(),
                            run: run.clone(),
                            continuation: serde_json::Value::Null,
                            previous: previous.clone(),
                            budgets: plan.budgets.clone(),
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

    /// When due work is left that this tick cannot start now, marks it as
    /// seen (at most once a second): it then runs later whatever the wait.
    fn mark_if_out_of_capacity(
        &mut self,
        store: &mut dyn Store,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
    ) {
        if self.nothing_due && self.at_limit.is_none() {
            return;
        }
        let reason = if let Some(reason) = self.at_limit {
            reason
        } else if self.started >= self.options.max_runs {
            queue::HeldBack::MaxRuns
        } else if self.claim_window_passed() {
            queue::HeldBack::ClaimWindow
        } else if self.free_slots() == 0 {
            queue::HeldBack::JobsBusy
        } else {
            return;
        };
        if self.last_mark.is_some_and(|t| t.elapsed() < RECHECK) {
            return;
        }
        self.last_mark = Some(Instant::now());
        self.mark_seen(store, report, reason, queue::mark_queued);
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
        let reason = queue::HeldBack::LockedRows;
        self.mark_seen(store, report, reason, queue::note_locked);
    }

    /// Records as seen the due work left unclaimed (`mark`: `mark_queued`
    /// or `note_locked`) and reports how much, held back for `reason`.
    fn mark_seen(
        &mut self,
        store: &mut dyn Store,
        report: &mut dyn FnMut(&TickEvent) -> Result<()>,
        reason: queue::HeldBack,
        mark: fn(&mut dyn Tx, Option<&str>, i64, u32) -> Result<usize>,
    ) {
        let now = self.clock.now();
        let tenant = self.options.tenant.as_deref();
        // Most passes find nothing new: look in a read snapshot before
        // taking the write lock.
        match store.read(|tx| tx.unmarked_due(now, tenant, 1)) {
            Ok(due) if due.is_empty() => return,
            Ok(_) => {}
            Err(_) => return,
        }
        match store.write(|tx| mark(tx, tenant, now, MARK_LIMIT)) {
            Ok(0) => {}
            Ok(count) => self.tell(report, &TickEvent::Queued { count, reason }),
            // Not fatal: a later pass (or tick) marks them while within grace.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_waits_for_company_only_while_outcomes_are_coming_and_a_share_of_a_run() {
        let ms = Duration::from_millis;
        // Nothing in flight, or no run finished yet: at once.
        assert_eq!(claim_wait(false, Some(ms(200))), Duration::ZERO);
        assert_eq!(claim_wait(true, None), Duration::ZERO);
        // A fifth-of-a-second run: about 15 ms; a run of a few ms: well
        // under one; a minute's run: the cap.
        assert_eq!(claim_wait(true, Some(ms(195))), ms(15));
        assert!(claim_wait(true, Some(ms(5))) < ms(1));
        assert_eq!(claim_wait(true, Some(Duration::from_secs(60))), CLAIM_WAIT);
    }
}
