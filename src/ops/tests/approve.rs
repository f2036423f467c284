//! `ops::approve` (docs/CONTRACT.md §6): a person answers a parked run, by
//! its wait id and before its deadline; an approval is recorded once for
//! the next tick, a denial settles the run failed. (`approve --here` runs
//! an executor: the end-to-end suite covers it.)

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::clock::Clock;
use crate::error::ErrorKind;
use crate::model::{Run, RunStatus};
use crate::ops::approve::{answer, Answered, Decision, Parked};
use crate::ops::lifecycle;

const NINE: i64 = T0 + 3600;
const DEADLINE: i64 = NINE + 86_400;

/// Alice's task with a run parked on wait id `w1` since 09:00.
fn parked(f: &mut Fixture, alice: &Person) -> Run {
    let c = f.task(alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    f.parked_run(&task, NINE, "w1", DEADLINE)
}

fn decide(
    f: &Fixture,
    who: &Person,
    run: &str,
    wait_id: &str,
    now: i64,
    decision: Decision,
) -> anyhow::Result<Answered> {
    let request = Parked {
        caller: who.caller(),
        run,
        wait_id,
        now,
    };
    answer(&f.shared(), Clock::start(Some(now), 0), &request, decision)
}

#[test]
fn an_approval_is_recorded_for_the_next_tick_once() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let run = parked(&mut f, &alice);
    let now = NINE + 600;
    let Answered::Approved(approved) =
        decide(&f, &alice, &run.run_id, "w1", now, Decision::Approve).unwrap()
    else {
        panic!("not approved");
    };
    assert_eq!(
        approved.approval().map(|a| a.by.as_str()),
        Some("unix:alice")
    );
    let stored = f.read_run(&run.run_id).unwrap();
    assert_eq!(
        stored.status(),
        RunStatus::AwaitingConfirmation,
        "the tick runs it"
    );
    assert_eq!(stored.approval().map(|a| a.at), Some(now));
    let events = f.events(&alice, AuditAction::Approve);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail["ran"], "next_tick");
    let (kind, e) = refusal(decide(
        &f,
        &alice,
        &run.run_id,
        "w1",
        now + 5,
        Decision::Approve,
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("already approved"), "{}", e.message);
}

#[test]
fn a_wrong_wait_id_or_a_passed_deadline_is_refused() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let run = parked(&mut f, &alice);
    let (kind, e) = refusal(decide(
        &f,
        &alice,
        &run.run_id,
        "w2",
        NINE + 600,
        Decision::Approve,
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("not waiting on 'w2'"), "{}", e.message);
    let (kind, e) = refusal(decide(
        &f,
        &alice,
        &run.run_id,
        "w1",
        DEADLINE + 1,
        Decision::Approve,
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("expired"), "{}", e.message);
    assert_eq!(f.read_run(&run.run_id).unwrap().approval(), None);
    assert!(f.events(&alice, AuditAction::Approve).is_empty());
}

#[test]
fn a_denial_settles_the_parked_run_failed() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let run = parked(&mut f, &alice);
    let now = NINE + 600;
    let Answered::Denied(denied) =
        decide(&f, &alice, &run.run_id, "w1", now, Decision::Deny(None)).unwrap()
    else {
        panic!("not denied");
    };
    assert_eq!(denied.status(), RunStatus::Failed);
    let stored = f.read_run(&run.run_id).unwrap();
    assert_eq!(stored.status(), RunStatus::Failed);
    assert_eq!(stored.reason.as_deref(), Some("denied"));
    assert_eq!(stored.finished_at(), Some(now));
    assert_eq!(f.events(&alice, AuditAction::Deny).len(), 1);
    let (kind, _) = refusal(decide(
        &f,
        &alice,
        &run.run_id,
        "w1",
        now + 5,
        Decision::Approve,
    ));
    assert_eq!(
        kind,
        ErrorKind::Conflict,
        "a settled run is no longer parked"
    );
}

#[test]
fn a_paused_tasks_parked_run_stays_parked_but_may_be_denied() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let run = parked(&mut f, &alice);
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &run.task_id,
        expect_revision: None,
        now: NINE + 60,
    };
    lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    let (kind, e) = refusal(decide(
        &f,
        &alice,
        &run.run_id,
        "w1",
        NINE + 600,
        Decision::Approve,
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("stays parked"), "{}", e.message);
    decide(
        &f,
        &alice,
        &run.run_id,
        "w1",
        NINE + 600,
        Decision::Deny(None),
    )
    .unwrap();
    assert_eq!(f.read_run(&run.run_id).unwrap().status(), RunStatus::Failed);
}

#[test]
fn another_person_may_neither_approve_nor_deny() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let run = parked(&mut f, &alice);
    let bob = Person::bob();
    for decision in [Decision::Approve, Decision::Deny(None)] {
        let (kind, _) = refusal(decide(&f, &bob, &run.run_id, "w1", NINE + 600, decision));
        assert_eq!(kind, ErrorKind::Denied);
    }
    let stored = f.read_run(&run.run_id).unwrap();
    assert_eq!(
        (stored.status(), stored.approval()),
        (RunStatus::AwaitingConfirmation, None)
    );
}
