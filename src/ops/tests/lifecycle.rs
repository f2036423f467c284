//! `ops::lifecycle` (docs/CONTRACT.md §4, §13): pause, resume and delete by
//! a task's owner, each a compare-and-set with its audit event; asking for
//! the state a task is already in changes nothing.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::model::{RunStatus, TaskState};
use crate::ops::draft::DraftSpec;
use crate::ops::lifecycle::{delete, pause, resume, Request};

fn request<'a>(who: &'a Person, task: &'a str, now: i64) -> Request<'a> {
    Request {
        caller: who.caller(),
        task,
        expect_revision: None,
        now,
    }
}

#[test]
fn pause_by_the_owner_stops_the_next_run_and_records_why() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let paused = pause(
        f.store.as_mut(),
        &request(&alice, &task.task_id, T0),
        Some("away"),
    )
    .unwrap();
    assert!(paused.changed);
    let stored = f.read_task(&task.task_id);
    assert_eq!(stored.state, TaskState::Paused);
    assert_eq!(stored.next_run_at, None);
    assert_eq!(stored.state_reason.as_deref(), Some("away"));
    assert_eq!(stored.revision, 2);
    assert_eq!(
        (paused.task.revision, paused.task.state),
        (2, TaskState::Paused)
    );
    let events = f.events(&alice, AuditAction::Pause);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail["reason"], "away");
}

#[test]
fn pausing_a_paused_task_or_resuming_an_active_one_changes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let resumed = resume(f.store.as_mut(), &request(&alice, &task.task_id, T0)).unwrap();
    assert!(!resumed.changed);
    pause(f.store.as_mut(), &request(&alice, &task.task_id, T0), None).unwrap();
    let again = pause(f.store.as_mut(), &request(&alice, &task.task_id, T0), None).unwrap();
    assert!(!again.changed);
    assert_eq!(f.read_task(&task.task_id).revision, 2);
    assert_eq!(f.events(&alice, AuditAction::Pause).len(), 1);
    assert!(f.events(&alice, AuditAction::Resume).is_empty());
}

#[test]
fn another_person_may_not_pause_resume_or_delete_the_task() {
    let (mut f, alice, bob) = (Fixture::new(), Person::alice(), Person::bob());
    let task = f.task(&alice, &daily("09:00"));
    let theirs = request(&bob, &task.task_id, T0);
    assert_eq!(
        refusal(pause(f.store.as_mut(), &theirs, None)).0,
        ErrorKind::Denied
    );
    assert_eq!(
        refusal(resume(f.store.as_mut(), &theirs)).0,
        ErrorKind::Denied
    );
    assert_eq!(
        refusal(delete(f.store.as_mut(), &theirs)).0,
        ErrorKind::Denied
    );
    // Another tenant's caller is told nothing more than "another tenant".
    let elsewhere = Person::alice_elsewhere();
    let (kind, e) = refusal(delete(
        f.store.as_mut(),
        &request(&elsewhere, &task.task_id, T0),
    ));
    assert_eq!(kind, ErrorKind::Denied);
    assert!(e.message.contains("another tenant"), "{}", e.message);
    let stored = f.read_task(&task.task_id);
    assert_eq!((stored.state, stored.revision), (TaskState::Active, 1));
}

#[test]
fn a_stale_expected_revision_is_a_conflict() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let stale = Request {
        expect_revision: Some(7),
        ..request(&alice, &task.task_id, T0)
    };
    let (kind, e) = refusal(pause(f.store.as_mut(), &stale, None));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(e.message.contains("revision 1, not 7"), "{}", e.message);
    assert_eq!(f.read_task(&task.task_id).state, TaskState::Active);
}

#[test]
fn resume_runs_the_next_occurrence_after_now_without_catching_up() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    pause(f.store.as_mut(), &request(&alice, &task.task_id, T0), None).unwrap();
    // Three days later at 10:00: three 09:00s passed while paused.
    let later = T0 + 3 * 86400 + 2 * 3600;
    let resumed = resume(f.store.as_mut(), &request(&alice, &task.task_id, later)).unwrap();
    let next = T0 + 4 * 86400 + 3600;
    assert_eq!(resumed.task.next_run_at, Some(next));
    let stored = f.read_task(&task.task_id);
    assert_eq!(
        (stored.state, stored.next_run_at),
        (TaskState::Active, Some(next))
    );
    let runs = f.store.read(|tx| tx.task_runs(&task.task_id, 10)).unwrap();
    assert!(
        runs.is_empty(),
        "no run for the occurrences passed: {runs:?}"
    );
}

#[test]
fn resuming_a_one_shot_whose_time_passed_records_it_missed_and_completes() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let once = DraftSpec {
        instruction: Some("renew the certificate".into()),
        at: Some("2026-12-02T09:00:00Z".into()),
        ..DraftSpec::default()
    };
    let task = f.task(&alice, &once);
    pause(f.store.as_mut(), &request(&alice, &task.task_id, T0), None).unwrap();
    let resumed = resume(f.store.as_mut(), &request(&alice, &task.task_id, T0 + 7200)).unwrap();
    assert_eq!(resumed.task.state, TaskState::Completed);
    let runs = f.store.read(|tx| tx.task_runs(&task.task_id, 10)).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status(), RunStatus::Missed);
    assert_eq!(runs[0].scheduled_for, T0 + 3600);
    assert_eq!(f.read_task(&task.task_id).state, TaskState::Completed);
}

#[test]
fn delete_by_the_owner_frees_the_name_and_a_second_delete_is_a_conflict() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let spec = super::fixture::named("digest", "09:00");
    let task = f.task(&alice, &spec);
    let deleted = delete(f.store.as_mut(), &request(&alice, "digest", T0)).unwrap();
    assert_eq!(deleted.state, TaskState::Deleted);
    assert_eq!(f.read_task(&task.task_id).state, TaskState::Deleted);
    let again = refusal(delete(
        f.store.as_mut(),
        &request(&alice, &task.task_id, T0),
    ));
    assert_eq!(again.0, ErrorKind::Conflict);
    assert_eq!(f.events(&alice, AuditAction::Delete).len(), 1);
    // The name is free for a new task.
    f.task(&alice, &spec);
}

#[test]
fn a_deleted_task_expects_no_more_successes() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let expecting = DraftSpec {
        expect_success: Some("1h".into()),
        ..daily("09:00")
    };
    let task = f.task(&alice, &expecting);
    let expected = f
        .store
        .read(|tx| tx.expecting_success(Some("acme")))
        .unwrap();
    assert_eq!(expected.len(), 1);
    delete(f.store.as_mut(), &request(&alice, &task.task_id, T0)).unwrap();
    let clock = f.store.read(|tx| tx.success_clock(&task.task_id)).unwrap();
    assert_eq!(clock.success_due_at, None);
    assert!(f
        .store
        .read(|tx| tx.expecting_success(Some("acme")))
        .unwrap()
        .is_empty());
}

#[test]
fn resuming_a_one_shot_that_already_ran_completes_it_without_a_missed_run() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let once = DraftSpec {
        instruction: Some("renew the certificate".into()),
        at: Some("2026-12-02T09:00:00Z".into()),
        ..DraftSpec::default()
    };
    let c = f.task(&alice, &once);
    let task = f.read_task(&c.task_id);
    // It ran and failed; the pause drops its retry.
    f.settled_run(&task, RunStatus::Failed, T0 + 3600);
    pause(
        f.store.as_mut(),
        &request(&alice, &c.task_id, T0 + 3700),
        None,
    )
    .unwrap();
    let resumed = resume(f.store.as_mut(), &request(&alice, &c.task_id, T0 + 7200)).unwrap();
    assert_eq!(resumed.task.state, TaskState::Completed);
    let runs = f.store.read(|tx| tx.task_runs(&c.task_id, 10)).unwrap();
    assert_eq!(runs.len(), 1, "one run per occurrence");
    assert_eq!(runs[0].status(), RunStatus::Failed);
}
