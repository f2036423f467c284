//! `tick --dry-run`: what this tick would do, from one read snapshot, in
//! the order of the real tick (step 1's frozen leases first, then step 4's
//! continuations and decisions), writing nothing.

use anyhow::Result;

use crate::clock::Clock;
use crate::model::RunStatus;
use crate::store::Store;

use super::{claim, TickEvent, TickOptions, TickSummary, MAX_DECISIONS};

/// `tick --dry-run`: what this tick would do, from one read snapshot.
pub fn dry_run(
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
                // Its profile is at its --max-concurrent: it would wait.
                Some(Ok((_, plan))) if plan.waits_for_profile.is_some() => {
                    events.push(TickEvent::Queued {
                        count: 1,
                        reason: super::queue::HeldBack::ProfileFull,
                    });
                }
                Some(Ok((task, plan))) => {
                    for run in plan.runs {
                        running += usize::from(run.status() == RunStatus::Running);
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
