//! The store's reads that do in one statement what took several (the
//! round trips of a run on PostgreSQL, issue 46) say what their parts
//! say, on both stores; and rows a transaction holds back to send together
//! are seen by its own later statements.

use super::fixture::{daily, Fixture, Person, T0};
use crate::audit::{AuditAction, Event};
use crate::store::{EventFilter, Plans};

/// The 09:00 occurrence of the fixture's daily task.
const NINE: i64 = T0 + 3600;

/// The one read a run's notice starts from says what the three reads it
/// replaced say: the task's memory, the next number, whether one is sent.
#[test]
fn what_a_notice_starts_from_is_read_at_once_as_each_read_alone() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let fresh = f.running_run(&task, NINE, NINE + 600, None);
    let lost = f.unknown_run(&task, NINE + 86400);
    for run in [&fresh, &lost] {
        let (start, alone) = f
            .store
            .read(|tx| {
                let start = tx.notice_start(&run.run_id, &run.task_id)?;
                let alone = (
                    tx.task_memory(&run.task_id)?,
                    tx.notice_sending(&run.run_id)?,
                    tx.next_notice_seq(&run.run_id)?,
                );
                Ok((start, alone))
            })
            .unwrap();
        assert_eq!((start.memory, start.sending, start.seq), alone);
    }
    // The frozen run has a notice; its task remembers it settled.
    let after = f
        .store
        .read(|tx| tx.notice_start(&lost.run_id, &lost.task_id))
        .unwrap();
    assert_eq!(after.seq, 2);
    assert!(after.memory.is_some());
}

/// The executor's `previous` comes from one read of the task's memory and
/// its last settled run: the same as reading each alone.
#[test]
fn the_last_settled_run_is_read_with_the_memory_in_one_read() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let none = f.store.read(|tx| tx.last_settled(&c.task_id)).unwrap();
    assert_eq!(none, None, "a task that never settled a run has no memory");
    let task = f.read_task(&c.task_id);
    let lost = f.unknown_run(&task, NINE);
    let (together, memory, run) = f
        .store
        .read(|tx| {
            let memory = tx.task_memory(&c.task_id)?.expect("memory");
            let run = match &memory.last_settled_run_id {
                Some(id) => tx.run(id)?,
                None => None,
            };
            Ok((tx.last_settled(&c.task_id)?, memory, run))
        })
        .unwrap();
    let together = together.expect("one read");
    assert_eq!(together.run, run);
    assert_eq!(together.last_success_at, memory.last_success_at);
    assert_eq!(run.map(|r| r.run_id), Some(lost.run_id));
}

/// A notice's notifier is told of the run and its task from one read: the
/// same as reading each alone.
#[test]
fn a_run_and_its_task_are_read_in_one_read() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let lost = f.unknown_run(&task, NINE);
    let (together, run, task) = f
        .store
        .read(|tx| {
            let together = tx.run_and_task(&lost.run_id)?;
            Ok((together, tx.run(&lost.run_id)?, tx.task(&c.task_id)?))
        })
        .unwrap();
    assert_eq!(together, Some((run.unwrap(), task)));
    let none = f.store.read(|tx| tx.run_and_task("no-such-run")).unwrap();
    assert_eq!(none, None);
}

/// An audit event PostgreSQL holds back to send with the transaction's
/// other rows is read back by the transaction's own later statements, and
/// committed with it.
#[test]
fn an_event_held_back_is_seen_by_its_own_transaction_and_committed() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let before = f.events(&alice, AuditAction::Pause).len();
    let seen = f
        .store
        .write(|tx| {
            for n in 0..3 {
                tx.append_event(&Event {
                    task_id: Some(c.task_id.clone()),
                    ..Event::of_tenant(
                        AuditAction::Pause,
                        &alice.tenant,
                        "unix:alice",
                        T0 + n,
                        serde_json::json!({"n": n}),
                    )
                })?;
            }
            let filter = EventFilter {
                tenant_key: &alice.tenant,
                task_id: Some(&c.task_id),
                owner_keys: &alice.keys,
                limit: 100,
            };
            Ok(tx.events(&filter)?.len())
        })
        .unwrap();
    assert!(seen >= 3, "the transaction saw {seen} events");
    assert_eq!(f.events(&alice, AuditAction::Pause).len(), before + 3);
}

/// Due tasks whose rows another session holds are noted beside them
/// set-wise (issue 46 item 1): one read says what is noted already, and a
/// sighting of the same instant is not written again.
#[test]
fn due_tasks_are_noted_set_wise_and_each_sighting_once() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let first = f.task(&alice, &daily("09:00"));
    let second = f.task(&alice, &daily("09:00"));
    let mut ids = [first.task_id.clone(), second.task_id.clone()];
    ids.sort();
    let seen_at = NINE + 5;
    let read = |f: &mut Fixture| {
        let mut read: Vec<(String, Option<i64>)> = f
            .store
            .read(|tx| tx.tasks_to_note(seen_at, None, 100))
            .unwrap()
            .into_iter()
            .map(|t| (t.task.unwrap().task_id, t.noted_due_at))
            .collect();
        read.sort();
        read
    };
    let note = |f: &mut Fixture, now| {
        f.store
            .write(|tx| crate::tick::queue::note_locked(tx, None, now, 100))
            .unwrap()
    };
    assert_eq!(
        read(&mut f),
        [(ids[0].clone(), None), (ids[1].clone(), None)]
    );
    assert_eq!(note(&mut f, seen_at), 2);
    let noted = [(ids[0].clone(), Some(NINE)), (ids[1].clone(), Some(NINE))];
    assert_eq!(read(&mut f), noted);
    // The next tick sees the same instant: nothing to write, and the first
    // sighting stands.
    assert_eq!(note(&mut f, seen_at + 60), 0);
    for id in &ids {
        let mark = f.store.read(|tx| tx.queue_mark(id)).unwrap();
        assert_eq!(mark.map(|m| (m.due_at, m.seen_at)), Some((NINE, seen_at)));
    }
    // Marked on its row, a task is no longer one to note.
    f.store
        .write(|tx| crate::tick::queue::mark_queued(tx, None, seen_at + 60, 1))
        .unwrap();
    assert_eq!(read(&mut f).len(), 1);
}

/// A PostgreSQL session keeps no plan made for the tables as they were: a
/// tick's session lives through a burst whose runs grow from none to
/// thousands, and a generic plan made while they were empty (after five
/// executions) scanned them whole at every lookup by run id. A command's
/// session plans each execution; a tick's keeps generic plans, made along
/// the indexes (store::Plans).
#[test]
fn a_postgres_session_keeps_no_plan_made_for_the_tables_as_they_were() {
    let mut f = Fixture::new();
    let (Some(mut each), Some(mut kept)) = (
        f.postgres_planning(Plans::EachExecution),
        f.postgres_planning(Plans::Kept),
    ) else {
        return; // SQLite plans each statement when it is prepared
    };
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = f.running_run(&task, NINE, NINE + 600, None);
    // The server knows the runs as they are: one (autovacuum analyzes a
    // table as it changes).
    each.run_sql("ANALYZE runs").unwrap();
    for session in [&mut each, &mut kept] {
        let store: &mut dyn crate::store::Store = session;
        for _ in 0..12 {
            let found = store.read(|tx| tx.run(&run.run_id)).unwrap();
            assert!(found.is_some());
        }
    }
    let (generic, custom) = each.plans_used().unwrap();
    assert_eq!(generic, 0, "generic plans used");
    assert!(custom >= 12, "{custom} plans of their own");
    let (generic, _) = kept.plans_used().unwrap();
    assert!(generic > 0, "the tick's session planned each execution");
    // The runs grow to thousands before the next analysis: the plan kept
    // reads one along its key.
    each.run_sql(&format!(
        "CREATE TEMP TABLE copies AS
             SELECT r.*, g FROM runs r, generate_series(1, 5000) g WHERE run_id = '{}';
         UPDATE copies SET run_id = 'copy-' || g, attempt = 1000 + g;
         ALTER TABLE copies DROP COLUMN g;
         INSERT INTO runs SELECT * FROM copies;",
        run.run_id
    ))
    .unwrap();
    let plan = kept.next_plan_of("SELECT r.run_id").unwrap();
    assert!(plan.contains("Index Scan"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
}

/// A tick's session keeps one generic plan per statement for the whole
/// burst (store::Plans::Kept), made at its first execution, when
/// `task_memory` and `runs` may hold nothing: the claim's plan must still
/// find each due task's memory and last settled run by their keys. Made
/// on empty tables, the plan joined the two whole before it looked at the
/// due tasks, and walked both at every claim: 91 ms a claim by the end of
/// a 1,800-run burst on four hosts, the server's CPU 15 ms a run. Nor may
/// it read every note or blocking run into a hash at every claim.
#[test]
fn a_claims_plan_made_on_empty_tables_still_reads_memory_and_runs_by_key() {
    let mut f = Fixture::new();
    let Some(mut kept) = f.postgres_planning(Plans::Kept) else {
        return; // SQLite plans each statement when it is prepared
    };
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let tenant = f.read_task(&c.task_id).payload.tenant_key;
    burst_start(&mut kept, &c.task_id);
    for _ in 0..3 {
        let store: &mut dyn crate::store::Store = &mut kept;
        let read = store
            .write(|tx| {
                tx.due_in(&tenant, NINE, 16, &[])
                    .map(|read| read.rows.len())
            })
            .unwrap();
        assert_eq!(read, 1, "the due task");
    }
    // Planned once, not at each claim: planning each execution was a third
    // of the server's CPU a run.
    let (generic, custom) = kept.plans_used().unwrap();
    assert_eq!(custom, 0, "statements planned at each execution");
    assert!(generic >= 3, "{generic} executions on a generic plan");
    let plan = kept.next_plan_of("WITH due0").unwrap();
    // None walks a whole table or index at every claim.
    assert_seeks_by_key(&plan);
    assert!(
        !plan.contains("Join Filter"),
        "tables joined whole:\n{plan}"
    );
}

/// A burst's start, as the statistics a session plans with see it: 2,000
/// copies of `task_id` (due a day later), and not yet any memory, run,
/// sighting or queued task.
fn burst_start(kept: &mut crate::store::postgres::PgStore, task_id: &str) {
    kept.run_sql(&format!(
        "CREATE TEMP TABLE copies AS
             SELECT t.*, g FROM tasks t, generate_series(1, 2000) g WHERE task_id = '{task_id}';
         UPDATE copies SET task_id = 'copy-' || g, name = NULL, next_run_at = next_run_at + 86400;
         ALTER TABLE copies DROP COLUMN g;
         INSERT INTO tasks SELECT * FROM copies;
         ANALYZE tasks; ANALYZE task_memory; ANALYZE runs; ANALYZE seen_due;"
    ))
    .unwrap();
}

/// Every index scan in `plan` seeks a key or a range: the line after it is
/// its condition, not a filter over a whole (partial) index.
#[track_caller]
fn assert_seeks_by_key(plan: &str) {
    let lines: Vec<&str> = plan.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.contains("Index Scan") || line.contains("Index Only Scan") {
            let next = lines.get(i + 1).copied().unwrap_or_default();
            assert!(
                next.trim_start().starts_with("Index Cond:"),
                "a whole index walked at every call:\n{plan}"
            );
        }
    }
}

/// A claim reads a noted task's queue mark (`QueueTx::queue_mark`) by the
/// task's key. Planned (once, generic: `Plans::Kept`) while no task was
/// queued, the read walked the partial index of queued tasks filtering by
/// key: by the middle of a 1,800-run burst on four hosts that index held
/// ~1,500 tasks, 0.27 ms a call, the most expensive statement a run.
#[test]
fn a_queue_marks_plan_made_while_nothing_is_queued_still_reads_the_task_by_key() {
    let mut f = Fixture::new();
    let Some(mut kept) = f.postgres_planning(Plans::Kept) else {
        return; // SQLite plans each statement when it is prepared
    };
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    burst_start(&mut kept, &c.task_id);
    for _ in 0..3 {
        let store: &mut dyn crate::store::Store = &mut kept;
        let mark = store.read(|tx| tx.queue_mark(&c.task_id)).unwrap();
        assert_eq!(mark, None);
    }
    let (_, custom) = kept.plans_used().unwrap();
    assert_eq!(custom, 0, "statements planned at each execution");
    assert_seeks_by_key(&kept.next_plan_of("SELECT queued_for").unwrap());
}

/// Issue 46 item 3, no hot rows: on PostgreSQL every outcome of a tenant
/// adds to one of 16 rows of its counter, the one its transaction's id
/// picks, so that outcomes settling at once on several hosts do not wait
/// on one row's lock; readers sum them. Thirty outcomes, each in a
/// transaction of its own, land on several rows, and the sum is what
/// `metrics` counts.
#[test]
fn a_tenants_outcomes_are_counted_on_several_rows_and_summed() {
    let mut f = Fixture::new();
    let Some(mut kept) = f.postgres_planning(Plans::Kept) else {
        return; // SQLite's one writer serializes outcomes anyway: one row
    };
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    for i in 0..30 {
        f.settled_run(&task, crate::model::RunStatus::Succeeded, T0 + i * 3600);
    }
    let key = format!(
        "FROM run_totals WHERE tenant_key = '{}' AND status = 'succeeded'",
        task.payload.tenant_key
    );
    let rows = kept.numbers(&format!("SELECT count(*) {key}")).unwrap();
    assert!(rows[0] > 1, "every outcome on one row: {rows:?}");
    let tallies = f.store.read(|tx| tx.tallies(None)).unwrap();
    assert_eq!(tallies.finished_totals, [("succeeded".to_string(), 30)]);
}
