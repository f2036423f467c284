//! `ops::migrate` (docs/CONTRACT.md §21): the steps from a store's schema
//! to this build's, applied once and audited once; a dry run and a store
//! already at this build's schema change nothing.

use super::fixture::{Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::ops::migrate::migrate;

#[test]
fn a_store_at_this_builds_schema_has_nothing_to_apply_or_record() {
    let mut f = Fixture::new();
    let found = migrate(f.store.as_mut(), false, "unix:alice", T0).unwrap();
    assert_eq!(found.found, found.latest);
    assert!(found.pending.is_empty() && found.applied.is_empty());
    assert!(f.events(&Person::alice(), AuditAction::Migrate).is_empty());
}

#[test]
fn an_older_store_is_migrated_once_and_audited_once() {
    let mut f = Fixture::at_previous_release();
    let dry = migrate(f.store.as_mut(), true, "unix:alice", T0).unwrap();
    assert!(dry.found < dry.latest);
    let steps: Vec<i64> = dry.pending.iter().map(|(v, _)| *v).collect();
    assert_eq!(steps, ((dry.found + 1)..=dry.latest).collect::<Vec<_>>());
    assert!(dry.applied.is_empty());
    assert_eq!(
        f.store.schema_version().unwrap(),
        dry.found,
        "a dry run changed the schema"
    );
    let done = migrate(f.store.as_mut(), false, "unix:alice", T0).unwrap();
    assert_eq!(done.applied, steps);
    assert_eq!(f.store.schema_version().unwrap(), done.latest);
    let again = migrate(f.store.as_mut(), false, "unix:alice", T0 + 60).unwrap();
    assert!(again.pending.is_empty() && again.applied.is_empty());
    let events = f.events(&Person::alice(), AuditAction::Migrate);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].tenant_key, "*");
    assert_eq!(events[0].detail["from"], dry.found);
    assert_eq!(events[0].detail["to"], dry.latest);
}
