//! `ops::plan` (docs/CONTRACT.md §14): a plan reads and changes nothing;
//! `apply` recomputes it in one transaction and performs it only under the
//! hash the person saw, every change or none; a file deletes only what its
//! own source created, and takes over another's task only when adopting.

use super::fixture::{daily, named, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::{CmdError, ErrorKind};
use crate::model::TaskState;
use crate::ops::draft::{build_payload, DraftSpec, Drafter};
use crate::ops::plan::{apply, compute, plan_hash, Applied, Built, Desired, Kind, Request};

const FILE: &str = "source:ops/schedules";

/// A file's task `name` declared as `spec`, built as `plan` builds it now.
fn desired(who: &Person, now: i64, name: &str, spec: DraftSpec) -> Desired {
    let declared = serde_json::to_string(&spec).unwrap();
    let spec = DraftSpec {
        name: Some(name.into()),
        ..spec
    };
    let drafter = Drafter::of(&who.caller(), now, chrono_tz::UTC, None);
    let built = build_payload(&drafter, &spec, None)
        .map(|(payload, upcoming)| Built { payload, upcoming })
        .map_err(|e| CmdError::usage(e.to_string()));
    Desired {
        name: name.into(),
        declared,
        built,
    }
}

/// The file's tasks: `digest` at 09:00 and `backup` at 02:00, unless given.
fn file(who: &Person, now: i64, digest_at: &str) -> Vec<Desired> {
    vec![
        desired(who, now, "backup", daily("02:00")),
        desired(who, now, "digest", daily(digest_at)),
    ]
}

/// The plan `file` would make from `source`: its kinds by name, and its hash.
fn plan(
    f: &mut Fixture,
    who: &Person,
    source: &str,
    file: &mut [Desired],
    prune: bool,
    adopt: bool,
) -> (Vec<(String, Kind)>, String) {
    f.store
        .read(|tx| {
            let actions = compute(tx, &who.caller(), source, file, prune, adopt)?;
            let kinds = actions.iter().map(|a| (a.name.clone(), a.kind)).collect();
            Ok((kinds, plan_hash(&actions)))
        })
        .unwrap()
}

fn apply_as(
    f: &mut Fixture,
    who: &Person,
    source: &str,
    file: &mut [Desired],
    hash: &str,
    prune: bool,
    adopt: bool,
) -> anyhow::Result<Vec<Applied>> {
    let request = Request {
        caller: who.caller(),
        file: source,
        prune,
        adopt,
        hash,
        actor: who.actor(),
        now: f.now,
    };
    apply(f.store.as_mut(), &request, file)
}

#[test]
fn a_plan_names_each_change_and_changes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (kinds, hash) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    assert_eq!(
        kinds,
        vec![
            ("backup".into(), Kind::Create),
            ("digest".into(), Kind::Create)
        ]
    );
    assert_eq!(hash.len(), 64);
    assert!(f.tasks(&alice).is_empty());
    assert!(f.events(&alice, AuditAction::Confirm).is_empty());
}

#[test]
fn apply_under_the_plans_hash_creates_every_task_from_its_source() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, hash) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    let applied = apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        &hash,
        false,
        false,
    )
    .unwrap();
    assert_eq!(applied.len(), 2);
    let tasks = f.tasks(&alice);
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().all(|t| t.state == TaskState::Active));
    let managers = f.store.read(|tx| tx.managers("acme")).unwrap();
    assert!(tasks
        .iter()
        .all(|t| managers.get(&t.task_id).map(String::as_str) == Some(FILE)));
    let events = f.events(&alice, AuditAction::Confirm);
    assert_eq!(events.len(), 2);
    assert!(events
        .iter()
        .all(|e| e.detail["plan_hash"] == hash.as_str()));
    // Applied again: nothing to do, and nothing done.
    let again = apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0 + 60, "09:00"),
        &hash,
        false,
        false,
    )
    .unwrap();
    assert!(again.is_empty());
    assert_eq!(f.events(&alice, AuditAction::Confirm).len(), 2);
}

#[test]
fn apply_under_another_hash_changes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, seen) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    // The file changed after the person read the plan.
    let (kind, _) = refusal(apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "10:00"),
        &seen,
        false,
        false,
    ));
    assert_eq!(kind, ErrorKind::DraftRejected);
    assert!(f.tasks(&alice).is_empty());
}

#[test]
fn an_apply_that_fails_at_a_later_change_undoes_the_earlier_ones() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    // Two tasks of one name: the plan creates both, the store refuses the second.
    let mut twice = vec![
        desired(&alice, T0, "digest", daily("09:00")),
        desired(&alice, T0, "digest", daily("10:00")),
    ];
    let (kinds, hash) = plan(&mut f, &alice, FILE, &mut twice, false, false);
    assert!(kinds.iter().all(|(_, k)| *k == Kind::Create));
    let (kind, _) = refusal(apply_as(
        &mut f, &alice, FILE, &mut twice, &hash, false, false,
    ));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(f.tasks(&alice).is_empty(), "the first create was kept");
    assert!(f.events(&alice, AuditAction::Confirm).is_empty());
}

#[test]
fn a_changed_task_is_replaced_in_place_and_one_gone_from_the_file_is_pruned() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, hash) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        &hash,
        false,
        false,
    )
    .unwrap();
    let by_hand = f.task(&alice, &named("by-hand", "12:00"));
    let digest = f
        .store
        .read(|tx| tx.task_id_named("acme", "digest"))
        .unwrap()
        .unwrap();
    let mut changed = vec![desired(&alice, T0, "digest", daily("10:00"))];
    let (kinds, hash) = plan(&mut f, &alice, FILE, &mut changed, true, false);
    assert_eq!(
        kinds,
        vec![
            ("digest".into(), Kind::Replace),
            ("backup".into(), Kind::Delete)
        ]
    );
    apply_as(&mut f, &alice, FILE, &mut changed, &hash, true, false).unwrap();
    let replaced = f.read_task(&digest);
    assert_eq!(
        (replaced.revision, replaced.next_run_at),
        (2, Some(T0 + 2 * 3600))
    );
    let states: Vec<(Option<String>, TaskState)> = f
        .tasks(&alice)
        .into_iter()
        .map(|t| (t.payload.name, t.state))
        .collect();
    assert!(
        states.contains(&(Some("backup".into()), TaskState::Deleted)),
        "{states:?}"
    );
    assert_eq!(
        f.read_task(&by_hand.task_id).state,
        TaskState::Active,
        "never a task drafted by hand"
    );
}

#[test]
fn a_task_another_source_created_is_replaced_only_when_adopted() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, hash) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        &hash,
        false,
        false,
    )
    .unwrap();
    let other = "source:elsewhere";
    let mut theirs = vec![desired(&alice, T0, "digest", daily("11:00"))];
    let refused = f
        .store
        .read(|tx| compute(tx, &alice.caller(), other, &mut theirs, false, false).map(|_| ()));
    let (kind, e) = refusal(refused);
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(
        e.message.contains(FILE) && e.message.contains(other),
        "{}",
        e.message
    );
    let (kinds, hash) = plan(&mut f, &alice, other, &mut theirs, false, true);
    assert_eq!(kinds, vec![("digest".into(), Kind::Replace)]);
    apply_as(&mut f, &alice, other, &mut theirs, &hash, false, true).unwrap();
    let digest = f
        .store
        .read(|tx| tx.task_id_named("acme", "digest"))
        .unwrap()
        .unwrap();
    let managers = f.store.read(|tx| tx.managers("acme")).unwrap();
    assert_eq!(managers.get(&digest).map(String::as_str), Some(other));
}

#[test]
fn another_persons_task_of_the_same_name_is_denied() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    f.task(&Person::bob(), &named("digest", "09:00"));
    let mut mine = vec![desired(&alice, T0, "digest", daily("10:00"))];
    let refused = f
        .store
        .read(|tx| compute(tx, &alice.caller(), FILE, &mut mine, false, false).map(|_| ()));
    assert_eq!(refusal(refused).0, ErrorKind::Denied);
}

#[test]
fn an_applied_one_shot_whose_time_passed_is_no_change() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let once = |now| {
        let spec = DraftSpec {
            instruction: Some("renew the certificate".into()),
            at: Some("2026-12-02T09:00:00Z".into()),
            ..DraftSpec::default()
        };
        vec![desired(&alice, now, "renew", spec)]
    };
    let (_, hash) = plan(&mut f, &alice, FILE, &mut once(T0), false, false);
    apply_as(&mut f, &alice, FILE, &mut once(T0), &hash, false, false).unwrap();
    // A day later the file's `at` builds no payload, and needs none.
    let later = T0 + 86_400;
    assert!(once(later)[0].built.is_err());
    let (kinds, _) = plan(&mut f, &alice, FILE, &mut once(later), false, false);
    assert_eq!(kinds, vec![("renew".into(), Kind::Unchanged)]);
    f.now = later;
    let applied = apply_as(&mut f, &alice, FILE, &mut once(later), "any", false, false).unwrap();
    assert!(applied.is_empty());
    // Unapplied, the same file is refused for its past `at`.
    let mut fresh = Fixture::new();
    let refused = fresh
        .store
        .read(|tx| compute(tx, &alice.caller(), FILE, &mut once(later), false, false).map(|_| ()));
    assert_eq!(refusal(refused).0, ErrorKind::Usage);
}

#[test]
fn a_task_changed_by_hand_since_the_apply_is_planned_back_to_the_file() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, hash) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        &hash,
        false,
        false,
    )
    .unwrap();
    let by_hand = DraftSpec {
        daily: Some("11:00".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, "digest", &by_hand).unwrap();
    f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash)
        .unwrap();
    let (kinds, _) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    assert_eq!(
        kinds,
        vec![
            ("backup".into(), Kind::Unchanged),
            ("digest".into(), Kind::Replace)
        ]
    );
}

#[test]
fn a_task_drafted_by_hand_is_replaced_by_a_file_and_stays_unmanaged() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let by_hand = f.task(&alice, &named("digest", "08:30"));
    let mut mine = vec![desired(&alice, T0, "digest", daily("09:00"))];
    let (kinds, hash) = plan(&mut f, &alice, FILE, &mut mine, false, false);
    assert_eq!(kinds, vec![("digest".into(), Kind::Replace)]);
    apply_as(&mut f, &alice, FILE, &mut mine, &hash, false, false).unwrap();
    assert_eq!(f.read_task(&by_hand.task_id).revision, 2);
    let managers = f.store.read(|tx| tx.managers("acme")).unwrap();
    assert_eq!(managers.get(&by_hand.task_id), None);
    // So the file's --prune never deletes it.
    let (kinds, _) = plan(&mut f, &alice, FILE, &mut [], true, false);
    assert!(kinds.is_empty(), "{kinds:?}");
}

#[test]
fn apply_is_refused_when_a_task_it_touches_moved_since_the_plan() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, hash) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        false,
        false,
    );
    apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "09:00"),
        &hash,
        false,
        false,
    )
    .unwrap();
    let (kinds, seen) = plan(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "10:00"),
        false,
        false,
    );
    assert_eq!(kinds[1], ("digest".into(), Kind::Replace));
    let digest = f
        .store
        .read(|tx| tx.task_id_named("acme", "digest"))
        .unwrap()
        .unwrap();
    let request = crate::ops::lifecycle::Request {
        caller: alice.caller(),
        task: &digest,
        expect_revision: None,
        now: T0,
    };
    let paused = crate::ops::lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    let (kind, _) = refusal(apply_as(
        &mut f,
        &alice,
        FILE,
        &mut file(&alice, T0, "10:00"),
        &seen,
        false,
        false,
    ));
    assert_eq!(kind, ErrorKind::DraftRejected);
    let task = f.read_task(&digest);
    assert_eq!(
        (task.revision, task.payload_hash),
        (2, paused.task.payload_hash)
    );
}
