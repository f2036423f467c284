//! `ops::trigger` (docs/CONTRACT.md §13): one extra run of an active task,
//! due now, at most one pending at a time; the schedule does not move.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::ops::lifecycle;
use crate::ops::trigger::trigger;
use crate::store::Trigger;

fn asked_by(who: &Person, at: i64) -> Trigger {
    Trigger {
        at,
        actor: who.actor().to_string(),
        reason: Some("the report is needed now".into()),
    }
}

#[test]
fn a_trigger_is_pending_once_and_leaves_the_schedule_alone() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    trigger(
        f.store.as_mut(),
        &alice.caller(),
        &task.task_id,
        &asked_by(&alice, T0),
    )
    .unwrap();
    let pending = f
        .store
        .read(|tx| tx.pending_trigger(&task.task_id))
        .unwrap();
    assert_eq!(pending, Some(asked_by(&alice, T0)));
    let (kind, e) = refusal(trigger(
        f.store.as_mut(),
        &alice.caller(),
        &task.task_id,
        &asked_by(&alice, T0 + 5),
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(
        e.message.contains("already has a run triggered"),
        "{}",
        e.message
    );
    assert_eq!(f.read_task(&task.task_id).next_run_at, Some(T0 + 3600));
    let events = f.events(&alice, AuditAction::Trigger);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail["reason"], "the report is needed now");
}

#[test]
fn only_an_active_task_is_triggered() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &task.task_id,
        expect_revision: None,
        now: T0,
    };
    lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    let (kind, e) = refusal(trigger(
        f.store.as_mut(),
        &alice.caller(),
        &task.task_id,
        &asked_by(&alice, T0),
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.hint.unwrap_or_default().contains("resume"));
    lifecycle::delete(f.store.as_mut(), &request).unwrap();
    let (kind, e) = refusal(trigger(
        f.store.as_mut(),
        &alice.caller(),
        &task.task_id,
        &asked_by(&alice, T0),
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("is deleted"), "{}", e.message);
    assert_eq!(
        f.store
            .read(|tx| tx.pending_trigger(&task.task_id))
            .unwrap(),
        None
    );
    assert!(f.events(&alice, AuditAction::Trigger).is_empty());
}

#[test]
fn another_person_cannot_trigger_the_task() {
    let (mut f, alice, bob) = (Fixture::new(), Person::alice(), Person::bob());
    let task = f.task(&alice, &daily("09:00"));
    let (kind, _) = refusal(trigger(
        f.store.as_mut(),
        &bob.caller(),
        &task.task_id,
        &asked_by(&bob, T0),
    ));
    assert_eq!(kind, ErrorKind::Denied);
    assert_eq!(
        f.store
            .read(|tx| tx.pending_trigger(&task.task_id))
            .unwrap(),
        None
    );
}
