//! `ops::plan` (docs/CONTRACT.md §14): a plan reads and changes nothing;
//! `apply` recomputes it in one transaction and performs it only under the
//! hash the person saw, every change or none; a file deletes only what its
//! own source created, and takes over another's task only when adopting.

use super::fixture::{daily, named, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::{CmdError, ErrorKind};
use crate::model::TaskState;
use crate::ops::draft::{build_payload, DraftSpec, Drafter};
use crate::ops::lifecycle;
use crate::ops::plan::{apply, compute, plan_hash, Applied, Built, Desired, Kind, Request};

/// A file as `plan` and `apply` are asked about it: its source identity
/// and their flags.
#[derive(Clone, Copy)]
struct Source {
    name: &'static str,
    prune: bool,
    adopt: bool,
}

const FILE: Source = Source {
    name: "source:ops/schedules",
    prune: false,
    adopt: false,
};

const PRUNING: Source = Source {
    prune: true,
    ..FILE
};

/// Another file, adopting what it names.
const ADOPTING: Source = Source {
    name: "source:elsewhere",
    prune: false,
    adopt: true,
};

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

/// The file's tasks: `backup` at 02:00 and `digest` at `digest_at`.
fn file(who: &Person, digest_at: &str) -> Vec<Desired> {
    vec![
        desired(who, T0, "backup", daily("02:00")),
        desired(who, T0, "digest", daily(digest_at)),
    ]
}

/// What `file` would change: (name, kind) each, or the refusal.
fn try_plan(
    f: &mut Fixture,
    who: &Person,
    source: Source,
    file: &mut [Desired],
) -> anyhow::Result<(Vec<(String, Kind)>, String)> {
    f.store.read(|tx| {
        let actions = compute(
            tx,
            &who.caller(),
            source.name,
            file,
            source.prune,
            source.adopt,
        )?;
        let kinds = actions.iter().map(|a| (a.name.clone(), a.kind)).collect();
        Ok((kinds, plan_hash(&actions)))
    })
}

/// What `file` would change, and the plan's hash.
fn plan(
    f: &mut Fixture,
    who: &Person,
    source: Source,
    file: &mut [Desired],
) -> (Vec<(String, Kind)>, String) {
    try_plan(f, who, source, file).unwrap()
}

fn apply_as(
    f: &mut Fixture,
    who: &Person,
    source: Source,
    file: &mut [Desired],
    hash: &str,
) -> anyhow::Result<Vec<Applied>> {
    let request = Request {
        caller: who.caller(),
        file: source.name,
        prune: source.prune,
        adopt: source.adopt,
        hash,
        actor: who.actor(),
        now: f.now,
    };
    apply(f.store.as_mut(), &request, file)
}

/// `file` planned and applied under the plan's hash, as a person would.
fn applied(f: &mut Fixture, who: &Person, source: Source, mut file: Vec<Desired>) -> Vec<Applied> {
    let (_, hash) = plan(f, who, source, &mut file);
    apply_as(f, who, source, &mut file, &hash).unwrap()
}

fn task_named(f: &mut Fixture, name: &str) -> String {
    let id = f.store.read(|tx| tx.task_id_named("acme", name)).unwrap();
    id.expect("a task of that name")
}

fn kinds(list: &[(&str, Kind)]) -> Vec<(String, Kind)> {
    list.iter()
        .map(|(name, kind)| (name.to_string(), *kind))
        .collect()
}

#[test]
fn a_plan_names_each_change_and_changes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (planned, hash) = plan(&mut f, &alice, FILE, &mut file(&alice, "09:00"));
    assert_eq!(
        planned,
        kinds(&[("backup", Kind::Create), ("digest", Kind::Create)])
    );
    assert_eq!(hash.len(), 64);
    assert!(f.tasks(&alice).is_empty());
    assert!(f.events(&alice, AuditAction::Confirm).is_empty());
}

#[test]
fn apply_under_the_plans_hash_creates_every_task_from_its_source() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, hash) = plan(&mut f, &alice, FILE, &mut file(&alice, "09:00"));
    let done = apply_as(&mut f, &alice, FILE, &mut file(&alice, "09:00"), &hash).unwrap();
    assert_eq!(done.len(), 2);
    let tasks = f.tasks(&alice);
    assert_eq!(tasks.len(), 2);
    assert!(tasks.iter().all(|t| t.state == TaskState::Active));
    let managers = f.store.read(|tx| tx.managers("acme")).unwrap();
    assert!(tasks.iter().all(|t| managers[&t.task_id] == FILE.name));
    let events = f.events(&alice, AuditAction::Confirm);
    assert_eq!(events.len(), 2);
    assert!(events
        .iter()
        .all(|e| e.detail["plan_hash"] == hash.as_str()));
    // Applied again: nothing to do, and nothing done.
    f.now += 60;
    let again = apply_as(&mut f, &alice, FILE, &mut file(&alice, "09:00"), &hash).unwrap();
    assert!(again.is_empty());
    assert_eq!(f.events(&alice, AuditAction::Confirm).len(), 2);
}

#[test]
fn apply_under_another_hash_changes_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (_, seen) = plan(&mut f, &alice, FILE, &mut file(&alice, "09:00"));
    // The file changed after the person read the plan.
    let changed = apply_as(&mut f, &alice, FILE, &mut file(&alice, "10:00"), &seen);
    assert_eq!(refusal(changed).0, ErrorKind::DraftRejected);
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
    let (planned, hash) = plan(&mut f, &alice, FILE, &mut twice);
    assert!(planned.iter().all(|(_, k)| *k == Kind::Create));
    let (kind, _) = refusal(apply_as(&mut f, &alice, FILE, &mut twice, &hash));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(f.tasks(&alice).is_empty(), "the first create was kept");
    assert!(f.events(&alice, AuditAction::Confirm).is_empty());
}

#[test]
fn apply_is_refused_when_a_task_it_touches_moved_since_the_plan() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    applied(&mut f, &alice, FILE, file(&alice, "09:00"));
    let (planned, seen) = plan(&mut f, &alice, FILE, &mut file(&alice, "10:00"));
    assert_eq!(planned[1], ("digest".into(), Kind::Replace));
    let digest = task_named(&mut f, "digest");
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &digest,
        expect_revision: None,
        now: T0,
    };
    let paused = lifecycle::pause(f.store.as_mut(), &request, None).unwrap();
    let moved = apply_as(&mut f, &alice, FILE, &mut file(&alice, "10:00"), &seen);
    assert_eq!(refusal(moved).0, ErrorKind::DraftRejected);
    let task = f.read_task(&digest);
    assert_eq!(
        (task.revision, task.payload_hash),
        (2, paused.task.payload_hash)
    );
}

#[test]
fn a_changed_task_is_replaced_in_place_and_one_gone_from_the_file_is_pruned() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    applied(&mut f, &alice, FILE, file(&alice, "09:00"));
    let by_hand = f.task(&alice, &named("by-hand", "12:00"));
    let digest = task_named(&mut f, "digest");
    let mut changed = vec![desired(&alice, T0, "digest", daily("10:00"))];
    let (planned, hash) = plan(&mut f, &alice, PRUNING, &mut changed);
    assert_eq!(
        planned,
        kinds(&[("digest", Kind::Replace), ("backup", Kind::Delete)])
    );
    apply_as(&mut f, &alice, PRUNING, &mut changed, &hash).unwrap();
    let replaced = f.read_task(&digest);
    assert_eq!(
        (replaced.revision, replaced.next_run_at),
        (2, Some(T0 + 2 * 3600))
    );
    let backup = f
        .tasks(&alice)
        .into_iter()
        .find(|t| t.payload.name.as_deref() == Some("backup"));
    assert_eq!(backup.map(|t| t.state), Some(TaskState::Deleted));
    let kept = f.read_task(&by_hand.task_id).state;
    assert_eq!(kept, TaskState::Active, "never a task drafted by hand");
}

#[test]
fn a_task_another_source_created_is_replaced_only_when_adopted() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    applied(&mut f, &alice, FILE, file(&alice, "09:00"));
    let theirs = || vec![desired(&alice, T0, "digest", daily("11:00"))];
    let not_adopting = Source {
        adopt: false,
        ..ADOPTING
    };
    let (kind, e) = refusal(try_plan(&mut f, &alice, not_adopting, &mut theirs()));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(
        e.message.contains(FILE.name) && e.message.contains(ADOPTING.name),
        "{}",
        e.message
    );
    let (planned, _) = plan(&mut f, &alice, ADOPTING, &mut theirs());
    assert_eq!(planned, kinds(&[("digest", Kind::Replace)]));
    applied(&mut f, &alice, ADOPTING, theirs());
    let digest = task_named(&mut f, "digest");
    let managers = f.store.read(|tx| tx.managers("acme")).unwrap();
    assert_eq!(managers[&digest], ADOPTING.name);
}

#[test]
fn another_persons_task_of_the_same_name_is_denied() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    f.task(&Person::bob(), &named("digest", "09:00"));
    let mut mine = vec![desired(&alice, T0, "digest", daily("10:00"))];
    assert_eq!(
        refusal(try_plan(&mut f, &alice, FILE, &mut mine)).0,
        ErrorKind::Denied
    );
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
    applied(&mut f, &alice, FILE, once(T0));
    // A day later the file's `at` builds no payload, and needs none.
    let later = T0 + 86_400;
    f.now = later;
    assert!(once(later)[0].built.is_err());
    let (planned, _) = plan(&mut f, &alice, FILE, &mut once(later));
    assert_eq!(planned, kinds(&[("renew", Kind::Unchanged)]));
    let done = apply_as(&mut f, &alice, FILE, &mut once(later), "any").unwrap();
    assert!(done.is_empty());
    // Never applied, the same file is refused for its past `at`.
    let mut fresh = Fixture::new();
    let refused = try_plan(&mut fresh, &alice, FILE, &mut once(later));
    assert_eq!(refusal(refused).0, ErrorKind::Usage);
}

#[test]
fn a_task_changed_by_hand_since_the_apply_is_planned_back_to_the_file() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    applied(&mut f, &alice, FILE, file(&alice, "09:00"));
    let by_hand = DraftSpec {
        daily: Some("11:00".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, "digest", &by_hand).unwrap();
    f.confirm(&alice, &made.draft.draft_id, &made.draft.payload_hash)
        .unwrap();
    let (planned, _) = plan(&mut f, &alice, FILE, &mut file(&alice, "09:00"));
    assert_eq!(
        planned,
        kinds(&[("backup", Kind::Unchanged), ("digest", Kind::Replace)])
    );
}

#[test]
fn a_task_drafted_by_hand_is_replaced_by_a_file_and_stays_unmanaged() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let by_hand = f.task(&alice, &named("digest", "08:30"));
    let mine = || vec![desired(&alice, T0, "digest", daily("09:00"))];
    let (planned, _) = plan(&mut f, &alice, FILE, &mut mine());
    assert_eq!(planned, kinds(&[("digest", Kind::Replace)]));
    applied(&mut f, &alice, FILE, mine());
    assert_eq!(f.read_task(&by_hand.task_id).revision, 2);
    let managers = f.store.read(|tx| tx.managers("acme")).unwrap();
    assert_eq!(managers.get(&by_hand.task_id), None);
    // So the file's --prune never deletes it.
    let (planned, _) = plan(&mut f, &alice, PRUNING, &mut []);
    assert!(planned.is_empty(), "{planned:?}");
}
