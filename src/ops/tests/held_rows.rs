//! Rows a transaction holds back for its commit (`Connection::insert_later`:
//! runs, notices, the task's memory, audit events). On PostgreSQL they go to
//! the server in one statement with the commit marker, each table's rows one
//! INSERT of a `WITH`; on SQLite they are inserted at once. Either way the
//! transaction must read as if each had been written when it was asked.

use serde_json::json;

use super::fixture::{daily, Fixture, Person, T0};
use crate::audit::{AuditAction, Event};
use crate::model::{DeliveryState, Notice, Run, RunEnd, RunState};
use crate::store::TaskMemory;

const NINE: i64 = T0 + 3600;

/// A missed run of `task`'s 09:00 occurrence, not yet stored.
fn missed(task: &crate::model::Task, at: i64) -> Run {
    Run::new(
        task,
        at,
        at,
        1,
        RunState::not_run(RunEnd::Missed, at),
        at,
        |_| {},
    )
}

fn notice_on(run: &Run, seq: i64) -> Notice {
    Notice {
        delivery_id: uuid::Uuid::new_v4().to_string(),
        run_id: run.run_id.clone(),
        tenant_key: run.tenant_key.clone(),
        seq,
        state: DeliveryState::Pending,
        target: "alice".into(),
        message: format!("notice {seq}"),
        created_at: NINE,
        updated_at: NINE,
        claim_token: None,
        deadline: None,
        attempts: 0,
        last_error: None,
        kind: None,
        suppressed_since_last: 0,
        suppressed_reason: None,
    }
}

fn memory(task_id: &str, suppressed_count: i64) -> TaskMemory {
    TaskMemory {
        suppressed_count,
        ..TaskMemory::new(task_id)
    }
}

#[test]
fn rows_held_for_the_commit_are_all_written_and_read_back_in_their_transaction() {
    let mut f = Fixture::new();
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let run = missed(&task, NINE);
    let later = missed(&task, NINE + 86_400);
    let seen_inside = f
        .store
        .write(|tx| {
            // A notice whose run is held beside it: the foreign key is
            // checked when the statement sending both ends.
            tx.insert_run(&run, None, None)?;
            tx.insert_notice(&notice_on(&run, 1))?;
            for n in 0..3 {
                tx.append_event(&Event::of_run(
                    AuditAction::Claim,
                    &run,
                    "agentcron:tick",
                    NINE + n,
                    json!({"n": n}),
                ))?;
            }
            // The same task's memory twice: one statement may not change a
            // row twice, so the first is sent before the second is held.
            tx.save_task_memory(&memory(&task.task_id, 1))?;
            tx.save_task_memory(&memory(&task.task_id, 2))?;
            tx.insert_run(&later, None, None)?;
            // A read naming a held row's table sees it.
            let inside = tx.run(&later.run_id)?.map(|r| r.run_id);
            tx.insert_notice(&notice_on(&later, 1))?;
            tx.save_task_memory(&memory(&task.task_id, 3))?;
            // A read of one run's notices and one task's memory sees the
            // rows held for them (rows held for others may wait).
            let start = tx.notice_start(&later.run_id, &task.task_id)?;
            let (start_too, read_task) = tx.notice_start_and_task(&later.run_id, &task.task_id)?;
            assert_eq!(start, start_too);
            assert!(matches!(read_task, Some(Ok(t)) if t.task_id == task.task_id));
            Ok((inside, start.seq, start.memory.map(|m| m.suppressed_count)))
        })
        .expect("the transaction commits");
    assert_eq!(seen_inside.0, Some(later.run_id.clone()));
    assert_eq!((seen_inside.1, seen_inside.2), (2, Some(3)));
    assert!(f.read_run(&run.run_id).is_some());
    assert!(f.read_run(&later.run_id).is_some());
    let (saved, notices) = f
        .store
        .read(|tx| {
            Ok((
                tx.task_memory(&task.task_id)?,
                tx.pending_notices(None, 10)?,
            ))
        })
        .unwrap();
    assert_eq!(saved.map(|m| m.suppressed_count), Some(3));
    let mut runs: Vec<&str> = notices.iter().map(|n| n.run_id.as_str()).collect();
    runs.sort();
    let mut expected = vec![run.run_id.as_str(), later.run_id.as_str()];
    expected.sort();
    assert_eq!(runs, expected);
    // A table's held rows keep their order (events newest first here).
    let order: Vec<i64> = f
        .events(&alice, AuditAction::Claim)
        .iter()
        .filter(|e| e.run_id.as_deref() == Some(run.run_id.as_str()))
        .map(|e| e.detail["n"].as_i64().unwrap())
        .collect();
    assert_eq!(order, [2, 1, 0]);
}

#[test]
fn a_held_row_the_store_refuses_fails_its_transaction_and_nothing_is_written() {
    let mut f = Fixture::new();
    let alice = Person::alice();
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    let first = missed(&task, NINE);
    f.store
        .write(|tx| tx.insert_run(&first, None, None))
        .unwrap();
    // The same occurrence and attempt again: the runs' unique key refuses
    // it when the held rows are sent, at the commit on PostgreSQL.
    let again = missed(&task, NINE);
    let fresh = missed(&task, NINE + 86_400);
    let refused = f.store.write(|tx| {
        tx.insert_run(&fresh, None, None)?;
        tx.save_task_memory(&memory(&task.task_id, 7))?;
        tx.insert_run(&again, None, None)?;
        Ok(())
    });
    assert!(refused.is_err(), "a duplicate run was accepted");
    assert!(f.read_run(&fresh.run_id).is_none());
    assert!(f.read_run(&again.run_id).is_none());
    let saved = f.store.read(|tx| tx.task_memory(&task.task_id)).unwrap();
    assert_eq!(saved, None);
}
