//! The reference model: what every store operation must do, stated over
//! plain vectors, independently of the SQL. Each guarded operation returns
//! `Err(Conflict)` exactly when the store must refuse it, and changes nothing
//! then.
//!
//! Ids and lease tokens are the store's (random uuids); the driver hands them
//! to the model once the store has produced them. Only two schedule kinds are
//! modelled (once and interval): their occurrences are plain arithmetic, and
//! the calendar and cron rules have property tests of their own.

use std::collections::BTreeSet;

use agentcron::model::{DeliveryState, RunStatus, TaskState};

/// The store must refuse the operation with a Conflict and change nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sched {
    Once { run_at: i64 },
    Interval { seconds: i64, anchor_at: i64 },
}

impl Sched {
    /// The first occurrence strictly after `t`.
    pub fn next_after(self, t: i64) -> Option<i64> {
        match self {
            Sched::Once { run_at } => (run_at > t).then_some(run_at),
            Sched::Interval { anchor_at, .. } if t < anchor_at => Some(anchor_at),
            Sched::Interval { seconds, anchor_at } => {
                Some(anchor_at + ((t - anchor_at) / seconds + 1) * seconds)
            }
        }
    }

    /// How many occurrences lie in [first, now] (`first` is one), and the latest.
    fn span(self, first: i64, now: i64) -> (i64, i64) {
        match self {
            Sched::Once { .. } => (1, first),
            Sched::Interval { seconds, .. } => {
                let n = (now - first) / seconds + 1;
                (n, first + (n - 1) * seconds)
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct MTask {
    pub id: String,
    pub name: Option<String>,
    pub sched: Sched,
    pub grace: i64,
    pub max_retries: i64,
    pub backoff: i64,
    pub created_at: i64,
    pub state: TaskState,
    pub reason: Option<String>,
    pub revision: i64,
    pub next_run_at: Option<i64>,
    pub next_retry_at: Option<i64>,
    pub retry_run_id: Option<String>,
    pub failures: i64,
}

/// A run as the model states it: every field is one the store's runs must
/// match (`check::observed` reads a store's run into this shape).
#[derive(Debug, Clone, PartialEq)]
pub struct MRun {
    pub id: String,
    pub task_id: String,
    pub scheduled_for: i64,
    pub attempt: i64,
    pub due_at: i64,
    pub status: RunStatus,
    pub token: Option<String>,
    pub lease_until: Option<i64>,
    pub skipped: i64,
    pub blocked_by: Option<String>,
    pub wait_id: Option<String>,
    pub wait_deadline: Option<i64>,
    pub finished_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MNotice {
    pub run_id: String,
    pub seq: i64,
    /// Learned from the store once it reports the notice.
    pub id: Option<String>,
    pub state: DeliveryState,
    pub token: Option<String>,
    pub deadline: Option<i64>,
    pub attempts: i64,
}

#[derive(Debug, Clone)]
pub struct MDraft {
    pub id: String,
    pub task: MTask,
    pub consumed: bool,
}

/// How a run settles, as the tick (or an operator) decides it.
#[derive(Debug, Clone, PartialEq)]
pub struct MOutcome {
    pub status: RunStatus,
    pub wait_id: Option<String>,
    pub wait_deadline: Option<i64>,
    pub retryable: bool,
}

/// What a claim must decide: the runs to record (ids still blank) and the
/// task's new bookkeeping.
#[derive(Debug, Clone)]
pub struct ClaimPlan {
    pub task: usize,
    pub runs: Vec<MRun>,
    pub next_run_at: Option<i64>,
    pub state: TaskState,
}

pub const MAX_RETRY_DELAY: i64 = 3600;

#[derive(Debug, Default)]
pub struct Model {
    pub now: i64,
    pub tasks: Vec<MTask>,
    pub runs: Vec<MRun>,
    pub notices: Vec<MNotice>,
    pub drafts: Vec<MDraft>,
    /// The runs reconcile settled (by id): the only way an unknown run may
    /// change.
    pub reconciled: BTreeSet<String>,
}

impl Model {
    pub fn new(now: i64) -> Model {
        Model {
            now,
            ..Model::default()
        }
    }

    pub fn task_index(&self, id: &str) -> usize {
        self.tasks
            .iter()
            .position(|t| t.id == id)
            .expect("modelled task")
    }

    pub fn run_index(&self, id: &str) -> usize {
        self.runs
            .iter()
            .position(|r| r.id == id)
            .expect("modelled run")
    }

    /// The task's run that blocks its next occurrence (there is at most one).
    pub fn blocking(&self, task_id: &str) -> Option<&MRun> {
        self.runs
            .iter()
            .filter(|r| r.task_id == task_id && r.status.blocks_next())
            .min_by_key(|r| r.scheduled_for)
    }

    /// Confirming a draft: a live task with the same name in the tenant refuses it.
    pub fn confirm(&mut self, draft: usize) -> Result<(), Conflict> {
        let d = &self.drafts[draft];
        if d.consumed {
            return Err(Conflict);
        }
        let name_taken = d.task.name.is_some()
            && self
                .tasks
                .iter()
                .any(|t| t.name == d.task.name && t.state != TaskState::Deleted);
        if name_taken {
            return Err(Conflict);
        }
        let mut task = d.task.clone();
        task.created_at = self.now;
        task.next_run_at = task.sched.next_after(self.now);
        self.drafts[draft].consumed = true;
        self.tasks.push(task);
        Ok(())
    }

    /// A compare-and-set transition: the state and revision must still hold.
    fn transition(
        &mut self,
        i: usize,
        revision: i64,
        from: TaskState,
        to: TaskState,
        reason: Option<&str>,
        next_run_at: Option<i64>,
    ) -> Result<(), Conflict> {
        let t = &mut self.tasks[i];
        if t.state != from || t.revision != revision {
            return Err(Conflict);
        }
        t.state = to;
        t.reason = reason.map(str::to_string);
        t.next_run_at = next_run_at;
        t.revision += 1;
        if to != TaskState::Active {
            t.next_retry_at = None;
            t.retry_run_id = None;
        }
        Ok(())
    }

    pub fn pause(&mut self, i: usize, revision: i64, reason: &str) -> Result<(), Conflict> {
        let t = &self.tasks[i];
        if t.state == TaskState::Paused && t.revision == revision {
            return Ok(()); // already paused: nothing changes
        }
        let from = TaskState::Active;
        self.transition(i, revision, from, TaskState::Paused, Some(reason), None)
    }

    /// Resume: the next occurrence after now, no catch-up; a once task whose
    /// time passed completes, recording its occurrence as missed unless the
    /// occurrence already has a run (one run per occurrence).
    pub fn resume(&mut self, i: usize, revision: i64) -> Result<(), Conflict> {
        let t = &self.tasks[i];
        if t.state == TaskState::Active && t.revision == revision {
            return Ok(()); // already active: nothing changes
        }
        if t.state != TaskState::Paused || t.revision != revision {
            return Err(Conflict);
        }
        let next = t.sched.next_after(self.now);
        let mut to = TaskState::Active;
        if next.is_none() {
            to = TaskState::Completed;
            if let Sched::Once { run_at } = t.sched {
                let decided = self
                    .runs
                    .iter()
                    .any(|r| r.task_id == t.id && r.scheduled_for == run_at);
                if !decided {
                    let run = self.settled_run(i, run_at, run_at, 1, RunStatus::Missed, 1);
                    self.runs.push(MRun {
                        id: "(resume)".into(),
                        ..run
                    });
                }
            }
        }
        self.transition(i, revision, TaskState::Paused, to, None, next)
    }

    pub fn delete(&mut self, i: usize, revision: i64) -> Result<(), Conflict> {
        let from = self.tasks[i].state;
        if from == TaskState::Deleted {
            return Err(Conflict);
        }
        self.transition(i, revision, from, TaskState::Deleted, None, None)
    }

    /// Same-tick raw transition whose guard is deliberately wrong.
    pub fn raw_transition(
        &mut self,
        i: usize,
        revision: i64,
        from: TaskState,
    ) -> Result<(), Conflict> {
        self.transition(i, revision, from, TaskState::Paused, None, None)
    }

    fn settled_run(
        &self,
        task: usize,
        scheduled_for: i64,
        due_at: i64,
        attempt: i64,
        status: RunStatus,
        skipped: i64,
    ) -> MRun {
        MRun {
            id: String::new(),
            task_id: self.tasks[task].id.clone(),
            scheduled_for,
            attempt,
            due_at,
            status,
            token: None,
            lease_until: None,
            skipped,
            blocked_by: None,
            wait_id: None,
            wait_deadline: None,
            finished_at: Some(self.now),
        }
    }

    /// A decided (within grace) occurrence: skipped when the task is blocked,
    /// else running under a fresh lease.
    fn decided(
        &self,
        task: usize,
        scheduled_for: i64,
        due_at: i64,
        attempt: i64,
        lease: i64,
    ) -> MRun {
        let t = &self.tasks[task];
        match self.blocking(&t.id) {
            Some(blocker) => MRun {
                blocked_by: Some(blocker.id.clone()),
                ..self.settled_run(
                    task,
                    scheduled_for,
                    due_at,
                    attempt,
                    RunStatus::SkippedOverlap,
                    0,
                )
            },
            None => MRun {
                finished_at: None,
                lease_until: Some(self.now + lease),
                token: Some(String::new()),
                ..self.settled_run(task, scheduled_for, due_at, attempt, RunStatus::Running, 0)
            },
        }
    }

    /// What claiming the earliest due task must do, or None when nothing is due.
    pub fn plan_claim(&self, lease: i64) -> Option<ClaimPlan> {
        let now = self.now;
        let (_, _, ti) = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state == TaskState::Active)
            .flat_map(|(i, t)| {
                [t.next_run_at, t.next_retry_at]
                    .into_iter()
                    .flatten()
                    .filter(|at| *at <= now)
                    .map(move |at| (at, t.id.clone(), i))
            })
            .min()?;
        let t = &self.tasks[ti];
        let mut plan = ClaimPlan {
            task: ti,
            runs: Vec::new(),
            next_run_at: t.next_run_at,
            state: TaskState::Active,
        };
        let mut retry_left = t.next_retry_at.is_some();
        if let Some(first) = t.next_run_at.filter(|at| *at <= now) {
            let (count, latest) = t.sched.span(first, now);
            if now - latest > t.grace {
                let missed = self.settled_run(ti, first, first, 1, RunStatus::Missed, count);
                plan.runs.push(missed);
            } else {
                if count > 1 {
                    let missed =
                        self.settled_run(ti, first, first, 1, RunStatus::Missed, count - 1);
                    plan.runs.push(missed);
                }
                plan.runs.push(self.decided(ti, latest, latest, 1, lease));
            }
            plan.next_run_at = t.sched.next_after(now);
            // A newer occurrence supersedes a pending retry.
            retry_left = false;
        } else if let Some(retry_at) = t.next_retry_at {
            let failed = &self.runs[self.run_index(t.retry_run_id.as_deref().expect("retry run"))];
            let attempt = failed.attempt + 1;
            let run = if now - retry_at > t.grace {
                self.settled_run(
                    ti,
                    failed.scheduled_for,
                    retry_at,
                    attempt,
                    RunStatus::Missed,
                    1,
                )
            } else {
                self.decided(ti, failed.scheduled_for, retry_at, attempt, lease)
            };
            plan.runs.push(run);
            retry_left = false;
        }
        let running = plan.runs.iter().any(|r| r.status == RunStatus::Running);
        if plan.next_run_at.is_none() && !retry_left && !running && self.blocking(&t.id).is_none() {
            plan.state = TaskState::Completed;
        }
        Some(plan)
    }

    /// Applies a claim whose runs carry the store's ids and tokens.
    pub fn apply_claim(&mut self, plan: ClaimPlan) {
        let t = &mut self.tasks[plan.task];
        t.next_run_at = plan.next_run_at;
        t.next_retry_at = None;
        t.retry_run_id = None;
        t.state = plan.state;
        for run in plan.runs {
            // Runs that never ran have notices too (docs/CONTRACT.md §7).
            if matches!(run.status, RunStatus::Missed | RunStatus::SkippedOverlap) {
                self.add_notice(&run.id, None);
            }
            self.runs.push(run);
        }
    }

    fn notice_sending(&self, run_id: &str) -> bool {
        self.notices
            .iter()
            .any(|n| n.run_id == run_id && n.state == DeliveryState::Sending)
    }

    /// A pending notice, or one claimed in the same transaction — unless
    /// an earlier notice of the run is still being sent: then it waits.
    pub fn add_notice(&mut self, run_id: &str, claim: Option<(String, i64)>) {
        let claim = claim.filter(|_| !self.notice_sending(run_id));
        let seq = 1 + self
            .notices
            .iter()
            .filter(|n| n.run_id == run_id)
            .map(|n| n.seq)
            .max()
            .unwrap_or(0);
        let (state, token, deadline, attempts) = match claim {
            Some((token, deadline)) => (DeliveryState::Sending, Some(token), Some(deadline), 1),
            None => (DeliveryState::Pending, None, None, 0),
        };
        self.notices.push(MNotice {
            run_id: run_id.to_string(),
            seq,
            id: None,
            state,
            token,
            deadline,
            attempts,
        });
    }

    pub fn renew(&mut self, run: usize, token: &str, until: i64) -> bool {
        let r = &mut self.runs[run];
        // An expired lease is lost for good (docs/CONTRACT.md §6).
        let expired = r.lease_until.is_none_or(|u| u < self.now);
        if r.status != RunStatus::Running || r.token.as_deref() != Some(token) || expired {
            return false;
        }
        r.lease_until = r.lease_until.max(Some(until));
        true
    }

    /// The guarded status change of a run plus the task's bookkeeping.
    /// `token` None means "no lease check" (reconcile, deny, expiry).
    pub fn finish(
        &mut self,
        run: usize,
        from: RunStatus,
        token: Option<&str>,
        outcome: &MOutcome,
    ) -> Result<(), Conflict> {
        let now = self.now;
        let r = &mut self.runs[run];
        let lease_lost =
            |t: &str| r.token.as_deref() != Some(t) || r.lease_until.is_none_or(|u| u < now);
        if r.status != from || token.is_some_and(lease_lost) {
            return Err(Conflict);
        }
        r.status = outcome.status;
        r.wait_id = outcome.wait_id.clone();
        r.wait_deadline = outcome.wait_deadline;
        r.lease_until = None;
        r.finished_at = (!outcome.status.is_awaiting()).then_some(now);
        let (task_id, run_id, attempt) = (r.task_id.clone(), r.id.clone(), r.attempt);
        let ti = self.task_index(&task_id);
        let t = &mut self.tasks[ti];
        // A run that settles while a person has the task paused still counts
        // in (or ends) the failure streak; it is never retried.
        if t.state == TaskState::Paused {
            match outcome.status {
                RunStatus::Succeeded | RunStatus::DeliveryFailed => t.failures = 0,
                RunStatus::Failed => t.failures += 1,
                _ => {}
            }
            return Ok(());
        }
        if t.state != TaskState::Active {
            return Ok(());
        }
        match outcome.status {
            RunStatus::Succeeded | RunStatus::DeliveryFailed => t.failures = 0,
            RunStatus::Failed => {
                t.failures += 1;
                if attempt <= t.max_retries && outcome.retryable && t.next_retry_at.is_none() {
                    t.next_retry_at = Some(now + retry_delay(t.backoff, attempt));
                    t.retry_run_id = Some(run_id);
                }
            }
            _ => {}
        }
        if t.next_run_at.is_none() && t.next_retry_at.is_none() && outcome.status.is_settled() {
            t.state = TaskState::Completed;
        }
        Ok(())
    }

    /// Running past its lease → unknown, with a pending notice each.
    pub fn expire_leases(&mut self) -> Vec<String> {
        let now = self.now;
        let mut expired = Vec::new();
        for r in &mut self.runs {
            if r.status == RunStatus::Running && r.lease_until.is_some_and(|u| u < now) {
                r.status = RunStatus::Unknown;
                r.finished_at = Some(now);
                expired.push(r.id.clone());
            }
        }
        for id in &expired {
            self.add_notice(id, None);
        }
        expired
    }

    /// Parked past the deadline, oldest deadline first.
    pub fn expired_continuations(&self) -> Vec<String> {
        let mut parked: Vec<&MRun> = self
            .runs
            .iter()
            .filter(|r| r.status.is_awaiting() && r.wait_deadline.is_some_and(|d| d < self.now))
            .collect();
        parked.sort_by_key(|r| r.wait_deadline);
        parked.into_iter().map(|r| r.id.clone()).collect()
    }

    /// awaiting → running under a new lease, once, for the right wait id.
    pub fn reclaim(
        &mut self,
        run: usize,
        wait_id: &str,
        token: &str,
        until: i64,
    ) -> Result<(), Conflict> {
        let r = &mut self.runs[run];
        if !r.status.is_awaiting() || r.wait_id.as_deref() != Some(wait_id) {
            return Err(Conflict);
        }
        r.status = RunStatus::Running;
        r.token = Some(token.to_string());
        r.lease_until = Some(until);
        Ok(())
    }

    pub fn claim_notice(&mut self, n: usize, token: &str, deadline: i64) -> Result<(), Conflict> {
        if self.notice_sending(&self.notices[n].run_id.clone()) {
            return Err(Conflict); // a run's notices go out one at a time
        }
        let n = &mut self.notices[n];
        if n.state != DeliveryState::Pending {
            return Err(Conflict);
        }
        n.state = DeliveryState::Sending;
        n.token = Some(token.to_string());
        n.deadline = Some(deadline);
        n.attempts += 1;
        Ok(())
    }

    pub fn finish_notice(
        &mut self,
        n: usize,
        token: &str,
        to: DeliveryState,
    ) -> Result<(), Conflict> {
        let n = &mut self.notices[n];
        if n.state != DeliveryState::Sending || n.token.as_deref() != Some(token) {
            return Err(Conflict);
        }
        n.state = to;
        if to == DeliveryState::Pending {
            n.token = None;
            n.deadline = None;
        }
        Ok(())
    }

    pub fn expire_notices(&mut self) -> Vec<String> {
        let now = self.now;
        let mut expired = Vec::new();
        for n in &mut self.notices {
            if n.state == DeliveryState::Sending && n.deadline.is_some_and(|d| d < now) {
                n.state = DeliveryState::Unknown;
                expired.push(n.id.clone().expect("a sending notice's id is known"));
            }
        }
        expired
    }

    /// The state of the run's latest notice, as runs report it.
    pub fn delivery_status(&self, run_id: &str) -> Option<DeliveryState> {
        self.notices
            .iter()
            .filter(|n| n.run_id == run_id)
            .max_by_key(|n| n.seq)
            .map(|n| n.state)
    }
}

pub fn retry_delay(backoff: i64, attempt: i64) -> i64 {
    let mut delay = backoff;
    for _ in 1..attempt {
        delay = delay.saturating_mul(2).min(MAX_RETRY_DELAY);
    }
    delay.min(MAX_RETRY_DELAY)
}
