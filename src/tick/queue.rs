//! Step 4 of a tick, the part that decides *which* due work comes next:
//! claims interleave tenants round robin (earliest first within a tenant),
//! a batch claims one run per free slot in one transaction, `--max-running`
//! is counted inside that transaction, and due work the tick cannot start
//! is marked as seen so that waiting for a slot never turns into lateness.

use anyhow::Result;

use super::claim::{self, ClaimSettings, Claimed};
use crate::model::{RunStatus, Task, TaskState};
use crate::schedule;
use crate::store::queue::TaskMark;
use std::collections::VecDeque;

use crate::store::{DueRow, QueueMark, Tx};

/// Decisions one claim transaction makes at most (missed and skipped runs
/// need no slot, so a backlog of them is worked through in bounded pieces).
const DECISIONS_PER_TRANSACTION: usize = 64;

/// How long a tick's claims go without looking for approved continuations
/// after a look found none.
const CONTINUATIONS_AGAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The round-robin position of one tick: tenants in order, and the one to
/// serve next. Read once per tick; a tenant created meanwhile waits for the
/// next tick.
#[derive(Debug, Default)]
pub struct RoundRobin {
    tenants: Option<Vec<String>>,
    next: usize,
    /// When this tick last looked for approved continuations and found
    /// none: it looks again a second later, not at every claim.
    no_continuation_at: Option<std::time::Instant>,
}

impl RoundRobin {
    /// Whether this claim looks for approved continuations: the tick's first
    /// claim does, and any claim once `CONTINUATIONS_AGAIN` has passed since
    /// a look found none (an approval is a person's, seconds apart at best).
    fn looks_for_continuations(&self) -> bool {
        self.no_continuation_at
            .is_none_or(|at| at.elapsed() >= CONTINUATIONS_AGAIN)
    }
}

/// The limits on running runs a claim checks inside its transaction, so
/// they hold however many ticks claim at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunningLimits {
    /// `--max-running`: in the whole store, across hosts.
    pub store: Option<u64>,
    /// `--host-jobs`: on this host, across its overlapping ticks.
    pub host: Option<u64>,
}

/// Which limit the runs running now reach, if one is. This host's runs are
/// those whose runner (`process::runner_identity`, "BOOT PID START") has
/// this boot's id; without one (no /proc) every running run counts.
fn limit_reached(
    tx: &mut dyn Tx,
    limits: RunningLimits,
    runner: Option<&str>,
) -> Result<Option<HeldBack>> {
    if let Some(limit) = limits.store {
        if tx.running_count()? >= limit as i64 {
            return Ok(Some(HeldBack::MaxRunning));
        }
    }
    if let Some(limit) = limits.host {
        let running = match runner.and_then(|r| r.split(' ').next()) {
            Some(boot) => tx.running_on_host(boot)?,
            None => tx.running_count()?,
        };
        if running >= limit as i64 {
            return Ok(Some(HeldBack::HostJobs));
        }
    }
    Ok(None)
}

/// Why a batch stopped before filling every free slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Nothing else is due now.
    NothingDue,
    /// A limit on running runs is reached (`--max-running`, `--host-jobs`).
    AtLimit(HeldBack),
    /// The batch made its share of decisions; more may be due.
    Enough,
}

/// What one claim transaction did.
#[derive(Debug)]
pub struct Batch {
    pub claimed: Vec<Claimed>,
    /// Runs of the batch that start an executor.
    pub started: usize,
    /// Due tasks left waiting for their profile's capacity (docs/CONTRACT.md
    /// §22), their due work marked seen.
    pub waiting: usize,
    pub stop: Stop,
}

/// Claims up to `slots` runs that start an executor (and any number of
/// missed or skipped decisions, bounded), fairly across tenants.
pub fn claim_batch(
    tx: &mut dyn Tx,
    rr: &mut RoundRobin,
    tenant: Option<&str>,
    slots: usize,
    limits: RunningLimits,
    s: ClaimSettings,
) -> Result<Batch> {
    let mut batch = Batch {
        claimed: Vec::new(),
        started: 0,
        waiting: 0,
        stop: Stop::Enough,
    };
    // Approved continuations first: a person decided, and is waiting.
    let looks = rr.looks_for_continuations();
    let approved = match (rr.tenants.is_none(), looks) {
        (true, true) => {
            // The first claim of a tick reads both at once.
            let (tenants, approved) = tx.tenants_and_continuations(tenant, slots as u32)?;
            rr.tenants = Some(tenants);
            approved
        }
        (true, false) => {
            rr.tenants = Some(tx.active_tenants(tenant)?);
            Vec::new()
        }
        (false, true) => tx.approved_continuations(tenant, slots as u32)?,
        (false, false) => Vec::new(),
    };
    if looks {
        rr.no_continuation_at = approved.is_empty().then(std::time::Instant::now);
    }
    for run in approved {
        if batch.started >= slots {
            break;
        }
        if let Some(reached) = limit_reached(tx, limits, s.runner)? {
            batch.stop = Stop::AtLimit(reached);
            return Ok(batch);
        }
        if let Some(claimed) = claim::continue_approved(tx, run, s)? {
            batch.started += 1;
            batch.claimed.push(claimed);
        }
    }
    let tenants = rr.tenants.as_deref().unwrap_or_default();
    let mut due = DueRows::new(tenants.len());
    while batch.started < slots && batch.claimed.len() < DECISIONS_PER_TRANSACTION {
        if let Some(reached) = limit_reached(tx, limits, s.runner)? {
            batch.stop = Stop::AtLimit(reached);
            return Ok(batch);
        }
        // Each tenant's share of the slots left is read in one statement
        // (rows read and not claimed stay locked to the commit on
        // PostgreSQL: other hosts pass over them).
        let left = (slots - batch.started).min(DECISIONS_PER_TRANSACTION);
        let want = left.div_ceil(tenants.len().max(1)) as u32;
        let Some((index, row)) = due.next(tx, tenants, rr.next, want, s.now)? else {
            batch.stop = Stop::NothingDue;
            return Ok(batch);
        };
        rr.next = (index + 1) % tenants.len();
        let task_id = row.due.task_id.clone();
        // Decided or not, it is not read again this batch: a claim that
        // could not decide it (its row gone by id while an index lists it
        // due: a damaged file) would find it again forever.
        due.passed.push(task_id);
        let claimed = match claim::claim_read(tx, row, s, true)? {
            None => continue,
            Some(Claimed::Waiting { task, .. }) => {
                wait_for_capacity(tx, &task, s.now)?;
                batch.waiting += 1;
                continue;
            }
            Some(claimed) => claimed,
        };
        if let Claimed::Planned { plan, .. } = &claimed {
            batch.started += plan
                .runs
                .iter()
                .filter(|r| r.status() == RunStatus::Running)
                .count();
        }
        batch.claimed.push(claimed);
    }
    Ok(batch)
}

/// The due tasks one claim transaction has read, per tenant, and those it
/// has taken from them (decided, waiting for their profile's capacity, or
/// not decidable), which later reads pass over.
struct DueRows {
    read: Vec<VecDeque<DueRow>>,
    /// A tenant whose last read found all that is due (`DueRead::more`).
    exhausted: Vec<bool>,
    passed: Vec<String>,
}

impl DueRows {
    fn new(tenants: usize) -> DueRows {
        DueRows {
            read: (0..tenants).map(|_| VecDeque::new()).collect(),
            exhausted: vec![false; tenants],
            passed: Vec::new(),
        }
    }

    /// The earliest due task of the next tenant in turn from `start` that
    /// has one, with that tenant's index; a tenant whose rows read so far
    /// are taken reads its next `want` at once.
    fn next(
        &mut self,
        tx: &mut dyn Tx,
        tenants: &[String],
        start: usize,
        want: u32,
        now: i64,
    ) -> Result<Option<(usize, DueRow)>> {
        for step in 0..tenants.len() {
            let index = (start + step) % tenants.len();
            if self.read[index].is_empty() && !self.exhausted[index] {
                let read = tx.due_in(&tenants[index], now, want.max(1), &self.passed)?;
                // A read short of its limit found all there is: reading
                // again would cost a round trip to find nothing.
                self.exhausted[index] = !read.more;
                self.read[index] = read.rows.into();
            }
            if let Some(row) = self.read[index].pop_front() {
                return Ok(Some((index, row)));
            }
        }
        Ok(None)
    }
}

/// A due task left waiting for its profile's capacity: its due work is
/// marked seen (docs/CONTRACT.md §6, "Capacity is not lateness"), so it
/// runs once a run of its profile ends, however long that takes.
fn wait_for_capacity(tx: &mut dyn Tx, task: &Task, now: i64) -> Result<()> {
    if let Some(mark) = seen(tx, task, now)? {
        tx.set_queue_marks(&[TaskMark {
            task_id: &task.task_id,
            next_run_at: task.next_run_at,
            next_retry_at: task.next_retry_at,
            mark,
        }])?;
    }
    Ok(())
}

/// Marks due work this tick cannot start as seen within grace (docs/CONTRACT.md
/// §6, "Capacity is not lateness"); returns how many tasks it marked.
/// Instants already past their grace are left alone: no tick saw them in
/// time, and the claim records them missed.
pub fn mark_queued(tx: &mut dyn Tx, tenant: Option<&str>, now: i64, limit: u32) -> Result<usize> {
    // One read and one write a chunk, not two statements a task: on
    // PostgreSQL the rows are locked only for this short transaction, and
    // rows a claim holds are skipped (they are the claim's to decide).
    // A row that does not decode is the claim's to quarantine.
    let tasks: Vec<Task> = tx
        .tasks_to_mark(now, tenant, limit)?
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let mut marks = Vec::with_capacity(tasks.len());
    for task in &tasks {
        if let Some(mark) = seen(tx, task, now)? {
            marks.push(TaskMark {
                task_id: &task.task_id,
                next_run_at: task.next_run_at,
                next_retry_at: task.next_retry_at,
                mark,
            });
        }
    }
    tx.set_queue_marks(&marks)
}

crate::vocabulary::string_enum!(
    /// Why due work was held back (queued) rather than started: what
    /// `tick --verbose` says and its JSON's `reason`.
    HeldBack {
        // The last claim found `--max-running` runs running.
        MaxRunning = "--max-running runs are running",
        MaxRuns = "this tick started --max-runs runs",
        HostJobs = "--host-jobs runs are running on this host",
        // A claim found the task's profile at its --max-concurrent.
        ProfileFull = "their profile's --max-concurrent runs are running",
        ClaimWindow = "this tick's --claim-for has passed",
        JobsBusy = "every --jobs slot is busy",
        // Noted by `note_locked` (PostgreSQL): claims skip locked rows.
        LockedRows = "their task rows were locked by another session",
    }
);

/// Notes as seen the due work a claim that found nothing due left behind:
/// on PostgreSQL, rows another session held locked (a `zone set`, another
/// host's claim, a person's `SELECT … FOR UPDATE`), which the claim skips
/// rather than waits for. Their rows cannot be marked while locked, so the
/// sighting goes beside them (`note_seen`), read by the claim as the mark
/// is: a row locked at every tick of its grace is not "missed". Returns how
/// many it noted; reads the rows without locking them, never waits.
pub fn note_locked(tx: &mut dyn Tx, tenant: Option<&str>, now: i64, limit: u32) -> Result<usize> {
    // One read and one write a chunk, whatever the number of tasks; a task
    // already noted for the instant it is due at is not written again (a
    // locked row is read here once a second until it is let go).
    let tasks = tx.tasks_to_note(now, tenant, limit)?;
    let mut notes = Vec::new();
    for read in &tasks {
        // A row that does not decode is the claim's to quarantine.
        let Ok(task) = &read.task else { continue };
        if let Some(mark) = seen(tx, task, now)? {
            if read.noted_due_at != Some(mark.due_at) {
                notes.push((task.task_id.as_str(), mark));
            }
        }
    }
    // In one order on every host: two ticks noting the same rows each
    // take them in the order the other does, so neither waits on the other.
    notes.sort_unstable_by_key(|(task_id, _)| *task_id);
    tx.note_seen(&notes)
}

/// The mark a tick seeing the task at `now` gives it: its latest due
/// instant (occurrence, else retry, else manual trigger), when that is
/// still within grace.
fn seen(tx: &mut dyn Tx, task: &Task, now: i64) -> Result<Option<QueueMark>> {
    if task.state != TaskState::Active {
        return Ok(None);
    }
    let (due_at, superseded_at) = match task.next_run_at.filter(|at| *at <= now) {
        Some(first) => {
            let (_, last) = schedule::count_between(
                &task.payload.schedule,
                task.zone_in_force,
                first - 1,
                now,
                u64::MAX,
            );
            let latest = last.unwrap_or(first).max(first);
            let next = schedule::next_after(&task.payload.schedule, task.zone_in_force, latest)
                .map(|o| o.at);
            (latest, next)
        }
        // A due retry is superseded by the task's next occurrence.
        None => match task.next_retry_at.filter(|at| *at <= now) {
            Some(retry_at) => (retry_at, task.next_run_at),
            // A manual trigger is never superseded: it runs once.
            None => match tx.pending_trigger(&task.task_id)? {
                Some(trigger) if trigger.at <= now => (trigger.at, None),
                _ => return Ok(None),
            },
        },
    };
    if now - due_at > task.payload.grace_seconds {
        return Ok(None);
    }
    Ok(Some(QueueMark {
        due_at,
        seen_at: now,
        superseded_at,
    }))
}
