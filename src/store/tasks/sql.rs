//! The tasks table's operations, written once over `Connection`. Rows are
//! validated on read (`decode_task`): a row that fails becomes a
//! `CorruptRow`, never a panic.

use std::collections::HashMap;
use std::sync::LazyLock;

use anyhow::{Context, Result};

use super::{
    due_task, listing, CorruptRow, DueTask, EachTask, RawTask, TaskAdvance, TaskFilter,
    TaskTransition, TaskTx, Trigger, TASK_COLUMNS,
};
use crate::error::{constraint_violation, CmdError, Violation};
use crate::model::Task;
use crate::store::connection::args;
use crate::store::connection::{expect_one, Arg, Connection, Dialect};

/// A task's confirmed columns first, in the order `RawTask::confirmed_args`
/// gives them (replacing a task writes the same ones), then the rest.
const INSERT_TASK: &str = "INSERT INTO tasks (name, target, instruction, schedule, timezone,
        policy, grace_seconds, max_retries, retry_backoff_seconds, payload, payload_hash,
        task_id, tenant_key, owner_keys, state, state_reason, state_changed_at, next_run_at,
        revision, created_at, updated_at, consecutive_failures, next_retry_at, retry_run_id,
        follow_key, zone_in_force, profile)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
            $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)";

static TASK: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = $1"));

const REPLACE_TASK: &str = "UPDATE tasks
    SET name = $1, target = $2, instruction = $3, schedule = $4, timezone = $5,
        policy = $6, grace_seconds = $7, max_retries = $8,
        retry_backoff_seconds = $9, payload = $10, payload_hash = $11,
        next_run_at = $12, updated_at = $13, revision = revision + 1,
        next_retry_at = NULL, retry_run_id = NULL, consecutive_failures = 0,
        queued_for = NULL, queued_since = NULL, queued_next = NULL,
        follow_key = $18, zone_in_force = $19, profile = $20
    WHERE task_id = $14 AND revision = $15 AND state IN ('active', 'paused')
      AND tenant_key = $16 AND owner_keys = $17";

/// A duplicate key on a task write is its name being taken in the tenant
/// (the only unique index a write can hit); anything else keeps its cause
/// under `doing`.
fn name_taken(e: anyhow::Error, t: &Task, doing: &'static str) -> anyhow::Error {
    // Inside the transaction the driver's error carries no fault yet (the
    // store marks errors as they leave it): read it here.
    let e = crate::store::faulted(e);
    match constraint_violation(&e) {
        Some((Violation::Duplicate, _)) => CmdError::conflict(format!(
            "a task named '{}' already exists in tenant '{}'",
            t.payload.name.as_deref().unwrap_or(""),
            t.payload.tenant_key
        ))
        .into(),
        _ => e.context(doing),
    }
}

/// A text column of the tenant's live tasks where it is set, by task id.
/// `column` is the caller's constant.
fn column_by_task(
    tx: &mut impl Connection,
    tenant_key: &str,
    column: &str,
) -> Result<HashMap<String, String>> {
    let rows = tx.query(
        &format!(
            "SELECT task_id, {column} FROM tasks
             WHERE tenant_key = $1 AND {column} IS NOT NULL AND state <> 'deleted'"
        ),
        args![tenant_key],
    )?;
    rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?))).collect()
}

/// The profile a task's payload binds, kept beside it for `status`.
fn profile_name(t: &Task) -> Option<&str> {
    t.payload.profile.as_ref().map(|p| p.name.as_str())
}

impl<C: Connection> TaskTx for C {
    fn insert_task(&mut self, t: &Task) -> Result<()> {
        let r = RawTask::encode(t);
        self.execute(
            INSERT_TASK,
            &[
                &r.confirmed_args()[..],
                args![
                    &r.task_id,
                    &r.tenant_key,
                    &r.owner_keys,
                    &r.state,
                    &r.state_reason,
                    r.state_changed_at,
                    r.next_run_at,
                    r.revision,
                    r.created_at,
                    r.updated_at,
                    r.consecutive_failures,
                    r.next_retry_at,
                    &r.retry_run_id,
                    &r.follow_key,
                    &r.zone_in_force,
                    profile_name(t),
                ],
            ]
            .concat(),
        )
        .map_err(|e| name_taken(e, t, "saving the task"))?;
        Ok(())
    }

    fn task(&mut self, task_id: &str) -> Result<Option<Result<Task, CorruptRow>>> {
        let row = self
            .query_opt(&TASK, args![task_id])
            .context("reading the task")?;
        row.as_ref().map(super::decode_task).transpose()
    }

    fn task_id_named(&mut self, tenant_key: &str, name: &str) -> Result<Option<String>> {
        let row = self
            .query_opt(
                "SELECT task_id FROM tasks
                 WHERE tenant_key = $1 AND name = $2 AND state <> 'deleted'",
                args![tenant_key, name],
            )
            .context("looking up the task by name")?;
        row.map(|r| r.get(0)).transpose()
    }

    fn list_tasks(&mut self, f: &TaskFilter<'_>) -> Result<Vec<Result<Task, CorruptRow>>> {
        listing::list(self, f)
    }

    fn each_listed_task(&mut self, f: &TaskFilter<'_>, each: &mut EachTask<'_>) -> Result<()> {
        listing::each_listed(self, f, each)
    }

    fn transition_task(&mut self, c: &TaskTransition<'_>) -> Result<i64> {
        self.guarded(
            "UPDATE tasks
                 SET state = $1, state_reason = $2, next_run_at = $3, state_changed_at = $4,
                     updated_at = $4, revision = revision + 1,
                     -- a task that stops running drops its pending retry
                     next_retry_at = CASE WHEN $1 = 'active' THEN next_retry_at END,
                     retry_run_id = CASE WHEN $1 = 'active' THEN retry_run_id END,
                     -- what a tick saw queued no longer holds once people step in
                     queued_for = NULL, queued_since = NULL, queued_next = NULL,
                     -- nor a manual trigger: it was for the task as it was
                     trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL
                 WHERE task_id = $5 AND state = $6 AND revision = $7",
            args![
                c.to.as_str(),
                c.reason,
                c.next_run_at,
                c.now,
                c.task_id,
                c.from.as_str(),
                c.revision
            ],
            "updating the task",
            || {
                format!(
                    "task {} changed meanwhile (expected {} at revision {})",
                    c.task_id, c.from, c.revision
                )
            },
        )?;
        Ok(c.revision + 1)
    }

    fn due_tasks(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>> {
        let sql = match self.dialect() {
            // Two range scans on the partial due indexes, merged by time.
            Dialect::Sqlite => {
                "SELECT task_id, next_run_at, 0 FROM tasks
                 WHERE state = 'active' AND next_run_at <= $1 AND ($2 IS NULL OR tenant_key = $2)
                 UNION ALL
                 SELECT task_id, next_retry_at, 1 FROM tasks
                 WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= $1
                   AND ($2 IS NULL OR tenant_key = $2)
                 UNION ALL
                 SELECT task_id, trigger_at, 0 FROM tasks
                 WHERE state = 'active' AND trigger_at IS NOT NULL AND trigger_at <= $1
                   AND ($2 IS NULL OR tenant_key = $2)
                 ORDER BY 2, 1 LIMIT $3"
            }
            // SKIP LOCKED: a row another host is claiming is passed over,
            // never waited on. One row per task, so no UNION (which row
            // locks rule out).
            Dialect::Postgres => {
                "SELECT task_id,
                        -- LEAST skips NULLs; a due trigger is earlier than any
                        -- instant not yet due.
                        LEAST(CASE WHEN next_run_at <= $1 AND (next_retry_at IS NULL OR next_run_at <= next_retry_at)
                                   THEN next_run_at ELSE next_retry_at END,
                              CASE WHEN trigger_at <= $1 THEN trigger_at END) AS due,
                        -- coalesce: a once task past its run has next_run_at NULL,
                        -- and NOT NULL would be no boolean at all.
                        NOT coalesce(next_run_at <= $1
                                     AND (next_retry_at IS NULL OR next_run_at <= next_retry_at),
                                     false) AS retry
                 FROM tasks
                 WHERE state = 'active'
                   AND (next_run_at <= $1 OR next_retry_at <= $1 OR trigger_at <= $1)
                   AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                 ORDER BY 2, 1 LIMIT $3
                 FOR UPDATE SKIP LOCKED"
            }
        };
        let rows = self
            .query(sql, args![now, tenant, limit])
            .context("finding due tasks")?;
        let mut due = rows.iter().map(due_task).collect::<Result<Vec<_>>>()?;
        // A task with both its occurrence and a retry due is listed once, at
        // the earlier time (SQLite's union lists it twice).
        let mut seen = std::collections::HashSet::new();
        due.retain(|d| seen.insert(d.task_id.clone()));
        Ok(due)
    }

    fn due_count(&mut self, now: i64, tenant: Option<&str>) -> Result<i64> {
        let sql = self.dialect().pick(
            // Three walks of the due part of the partial due indexes, each
            // due task once, rather than a test of every active task.
            "SELECT count(*) FROM (
               SELECT rowid FROM tasks INDEXED BY tasks_due
                WHERE state = 'active' AND next_run_at <= $1 AND ($2 IS NULL OR tenant_key = $2)
               UNION
               SELECT rowid FROM tasks INDEXED BY tasks_retry_due
                WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= $1
                  AND ($2 IS NULL OR tenant_key = $2)
               UNION
               SELECT rowid FROM tasks INDEXED BY tasks_trigger_due
                WHERE state = 'active' AND trigger_at IS NOT NULL AND trigger_at <= $1
                  AND ($2 IS NULL OR tenant_key = $2))",
            "SELECT count(*) FROM tasks
             WHERE state = 'active' AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
               AND (next_run_at <= $1 OR next_retry_at <= $1 OR trigger_at <= $1)",
        );
        self.value(sql, args![now, tenant])
            .context("counting due tasks")
    }

    fn advance_task(&mut self, a: &TaskAdvance<'_>) -> Result<()> {
        self.guarded(
            ADVANCE_TASK,
            &advance_args(a),
            "advancing the task's schedule",
            || advance_conflict(a),
        )
    }

    fn advance_task_later(&mut self, a: &TaskAdvance<'_>) -> Result<()> {
        self.guarded_later(
            ADVANCE_TASK,
            &advance_args(a),
            "advancing the task's schedule",
            advance_conflict(a),
        )
    }

    fn replace_task(&mut self, t: &Task, expected_revision: i64, now: i64) -> Result<()> {
        let r = RawTask::encode(t);
        let changed = self
            .execute(
                REPLACE_TASK,
                &[
                    &r.confirmed_args()[..],
                    args![
                        r.next_run_at,
                        now,
                        &r.task_id,
                        expected_revision,
                        &r.tenant_key,
                        &r.owner_keys,
                        &r.follow_key,
                        &r.zone_in_force,
                        profile_name(t),
                    ],
                ]
                .concat(),
            )
            .map_err(|e| name_taken(e, t, "replacing the task's payload"))?;
        expect_one(changed, || {
            format!(
                "task {} changed meanwhile (expected revision {expected_revision})",
                t.task_id
            )
        })
    }

    fn set_trigger(&mut self, task_id: &str, revision: i64, t: &Trigger) -> Result<()> {
        self.guarded(
            "UPDATE tasks SET trigger_at = $1, trigger_actor = $2, trigger_reason = $3
                 WHERE task_id = $4 AND state = 'active' AND revision = $5
                   AND trigger_at IS NULL",
            args![t.at, &t.actor, &t.reason, task_id, revision],
            "recording the trigger",
            || format!("task {task_id} changed meanwhile or already has a run triggered"),
        )
    }

    fn pending_trigger(&mut self, task_id: &str) -> Result<Option<Trigger>> {
        let row = self
            .query_opt(
                "SELECT trigger_at, trigger_actor, trigger_reason FROM tasks
                 WHERE task_id = $1 AND trigger_at IS NOT NULL",
                args![task_id],
            )
            .context("reading the task's trigger")?;
        row.map(|r| {
            Ok(Trigger {
                at: r.get(0)?,
                actor: r.get::<Option<String>>(1)?.unwrap_or_default(),
                reason: r.get(2)?,
            })
        })
        .transpose()
    }

    fn clear_trigger(&mut self, task_id: &str, at: i64) -> Result<()> {
        self.guarded(
            "UPDATE tasks SET trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL
                 WHERE task_id = $1 AND trigger_at = $2",
            args![task_id, at],
            "consuming the trigger",
            || format!("the trigger of task {task_id} was claimed by another tick"),
        )
    }

    fn set_declared(&mut self, task_id: &str, file: Option<&str>, declared: &str) -> Result<()> {
        self.guarded(
            "UPDATE tasks SET managed_by = coalesce($1, managed_by), declared_hash = $2
             WHERE task_id = $3",
            args![file, declared, task_id],
            "recording what the file declared",
            || format!("task {task_id} vanished"),
        )
    }

    fn declared(&mut self, tenant_key: &str) -> Result<HashMap<String, String>> {
        column_by_task(self, tenant_key, "declared_hash").context("reading what the file declared")
    }

    fn managed_tasks(&mut self, tenant_key: &str, file: &str) -> Result<Vec<String>> {
        let rows = self
            .query(
                "SELECT task_id FROM tasks
                 WHERE tenant_key = $1 AND managed_by = $2 AND state <> 'deleted'
                 ORDER BY task_id",
                args![tenant_key, file],
            )
            .context("reading the file's tasks")?;
        rows.iter().map(|r| r.get(0)).collect()
    }

    fn managers(&mut self, tenant_key: &str) -> Result<HashMap<String, String>> {
        column_by_task(self, tenant_key, "managed_by")
            .context("reading which source created each task")
    }

    fn tenants_owned(&mut self, owner_keys: &[String]) -> Result<Vec<(String, i64)>> {
        listing::tenants_owned(self, owner_keys)
    }

    fn pending_retries(
        &mut self,
        f: &TaskFilter<'_>,
        end: i64,
        limit: i64,
    ) -> Result<Vec<Result<Task, CorruptRow>>> {
        listing::pending_retries(self, f, end, limit)
    }

    fn quarantine_task(&mut self, task_id: &str, problem: &str, now: i64) -> Result<()> {
        self.guarded(
                "UPDATE tasks
                 SET state = 'error', state_reason = $1, next_run_at = NULL, next_retry_at = NULL,
                     retry_run_id = NULL, queued_for = NULL, queued_since = NULL, queued_next = NULL,
                     state_changed_at = $2, updated_at = $2,
                     trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL,
                     revision = revision + 1
                 WHERE task_id = $3 AND state NOT IN ('error', 'deleted')",
                args![problem, now, task_id],
            "quarantining the task",
            || {
            format!("task {task_id} was already quarantined")
        },
        )
    }
}

/// `advance_task`'s statement.
const ADVANCE_TASK: &str = "UPDATE tasks
     SET state = $1, next_run_at = $2, next_retry_at = $3, retry_run_id = $4,
         consecutive_failures = $5, updated_at = $6,
         state_changed_at = CASE WHEN state = $1 THEN state_changed_at ELSE $6 END,
         -- A queue mark lives while its due instant is still due:
         -- an occurrence not yet passed by next_run_at, or the
         -- pending retry itself.
         queued_since = CASE WHEN queued_for >= $2 OR queued_for = $3
                             THEN queued_since END,
         queued_next = CASE WHEN queued_for >= $2 OR queued_for = $3
                            THEN queued_next END,
         queued_for = CASE WHEN queued_for >= $2 OR queued_for = $3
                           THEN queued_for END
     WHERE task_id = $7 AND state = $8
       AND next_run_at IS NOT DISTINCT FROM $9
       AND next_retry_at IS NOT DISTINCT FROM $10";

fn advance_args<'a>(a: &'a TaskAdvance<'_>) -> [Arg<'a>; 10] {
    [
        Arg::from(a.state.as_str()),
        Arg::from(a.next_run_at),
        Arg::from(a.next_retry_at),
        Arg::from(a.retry_run_id),
        Arg::from(a.consecutive_failures),
        Arg::from(a.now),
        Arg::from(a.task_id),
        Arg::from(a.expected_state.as_str()),
        Arg::from(a.expected_next_run_at),
        Arg::from(a.expected_next_retry_at),
    ]
}

fn advance_conflict(a: &TaskAdvance<'_>) -> String {
    format!("task {} changed while it was being scheduled", a.task_id)
}
