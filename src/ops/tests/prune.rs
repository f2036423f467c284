//! `ops::prune` (docs/CONTRACT.md §8, §13): settled history older than the
//! cutoff goes, in batches; what a person or a task still needs stays
//! however old (unknown, running and parked runs, a failed run whose retry
//! is pending, how a live task came to be). A dry run only counts.

use super::fixture::{daily, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::model::{RunStatus, Task, TaskState};
use crate::ops::lifecycle;
use crate::ops::prune::{prune, Pruned, Request};
use crate::store::TaskAdvance;

const DAY: i64 = 86_400;

fn prune_before(f: &mut Fixture, cutoff: i64, tenant: Option<&str>, dry_run: bool) -> Pruned {
    let request = Request {
        cutoff,
        tenant,
        dry_run,
        vacuum: false,
    };
    prune(f.store.as_mut(), &request).unwrap()
}

fn alices_task(f: &mut Fixture, alice: &Person) -> Task {
    let c = f.task(alice, &daily("09:00"));
    f.read_task(&c.task_id)
}

#[test]
fn settled_runs_older_than_the_cutoff_go_and_newer_ones_stay() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = alices_task(&mut f, &alice);
    let old = f.settled_run(&task, RunStatus::Succeeded, T0 + 3600);
    let failed = f.settled_run(&task, RunStatus::Failed, T0 + 3600 + DAY);
    let recent = f.settled_run(&task, RunStatus::Succeeded, T0 + 3600 + 10 * DAY);
    let pruned = prune_before(&mut f, T0 + 5 * DAY, None, false);
    assert_eq!(pruned.counts.runs, 2);
    assert!(f.read_run(&old.run_id).is_none());
    assert!(f.read_run(&failed.run_id).is_none());
    assert!(f.read_run(&recent.run_id).is_some());
}

#[test]
fn unknown_running_and_parked_runs_stay_however_old() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = alices_task(&mut f, &alice);
    let unknown = f.unknown_run(&task, T0 + 3600);
    let parked = f.parked_run(&task, T0 + 3600 + DAY, "w1", T0 + 30 * DAY);
    let running = f.running_run(&task, T0 + 3600 + 2 * DAY, T0 + 100 * DAY, None);
    let pruned = prune_before(&mut f, T0 + 20 * DAY, None, false);
    assert_eq!(pruned.counts.runs, 0);
    for run in [unknown, parked, running] {
        assert!(
            f.read_run(&run.run_id).is_some(),
            "{} was pruned",
            run.status()
        );
    }
}

#[test]
fn a_failed_run_whose_retry_is_pending_stays() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = alices_task(&mut f, &alice);
    let failed = f.settled_run(&task, RunStatus::Failed, T0 + 3600);
    // As the tick leaves a failure with retries left: the task points at it.
    f.store
        .write(|tx| {
            tx.advance_task(&TaskAdvance {
                task_id: &task.task_id,
                expected_state: TaskState::Active,
                expected_next_run_at: task.next_run_at,
                expected_next_retry_at: None,
                state: TaskState::Active,
                next_run_at: Some(T0 + 3600 + DAY),
                next_retry_at: Some(T0 + 3600 + 60),
                retry_run_id: Some(&failed.run_id),
                consecutive_failures: 1,
                now: T0 + 3600 + 30,
            })
        })
        .unwrap();
    let pruned = prune_before(&mut f, T0 + 10 * DAY, None, false);
    assert_eq!(pruned.counts.runs, 0);
    assert!(f.read_run(&failed.run_id).is_some());
}

#[test]
fn the_draft_and_confirm_of_a_live_task_stay_and_go_once_it_is_deleted() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = alices_task(&mut f, &alice);
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &task.task_id,
        expect_revision: None,
        now: T0 + 60,
    };
    lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    prune_before(&mut f, T0 + DAY, None, false);
    assert_eq!(f.events(&alice, AuditAction::Draft).len(), 1);
    assert_eq!(f.events(&alice, AuditAction::Confirm).len(), 1);
    assert!(
        f.events(&alice, AuditAction::Pause).is_empty(),
        "an old pause goes"
    );
    let delete = lifecycle::Request {
        now: T0 + 120,
        ..request
    };
    lifecycle::delete(f.store.as_mut(), &delete).unwrap();
    prune_before(&mut f, T0 + DAY, None, false);
    assert!(f.events(&alice, AuditAction::Draft).is_empty());
    assert!(f.events(&alice, AuditAction::Confirm).is_empty());
}

#[test]
fn expired_drafts_go_and_waiting_ones_stay() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let expired = f.draft(&alice, &daily("09:00")).unwrap();
    f.now = T0 + DAY;
    let waiting = f.draft(&alice, &daily("10:00")).unwrap();
    let pruned = prune_before(&mut f, T0 + DAY, None, false);
    assert_eq!(pruned.counts.drafts, 1);
    let gone = f
        .store
        .read(|tx| tx.draft(&expired.draft.draft_id))
        .unwrap();
    let kept = f
        .store
        .read(|tx| tx.draft(&waiting.draft.draft_id))
        .unwrap();
    assert!(gone.is_none() && kept.is_some());
}

#[test]
fn a_dry_run_counts_what_would_go_and_deletes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = alices_task(&mut f, &alice);
    let runs: Vec<_> = (0..3)
        .map(|day| f.settled_run(&task, RunStatus::Succeeded, T0 + 3600 + day * DAY))
        .collect();
    let counted = prune_before(&mut f, T0 + 10 * DAY, None, true);
    assert_eq!(counted.counts.runs, 3);
    for run in &runs {
        assert!(f.read_run(&run.run_id).is_some());
    }
    let done = prune_before(&mut f, T0 + 10 * DAY, None, false);
    assert_eq!(done.counts.runs, counted.counts.runs);
    assert_eq!(done.counts.events, counted.counts.events);
}

#[test]
fn pruning_one_tenant_leaves_another_tenants_history() {
    let mut f = Fixture::new();
    let (alice, elsewhere) = (Person::alice(), Person::alice_elsewhere());
    let ours = alices_task(&mut f, &alice);
    let theirs = alices_task(&mut f, &elsewhere);
    let our_run = f.settled_run(&ours, RunStatus::Succeeded, T0 + 3600);
    let their_run = f.settled_run(&theirs, RunStatus::Succeeded, T0 + 3600);
    prune_before(&mut f, T0 + 10 * DAY, Some("acme"), false);
    assert!(f.read_run(&our_run.run_id).is_none());
    assert!(f.read_run(&their_run.run_id).is_some());
}

#[test]
fn a_run_whose_notice_is_not_yet_delivered_stays() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = alices_task(&mut f, &alice);
    let run = f.parked_run(&task, T0 + 3600, "w1", T0 + 2 * DAY);
    // Denied with no notifier at hand: its failure notice waits for a tick.
    let parked = crate::ops::approve::Parked {
        caller: alice.caller(),
        run: &run.run_id,
        wait_id: "w1",
        now: T0 + 7200,
    };
    let decision = crate::ops::approve::Decision::Deny(None);
    let clock = crate::clock::Clock::start(Some(T0 + 7200), 0);
    crate::ops::approve::answer(&f.shared(), clock, &parked, decision).unwrap();
    let denied = f.read_run(&run.run_id).unwrap();
    assert_eq!(denied.status(), RunStatus::Failed);
    assert_eq!(
        denied.delivery_status,
        Some(crate::model::DeliveryState::Pending)
    );
    let pruned = prune_before(&mut f, T0 + 10 * DAY, None, false);
    assert_eq!(pruned.counts.runs, 0);
    assert!(f.read_run(&run.run_id).is_some());
}
