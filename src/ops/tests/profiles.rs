//! `ops::profiles` (docs/CONTRACT.md §22): `profile set` adds, changes
//! (guarded by the revision) or leaves a profile as it is, with its audit
//! event and the count of tasks a change holds; `draft --profile` binds
//! the current version, a replacement rebinds it, and a deleted profile
//! cannot be rebound.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::ops::draft::DraftSpec;
use crate::ops::profiles::{delete, set, ProfileWrite};
use crate::profile::Definition;

fn write(command: &str) -> ProfileWrite<'static> {
    ProfileWrite {
        tenant_key: "acme",
        name: "coder",
        definition: Definition {
            command: command.into(),
            pass_env: vec!["B".into(), "A".into(), "B".into()],
            ..Definition::default()
        },
        description: None,
        actor: "unix:root",
        now: T0,
    }
}

fn with_coder() -> DraftSpec {
    DraftSpec {
        profile: Some("coder".into()),
        ..daily("09:00")
    }
}

#[test]
fn set_adds_changes_and_leaves_alone_with_its_event() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let added = set(f.store.as_mut(), write("agent")).unwrap();
    assert!(added.changed && added.previous.is_none());
    assert_eq!(
        added.profile.definition.pass_env,
        ["A", "B"],
        "sorted, once each"
    );
    assert_eq!(added.profile.revision, 1);
    let again = set(f.store.as_mut(), write("agent")).unwrap();
    assert!(!again.changed, "the same definition writes nothing");
    let task = f.task(&alice, &with_coder());
    let changed = set(f.store.as_mut(), write("agent --write")).unwrap();
    assert_eq!((changed.profile.revision, changed.tasks_held), (2, 1));
    let events = f.events(&alice, AuditAction::ProfileSet);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].detail["old_sha256"], added.profile.sha256);
    // The task still binds what its owner confirmed.
    let bound = f.read_task(&task.task_id).payload.profile.unwrap();
    assert_eq!(bound.sha256, added.profile.sha256);
    // A replacement with no other change rebinds the current version.
    let made = f
        .draft_replacing(&alice, &task.task_id, &DraftSpec::default())
        .unwrap();
    assert_eq!(made.payload.profile.unwrap().sha256, changed.profile.sha256);
}

#[test]
fn a_draft_names_a_profile_the_tenant_has_and_a_deleted_one_is_not_rebound() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let (kind, e) = refusal(f.draft(&alice, &with_coder()));
    assert_eq!(kind, ErrorKind::NotFound, "{}", e.message);
    set(f.store.as_mut(), write("agent")).unwrap();
    let task = f.task(&alice, &with_coder());
    let (gone, held) = delete(f.store.as_mut(), "acme", "coder", "unix:root", T0).unwrap();
    assert_eq!((gone.name.as_str(), held), ("coder", 1));
    let (kind, e) = refusal(f.draft_replacing(&alice, &task.task_id, &DraftSpec::default()));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(e.message.contains("no longer exists"), "{}", e.message);
    let none = DraftSpec {
        profile: Some("none".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, &task.task_id, &none).unwrap();
    assert!(made.payload.profile.is_none());
    let (kind, _) = refusal(delete(f.store.as_mut(), "acme", "coder", "unix:root", T0));
    assert_eq!(kind, ErrorKind::NotFound);
}
