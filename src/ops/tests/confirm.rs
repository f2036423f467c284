//! `ops::confirm` (docs/CONTRACT.md §3, §13): a draft becomes a task only
//! with its exact hash, by its owner, in its tenant, before it expires; a
//! replacement swaps the payload of the task it was drafted against, as
//! that task was.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::model::{short_id, TaskState};
use crate::ops::confirm::Outcome;
use crate::ops::draft::DraftSpec;
use crate::ops::lifecycle;

/// The task a confirmation made, or the refusal it came back as.
fn confirmed(outcome: Outcome) -> crate::ops::confirm::Confirmed {
    match outcome {
        Outcome::Confirmed(c) => *c,
        Outcome::Refused(e) => panic!("refused: {}", e.message),
    }
}

#[test]
fn a_confirmed_draft_becomes_an_active_task_at_its_next_occurrence() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    let outcome = f
        .confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash)
        .unwrap();
    let task = confirmed(outcome).task;
    assert_eq!(task.state, TaskState::Active);
    assert_eq!(task.revision, 1);
    assert_eq!(task.payload_hash, made.draft.payload_hash);
    // T0 is 08:00 UTC: the next 09:00 is an hour away.
    assert_eq!(task.next_run_at, Some(T0 + 3600));
    assert_eq!(f.read_task(&task.task_id).next_run_at, Some(T0 + 3600));
    let draft_left = f.store.read(|tx| tx.draft(&made.draft.draft_id)).unwrap();
    assert!(draft_left.is_none(), "a confirmed draft leaves its table");
    let events = f.events(&alice, AuditAction::Confirm);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].task_id.as_deref(), Some(task.task_id.as_str()));
    assert_eq!(events[0].detail["draft_id"], made.draft.draft_id.as_str());
}

#[test]
fn confirm_with_a_wrong_hash_creates_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    let wrong = "0".repeat(64);
    let (kind, e) = refusal(f.confirm(&alice, &made.draft.draft_id, &wrong));
    assert_eq!(kind, ErrorKind::DraftRejected);
    assert!(e.message.contains("hash does not match"), "{}", e.message);
    assert!(f.tasks(&alice).is_empty());
    assert!(f.events(&alice, AuditAction::Confirm).is_empty());
    // The draft still waits for the right hash.
    let right = f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash);
    assert!(matches!(right.unwrap(), Outcome::Confirmed(_)));
}

#[test]
fn confirming_twice_names_the_task_the_first_confirm_made() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let first = f.task(&alice, &daily("09:00"));
    let (kind, e) = refusal(f.confirm(&alice, &first.draft_id, &first.hash));
    assert_eq!(kind, ErrorKind::NotFound);
    assert!(
        e.message.contains("was confirmed at") && e.message.contains(short_id(&first.task_id)),
        "{}",
        e.message
    );
    assert_eq!(
        f.tasks(&alice).len(),
        1,
        "a second confirm made a second task"
    );
}

#[test]
fn an_expired_draft_is_refused_and_creates_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    f.now = made.draft.expires_at;
    let (kind, e) = refusal(f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash));
    assert_eq!(kind, ErrorKind::DraftRejected);
    assert!(e.message.contains("expired"), "{}", e.message);
    assert!(f.tasks(&alice).is_empty());
}

#[test]
fn only_the_drafts_owner_in_its_tenant_confirms_it() {
    let mut f = Fixture::new();
    let (alice, bob) = (Person::alice(), Person::bob());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    let (id, hash) = (&made.draft.draft_id, &made.draft.payload_hash);
    assert_eq!(refusal(f.confirm(&bob, id, hash)).0, ErrorKind::Denied);
    let (kind, e) = refusal(f.confirm(&Person::alice_elsewhere(), id, hash));
    assert_eq!(kind, ErrorKind::Denied);
    assert!(e.message.contains("another tenant"), "{}", e.message);
    assert!(f.tasks(&alice).is_empty());
}

#[test]
fn a_replacement_swaps_the_payload_and_keeps_the_task() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let ten = DraftSpec {
        daily: Some("10:00".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, &task.task_id, &ten).unwrap();
    let outcome = f
        .confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash)
        .unwrap();
    let c = confirmed(outcome);
    assert_eq!(c.task.task_id, task.task_id);
    assert_eq!(c.task.revision, 2);
    assert_eq!(c.task.payload_hash, made.draft.payload_hash);
    assert_eq!(c.task.next_run_at, Some(T0 + 2 * 3600));
    assert_eq!(
        c.replaced.map(|old| old.payload_hash),
        Some(task.hash.clone())
    );
    let stored = f.read_task(&task.task_id);
    assert_eq!(stored.payload.instruction, "summarise the inbox", "kept");
    let events = f.events(&alice, AuditAction::Replace);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].detail["old_payload_hash"], task.hash.as_str());
    assert_eq!(f.tasks(&alice).len(), 1);
}

#[test]
fn a_replacement_of_a_task_that_moved_since_the_draft_is_refused() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let ten = DraftSpec {
        daily: Some("10:00".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, &task.task_id, &ten).unwrap();
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &task.task_id,
        expect_revision: None,
        now: f.now,
    };
    lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    let (kind, e) = refusal(f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(
        e.message.contains("changed since the draft"),
        "{}",
        e.message
    );
    assert_eq!(f.read_task(&task.task_id).payload_hash, task.hash);
}

#[test]
fn a_paused_task_replaced_stays_paused_with_no_next_run() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &task.task_id,
        expect_revision: None,
        now: f.now,
    };
    lifecycle::pause(f.store.as_mut(), &request, Some("away")).unwrap();
    let ten = DraftSpec {
        daily: Some("10:00".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, &task.task_id, &ten).unwrap();
    let c = confirmed(
        f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash)
            .unwrap(),
    );
    assert_eq!(c.task.state, TaskState::Paused);
    assert_eq!(c.task.next_run_at, None);
    assert_eq!(f.read_task(&task.task_id).state, TaskState::Paused);
}

#[test]
fn a_second_draft_of_a_name_confirmed_meanwhile_is_refused_as_a_conflict() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let spec = super::fixture::named("digest", "09:00");
    let first = f.draft(&alice, &spec).unwrap();
    let second = f
        .draft(
            &alice,
            &DraftSpec {
                daily: Some("10:00".into()),
                ..spec
            },
        )
        .unwrap();
    f.confirm(&alice, &first.draft.draft_id, &first.draft.payload_hash)
        .unwrap();
    let (kind, e) = refusal(f.confirm(&alice, &second.draft.draft_id, &second.draft.payload_hash));
    assert_eq!(kind, ErrorKind::Conflict, "{}", e.message);
    assert!(
        e.message.contains("'digest' already exists"),
        "{}",
        e.message
    );
    assert_eq!(f.tasks(&alice).len(), 1);
}

#[test]
fn a_draft_whose_only_occurrence_passed_is_refused_at_confirm() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let once = DraftSpec {
        instruction: Some("renew the certificate".into()),
        at: Some("2026-12-02T09:00:00Z".into()),
        ..DraftSpec::default()
    };
    let request = crate::ops::draft::Request {
        caller: alice.caller(),
        now: T0,
        default_zone: chrono_tz::UTC,
        replace: None,
        ttl: "2h",
        agent: None,
    };
    let made = crate::ops::draft::make(f.store.as_mut(), request, &once).unwrap();
    f.now = T0 + 3600;
    let (kind, e) = refusal(f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash));
    assert_eq!(kind, ErrorKind::DraftRejected);
    assert!(
        e.message.contains("no occurrence after now"),
        "{}",
        e.message
    );
    assert!(f.tasks(&alice).is_empty());
}

#[test]
fn a_draft_is_confirmed_by_a_unique_prefix_which_then_names_its_fate() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    let prefix = &made.draft.draft_id[..8];
    let c = confirmed(f.confirm(&alice, prefix, &made.draft.payload_hash).unwrap());
    let (kind, e) = refusal(f.confirm(&alice, prefix, &made.draft.payload_hash));
    assert_eq!(kind, ErrorKind::NotFound);
    assert!(
        e.message.contains(short_id(&c.task.task_id)),
        "{}",
        e.message
    );
}

#[test]
fn an_expected_success_clock_starts_at_confirm_and_a_replacement_can_stop_it() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let expecting = DraftSpec {
        expect_success: Some("1h".into()),
        ..daily("09:00")
    };
    let task = f.task(&alice, &expecting);
    let clock = f.store.read(|tx| tx.success_clock(&task.task_id)).unwrap();
    // An hour after its first occurrence.
    assert_eq!(clock.success_due_at, Some(T0 + 2 * 3600));
    let none = DraftSpec {
        expect_success: Some("none".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, &task.task_id, &none).unwrap();
    f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash)
        .unwrap();
    let clock = f.store.read(|tx| tx.success_clock(&task.task_id)).unwrap();
    assert_eq!(clock.success_due_at, None);
}
