//! `ops::explain` (docs/CONTRACT.md §13): why an occurrence did or did not
//! run, named by a rule, from what the store recorded of it.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::error::ErrorKind;
use crate::model::RunStatus;
use crate::ops::explain::{explain_named, Explained};
use crate::ops::lifecycle;

const NINE: i64 = T0 + 3600;
const DAY: i64 = 86_400;

fn explain(
    f: &mut Fixture,
    who: &Person,
    arg: &str,
    at: Option<&str>,
    now: i64,
) -> anyhow::Result<Explained> {
    f.store
        .read(|tx| explain_named(tx, &who.caller(), arg, at, now, None))
}

#[test]
fn an_occurrence_before_the_task_existed_is_named_so() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    // At T0 the last 09:00 was yesterday's, before the confirm.
    let e = explain(&mut f, &alice, &c.task_id, None, T0).unwrap();
    assert_eq!(e.explanation.rule, "created_after");
    assert_eq!(e.occurrence.at, NINE - DAY);
}

#[test]
fn an_occurrence_no_tick_has_seen_is_unclaimed() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let e = explain(&mut f, &alice, &c.task_id, None, NINE + 600).unwrap();
    assert_eq!(e.explanation.rule, "no_tick");
    assert!(
        e.explanation.paragraph.contains("no tick has ever run"),
        "{}",
        e.explanation.paragraph
    );
    assert!(e.run.is_none());
}

#[test]
fn a_run_of_the_occurrence_is_named_with_its_outcome() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.settled_run(&task, RunStatus::Succeeded, NINE);
    let e = explain(&mut f, &alice, &c.task_id, None, NINE + 600).unwrap();
    assert_eq!(e.explanation.rule, "succeeded");
    assert!(e.explanation.paragraph.contains(&run.run_id));
    assert_eq!(e.run.map(|r| r.run_id), Some(run.run_id.clone()));
    // Named by its run, the occurrence is the run's own.
    let by_run = explain(&mut f, &alice, &run.run_id, None, NINE + 3 * DAY).unwrap();
    assert_eq!(
        (by_run.occurrence.at, by_run.explanation.rule),
        (NINE, "succeeded")
    );
}

#[test]
fn an_occurrence_while_paused_names_the_pause_and_its_reason() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let request = lifecycle::Request {
        caller: alice.caller(),
        task: &c.task_id,
        expect_revision: None,
        now: T0 + 60,
    };
    lifecycle::pause(f.store.as_mut(), &request, Some("on holiday")).unwrap();
    let e = explain(
        &mut f,
        &alice,
        &c.task_id,
        Some("2026-12-03T09:00:00Z"),
        NINE + 2 * DAY,
    )
    .unwrap();
    assert_eq!(e.occurrence.at, NINE + DAY);
    assert_eq!(e.explanation.rule, "paused");
    assert!(
        e.explanation.paragraph.contains("on holiday"),
        "{}",
        e.explanation.paragraph
    );
}

#[test]
fn an_unknown_run_is_named_as_what_blocks_the_next_occurrence() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let unknown = f.unknown_run(&task, NINE);
    let e = explain(&mut f, &alice, &c.task_id, None, NINE + DAY + 600).unwrap();
    assert_eq!(e.occurrence.at, NINE + DAY);
    assert_eq!(e.explanation.rule, "blocked");
    assert!(e.explanation.paragraph.contains(&unknown.run_id));
}

#[test]
fn another_persons_task_is_not_explained() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let (kind, _) = refusal(explain(
        &mut f,
        &Person::bob(),
        &c.task_id,
        None,
        NINE + 600,
    ));
    assert_eq!(kind, ErrorKind::Denied);
    let (kind, _) = refusal(explain(&mut f, &alice, "no-such-task", None, NINE + 600));
    assert_eq!(kind, ErrorKind::NotFound);
}

#[test]
fn right_after_a_re_time_the_last_occurrence_is_the_old_zones() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let follows = crate::ops::draft::DraftSpec {
        tz: Some("follow".into()),
        ..daily("09:00")
    };
    let c = f.task(&alice, &follows);
    let task = f.read_task(&c.task_id);
    let ran = f.settled_run(&task, RunStatus::Succeeded, NINE);
    let moved_at = NINE + 600;
    let tokyo = Some(chrono_tz::Asia::Tokyo);
    crate::ops::zones::set_zone(
        f.store.as_mut(),
        "acme",
        "unix:alice",
        tokyo,
        "host:sync",
        moved_at,
    )
    .unwrap();
    // 09:00 in Tokyo was 00:00 UTC: in the new zone, but before the move.
    let e = explain(&mut f, &alice, &c.task_id, None, moved_at + 60).unwrap();
    assert_eq!(e.occurrence.at, NINE);
    assert_eq!(e.explanation.rule, "succeeded");
    assert!(e.explanation.paragraph.contains(&ran.run_id));
    assert!(
        e.explanation
            .paragraph
            .contains("re-timed from UTC to Asia/Tokyo"),
        "{}",
        e.explanation.paragraph
    );
}
