//! The tick algorithm (SPEC section 6), in its order, each step its own
//! IMMEDIATE transaction:
//! 1. expired leases → unknown;  2. expired delivery attempts → unknown;
//! 3. pending notices delivered;  4. expired continuations → failed;
//! 5. due occurrences and retries claimed, earliest first;
//! 6. claimed runs executed under renewed leases, outcomes recorded, notices sent.
//!
//! Claim (transaction) → execute (no transaction held) → finish
//! (transaction) → deliver. A tick that dies leaves its runs to step 1 of a
//! later tick; nothing is ever replayed.

pub mod claim;
pub mod deliver;
pub mod execute;
pub mod settle;

use anyhow::Result;
use serde_json::json;

use crate::context::{Clock, StoreOpener};
use crate::model::{Event, RunStatus};
use crate::store::Store;

pub use deliver::Notifier;
pub use execute::Executor;

/// Ticks further apart than this mean system cron was not running.
pub const SCHEDULER_GAP_SECONDS: i64 = 300;

/// Decisions other than `running` one tick makes at most, so that a store
/// with a huge backlog is drained over several ticks, each bounded in time.
pub const MAX_DECISIONS: usize = 1000;

/// How many pending notices one tick tries to deliver.
pub const MAX_DELIVERIES: u32 = 200;

pub struct TickOptions {
    pub tenant: Option<String>,
    pub executor: Executor,
    pub notifier: Option<Notifier>,
    pub max_runs: usize,
    pub dry_run: bool,
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
    },
    NoticeExpired {
        notice: crate::model::Notice,
    },
    Delivered(deliver::Delivery),
    NoticesUndelivered {
        count: u64,
    },
    ContinuationExpired {
        run: crate::model::Run,
    },
    Decided {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    Quarantined {
        task_id: String,
        problem: String,
    },
    Finished(Box<execute::Finished>),
    /// Dry run only: what step 5 would decide.
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
}

const ACTOR: &str = "agentcron:tick";

pub fn run(
    store: &mut dyn Store,
    opener: &StoreOpener,
    options: &TickOptions,
    clock: Clock,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<TickSummary> {
    let tenant = options.tenant.as_deref();
    if options.dry_run {
        return dry_run(store, options, clock, report);
    }
    let mut summary = TickSummary::default();
    record_tick(store, tenant, clock.now(), report)?;

    // 1. Expired leases: the outcome is uncertain, so the run is frozen.
    let now = clock.now();
    let expired = store.write(|tx| {
        let runs = tx.expire_leases(now, tenant)?;
        for run in &runs {
            let task = tx.task(&run.task_id)?.and_then(Result::ok);
            tx.append_event(&event(
                now,
                run,
                "lease_expired",
                json!({"lease_until": run.lease_until}),
            ))?;
            settle::add_notice(tx, run, task.as_ref(), now, None)?;
        }
        Ok(runs)
    })?;
    for run in expired {
        report(&TickEvent::LeaseExpired { run })?;
    }

    // 2. Delivery attempts past their deadline: maybe sent, never resent.
    let now = clock.now();
    let notices = store.write(|tx| {
        let notices = tx.expire_notices(now, tenant)?;
        for n in &notices {
            tx.append_event(&Event {
                at: now,
                tenant_key: n.tenant_key.clone(),
                actor: ACTOR.into(),
                action: "delivery".into(),
                task_id: None,
                run_id: Some(n.run_id.clone()),
                detail: json!({"delivery_id": n.delivery_id, "state": "unknown",
                               "error": "delivery deadline passed"}),
            })?;
        }
        Ok(notices)
    })?;
    for notice in notices {
        report(&TickEvent::NoticeExpired { notice })?;
    }

    // 3. Pending notices.
    deliver_all_pending(store, options, &clock, &mut summary, report)?;

    // 4. Continuations past their deadline fail, and are delivered.
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
        Ok(runs)
    })?;
    let any_parked = !parked.is_empty();
    for run in parked {
        report(&TickEvent::ContinuationExpired { run })?;
    }
    if any_parked {
        deliver_all_pending(store, options, &clock, &mut summary, report)?;
    }

    // 5. Claims, one transaction each. From the first claim on, nothing may
    // stop this tick from executing what it claimed: a busy database or a
    // closed stdout is remembered and reported after step 6.
    let mut jobs = Vec::new();
    let mut decisions = 0;
    let mut deferred: Option<anyhow::Error> = None;
    let mut tell = |event: &TickEvent, deferred: &mut Option<anyhow::Error>| {
        if let Err(e) = report(event) {
            deferred.get_or_insert(e);
        }
    };
    while jobs.len() < options.max_runs && decisions < MAX_DECISIONS {
        let settings = claim::ClaimSettings {
            now: clock.now(),
            lease_seconds: options.executor.lease.as_secs().max(1) as i64,
        };
        let claimed = match store.write(|tx| claim::claim_next(tx, tenant, settings, true)) {
            Ok(Some(claimed)) => claimed,
            Ok(None) => break,
            Err(e) if jobs.is_empty() => return Err(e),
            Err(e) => {
                deferred.get_or_insert(e);
                break;
            }
        };
        decisions += 1;
        match claimed {
            claim::Claimed::Quarantined { task_id, problem } => {
                tell(&TickEvent::Quarantined { task_id, problem }, &mut deferred);
            }
            claim::Claimed::Planned { task, plan } => {
                for run in &plan.runs {
                    tell(
                        &TickEvent::Decided {
                            task: task.clone(),
                            run: run.clone(),
                        },
                        &mut deferred,
                    );
                    if run.status == RunStatus::Running {
                        jobs.push(execute::Job {
                            task: (*task).clone(),
                            run: run.clone(),
                            token: run.lease_token.clone().unwrap_or_default(),
                            continuation: serde_json::Value::Null,
                        });
                    }
                }
            }
        }
    }
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_claim");
    // Missed runs just decided have notices too.
    if decisions > jobs.len() {
        if let Err(e) = deliver_all_pending(store, options, &clock, &mut summary, &mut |event| {
            tell(event, &mut deferred);
            Ok(())
        }) {
            deferred.get_or_insert(e);
        }
    }

    // 6. Execute.
    let mut finish_error = None;
    execute::run_jobs(
        opener,
        &options.executor,
        options.notifier.as_ref(),
        jobs,
        clock,
        &mut |f| {
            if matches!(f, execute::Finished::NotStarted { .. }) {
                summary.start_failures += 1;
            }
            if let Err(e) = report(&TickEvent::Finished(Box::new(f.clone()))) {
                finish_error.get_or_insert(e);
            }
        },
    )?;
    if let Some(e) = deferred.or(finish_error) {
        return Err(e);
    }
    announce_undelivered(store, options, report)?;
    Ok(summary)
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

/// Stores this tick's time; reports a gap when the previous one is old.
fn record_tick(
    store: &mut dyn Store,
    tenant: Option<&str>,
    now: i64,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<()> {
    let gap = store.write(|tx| {
        let previous = tx.meta("last_tick_at")?.and_then(|v| v.parse::<i64>().ok());
        // A clock that went backwards must not move the record back.
        if previous.is_none_or(|p| now > p) {
            tx.set_meta("last_tick_at", &now.to_string())?;
        }
        match previous {
            Some(previous) if now - previous > SCHEDULER_GAP_SECONDS => {
                let due_tasks = tx.due_count(now, tenant)?;
                tx.append_event(&Event {
                    at: now,
                    tenant_key: tenant.unwrap_or("*").to_string(),
                    actor: ACTOR.into(),
                    action: "scheduler_gap".into(),
                    task_id: None,
                    run_id: None,
                    detail: json!({"previous_tick": crate::output::json::time(Some(previous)),
                                   "seconds": now - previous, "due_tasks": due_tasks}),
                })?;
                Ok(Some((previous, due_tasks)))
            }
            _ => Ok(None),
        }
    })?;
    if let Some((previous, due_tasks)) = gap {
        report(&TickEvent::SchedulerGap {
            previous,
            now,
            due_tasks,
        })?;
    }
    Ok(())
}

fn deliver_all_pending(
    store: &mut dyn Store,
    options: &TickOptions,
    clock: &Clock,
    summary: &mut TickSummary,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<()> {
    let Some(notifier) = &options.notifier else {
        return Ok(());
    };
    let pending = store.read(|tx| tx.pending_notices(options.tenant.as_deref(), MAX_DELIVERIES))?;
    for notice in pending {
        if let Some(delivery) = deliver::deliver_pending(store, notifier, &notice, clock)? {
            let failed_to_start = delivery
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("notifier could not start"));
            if failed_to_start {
                summary.start_failures += 1;
                report(&TickEvent::Delivered(delivery))?;
                // The same notifier will not start for the next one either.
                break;
            }
            report(&TickEvent::Delivered(delivery))?;
        }
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
        let limit = (options.max_runs + MAX_DECISIONS) as u32;
        let mut running = 0;
        for due in tx.due_tasks(now, tenant, limit)? {
            if running >= options.max_runs {
                break;
            }
            let settings = claim::ClaimSettings { now, lease_seconds };
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
