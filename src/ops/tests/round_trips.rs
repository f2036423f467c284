//! Round trips to PostgreSQL a claim and an outcome cost (issue 46: at
//! most 4 each). BEGIN goes out with a transaction's first statement and
//! COMMIT with its last; held rows and bookkeeping nothing waits on go out
//! with the next statement that needs an answer (`store/postgres/client.rs`).
//! Counted on a connection whose statements are prepared already, as in a
//! tick past its first claim and outcome: preparing a statement is a round
//! trip once per connection.

use super::fixture::{daily, Fixture, Person, T0};
use crate::model::{DeliveryState, Run, RunStatus};
use crate::store::{Plans, Store};
use crate::tick::{
    claim_batch, read_told, settle_outcome, ClaimSettings, Claimed, NoticeClaim, Outcome,
    RoundRobin, RunningLimits,
};

/// 09:00, the daily tasks' occurrence (T0 is 08:00 UTC).
const NINE: i64 = T0 + 3600;

/// Claims one run as a tick's first claim does (tenants and approved
/// continuations read too); its round trips.
fn claim_one(pg: &mut crate::store::postgres::PgStore, now: i64) -> (Run, u64) {
    let before = pg.round_trips();
    let settings = ClaimSettings {
        now,
        lease_seconds: 60,
        runner: None,
    };
    let store: &mut dyn Store = pg;
    let batch = store
        .write(|tx| {
            let mut rr = RoundRobin::default();
            claim_batch(tx, &mut rr, None, 1, RunningLimits::default(), settings)
        })
        .unwrap();
    let run = match batch.claimed.into_iter().next() {
        Some(Claimed::Planned { plan, .. }) => plan.runs.into_iter().next().unwrap(),
        other => panic!("expected a planned run, got {other:?}"),
    };
    assert_eq!(run.status(), RunStatus::Running);
    (run, pg.round_trips() - before)
}

/// Records a failure of `run` as a worker does: the task's streak and
/// retry, its notice claimed for delivery and what the notifier is told of
/// read in the same transaction. Its round trips.
fn fail(pg: &mut crate::store::postgres::PgStore, run: &Run, now: i64) -> u64 {
    let before = pg.round_trips();
    let token = run.lease().unwrap().token.clone();
    let outcome = Outcome::settled(RunStatus::Failed, None, Some("exit 1".into()));
    let store: &mut dyn Store = pg;
    let told = store
        .write(|tx| {
            let claim = NoticeClaim {
                token: "notice-claim",
                deadline: now + 60,
            };
            let notice = settle_outcome(
                tx,
                run,
                RunStatus::Running,
                Some(&token),
                &outcome,
                "agentcron:tick",
                now,
                Some(claim),
            )?;
            assert_eq!(notice.state, DeliveryState::Sending, "a failure is told");
            read_told(tx, &notice)
        })
        .unwrap();
    let (task, told_run) = told;
    assert_eq!(
        task.unwrap().consecutive_failures,
        1,
        "the streak is counted"
    );
    assert_eq!(told_run.unwrap().status(), RunStatus::Failed);
    pg.round_trips() - before
}

#[test]
fn a_claim_and_an_outcome_are_each_four_round_trips_at_most_on_postgres() {
    let mut f = Fixture::new();
    let Some(mut pg) = f.postgres_planning(Plans::Kept) else {
        return; // about PostgreSQL's round trips
    };
    let alice = Person::alice();
    let first = f.task(&alice, &daily("09:00"));
    // The first claim and outcome prepare the statements.
    let (run, _) = claim_one(&mut pg, NINE + 5);
    fail(&mut pg, &run, NINE + 6);
    let second = f.task(&alice, &daily("09:00"));
    let (run, claim) = claim_one(&mut pg, NINE + 7);
    assert_eq!(run.task_id, second.task_id);
    let outcome = fail(&mut pg, &run, NINE + 8);
    assert!(claim <= 4, "a claim took {claim} round trips");
    assert!(outcome <= 4, "an outcome took {outcome} round trips");
    assert_ne!(first.task_id, second.task_id);
}

/// A guarded change sent later (`advance_task_later`) whose row moved on is
/// a Conflict before the commit on either store, and its transaction leaves
/// nothing behind: on PostgreSQL the server saw no error, so COMMIT must not
/// have gone out with it.
#[test]
fn a_later_guarded_change_that_conflicts_commits_nothing() {
    let mut f = Fixture::new();
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let events_before = event_count(&mut f);
    let on_postgres = f.postgres_planning(Plans::Kept).is_some();
    let stale = crate::store::TaskAdvance {
        task_id: &task.task_id,
        expected_state: task.state,
        // Not the task's: the guard matches no row.
        expected_next_run_at: task.next_run_at.map(|at| at + 1),
        expected_next_retry_at: task.next_retry_at,
        state: task.state,
        next_run_at: task.next_run_at,
        next_retry_at: None,
        retry_run_id: None,
        consecutive_failures: 7,
        now: NINE,
    };
    let written = f.store.write(|tx| {
        tx.append_event(&an_event_of(&task))?;
        tx.advance_task_later(&stale)
    });
    let e = written.expect_err("the guard matched no row");
    assert_eq!(
        crate::error::classify(&e).0,
        crate::error::ErrorKind::Conflict,
        "{e:#}"
    );
    let after = f.read_task(&c.task_id);
    assert_eq!(after.consecutive_failures, 0, "the change did not land");
    let events = event_count(&mut f);
    assert_eq!(events, events_before, "nor did the rest of its transaction");

    // A caller that lets the Conflict pass does not commit around it on
    // PostgreSQL: the transaction stands as aborted, as it would had the
    // server refused the change.
    let written = f.store.write(|tx| {
        tx.append_event(&an_event_of(&task))?;
        let _ = tx.advance_task_later(&stale);
        let _ = tx.task(&task.task_id);
        Ok(())
    });
    let events = event_count(&mut f);
    if on_postgres {
        let e = written.expect_err("an aborted transaction does not commit");
        assert_eq!(
            crate::error::classify(&e).0,
            crate::error::ErrorKind::Conflict,
            "{e:#}"
        );
        assert_eq!(events, events_before, "nothing committed");
    } else {
        // SQLite ran the change at once and it changed nothing: the rest
        // of the transaction is the caller's to commit.
        written.unwrap();
        assert_eq!(events, events_before + 1);
    }
    assert_eq!(f.read_task(&c.task_id).consecutive_failures, 0);
}

fn event_count(f: &mut Fixture) -> usize {
    f.events(&Person::alice(), crate::audit::AuditAction::Pause)
        .len()
}

/// An audit event of `task`, written beside the change under test.
fn an_event_of(task: &crate::model::Task) -> crate::audit::Event {
    crate::audit::Event::of_task(
        crate::audit::AuditAction::Pause,
        task,
        "agentcron:test",
        NINE,
        serde_json::json!({}),
    )
}
