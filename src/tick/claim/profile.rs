//! A claim's profile (docs/CONTRACT.md §22): a run about to start is held
//! (`skipped_profile`) when the task's profile is not the one its owner
//! confirmed, and waits as capacity when the profile has
//! `--max-concurrent` runs running. What runs a profile's task is
//! `tick/profile.rs`.

use anyhow::Result;

use crate::model::{RunEnd, RunState, RunStatus, Task, TaskState};
use crate::store::Tx;

use super::Plan;

/// What the claim does with a task's profile, for a plan about to start a
/// run.
pub enum Check {
    /// Run it.
    Runs,
    /// The profile has `--max-concurrent` runs running: the task waits as
    /// capacity (nothing recorded, its due work marked seen).
    Full { profile: String },
}

/// Holds the plan's run (`skipped_profile`, with the reason) when the
/// task's profile is not the one its owner confirmed, or says it must
/// wait for the profile's capacity. Reads the profile once, and counts
/// its running runs only when it has a limit.
pub fn check(tx: &mut dyn Tx, plan: &mut Plan, task: &Task, now: i64) -> Result<Check> {
    let Some(bound) = &task.payload.profile else {
        return Ok(Check::Runs);
    };
    if plan.running().is_none() {
        return Ok(Check::Runs);
    }
    let current = match tx.profile(&task.payload.tenant_key, &bound.name) {
        Ok(current) => current,
        // A profile row that does not read runs nothing.
        Err(e) => {
            hold_back(plan, &format!("profile {}: {e:#}", bound.name), now);
            return Ok(Check::Runs);
        }
    };
    if let Some(why) = crate::profile::held(bound, current.as_ref()) {
        hold_back(plan, &why, now);
        return Ok(Check::Runs);
    }
    if let Some(limit) = bound.definition.max_concurrent {
        let running = tx.running_under_profile(&task.payload.tenant_key, &bound.name)?;
        if running >= limit {
            return Ok(Check::Full {
                profile: bound.name.clone(),
            });
        }
    }
    Ok(Check::Runs)
}

/// The run the claim decided to start, recorded instead as not executed;
/// the task completes when nothing else is left of it.
fn hold_back(plan: &mut Plan, reason: &str, now: i64) {
    let Some(run) = plan.running_mut() else {
        return;
    };
    run.state = RunState::not_run(RunEnd::SkippedProfile, now);
    run.reason = Some(reason.to_string());
    if plan.next_run_at.is_none() && plan.next_retry_at.is_none() {
        plan.state = TaskState::Completed;
    }
}

/// Whether the task was held for its profile already under the payload its
/// owner confirmed (its notice told once, until they confirm again): one
/// lookup, made only when the claim holds a run.
pub fn told_in(tx: &mut dyn Tx, plan: &Plan, task: &Task) -> Result<bool> {
    if !plan
        .runs
        .iter()
        .any(|r| r.status() == RunStatus::SkippedProfile)
    {
        return Ok(false);
    }
    tx.held_for_profile_before(&task.task_id, &task.payload_hash)
}
