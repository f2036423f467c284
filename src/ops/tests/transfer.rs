//! `ops::transfer` (docs/CONTRACT.md §13): an export goes into an empty
//! store whole or not at all; every line is checked before anything is
//! written, and a task line that disagrees with its payload is refused.

use super::fixture::{daily, named, refusal, Fixture, Person, T0};
use crate::error::ErrorKind;
use crate::model::RunStatus;
use crate::ops::transfer::{import, Import};

/// Alice's store with two tasks and a run, as `export` writes it.
fn exported() -> Vec<String> {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &named("digest", "09:00"));
    f.task(&alice, &named("backup", "02:00"));
    let task = f.read_task(&c.task_id);
    f.settled_run(&task, RunStatus::Succeeded, T0 + 3600);
    f.export()
}

/// The lines checked as `import` checks them.
fn checked(lines: &[String]) -> anyhow::Result<Import> {
    let mut import = Import::default();
    for (i, line) in lines.iter().enumerate() {
        import.add_line(i + 1, line)?;
    }
    Ok(import)
}

#[test]
fn an_export_loads_into_an_empty_store_as_it_was() {
    let lines = exported();
    let (mut target, alice) = (Fixture::new(), Person::alice());
    let counts = import(target.store.as_mut(), &checked(&lines).unwrap()).unwrap();
    assert_eq!(counts["tasks"], 2);
    assert_eq!(counts["runs"], 1);
    let mut names: Vec<String> = target
        .tasks(&alice)
        .into_iter()
        .filter_map(|t| t.payload.name)
        .collect();
    names.sort();
    assert_eq!(names, vec!["backup", "digest"]);
}

#[test]
fn an_import_that_fails_at_its_last_row_loads_nothing() {
    let mut lines = exported();
    let task_line = lines
        .iter()
        .find(|l| l.contains(r#""table":"tasks""#))
        .cloned()
        .unwrap();
    lines.push(task_line);
    let (mut target, alice) = (Fixture::new(), Person::alice());
    let (kind, e) = refusal(import(target.store.as_mut(), &checked(&lines).unwrap()));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(
        e.message
            .starts_with(&format!("line {}: a duplicate tasks row", lines.len())),
        "{}",
        e.message
    );
    assert!(target.tasks(&alice).is_empty());
    assert!(target.store.read(|tx| tx.is_empty()).unwrap());
}

#[test]
fn a_task_line_edited_after_export_is_refused_before_anything_is_written() {
    let lines: Vec<String> = exported()
        .into_iter()
        .map(|l| l.replace("summarise the inbox", "send the inbox elsewhere"))
        .collect();
    let (kind, e) = refusal(checked(&lines));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(e.message.contains(": task "), "{}", e.message);
}

#[test]
fn a_store_that_holds_anything_is_not_imported_into() {
    let lines = exported();
    let (mut target, alice) = (Fixture::new(), Person::alice());
    target.task(&alice, &daily("12:00"));
    let (kind, _) = refusal(import(target.store.as_mut(), &checked(&lines).unwrap()));
    assert_eq!(kind, ErrorKind::Conflict);
    assert_eq!(target.tasks(&alice).len(), 1);
}

#[test]
fn a_memory_row_without_its_task_is_refused() {
    let lines = vec![
        r#"{"table":"task_memory","task_id":"00000000-0000-4000-8000-000000000000"}"#.to_string(),
    ];
    let mut target = Fixture::new();
    let refused = checked(&lines).and_then(|i| import(target.store.as_mut(), &i));
    let (kind, e) = refusal(refused);
    assert_eq!(kind, ErrorKind::Usage);
    assert!(e.message.contains("line 1"), "{}", e.message);
    assert!(target.store.read(|tx| tx.is_empty()).unwrap());
}

#[test]
fn a_zone_that_does_not_read_is_refused_naming_its_line() {
    let mut lines = exported();
    lines.push(
        r#"{"table":"zones","tenant_key":"acme","identity_key":"unix:alice","zone":"Mars/Olympus","set_at":0,"set_by":"x"}"#
            .to_string(),
    );
    let (kind, e) = refusal(checked(&lines));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(
        e.message
            .starts_with(&format!("line {}: zones:", lines.len())),
        "{}",
        e.message
    );
}

#[test]
fn a_following_task_and_its_owners_zone_move_together() {
    let (mut source, alice) = (Fixture::new(), Person::alice());
    let berlin = Some(chrono_tz::Europe::Berlin);
    crate::ops::zones::set_zone(
        source.store.as_mut(),
        "acme",
        "unix:alice",
        berlin,
        "host:sync",
        T0,
    )
    .unwrap();
    let follows = crate::ops::draft::DraftSpec {
        tz: Some("follow".into()),
        ..daily("09:00")
    };
    let c = source.task(&alice, &follows);
    let lines = source.export();
    let mut target = Fixture::new();
    import(target.store.as_mut(), &checked(&lines).unwrap()).unwrap();
    let zone = target
        .store
        .read(|tx| crate::ops::zones::current_zone(tx, "acme", "unix:alice"))
        .unwrap();
    assert_eq!(zone, berlin);
    let task = target.read_task(&c.task_id);
    assert_eq!(task.zone_in_force, chrono_tz::Europe::Berlin);
    assert_eq!(task.follow_key(), Some("unix:alice"));
}
