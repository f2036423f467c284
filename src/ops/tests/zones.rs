//! `ops::zones` (docs/CONTRACT.md §18): `zone set`/`unset` re-times the
//! tasks that follow the key in the same transaction; a fixed-zone task,
//! a due occurrence and a paused task's missing next run are left alone.

use super::fixture::{daily, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::ops::draft::DraftSpec;
use crate::ops::lifecycle;
use crate::ops::zones::{current_zone, set_zone};
use chrono_tz::{Europe::Berlin, UTC};

const DAY: i64 = 86_400;

/// A task that runs at 09:00 in its owner's zone (UTC until they have one).
fn following() -> DraftSpec {
    DraftSpec {
        tz: Some("follow".into()),
        ..daily("09:00")
    }
}

#[test]
fn zone_set_retimes_a_following_task_and_leaves_a_fixed_zone_one() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let follows = f.task(&alice, &following());
    let fixed = f.task(&alice, &daily("09:00"));
    assert_eq!(f.read_task(&follows.task_id).next_run_at, Some(T0 + 3600));
    let change = set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0,
    )
    .unwrap();
    assert!(change.changed);
    assert_eq!(change.retimed.len(), 1);
    assert_eq!(change.retimed[0].task.task_id, follows.task_id);
    // 09:00 Berlin today is T0 itself, not after now: tomorrow's, 08:00 UTC.
    let moved = f.read_task(&follows.task_id);
    assert_eq!(moved.zone_in_force, Berlin);
    assert_eq!(moved.next_run_at, Some(T0 + DAY));
    assert_eq!(
        moved.revision, 1,
        "a re-time is bookkeeping, not a revision"
    );
    let untouched = f.read_task(&fixed.task_id);
    assert_eq!(
        (untouched.zone_in_force, untouched.next_run_at),
        (UTC, Some(T0 + 3600))
    );
    let events = f.events(&alice, AuditAction::Retime);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail["from_zone"], "UTC");
    assert_eq!(events[0].detail["to_zone"], "Europe/Berlin");
    assert_eq!(f.events(&alice, AuditAction::ZoneSet).len(), 1);
}

#[test]
fn setting_the_zone_a_key_already_has_changes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    f.task(&alice, &following());
    set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0,
    )
    .unwrap();
    let again = set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0 + 60,
    )
    .unwrap();
    assert!(!again.changed);
    assert!(again.retimed.is_empty());
    assert_eq!(f.events(&alice, AuditAction::ZoneSet).len(), 1);
    assert_eq!(f.events(&alice, AuditAction::Retime).len(), 1);
}

#[test]
fn zone_unset_moves_following_tasks_back_to_their_default() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let follows = f.task(&alice, &following());
    set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0,
    )
    .unwrap();
    let change = set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        None,
        "host:sync",
        T0 + 60,
    )
    .unwrap();
    assert_eq!(change.old.as_deref(), Some("Europe/Berlin"));
    assert_eq!(change.retimed.len(), 1);
    let back = f.read_task(&follows.task_id);
    assert_eq!(
        (back.zone_in_force, back.next_run_at),
        (UTC, Some(T0 + 3600))
    );
    let zone = f
        .store
        .read(|tx| current_zone(tx, "acme", "unix:alice"))
        .unwrap();
    assert_eq!(zone, None);
}

#[test]
fn an_occurrence_already_due_is_left_to_the_claim() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let follows = f.task(&alice, &following());
    // Past 09:00 UTC with no tick yet: that occurrence is due, not moved.
    let now = T0 + 3600 + 30;
    set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        now,
    )
    .unwrap();
    let task = f.read_task(&follows.task_id);
    assert_eq!(task.zone_in_force, Berlin);
    assert_eq!(task.next_run_at, Some(T0 + 3600));
}

#[test]
fn a_paused_following_task_gets_its_next_run_on_resume_in_the_new_zone() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let follows = f.task(&alice, &following());
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &follows.task_id,
        expect_revision: None,
        now: T0,
    };
    lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0,
    )
    .unwrap();
    assert_eq!(f.read_task(&follows.task_id).next_run_at, None);
    let resumed = lifecycle::resume(f.store.as_mut(), &request).unwrap();
    assert_eq!(
        resumed.task.next_run_at,
        Some(T0 + DAY),
        "09:00 Berlin tomorrow"
    );
}

#[test]
fn a_following_task_confirmed_after_zone_set_starts_in_the_owners_zone() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0,
    )
    .unwrap();
    let made = f.draft(&alice, &following()).unwrap();
    assert_eq!(made.zone, Berlin, "the draft is shown in the owner's zone");
    let follows = f.task(&alice, &following());
    let task = f.read_task(&follows.task_id);
    assert_eq!(
        (task.zone_in_force, task.next_run_at),
        (Berlin, Some(T0 + DAY))
    );
}

#[test]
fn a_schedule_that_ends_before_its_next_run_in_the_new_zone_keeps_its_run() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let last_day = DraftSpec {
        until: Some("2026-12-02T12:00:00Z".into()),
        ..following()
    };
    let follows = f.task(&alice, &last_day);
    set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0 + 60,
    )
    .unwrap();
    let task = f.read_task(&follows.task_id);
    assert_eq!(task.zone_in_force, Berlin);
    assert_eq!(task.next_run_at, Some(T0 + 3600), "the claim completes it");
}

#[test]
fn a_deleted_following_task_is_not_retimed() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let follows = f.task(&alice, &following());
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &follows.task_id,
        expect_revision: None,
        now: T0,
    };
    lifecycle::delete(f.store.as_mut(), &request).unwrap();
    let change = set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        Some(Berlin),
        "host:sync",
        T0,
    )
    .unwrap();
    assert!(change.changed && change.retimed.is_empty());
    assert_eq!(f.read_task(&follows.task_id).zone_in_force, UTC);
    assert!(f.events(&alice, AuditAction::Retime).is_empty());
}
