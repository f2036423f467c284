//! `QueueTx::next_work_at` (the idle tick's note, `store::idle`): the first
//! instant at which a tick could find work by the clock alone, on both
//! stores, for each kind of work the agenda looks for.

use super::fixture::{daily, Fixture, Person, T0};
use crate::store::idle::NoticeRules;

const RULES: NoticeRules = NoticeRules {
    notifier: true,
    give_up_seconds: 86400,
};

fn next(f: &mut Fixture, now: i64) -> Option<i64> {
    f.store.read(|tx| tx.next_work_at(now, RULES)).unwrap()
}

#[test]
fn nothing_stored_is_due_until_a_write() {
    let mut f = Fixture::new();
    assert_eq!(next(&mut f, T0), Some(i64::MAX));
}

#[test]
fn the_earliest_occurrence_lease_end_and_parked_deadline_come_first() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    // Due at 09:00, an hour after T0.
    assert_eq!(next(&mut f, T0), Some(T0 + 3600));
    // At its instant it is due: no rest.
    assert_eq!(next(&mut f, T0 + 3600), None);
    let stored = f.read_task(&task.task_id);
    // A run whose lease ends at T0 + 600 is expired from the second after.
    f.running_run(&stored, T0 - 60, T0 + 600, None);
    assert_eq!(next(&mut f, T0), Some(T0 + 601));
    let other = f.task(&alice, &daily("10:00"));
    let other = f.read_task(&other.task_id);
    f.parked_run(&other, T0 - 60, "w1", T0 + 300);
    assert_eq!(next(&mut f, T0), Some(T0 + 301));
}

#[test]
fn a_trigger_is_due_at_once() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let asked = crate::store::Trigger {
        at: T0,
        actor: alice.actor().to_string(),
        reason: None,
    };
    crate::ops::trigger::trigger(f.store.as_mut(), &alice.caller(), &task.task_id, &asked).unwrap();
    assert_eq!(next(&mut f, T0), None);
}
