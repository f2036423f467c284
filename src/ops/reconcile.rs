//! Settling runs frozen as unknown with a person's recorded decision
//! (docs/CONTRACT.md §8). Nothing is run or retried: the decision, the run's
//! settling, the task's notice memory and the audit event are one
//! transaction, and only an unknown run is settled.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError};
use crate::limits::Usage;
use crate::model::{Run, RunStatus};
use crate::ops::access::{owned_run, Caller};
use crate::store::{Reconciliation, Store, TaskMemory};
use crate::tick::{reconciled_memory, record_outcome, Outcome};

/// What the person found out about an unknown run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The work was done: settle as succeeded.
    ConfirmedSucceeded,
    /// The work was not done: settle as failed.
    ConfirmedFailed,
    /// Give up on it: settle as failed.
    Abandoned,
}

impl Decision {
    pub const ALL: [Decision; 3] = [
        Decision::ConfirmedSucceeded,
        Decision::ConfirmedFailed,
        Decision::Abandoned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::ConfirmedSucceeded => "confirmed_succeeded",
            Decision::ConfirmedFailed => "confirmed_failed",
            Decision::Abandoned => "abandoned",
        }
    }

    fn settles_as(self) -> RunStatus {
        match self {
            Decision::ConfirmedSucceeded => RunStatus::Succeeded,
            Decision::ConfirmedFailed | Decision::Abandoned => RunStatus::Failed,
        }
    }
}

/// Freezes the runs of `tenant` whose lease has passed as unknown: they are
/// unknown whether or not a tick has looked yet, and after a restore they
/// are settled before ticks restart.
pub fn freeze_expired(store: &mut dyn Store, now: i64, tenant: &str) -> Result<()> {
    store.write(|tx| crate::tick::freeze_expired_leases(tx, now, Some(tenant)))?;
    Ok(())
}

/// What a person records of an unknown run.
pub struct Settling<'a> {
    pub decision: Decision,
    /// Why they decided so.
    pub reason: &'a str,
    /// What they found the run spent in all (`--usage`): what it did not
    /// tell as it went is recorded as a reply's usage is when a run
    /// settles: on the run, in the tenant's totals and in the task's
    /// current budget windows, in this transaction. Only an unknown run is
    /// settled, so it is counted once.
    pub usage: &'a Usage,
}

/// Settles the unknown run `run_arg` names as `settling` says; returns the
/// run as settled.
pub fn settle_unknown(
    store: &mut dyn Store,
    caller: &Caller<'_>,
    run_arg: &str,
    settling: &Settling<'_>,
    now: i64,
) -> Result<Run> {
    let (decision, reason) = (settling.decision, settling.reason);
    let actor = &caller.identity[0];
    store.write(|tx| {
        let (_, run) = owned_run(tx, caller, run_arg)?;
        if run.status() != RunStatus::Unknown {
            return fail(CmdError::conflict(format!(
                "run {} is {}, not unknown: only unknown runs are reconciled",
                run.run_id,
                run.status()
            )));
        }
        // `--usage` is what the run spent in all; what it told as it went
        // (`lease check --usage`) is on the run already and counted.
        let told = run
            .usage
            .as_ref()
            .map(|u| Usage::read(u).0)
            .unwrap_or_default();
        let outcome = Outcome {
            usage: crate::tick::usage_beyond(settling.usage, &told),
            ..Outcome::final_decision(
                decision.settles_as(),
                format!("reconciled ({}): {reason}", decision.as_str()),
            )
        };
        tx.insert_reconciliation(&Reconciliation {
            run_id: run.run_id.clone(),
            tenant_key: run.tenant_key.clone(),
            actor: actor.clone(),
            decision: decision.as_str().into(),
            reason: reason.into(),
            prior_reason: run.reason.clone(),
            decided_at: now,
        })?;
        let recorded = record_outcome(tx, &run, RunStatus::Unknown, None, &outcome, actor, now)?;
        // The task's memory came with the outcome's read of its task.
        let memory = recorded
            .notice_start
            .memory
            .unwrap_or_else(|| TaskMemory::new(&run.task_id));
        tx.save_task_memory(&reconciled_memory(memory, &recorded.settled, now))?;
        let mut detail =
            json!({"decision": decision.as_str(), "reason": reason, "prior_reason": run.reason});
        if !settling.usage.is_empty() {
            detail["usage"] = settling.usage.to_json();
        }
        tx.append_event(&Event::of_run(
            AuditAction::Reconcile,
            &run,
            actor,
            now,
            detail,
        ))?;
        Ok(recorded.settled)
    })
}
