//! A lease is judged by the time once the run's row is held (docs/CONTRACT.md
//! §12): on PostgreSQL a write that waited for the row behind another
//! session's lock must not pass a lease that expired while it waited. The
//! wait is real (a second session holds the row 2.5 s) and the lease 1 s.
//! SQLite's writer holds the whole file before the time is read: nothing
//! to wait for there.

use std::time::Duration;

use super::fixture::{daily, Fixture, Person, T0};
use crate::model::{Run, RunStatus};
use crate::store::{Plans, RunFinish};

const NINE: i64 = T0 + 3600;

/// How long the other session holds the run's row.
const HELD: Duration = Duration::from_millis(2500);

/// A running run whose lease ends 1 s after the fixture's now, and a
/// second session holding its row for `HELD` (from before this returns).
fn held_run(f: &mut Fixture) -> Option<(Run, std::thread::JoinHandle<()>)> {
    let mut holder = f.postgres_planning(Plans::EachExecution)?;
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    f.now = NINE;
    let run = f.running_run(&task, NINE, NINE + 1, None);
    holder
        .run_sql(&format!(
            "BEGIN; SELECT 1 FROM runs WHERE run_id = '{}' FOR UPDATE",
            run.run_id
        ))
        .unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(HELD);
        holder.run_sql("COMMIT").unwrap();
    });
    Some((run, release))
}

fn token(run: &Run) -> &str {
    run.lease().map(|l| l.token.as_str()).unwrap()
}

#[test]
fn an_outcome_that_waited_past_its_lease_is_not_recorded() {
    let mut f = Fixture::new();
    let Some((run, release)) = held_run(&mut f) else {
        return; // SQLite: no row lock to wait for
    };
    let now = f.now;
    let recorded = f.store.write(|tx| {
        tx.finish_run(&RunFinish {
            run_id: &run.run_id,
            from: RunStatus::Running,
            token: Some(token(&run)),
            to: RunStatus::Succeeded,
            summary: None,
            reason: None,
            wait_kind: None,
            wait_id: None,
            wait_deadline: None,
            stderr: None,
            now,
        })
    });
    release.join().unwrap();
    let err = recorded.expect_err("an outcome recorded under an expired lease");
    assert!(
        format!("{err:#}").contains("no longer running under this lease"),
        "{err:#}"
    );
    let stored = f.store.read(|tx| tx.run(&run.run_id)).unwrap().unwrap();
    assert_eq!(stored.status(), RunStatus::Running);
}

#[test]
fn a_renewal_that_waited_past_its_lease_does_not_revive_it() {
    let mut f = Fixture::new();
    let Some((run, release)) = held_run(&mut f) else {
        return;
    };
    let now = f.now;
    let renewed = f
        .store
        .write(|tx| tx.renew_lease(&run.run_id, token(&run), now + 60, now))
        .unwrap();
    release.join().unwrap();
    assert!(!renewed, "a lease that expired during the wait was renewed");
    // Without the wait the same renewal passes: the guard is the clock's.
    let mut f = Fixture::new();
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.running_run(&task, NINE, NINE + 1, None);
    let renewed = f
        .store
        .write(|tx| tx.renew_lease(&run.run_id, token(&run), NINE + 60, NINE))
        .unwrap();
    assert!(renewed);
}
