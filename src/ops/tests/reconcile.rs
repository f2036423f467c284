//! `ops::reconcile` (docs/CONTRACT.md §8): a run whose lease passed is
//! frozen unknown, and a person's decision settles exactly that run, with
//! the decision kept and nothing run or retried.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::limits::Usage;
use crate::model::RunStatus;
use crate::ops::reconcile::{freeze_expired, settle_unknown, Decision, Settling};

/// The 09:00 occurrence of the fixture's daily task.
const NINE: i64 = T0 + 3600;

#[test]
fn only_runs_past_their_lease_are_frozen_unknown() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let lost = f.unknown_run(&task, NINE);
    assert_eq!(lost.status(), RunStatus::Unknown);
    let alive = f.running_run(&task, NINE + 86400, NINE + 86400 + 600, None);
    freeze_expired(f.store.as_mut(), NINE + 86400 + 60, "acme").unwrap();
    assert_eq!(
        f.read_run(&alive.run_id).unwrap().status(),
        RunStatus::Running
    );
    assert_eq!(f.events(&alice, AuditAction::LeaseExpired).len(), 1);
}

#[test]
fn confirmed_succeeded_settles_the_run_succeeded_as_the_last_success() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.unknown_run(&task, NINE);
    let at = NINE + 7200;
    let settled = settle_unknown(
        f.store.as_mut(),
        &alice.caller(),
        &run.run_id,
        &Settling {
            decision: Decision::ConfirmedSucceeded,
            reason: "the mail went out",
            usage: &Usage::default(),
        },
        at,
    )
    .unwrap();
    assert_eq!(settled.status(), RunStatus::Succeeded);
    let stored = f.read_run(&run.run_id).unwrap();
    assert_eq!(stored.status(), RunStatus::Succeeded);
    let reason = stored.reason.unwrap_or_default();
    assert!(
        reason.contains("reconciled (confirmed_succeeded): the mail went out"),
        "{reason}"
    );
    let memory = f
        .store
        .read(|tx| tx.task_memory(&c.task_id))
        .unwrap()
        .unwrap();
    assert_eq!(
        memory.last_settled_run_id.as_deref(),
        Some(run.run_id.as_str())
    );
    assert_eq!(memory.last_success_at, Some(at));
    let events = f.events(&alice, AuditAction::Reconcile);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail["decision"], "confirmed_succeeded");
}

#[test]
fn confirmed_failed_and_abandoned_settle_the_run_failed() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    for (day, decision) in [(0, Decision::ConfirmedFailed), (1, Decision::Abandoned)] {
        let run = f.unknown_run(&task, NINE + day * 86400);
        let now = NINE + day * 86400 + 3600;
        settle_unknown(
            f.store.as_mut(),
            &alice.caller(),
            &run.run_id,
            &Settling {
                decision,
                reason: "checked",
                usage: &Usage::default(),
            },
            now,
        )
        .unwrap();
        assert_eq!(f.read_run(&run.run_id).unwrap().status(), RunStatus::Failed);
    }
    let memory = f.store.read(|tx| tx.task_memory(&c.task_id)).unwrap();
    assert_eq!(memory.and_then(|m| m.last_success_at), None);
    // Nothing was retried: the task has no retry pending.
    assert_eq!(f.read_task(&c.task_id).next_retry_at, None);
}

#[test]
fn a_run_that_is_not_unknown_is_not_reconciled() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.settled_run(&task, RunStatus::Failed, NINE);
    let (kind, e) = refusal(settle_unknown(
        f.store.as_mut(),
        &alice.caller(),
        &run.run_id,
        &Settling {
            decision: Decision::ConfirmedSucceeded,
            reason: "it worked",
            usage: &Usage::default(),
        },
        NINE + 3600,
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("not unknown"), "{}", e.message);
    assert_eq!(f.read_run(&run.run_id).unwrap().status(), RunStatus::Failed);
    assert!(f.events(&alice, AuditAction::Reconcile).is_empty());
}

#[test]
fn another_person_cannot_reconcile_the_run() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.unknown_run(&task, NINE);
    let bob = Person::bob();
    let (kind, _) = refusal(settle_unknown(
        f.store.as_mut(),
        &bob.caller(),
        &run.run_id,
        &Settling {
            decision: Decision::Abandoned,
            reason: "not mine",
            usage: &Usage::default(),
        },
        NINE + 3600,
    ));
    assert_eq!(kind, ErrorKind::Denied);
    assert_eq!(
        f.read_run(&run.run_id).unwrap().status(),
        RunStatus::Unknown
    );
}
