//! PostgreSQL side of the tasks table.

use crate::store::sql::tasks as sql;
use crate::store::tasks::TASK_COLUMNS;
use std::collections::HashMap;

use anyhow::{Context, Result};
use postgres::Row;

use super::{col, expect_one, PgTx};
use crate::model::Task;
use crate::store::tasks::EachTask;
use crate::store::tasks::RawTask;
use crate::store::{CorruptRow, DueTask, TaskAdvance, TaskFilter, TaskTransition, TaskTx, Trigger};

/// True when the task row's owner keys intersect $n (a text[] of keys).
pub(super) fn owned(alias: &str, param: usize) -> String {
    format!("({alias}.owner_keys::jsonb ?| ${param}::text[])")
}

/// A task row, by the decoder both stores share.
pub(super) fn decode_task(row: &Row) -> Result<Result<Task, CorruptRow>> {
    crate::store::rows::task(row)
}

fn is_unique_violation(e: &postgres::Error) -> bool {
    e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION)
}

/// A unique violation on a task write is its name being taken in the tenant
/// (the only unique index a write can hit); anything else keeps its cause
/// under `doing`.
fn name_taken(e: postgres::Error, t: &Task, doing: &'static str) -> anyhow::Error {
    if is_unique_violation(&e) {
        anyhow::Error::new(crate::error::CmdError::conflict(format!(
            "a task named '{}' already exists in tenant '{}'",
            t.payload.name.as_deref().unwrap_or(""),
            t.payload.tenant_key
        )))
    } else {
        anyhow::Error::new(e).context(doing)
    }
}

impl TaskTx for PgTx<'_, '_> {
    fn insert_task(&mut self, t: &Task) -> Result<()> {
        let r = RawTask::encode(t);
        self.tx
            .execute(
                &sql::INSERT_TASK,
                &[
                    &r.task_id,
                    &r.tenant_key,
                    &r.name,
                    &r.owner_keys,
                    &r.target,
                    &r.instruction,
                    &r.schedule,
                    &r.timezone,
                    &r.policy,
                    &r.grace_seconds,
                    &r.max_retries,
                    &r.retry_backoff_seconds,
                    &r.payload_hash,
                    &r.state,
                    &r.state_reason,
                    &r.state_changed_at,
                    &r.next_run_at,
                    &r.revision,
                    &r.created_at,
                    &r.updated_at,
                    &r.consecutive_failures,
                    &r.next_retry_at,
                    &r.retry_run_id,
                    &r.payload,
                    &r.follow_key,
                    &r.zone_in_force,
                ],
            )
            .map_err(|e| name_taken(e, t, "saving the task"))?;
        Ok(())
    }

    fn task(&mut self, task_id: &str) -> Result<Option<Result<Task, CorruptRow>>> {
        let row = self
            .tx
            .query_opt(&sql::TASK, &[&task_id])
            .context("reading the task")?;
        row.map(|r| decode_task(&r)).transpose()
    }

    fn task_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>> {
        self.ids_with_prefix(
            "SELECT task_id FROM tasks
             WHERE task_id >= $1 AND task_id < $2 AND starts_with(task_id, $1)
               AND tenant_key = $3
             ORDER BY task_id LIMIT $4",
            tenant_key,
            prefix,
            limit,
        )
        .context("looking up tasks by id prefix")
    }

    fn task_id_named(&mut self, tenant_key: &str, name: &str) -> Result<Option<String>> {
        let row = self
            .tx
            .query_opt(sql::TASK_ID_NAMED, &[&tenant_key, &name])
            .context("looking up the task by name")?;
        row.map(|r| col(&r, 0)).transpose()
    }

    fn list_tasks(&mut self, f: &TaskFilter<'_>) -> Result<Vec<Result<Task, CorruptRow>>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "SELECT {TASK_COLUMNS} FROM tasks t
                     WHERE tenant_key = $1 AND ($2::bool OR state <> 'deleted')
                       AND ($3::text IS NULL OR state = $3) AND {}
                     ORDER BY created_at, task_id",
                    owned("t", 4)
                ),
                &[
                    &f.tenant_key,
                    &f.include_deleted,
                    &f.state.map(|s| s.as_str()),
                    &f.owner_keys,
                ],
            )
            .context("listing tasks")?;
        rows.iter().map(decode_task).collect()
    }

    fn each_listed_task(&mut self, f: &TaskFilter<'_>, each: &mut EachTask<'_>) -> Result<()> {
        // ASC puts NULL last on PostgreSQL: tasks that will not run again
        // come after the others, as on SQLite; `tasks_listed` has this order.
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks t
             WHERE tenant_key = $1 AND ($2::bool OR state <> 'deleted')
               AND ($3::text IS NULL OR state = $3) AND {}
             ORDER BY next_run_at, created_at, task_id",
            owned("t", 4)
        );
        self.each_pg_row(
            &sql,
            &[
                &f.tenant_key,
                &f.include_deleted,
                &f.state.map(|s| s.as_str()),
                &f.owner_keys,
            ],
            &mut |tx, row| {
                let task = decode_task(row).context("listing tasks")?;
                each(tx, task)
            },
        )
    }

    fn transition_task(&mut self, c: &TaskTransition<'_>) -> Result<i64> {
        let changed = self
            .tx
            .execute(
                "UPDATE tasks
                 SET state = $1, state_reason = $2, next_run_at = $3, state_changed_at = $4,
                     updated_at = $4, revision = revision + 1,
                     next_retry_at = CASE WHEN $1 = 'active' THEN next_retry_at END,
                     retry_run_id = CASE WHEN $1 = 'active' THEN retry_run_id END,
                     queued_for = NULL, queued_since = NULL, queued_next = NULL,
                     trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL
                 WHERE task_id = $5 AND state = $6 AND revision = $7",
                &[
                    &c.to.as_str(),
                    &c.reason,
                    &c.next_run_at,
                    &c.now,
                    &c.task_id,
                    &c.from.as_str(),
                    &c.revision,
                ],
            )
            .context("updating the task")?;
        expect_one(changed, || {
            format!(
                "task {} changed meanwhile (expected {} at revision {})",
                c.task_id, c.from, c.revision
            )
        })?;
        Ok(c.revision + 1)
    }

    fn due_tasks(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>> {
        // SKIP LOCKED: a row another host is claiming is passed over, never waited on.
        let rows = self
            .tx
            .query(
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
                   AND ($2::text IS NULL OR tenant_key = $2)
                 ORDER BY 2, 1 LIMIT $3
                 FOR UPDATE SKIP LOCKED",
                &[&now, &tenant, &i64::from(limit)],
            )
            .context("finding due tasks")?;
        rows.iter()
            .map(|r| {
                Ok(DueTask {
                    task_id: col(r, 0)?,
                    due_at: col(r, 1)?,
                    is_retry: col(r, 2)?,
                })
            })
            .collect()
    }

    fn due_count(&mut self, now: i64, tenant: Option<&str>) -> Result<i64> {
        let row = self
            .tx
            .query_one(
                "SELECT count(*) FROM tasks WHERE state = 'active' AND ($2::text IS NULL OR tenant_key = $2)
                   AND (next_run_at <= $1 OR next_retry_at <= $1 OR trigger_at <= $1)",
                &[&now, &tenant],
            )
            .context("counting due tasks")?;
        col(&row, 0)
    }

    fn advance_task(&mut self, a: &TaskAdvance<'_>) -> Result<()> {
        let changed = self
            .tx
            .execute(
                "UPDATE tasks
                 SET state = $1, next_run_at = $2, next_retry_at = $3, retry_run_id = $4,
                     consecutive_failures = $5, updated_at = $6,
                     state_changed_at = CASE WHEN state = $1 THEN state_changed_at ELSE $6 END,
                     -- as on SQLite: a mark lives while its due instant is still due
                     queued_since = CASE WHEN queued_for >= $2 OR queued_for = $3
                                         THEN queued_since END,
                     queued_next = CASE WHEN queued_for >= $2 OR queued_for = $3
                                        THEN queued_next END,
                     queued_for = CASE WHEN queued_for >= $2 OR queued_for = $3
                                       THEN queued_for END
                 WHERE task_id = $7 AND state = $8
                   AND next_run_at IS NOT DISTINCT FROM $9 AND next_retry_at IS NOT DISTINCT FROM $10",
                &[
                    &a.state.as_str(),
                    &a.next_run_at,
                    &a.next_retry_at,
                    &a.retry_run_id,
                    &a.consecutive_failures,
                    &a.now,
                    &a.task_id,
                    &a.expected_state.as_str(),
                    &a.expected_next_run_at,
                    &a.expected_next_retry_at,
                ],
            )
            .context("advancing the task's schedule")?;
        expect_one(changed, || {
            format!("task {} changed while it was being scheduled", a.task_id)
        })
    }

    fn replace_task(&mut self, t: &Task, expected_revision: i64, now: i64) -> Result<()> {
        let r = RawTask::encode(t);
        let changed = self
            .tx
            .execute(
                sql::REPLACE_TASK,
                &[
                    &r.name,
                    &r.target,
                    &r.instruction,
                    &r.schedule,
                    &r.timezone,
                    &r.policy,
                    &r.grace_seconds,
                    &r.max_retries,
                    &r.retry_backoff_seconds,
                    &r.payload,
                    &r.payload_hash,
                    &r.next_run_at,
                    &now,
                    &r.task_id,
                    &expected_revision,
                    &r.tenant_key,
                    &r.owner_keys,
                    &r.follow_key,
                    &r.zone_in_force,
                ],
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
        let changed = self
            .tx
            .execute(
                sql::SET_TRIGGER,
                &[&t.at, &t.actor, &t.reason, &task_id, &revision],
            )
            .context("recording the trigger")?;
        expect_one(changed, || {
            format!("task {task_id} changed meanwhile or already has a run triggered")
        })
    }

    fn pending_trigger(&mut self, task_id: &str) -> Result<Option<Trigger>> {
        let row = self
            .tx
            .query_opt(sql::PENDING_TRIGGER, &[&task_id])
            .context("reading the task's trigger")?;
        row.map(|r| {
            Ok(Trigger {
                at: col(&r, 0)?,
                actor: col::<Option<String>>(&r, 1)?.unwrap_or_default(),
                reason: col(&r, 2)?,
            })
        })
        .transpose()
    }

    fn clear_trigger(&mut self, task_id: &str, at: i64) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::CLEAR_TRIGGER, &[&task_id, &at])
            .context("consuming the trigger")?;
        expect_one(changed, || {
            format!("the trigger of task {task_id} was claimed by another tick")
        })
    }

    fn set_managed_by(&mut self, task_id: &str, file: &str) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::SET_MANAGED_BY, &[&file, &task_id])
            .context("recording the task's file")?;
        expect_one(changed, || format!("task {task_id} vanished"))
    }

    fn set_declared(&mut self, task_id: &str, declared_hash: &str) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::SET_DECLARED, &[&declared_hash, &task_id])
            .context("recording what the file declared")?;
        expect_one(changed, || format!("task {task_id} vanished"))
    }

    fn declared(&mut self, tenant_key: &str) -> Result<HashMap<String, String>> {
        let rows = self
            .tx
            .query(sql::DECLARED, &[&tenant_key])
            .context("reading what the file declared")?;
        rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
    }

    fn managed_tasks(&mut self, tenant_key: &str, file: &str) -> Result<Vec<String>> {
        let rows = self
            .tx
            .query(sql::MANAGED_TASKS, &[&tenant_key, &file])
            .context("reading the file's tasks")?;
        rows.iter().map(|r| col(r, 0)).collect()
    }

    fn pending_retries(
        &mut self,
        f: &TaskFilter<'_>,
        end: i64,
        limit: i64,
    ) -> Result<Vec<Result<Task, CorruptRow>>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "SELECT {TASK_COLUMNS} FROM tasks t
                     WHERE tenant_key = $1 AND state = 'active'
                       AND next_retry_at IS NOT NULL AND next_retry_at <= $2 AND {}
                     ORDER BY next_retry_at LIMIT $4",
                    owned("t", 3)
                ),
                &[&f.tenant_key, &end, &f.owner_keys, &limit],
            )
            .context("reading pending retries")?;
        rows.iter().map(decode_task).collect()
    }

    fn tenants_owned(&mut self, owner_keys: &[String]) -> Result<Vec<(String, i64)>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "SELECT tenant_key, count(*) FROM tasks t
                     WHERE state <> 'deleted' AND {}
                     GROUP BY tenant_key ORDER BY tenant_key",
                    owned("t", 1)
                ),
                &[&owner_keys],
            )
            .context("reading the caller's tenants")?;
        rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
    }

    fn managers(&mut self, tenant_key: &str) -> Result<HashMap<String, String>> {
        let rows = self
            .tx
            .query(sql::MANAGERS, &[&tenant_key])
            .context("reading which source created each task")?;
        rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
    }

    fn quarantine_task(&mut self, task_id: &str, problem: &str, now: i64) -> Result<()> {
        let changed = self
            .tx
            .execute(
                "UPDATE tasks
                 SET state = 'error', state_reason = $1, next_run_at = NULL, next_retry_at = NULL,
                     retry_run_id = NULL, state_changed_at = $2, updated_at = $2, revision = revision + 1,
                     queued_for = NULL, queued_since = NULL, queued_next = NULL,
                     trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL
                 WHERE task_id = $3 AND state NOT IN ('error', 'deleted')",
                &[&problem, &now, &task_id],
            )
            .context("quarantining the task")?;
        expect_one(changed, || {
            format!("task {task_id} was already quarantined")
        })
    }
}
