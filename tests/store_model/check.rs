//! After every step: everything observable through the store's read
//! operations must equal the model, and the global invariants must hold on
//! what the store reports (independently of the model): one run per
//! (task, occurrence, attempt), at most one blocking run per task, distinct
//! lease tokens, settled runs never changing, unknown runs changing only
//! through reconcile, and `check`'s own invariant list matching the model.

use std::collections::BTreeMap;

use agentcron::model::{DeliveryState, Notice, Run, RunStatus, Task, TaskState};
use agentcron::store::{DueTask, RunFilter, Stats, TaskFilter};

use crate::drive::{Harness, OWNER, TENANT};
use crate::model::{MRun, MTask, Model};

/// A run as the store reports it, in the model's terms: the fields the
/// model states (all but texts and timestamps of no consequence).
fn observed(r: &Run) -> MRun {
    MRun {
        id: r.run_id.clone(),
        task_id: r.task_id.clone(),
        scheduled_for: r.scheduled_for,
        attempt: r.attempt,
        due_at: r.due_at,
        status: r.status(),
        token: r.lease().map(|l| l.token.clone()),
        lease_until: r.lease().map(|l| l.until),
        skipped: r.skipped_occurrences,
        blocked_by: r.blocked_by().map(str::to_string),
        wait_id: r.wait().map(|w| w.id.clone()),
        wait_deadline: r.wait().map(|w| w.deadline),
        finished_at: r.finished_at(),
    }
}

/// The model's run as the store reports one: a run holds its lease only
/// while it runs (the columns of a settled row keep what nothing reads).
fn as_reported(m: &MRun) -> MRun {
    let running = m.status == RunStatus::Running;
    MRun {
        token: m.token.clone().filter(|_| running),
        lease_until: m.lease_until.filter(|_| running),
        ..m.clone()
    }
}

/// Runs as first seen settled (or unknown), to prove they never change.
#[derive(Default)]
pub struct Snapshots {
    runs: BTreeMap<String, MRun>,
}

pub fn same_run(m: &MRun, delivery: Option<Option<DeliveryState>>, s: &Run) -> Result<(), String> {
    let got = observed(s);
    if as_reported(m) != got {
        return Err(format!("run differs:\n  store {got:?}\n  model {m:?}"));
    }
    match delivery {
        Some(d) if d != s.delivery_status => Err(format!(
            "run {} delivery_status is {:?}, the model expects {d:?}",
            s.run_id, s.delivery_status
        )),
        _ => Ok(()),
    }
}

pub fn same_task(m: &MTask, s: &Task) -> Result<(), String> {
    let want = (
        &m.id,
        &m.name,
        m.state,
        &m.reason,
        m.revision,
        m.next_run_at,
        m.next_retry_at,
        &m.retry_run_id,
        m.failures,
        (m.created_at, m.grace, m.max_retries, m.backoff),
    );
    let got = (
        &s.task_id,
        &s.payload.name,
        s.state,
        &s.state_reason,
        s.revision,
        s.next_run_at,
        s.next_retry_at,
        &s.retry_run_id,
        s.consecutive_failures,
        (
            s.created_at,
            s.payload.grace_seconds,
            s.payload.max_retries,
            s.payload.retry_backoff_seconds,
        ),
    );
    if want != got {
        return Err(format!("task differs:\n  store {got:?}\n  model {want:?}"));
    }
    Ok(())
}

/// Notices the tick created inside a claim or an expiry are pending; their
/// ids come from the store's pending list, matched by (run, seq).
pub fn learn_notice_ids(h: &mut Harness) -> Result<(), String> {
    let pending = h
        .store
        .read(|tx| tx.pending_notices(None, 100_000))
        .map_err(|e| format!("{e:#}"))?;
    for p in pending {
        let found = h
            .model
            .notices
            .iter_mut()
            .find(|n| n.run_id == p.run_id && n.seq == p.seq);
        match found {
            Some(n) if n.id.is_none() => n.id = Some(p.delivery_id),
            Some(n) if n.id.as_deref() == Some(&p.delivery_id) => {}
            _ => {
                return Err(format!(
                    "the store has a pending notice the model does not: {p:?}"
                ))
            }
        }
    }
    Ok(())
}

/// What one read snapshot of the store shows.
struct Observed {
    tasks: Vec<Option<Task>>,
    lists: Vec<(bool, Option<TaskState>, Vec<String>)>,
    stranger_list: usize,
    task_runs: Vec<Vec<Run>>,
    blocking: Vec<Option<String>>,
    first_two: Vec<Vec<String>>,
    all_runs: Vec<Run>,
    by_status: Vec<(RunStatus, Vec<String>)>,
    runs: Vec<Option<Run>>,
    due: Vec<DueTask>,
    due_count: i64,
    pending: Vec<Notice>,
    stats: Stats,
    leases: Vec<(bool, bool)>,
    violations: Vec<String>,
}

fn observe(h: &mut Harness) -> anyhow::Result<Observed> {
    let m = &h.model;
    let now = m.now;
    let keys = vec![OWNER.to_string()];
    let stranger = vec!["unix:mallory".to_string()];
    h.store.read(|tx| {
        let mut tasks = Vec::new();
        for t in &m.tasks {
            tasks.push(
                tx.task(&t.id)?
                    .map(|r| r.map_err(|c| anyhow::anyhow!("{c}")))
                    .transpose()?,
            );
        }
        let mut lists = Vec::new();
        let filters = [
            None,
            Some(TaskState::Active),
            Some(TaskState::Paused),
            Some(TaskState::Completed),
            Some(TaskState::Deleted),
        ];
        for include_deleted in [false, true] {
            for state in filters {
                let filter = TaskFilter {
                    tenant_key: TENANT,
                    owner_keys: &keys,
                    include_deleted,
                    state,
                };
                let ids = tx
                    .list_tasks(&filter)?
                    .into_iter()
                    .map(|r| r.map(|t| t.task_id).map_err(|c| anyhow::anyhow!("{c}")))
                    .collect::<anyhow::Result<_>>()?;
                lists.push((include_deleted, state, ids));
            }
        }
        let filter = TaskFilter {
            tenant_key: TENANT,
            owner_keys: &stranger,
            include_deleted: true,
            state: None,
        };
        let stranger_list = tx.list_tasks(&filter)?.len();
        let (mut task_runs, mut blocking, mut first_two) = (Vec::new(), Vec::new(), Vec::new());
        for t in &m.tasks {
            task_runs.push(tx.task_runs(&t.id, 100_000)?);
            blocking.push(tx.blocking_run(&t.id)?.map(|r| r.run_id));
            let filter = RunFilter {
                tenant_key: TENANT,
                owner_keys: &keys,
                task_id: Some(&t.id),
                status: None,
                limit: 2,
            };
            first_two.push(
                tx.list_runs(&filter)?
                    .into_iter()
                    .map(|r| r.run_id)
                    .collect(),
            );
        }
        let all = RunFilter {
            tenant_key: TENANT,
            owner_keys: &keys,
            task_id: None,
            status: None,
            limit: 100_000,
        };
        let all_runs = tx.list_runs(&all)?;
        let mut by_status = Vec::new();
        for s in RunStatus::ALL {
            let filter = RunFilter {
                status: Some(*s),
                ..all.clone()
            };
            by_status.push((
                *s,
                tx.list_runs(&filter)?
                    .into_iter()
                    .map(|r| r.run_id)
                    .collect(),
            ));
        }
        let mut runs = Vec::new();
        let mut leases = Vec::new();
        for r in &m.runs {
            runs.push(tx.run(&r.id)?);
            if r.status == RunStatus::Running {
                let token = r.token.as_deref().unwrap_or("");
                leases.push((
                    tx.lease_holds(&r.id, token, now)?,
                    tx.lease_holds(&r.id, "not-a-token", now)?,
                ));
            }
        }
        Ok(Observed {
            tasks,
            lists,
            stranger_list,
            task_runs,
            blocking,
            first_two,
            all_runs,
            by_status,
            runs,
            due: tx.due_tasks(now, None, 100_000)?,
            due_count: tx.due_count(now, None)?,
            pending: tx.pending_notices(None, 100_000)?,
            stats: tx.stats(now, None)?,
            leases,
            violations: tx.violations(now)?,
        })
    })
}

/// Model runs of a task in the store's order: newest occurrence, then attempt, first.
fn model_runs_of<'a>(m: &'a Model, task_id: &str) -> Vec<&'a MRun> {
    let mut runs: Vec<&MRun> = m.runs.iter().filter(|r| r.task_id == task_id).collect();
    runs.sort_by_key(|r| std::cmp::Reverse((r.scheduled_for, r.attempt)));
    runs
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

fn expected_stats(m: &Model) -> Stats {
    let tasks = |s| m.tasks.iter().filter(|t| t.state == s).count() as i64;
    let runs = |f: &dyn Fn(RunStatus) -> bool| m.runs.iter().filter(|r| f(r.status)).count() as i64;
    let notices = |s| m.notices.iter().filter(|n| n.state == s).count() as i64;
    let due = m
        .tasks
        .iter()
        .filter(|t| t.state == TaskState::Active)
        .filter(|t| {
            [t.next_run_at, t.next_retry_at]
                .iter()
                .flatten()
                .any(|at| *at <= m.now)
        })
        .count() as i64;
    Stats {
        tasks_active: tasks(TaskState::Active),
        tasks_paused: tasks(TaskState::Paused),
        tasks_error: tasks(TaskState::Error),
        due,
        running: runs(&|s| s == RunStatus::Running),
        unknown: runs(&|s| s == RunStatus::Unknown),
        awaiting: runs(&|s| s.is_awaiting()),
        notices_pending: notices(DeliveryState::Pending),
        notices_sending: notices(DeliveryState::Sending),
        notices_unknown: notices(DeliveryState::Unknown),
        notices_undeliverable: 0,
        // The model's tasks have no notice policy: every notice is sent.
        notices_suppressed: 0,
        stuck: m
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Running && r.lease_until.is_some_and(|l| l < m.now))
            .count() as i64,
    }
}

pub fn compare(h: &mut Harness) -> Result<(), String> {
    let seen = observe(h).map_err(|e| format!("reading the store: {e:#}"))?;
    let m = &h.model;

    for (t, got) in m.tasks.iter().zip(&seen.tasks) {
        let got = got
            .as_ref()
            .ok_or_else(|| format!("task {} is missing", t.id))?;
        same_task(t, got)?;
    }
    let mut by_creation: Vec<&MTask> = m.tasks.iter().collect();
    by_creation.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    for (include_deleted, state, got) in &seen.lists {
        let want: Vec<String> = by_creation
            .iter()
            .filter(|t| *include_deleted || t.state != TaskState::Deleted)
            .filter(|t| state.is_none_or(|s| t.state == s))
            .map(|t| t.id.clone())
            .collect();
        if &want != got {
            return Err(format!("list_tasks(include_deleted={include_deleted}, state={state:?}) = {got:?}, model {want:?}"));
        }
    }
    if seen.stranger_list != 0 {
        return Err("list_tasks shows tasks to someone who owns none".into());
    }

    for (i, t) in m.tasks.iter().enumerate() {
        let want = model_runs_of(m, &t.id);
        let got = &seen.task_runs[i];
        if want.len() != got.len() {
            let got: Vec<MRun> = got.iter().map(observed).collect();
            return Err(format!(
                "task {} has runs\n  store {got:#?}\n  model {want:#?}",
                t.id
            ));
        }
        for (w, g) in want.iter().zip(got) {
            same_run(w, Some(m.delivery_status(&w.id)), g)?;
        }
        let blocking = m.blocking(&t.id).map(|r| r.id.clone());
        if seen.blocking[i] != blocking {
            return Err(format!(
                "blocking_run({}) = {:?}, model {blocking:?}",
                t.id, seen.blocking[i]
            ));
        }
        let two: Vec<String> = want.iter().take(2).map(|r| r.id.clone()).collect();
        if seen.first_two[i] != two {
            return Err(format!(
                "list_runs(task, limit 2) = {:?}, model {two:?}",
                seen.first_two[i]
            ));
        }
    }
    for (r, got) in m.runs.iter().zip(&seen.runs) {
        let got = got
            .as_ref()
            .ok_or_else(|| format!("run {} is missing", r.id))?;
        same_run(r, Some(m.delivery_status(&r.id)), got)?;
    }

    let all: Vec<String> = seen.all_runs.iter().map(|r| r.run_id.clone()).collect();
    let want_all: Vec<String> = m.runs.iter().map(|r| r.id.clone()).collect();
    if sorted(all) != sorted(want_all) {
        return Err("list_runs without a filter does not list exactly the modelled runs".into());
    }
    let order: Vec<(i64, i64)> = seen
        .all_runs
        .iter()
        .map(|r| (r.scheduled_for, r.attempt))
        .collect();
    if order.windows(2).any(|w| w[0] < w[1]) {
        return Err(format!("list_runs is not newest first: {order:?}"));
    }
    for (status, got) in &seen.by_status {
        let want: Vec<String> = m
            .runs
            .iter()
            .filter(|r| r.status == *status)
            .map(|r| r.id.clone())
            .collect();
        if sorted(got.clone()) != sorted(want.clone()) {
            return Err(format!(
                "list_runs(status={status}) = {got:?}, model {want:?}"
            ));
        }
    }

    // Each due task once, with its earliest due time.
    let mut want_due = BTreeMap::<String, i64>::new();
    for t in m.tasks.iter().filter(|t| t.state == TaskState::Active) {
        let due = [t.next_run_at, t.next_retry_at]
            .into_iter()
            .flatten()
            .filter(|at| *at <= m.now)
            .min();
        if let Some(at) = due {
            want_due.insert(t.id.clone(), at);
        }
    }
    let order: Vec<i64> = seen.due.iter().map(|d| d.due_at).collect();
    if order.windows(2).any(|w| w[0] > w[1]) {
        return Err(format!("due_tasks is not earliest first: {order:?}"));
    }
    let mut got_due = BTreeMap::<String, i64>::new();
    for d in &seen.due {
        if got_due.insert(d.task_id.clone(), d.due_at).is_some() {
            return Err(format!("due_tasks lists {} twice", d.task_id));
        }
    }
    if want_due != got_due {
        return Err(format!("due_tasks = {got_due:?}, model {want_due:?}"));
    }
    if seen.due_count != want_due.len() as i64 {
        return Err(format!(
            "due_count = {}, the model has {} due tasks",
            seen.due_count,
            want_due.len()
        ));
    }

    let mut got_pending: Vec<(String, i64, i64)> = seen
        .pending
        .iter()
        .map(|n| (n.run_id.clone(), n.seq, n.attempts))
        .collect();
    let mut want_pending: Vec<(String, i64, i64)> = m
        .notices
        .iter()
        .filter(|n| n.state == DeliveryState::Pending)
        .map(|n| (n.run_id.clone(), n.seq, n.attempts))
        .collect();
    got_pending.sort();
    want_pending.sort();
    if got_pending != want_pending {
        return Err(format!(
            "pending notices (run, seq, attempts) = {got_pending:?}, model {want_pending:?}"
        ));
    }
    if let Some(n) = seen
        .pending
        .iter()
        .find(|n| n.claim_token.is_some() || n.deadline.is_some())
    {
        return Err(format!("a pending notice keeps a claim: {n:?}"));
    }

    let want_stats = expected_stats(m);
    if seen.stats != want_stats {
        return Err(format!(
            "stats\n  store {:?}\n  model {want_stats:?}",
            seen.stats
        ));
    }

    let running: Vec<&MRun> = m
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Running)
        .collect();
    for (r, (holds, stranger)) in running.iter().zip(&seen.leases) {
        let want = r.lease_until.is_some_and(|u| u >= m.now);
        if *holds != want || *stranger {
            return Err(format!(
                "lease_holds({}) = {holds} (wrong token: {stranger}), model {want}",
                r.id
            ));
        }
    }

    // `check` names stale leases, and runs with two notices sending at once
    // (which the store's claim guard should make impossible).
    let stale = running
        .iter()
        .filter(|r| r.lease_until.is_some_and(|u| u < m.now))
        .count();
    let mut sending = BTreeMap::<&str, usize>::new();
    for n in m
        .notices
        .iter()
        .filter(|n| n.state == DeliveryState::Sending)
    {
        *sending.entry(&n.run_id).or_default() += 1;
    }
    let crowded = sending.values().filter(|n| **n > 1).count();
    let count = |what: &str| seen.violations.iter().filter(|v| v.contains(what)).count();
    let named = (
        count("lease that expired"),
        count("notices being sent at once"),
    );
    if named != (stale, crowded) || seen.violations.len() != stale + crowded {
        return Err(format!(
            "violations = {:?}, the model expects {stale} stale lease(s) and {crowded} \
             run(s) with notices sending at once",
            seen.violations
        ));
    }

    invariants(h, seen.task_runs.concat())
}

/// What must hold of the store whatever the model says.
fn invariants(h: &mut Harness, runs: Vec<Run>) -> Result<(), String> {
    let mut keys = std::collections::BTreeSet::new();
    let mut tokens = std::collections::BTreeSet::new();
    let mut blocking = BTreeMap::<&str, usize>::new();
    for r in &runs {
        if !keys.insert((&r.task_id, r.scheduled_for, r.attempt)) {
            return Err(format!(
                "two runs for ({}, {}, attempt {})",
                r.task_id, r.scheduled_for, r.attempt
            ));
        }
        if let Some(t) = r.lease().map(|l| &l.token) {
            if !tokens.insert(t) {
                return Err(format!("lease token {t} was handed out twice"));
            }
        }
        if r.status().blocks_next() {
            *blocking.entry(&r.task_id).or_default() += 1;
        }
    }
    if let Some((task, n)) = blocking.iter().find(|(_, n)| **n > 1) {
        return Err(format!("task {task} has {n} active runs at once"));
    }
    for r in &runs {
        let now = observed(r);
        match h.snapshots.runs.get(&r.run_id) {
            Some(before) if before == &now => {}
            Some(before) if before.status.is_settled() => {
                return Err(format!(
                    "settled run changed:\n  was {before:?}\n  now {now:?}"
                ));
            }
            Some(before) => {
                let reconciled = h.model.reconciled.contains(&r.run_id);
                let settled_by_reconcile =
                    matches!(now.status, RunStatus::Succeeded | RunStatus::Failed) && reconciled;
                if before.status == RunStatus::Unknown && !settled_by_reconcile {
                    return Err(format!("unknown run changed other than by reconcile:\n  was {before:?}\n  now {now:?}"));
                }
                h.snapshots.runs.insert(r.run_id.clone(), now);
            }
            None if r.status().is_settled() || r.status() == RunStatus::Unknown => {
                h.snapshots.runs.insert(r.run_id.clone(), now);
            }
            None => {}
        }
    }
    Ok(())
}
