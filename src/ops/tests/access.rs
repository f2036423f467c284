//! `ops::access` (docs/CONTRACT.md §4, §5): a TASK or RUN argument names
//! the caller's own by id, name or unique prefix of 4+ characters; an
//! ambiguous prefix is a usage error, and another tenant's is denied or
//! not found without a word about it.

use super::fixture::{daily, named, refusal, Fixture, Person, T0};
use crate::error::ErrorKind;
use crate::model::RunStatus;
use crate::ops::access::{owned_draft, owned_run, owned_task, run_in_tenant};

const NINE: i64 = T0 + 3600;

#[test]
fn a_task_is_named_by_id_name_or_unique_prefix() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &named("digest", "09:00"));
    for arg in [c.task_id.as_str(), "digest", &c.task_id[..8]] {
        let task = f
            .store
            .read(|tx| owned_task(tx, &alice.caller(), arg))
            .unwrap();
        assert_eq!(task.task_id, c.task_id, "{arg}");
    }
    let (kind, e) = refusal(
        f.store
            .read(|tx| owned_task(tx, &alice.caller(), &c.task_id[..3])),
    );
    assert_eq!(kind, ErrorKind::NotFound, "three characters are no prefix");
    assert!(e.hint.unwrap_or_default().contains("at least 4 characters"));
}

/// A confirmed task of alice's with the id `id` (ids are random otherwise).
fn task_with_id(f: &mut Fixture, alice: &Person, id: &str) {
    let made = f.draft(alice, &daily("09:00")).unwrap();
    let hash = made.draft.payload_hash.clone();
    let task = made
        .payload
        .new_task(id.into(), hash, NINE, chrono_tz::UTC, f.now);
    f.store.write(|tx| tx.insert_task(&task)).unwrap();
}

#[test]
fn a_prefix_two_tasks_share_is_ambiguous() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    task_with_id(&mut f, &alice, "abcd1111-0000-4000-8000-000000000001");
    task_with_id(&mut f, &alice, "abcd2222-0000-4000-8000-000000000002");
    let (kind, e) = refusal(f.store.read(|tx| owned_task(tx, &alice.caller(), "abcd")));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(e.message.contains("matches several tasks"), "{}", e.message);
    let one = f
        .store
        .read(|tx| owned_task(tx, &alice.caller(), "abcd2"))
        .unwrap();
    assert_eq!(one.task_id, "abcd2222-0000-4000-8000-000000000002");
}

#[test]
fn another_tenants_run_is_denied_by_id_and_unseen_by_prefix() {
    let mut f = Fixture::new();
    let (alice, elsewhere) = (Person::alice(), Person::alice_elsewhere());
    let c = f.task(&elsewhere, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.settled_run(&task, RunStatus::Succeeded, NINE);
    let (kind, e) = refusal(
        f.store
            .read(|tx| run_in_tenant(tx, &alice.caller(), &run.run_id)),
    );
    assert_eq!(kind, ErrorKind::Denied);
    assert!(
        !e.message.contains(&c.task_id),
        "the task is not told: {}",
        e.message
    );
    let (kind, _) = refusal(
        f.store
            .read(|tx| run_in_tenant(tx, &alice.caller(), &run.run_id[..8])),
    );
    assert_eq!(
        kind,
        ErrorKind::NotFound,
        "a prefix sees only the caller's tenant"
    );
    let (_, found) = f
        .store
        .read(|tx| owned_run(tx, &elsewhere.caller(), &run.run_id[..8]))
        .unwrap();
    assert_eq!(found.run_id, run.run_id);
}

#[test]
fn another_persons_draft_is_no_draft() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    let id = made.draft.draft_id.clone();
    let (draft, _) = f
        .store
        .read(|tx| owned_draft(tx, &alice.caller(), &id[..6]))
        .unwrap();
    assert_eq!(draft.draft_id, id);
    for other in [Person::bob(), Person::alice_elsewhere()] {
        let (kind, _) = refusal(f.store.read(|tx| owned_draft(tx, &other.caller(), &id)));
        assert_eq!(kind, ErrorKind::NotFound);
    }
}
