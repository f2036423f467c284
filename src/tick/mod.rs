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
//!
//! Where each part lives: `recording` (the tick's own record, the gap),
//! `expiry` (steps 1-3), `scheduler` (step 4 and the main loop), `claim`
//! and `queue` (what one claim decides, fairly across tenants), `execute`
//! and `leases` (the workers, the leases they run under), `child` (what a
//! run's executor is given, and what its answer comes to), `gate` (the
//! task's check before its executor), `time_limit`
//! (how long a run may take), `settle` and
//! `notice_policy` (outcomes and their notices), `deliver` and `lane`
//! (step 5), `events` (what is reported), `dry_run`; the task's limits,
//! whose decisions are `crate::limits`' (pure): `budget` (the windows read
//! and written), `overdue` (the overdue clock's writes) and
//! `overdue_step` (the clocks that ran out, decided). `run` below is the
//! sequence of those steps. The re-exports below are the tick's one face
//! to the rest of the house.

pub mod budget;
pub mod child;
pub mod claim;
pub mod deliver;
pub mod dry_run;
pub mod events;
pub mod execute;
pub mod expiry;
pub mod gate;
pub mod lane;
pub mod leases;
pub mod notice_policy;
pub mod overdue;
pub mod overdue_step;
pub mod profile;
pub mod queue;
pub mod recording;
pub mod release;
pub mod scheduler;
pub mod settle;
pub mod time_limit;
pub mod usage_reports;

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::clock::Clock;
use crate::error::{BusyStep, CmdError};
use crate::store::{shared::SharedStore, Agenda, Store};

// The tick's face: what the rest of the house uses of it, so that the
// rooms outside name the tick, not its files (tests/cli/wiring/floors.rs
// lets them name three of its modules at most).
pub use budget::{read as budgets_now, spent_now as spent_budgets};
pub use claim::{approved_continuation, previous_run, ClaimSettings, Claimed};
pub use deliver::{deliver_pending, read_told, Delivery, Notifier};
pub use events::TickEvent;
pub use execute::{run_jobs, Executor, Finished, Job};
pub use expiry::freeze_expired_leases;
pub use notice_policy::reconciled as reconciled_memory;
pub use overdue::{resumed as resume_overdue_clock, start as start_overdue_clock};
pub use queue::{claim_batch, HeldBack, RoundRobin, RunningLimits};
pub use recording::{rest as rest_if_idle, RUNS_UID, SCHEDULER_GAP_SECONDS, STORE_UID};
pub use release::NOT_STARTED;
pub use scheduler::MAX_DECISIONS;
pub use settle::{record as record_outcome, settle as settle_outcome, NoticeClaim, Outcome};
pub use usage_reports::beyond as usage_beyond;

/// The most runs one tick starts: `--max-runs`' upper bound, and what a
/// tick without `--max-runs` is held to.
pub const MAX_RUNS: usize = 100_000;

/// The actor of every event the tick writes.
pub const ACTOR: &str = "agentcron:tick";

pub struct TickOptions {
    pub tenant: Option<String>,
    pub executor: Executor,
    pub notifier: Option<Notifier>,
    /// Runs this tick starts at most (`MAX_RUNS` when `--max-runs` does
    /// not say: the claim window bounds it long before).
    pub max_runs: usize,
    /// Runs `running` in the whole store at most (every tick of every host).
    pub max_running: Option<u64>,
    /// Runs `running` on this host at most, across its overlapping ticks.
    pub host_jobs: Option<u64>,
    /// How long this tick claims new runs; then it lets those finish and
    /// exits, and the next tick (cron's next minute) goes on.
    pub claim_for: Duration,
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

/// One tick, step by step; see the module's header for the steps.
pub fn run(
    shared: &SharedStore,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<TickSummary> {
    let store: &mut dyn Store = &mut shared.clone();
    if options.dry_run {
        return dry_run::dry_run(store, options, clock, report);
    }
    let started = Instant::now();
    // Most ticks find nothing to do: one read says so, and they take no
    // write transaction for steps 1-4.
    let agenda = agenda(store, options, clock.now()).busy_during("looking for due work")?;
    let may_claim = refuse_claims_without_executor(store, &agenda, options)?;
    // An idle tick's work is done by now: its duration goes with its
    // record, one small write (no fsync) instead of two.
    let idle = (!agenda.expiries && !agenda.claims && !agenda.overdue).then(|| started.elapsed());
    let now = clock.now();
    let recorded = recording::record_tick(store, options, now, idle, report)
        .busy_during("recording the tick")?;
    let before = expire_if_due(store, options, clock, &agenda, &recorded, may_claim, report)?;
    let changed_before = before.changed;
    let mut summary = scheduler::work(shared, store, options, clock, before, report)?;
    let changed = changed_before || summary.started > 0 || summary.decided > 0;
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
    match idle {
        // Nothing was due, waiting or changed: the next tick may learn that
        // without opening the store.
        Some(idle_for) if recorded.duration && !changed && summary.problems.is_empty() => {
            recording::leave_note(store, options, now, idle_for);
        }
        _ if !recorded.duration => record_duration(store, started.elapsed()),
        _ => {}
    }
    Ok(summary)
}

/// Whether steps 1-3 and step 4 have anything to do at `now`.
fn agenda(store: &mut dyn Store, options: &TickOptions, now: i64) -> Result<Agenda> {
    let give_up_before = now - options.delivery_give_up.as_secs() as i64;
    store.read(|tx| tx.agenda(now, give_up_before, options.tenant.as_deref()))
}

/// Claiming with no executor would only burn the runs as failed for a
/// missing flag: refused (exit 2) before anything is claimed — unless the
/// store has profiles (docs/CONTRACT.md §22), whose tasks run their own
/// command: a fleet of profiles needs no `--executor`, and a task without
/// one then fails saying so. Says whether this tick may claim.
fn refuse_claims_without_executor(
    store: &mut dyn Store,
    agenda: &Agenda,
    options: &TickOptions,
) -> Result<bool> {
    if options.executor.argv.is_some() {
        return Ok(true);
    }
    let profiles = agenda.claims && store.read(|tx| tx.has_profiles(options.tenant.as_deref()))?;
    if agenda.claims && !profiles {
        return Err(CmdError::usage(
            "runs are due but no executor is configured; nothing was claimed",
        )
        .with_hint("pass --executor CMD or set AGENTCRON_EXECUTOR (`agentcron crontab` prints the line cron needs)")
        .into());
    }
    Ok(profiles)
}

/// Steps 1-3 when the agenda has expiries, then the overdue tasks, after the `--run-as`
/// preflight whenever anything is to be claimed, expired or sent.
fn expire_if_due(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: Clock,
    agenda: &Agenda,
    recorded: &recording::Recorded,
    may_claim: bool,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<scheduler::Before> {
    let mut before = scheduler::Before {
        changed: false,
        notices_waiting: recorded.notices_waiting,
        // Nothing was due a moment ago: the first claim would find nothing.
        nothing_due: !agenda.claims,
        may_claim,
    };
    if agenda.claims || agenda.expiries || agenda.overdue || before.notices_waiting {
        // Under `--run-as` through sudo: refused before anything is claimed
        // or sent.
        preflight(options)?;
    }
    // Runs frozen or failed here have notices: they go out in this tick.
    if agenda.expiries {
        let expired = expiry::expire(store, options, clock, report)
            .busy_during("expiring leases and notices")?;
        before.notices_waiting |= expired.notices_added;
        before.changed = expired.changed;
    }
    // Before the claims, so that its notice goes out in this tick: the task
    // was overdue when the tick began, whatever its run does next.
    if agenda.overdue {
        let decided = overdue_step::decide(store, options, clock, report)
            .busy_during("deciding which tasks are overdue")?;
        before.notices_waiting |= decided.notices_added;
        before.changed |= decided.changed;
    }
    Ok(before)
}

/// Refuses (exit 2) when a child could not be started as the `--run-as`
/// user without a password (docs/CONTRACT.md §19).
fn preflight(options: &TickOptions) -> Result<()> {
    // Executor, gate and notifier all start under the supervisor: one rule
    // covers them all, checked once per launch.
    let executor = Some(&options.executor.launch).filter(|_| options.executor.argv.is_some());
    let notifier = options.notifier.as_ref().map(|n| &n.launch);
    for launch in executor.into_iter().chain(notifier) {
        launch
            .preflight()
            .map_err(|e| CmdError::usage(format!("{e}; nothing was claimed")))?;
    }
    Ok(())
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

/// For `metrics`. Only a number for monitoring: a failure to store it
/// must not turn a tick that did its work into a failed one.
fn record_duration(store: &mut dyn Store, elapsed: Duration) {
    let seconds = recording::tick_seconds(elapsed);
    let _ = store.write_relaxed(|tx| tx.set_meta("last_tick_seconds", &seconds));
}
