//! SQLite side of the tasks table. Rows are validated on read: a row that
//! fails becomes a `CorruptRow`, never a panic.

use super::numbered;
use crate::store::sql::tasks as sql;
use crate::store::tasks::TASK_COLUMNS;
use std::collections::HashMap;

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Row};

use super::{expect_one, SqliteTx};
use crate::model::Task;
use crate::store::tasks::EachTask;
use crate::store::tasks::RawTask;
use crate::store::{CorruptRow, DueTask, TaskAdvance, TaskFilter, TaskTransition, TaskTx, Trigger};

/// `list`'s query: it walks `tasks_listed` in the listing's order (the
/// index holds the same `next_run_at IS NULL` expression), so no sort of the
/// whole result, and no row is held past its turn.
pub(super) const LISTED_TASKS: &str = "SELECT task_id, tenant_key, name, owner_keys, target,
    instruction, schedule, timezone, policy, grace_seconds, max_retries, retry_backoff_seconds,
    payload_hash, state, state_reason, state_changed_at, next_run_at, revision, created_at,
    updated_at, consecutive_failures, next_retry_at, retry_run_id, payload, follow_key,
    zone_in_force
    FROM tasks
    WHERE tenant_key = ?1
      AND (?2 OR state <> 'deleted')
      AND (?3 IS NULL OR state = ?3)
      -- owned: the task's owner keys intersect the caller's
      AND EXISTS (SELECT 1 FROM json_each(tasks.owner_keys) AS o
                  WHERE o.value IN (SELECT value FROM json_each(?4)))
    ORDER BY next_run_at IS NULL, next_run_at, created_at, task_id";

/// A (task_id, due instant, is_retry) row as a `DueTask`.
fn due_row(row: &Row<'_>) -> rusqlite::Result<DueTask> {
    Ok(DueTask {
        task_id: row.get(0)?,
        due_at: row.get(1)?,
        is_retry: row.get(2)?,
    })
}

/// A task row, by the decoder both stores share.
pub(super) fn decode_task(row: &Row<'_>) -> rusqlite::Result<Result<Task, CorruptRow>> {
    crate::store::rows::task(row)
}

/// A unique-constraint failure on a task write is its name being taken in
/// the tenant (the only unique index a write can hit); anything else keeps
/// its cause under `doing`.
fn name_taken(e: rusqlite::Error, t: &Task, doing: &'static str) -> anyhow::Error {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            anyhow::Error::new(crate::error::CmdError::conflict(format!(
                "a task named '{}' already exists in tenant '{}'",
                t.payload.name.as_deref().unwrap_or(""),
                t.payload.tenant_key
            )))
        }
        other => anyhow::Error::new(other).context(doing),
    }
}

impl TaskTx for SqliteTx<'_> {
    fn insert_task(&mut self, t: &Task) -> Result<()> {
        let r = RawTask::encode(t);
        self.conn
            .prepare_cached(&numbered(&sql::INSERT_TASK))?
            .execute(params![
                r.task_id,
                r.tenant_key,
                r.name,
                r.owner_keys,
                r.target,
                r.instruction,
                r.schedule,
                r.timezone,
                r.policy,
                r.grace_seconds,
                r.max_retries,
                r.retry_backoff_seconds,
                r.payload_hash,
                r.state,
                r.state_reason,
                r.state_changed_at,
                r.next_run_at,
                r.revision,
                r.created_at,
                r.updated_at,
                r.consecutive_failures,
                r.next_retry_at,
                r.retry_run_id,
                r.payload,
                r.follow_key,
                r.zone_in_force,
            ])
            .map_err(|e| name_taken(e, t, "saving the task"))?;
        Ok(())
    }

    fn task(&mut self, task_id: &str) -> Result<Option<Result<Task, CorruptRow>>> {
        self.conn
            .prepare_cached(&numbered(&sql::TASK))?
            .query_row([task_id], decode_task)
            .optional()
            .context("reading the task")
    }

    fn task_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>> {
        self.ids_with_prefix(
            // `+tenant_key`: walk the id range, not every task of the tenant
            // sorted by id (which SQLite chose without the `+`).
            "SELECT task_id FROM tasks
             WHERE task_id >= ?1 AND task_id < ?2 AND +tenant_key = ?3
             ORDER BY task_id LIMIT ?4",
            tenant_key,
            prefix,
            limit,
        )
        .context("looking up tasks by id prefix")
    }

    fn task_id_named(&mut self, tenant_key: &str, name: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached(&numbered(sql::TASK_ID_NAMED))?
            .query_row(params![tenant_key, name], |row| row.get(0))
            .optional()
            .context("looking up the task by name")
    }

    fn list_tasks(&mut self, f: &TaskFilter<'_>) -> Result<Vec<Result<Task, CorruptRow>>> {
        let keys = serde_json::to_string(f.owner_keys)?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks
             WHERE tenant_key = ?1
               AND (?2 OR state <> 'deleted')
               AND (?3 IS NULL OR state = ?3)
               -- owned: the task's owner keys intersect the caller's
               AND EXISTS (SELECT 1 FROM json_each(tasks.owner_keys) AS o
                           WHERE o.value IN (SELECT value FROM json_each(?4)))
             ORDER BY created_at, task_id"
        ))?;
        let rows = stmt
            .query_map(
                params![
                    f.tenant_key,
                    f.include_deleted,
                    f.state.map(|s| s.as_str()),
                    keys
                ],
                decode_task,
            )?
            .collect::<Result<Vec<_>, _>>()
            .context("listing tasks")?;
        Ok(rows)
    }

    fn each_listed_task(&mut self, f: &TaskFilter<'_>, each: &mut EachTask<'_>) -> Result<()> {
        let conn = self.conn;
        let keys = serde_json::to_string(f.owner_keys)?;
        let mut stmt = conn.prepare_cached(LISTED_TASKS)?;
        let mut rows = stmt
            .query(params![
                f.tenant_key,
                f.include_deleted,
                f.state.map(|s| s.as_str()),
                keys
            ])
            .context("listing tasks")?;
        // SQLite steps this statement while `each` runs others on the same
        // connection (the task's runs): reads inside one snapshot may nest.
        while let Some(row) = rows.next().context("listing tasks")? {
            let task = decode_task(row)?;
            if each(&mut SqliteTx { conn }, task)?.is_break() {
                break;
            }
        }
        Ok(())
    }

    fn transition_task(&mut self, c: &TaskTransition<'_>) -> Result<i64> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE tasks
                 SET state = ?1, state_reason = ?2, next_run_at = ?3, state_changed_at = ?4,
                     updated_at = ?4, revision = revision + 1,
                     -- a task that stops running drops its pending retry
                     next_retry_at = CASE WHEN ?1 = 'active' THEN next_retry_at END,
                     retry_run_id = CASE WHEN ?1 = 'active' THEN retry_run_id END,
                     -- what a tick saw queued no longer holds once people step in
                     queued_for = NULL, queued_since = NULL, queued_next = NULL,
                     -- nor a manual trigger: it was for the task as it was
                     trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL
                 WHERE task_id = ?5 AND state = ?6 AND revision = ?7",
            )?
            .execute(params![
                c.to.as_str(),
                c.reason,
                c.next_run_at,
                c.now,
                c.task_id,
                c.from.as_str(),
                c.revision
            ])
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
        // Two range scans on the partial due indexes, merged by time.
        let mut stmt = self.conn.prepare_cached(
            "SELECT task_id, next_run_at, 0 FROM tasks
             WHERE state = 'active' AND next_run_at <= ?1 AND (?2 IS NULL OR tenant_key = ?2)
             UNION ALL
             SELECT task_id, next_retry_at, 1 FROM tasks
             WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= ?1
               AND (?2 IS NULL OR tenant_key = ?2)
             UNION ALL
             SELECT task_id, trigger_at, 0 FROM tasks
             WHERE state = 'active' AND trigger_at IS NOT NULL AND trigger_at <= ?1
               AND (?2 IS NULL OR tenant_key = ?2)
             ORDER BY 2, 1 LIMIT ?3",
        )?;
        let mut due = stmt
            .query_map(params![now, tenant, limit], due_row)?
            .collect::<Result<Vec<_>, _>>()
            .context("finding due tasks")?;
        // A task with both its occurrence and a retry due is listed once, at
        // the earlier time (as on PostgreSQL).
        let mut seen = std::collections::HashSet::new();
        due.retain(|d| seen.insert(d.task_id.clone()));
        Ok(due)
    }

    fn due_count(&mut self, now: i64, tenant: Option<&str>) -> Result<i64> {
        // Three walks of the due part of the partial due indexes, each due
        // task once, rather than a test of every active task.
        self.conn
            .prepare_cached(
                "SELECT count(*) FROM (
                   SELECT rowid FROM tasks INDEXED BY tasks_due
                    WHERE state = 'active' AND next_run_at <= ?1 AND (?2 IS NULL OR tenant_key = ?2)
                   UNION
                   SELECT rowid FROM tasks INDEXED BY tasks_retry_due
                    WHERE state = 'active' AND next_retry_at IS NOT NULL AND next_retry_at <= ?1
                      AND (?2 IS NULL OR tenant_key = ?2)
                   UNION
                   SELECT rowid FROM tasks INDEXED BY tasks_trigger_due
                    WHERE state = 'active' AND trigger_at IS NOT NULL AND trigger_at <= ?1
                      AND (?2 IS NULL OR tenant_key = ?2))",
            )?
            .query_row(params![now, tenant], |row| row.get(0))
            .context("counting due tasks")
    }

    fn advance_task(&mut self, a: &TaskAdvance<'_>) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE tasks
                 SET state = ?1, next_run_at = ?2, next_retry_at = ?3, retry_run_id = ?4,
                     consecutive_failures = ?5, updated_at = ?6,
                     state_changed_at = CASE WHEN state = ?1 THEN state_changed_at ELSE ?6 END,
                     -- A queue mark lives while its due instant is still due:
                     -- an occurrence not yet passed by next_run_at, or the
                     -- pending retry itself.
                     queued_since = CASE WHEN queued_for >= ?2 OR queued_for = ?3
                                         THEN queued_since END,
                     queued_next = CASE WHEN queued_for >= ?2 OR queued_for = ?3
                                        THEN queued_next END,
                     queued_for = CASE WHEN queued_for >= ?2 OR queued_for = ?3
                                       THEN queued_for END
                 WHERE task_id = ?7 AND state = ?8 AND next_run_at IS ?9 AND next_retry_at IS ?10",
            )?
            .execute(params![
                a.state.as_str(),
                a.next_run_at,
                a.next_retry_at,
                a.retry_run_id,
                a.consecutive_failures,
                a.now,
                a.task_id,
                a.expected_state.as_str(),
                a.expected_next_run_at,
                a.expected_next_retry_at
            ])
            .context("advancing the task's schedule")?;
        expect_one(changed, || {
            format!("task {} changed while it was being scheduled", a.task_id)
        })
    }

    fn replace_task(&mut self, t: &Task, expected_revision: i64, now: i64) -> Result<()> {
        let r = RawTask::encode(t);
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::REPLACE_TASK))?
            .execute(params![
                r.name,
                r.target,
                r.instruction,
                r.schedule,
                r.timezone,
                r.policy,
                r.grace_seconds,
                r.max_retries,
                r.retry_backoff_seconds,
                r.payload,
                r.payload_hash,
                r.next_run_at,
                now,
                r.task_id,
                expected_revision,
                r.tenant_key,
                r.owner_keys,
                r.follow_key,
                r.zone_in_force,
            ])
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
            .conn
            .prepare_cached(&numbered(sql::SET_TRIGGER))?
            .execute(params![t.at, t.actor, t.reason, task_id, revision])
            .context("recording the trigger")?;
        expect_one(changed, || {
            format!("task {task_id} changed meanwhile or already has a run triggered")
        })
    }

    fn pending_trigger(&mut self, task_id: &str) -> Result<Option<Trigger>> {
        self.conn
            .prepare_cached(&numbered(sql::PENDING_TRIGGER))?
            .query_row([task_id], |row| {
                Ok(Trigger {
                    at: row.get(0)?,
                    actor: row.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    reason: row.get(2)?,
                })
            })
            .optional()
            .context("reading the task's trigger")
    }

    fn clear_trigger(&mut self, task_id: &str, at: i64) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::CLEAR_TRIGGER))?
            .execute(params![task_id, at])
            .context("consuming the trigger")?;
        expect_one(changed, || {
            format!("the trigger of task {task_id} was claimed by another tick")
        })
    }

    fn set_managed_by(&mut self, task_id: &str, file: &str) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::SET_MANAGED_BY))?
            .execute(params![file, task_id])
            .context("recording the task's file")?;
        expect_one(changed, || format!("task {task_id} vanished"))
    }

    fn set_declared(&mut self, task_id: &str, declared_hash: &str) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::SET_DECLARED))?
            .execute(params![declared_hash, task_id])
            .context("recording what the file declared")?;
        expect_one(changed, || format!("task {task_id} vanished"))
    }

    fn declared(&mut self, tenant_key: &str) -> Result<HashMap<String, String>> {
        let mut stmt = self.conn.prepare_cached(&numbered(sql::DECLARED))?;
        let found = stmt
            .query_map([tenant_key], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<HashMap<String, String>>>()
            .context("reading what the file declared")?;
        Ok(found)
    }

    fn managed_tasks(&mut self, tenant_key: &str, file: &str) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(&numbered(sql::MANAGED_TASKS))?;
        let ids = stmt
            .query_map(params![tenant_key, file], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()
            .context("reading the file's tasks")?;
        Ok(ids)
    }

    fn pending_retries(
        &mut self,
        f: &TaskFilter<'_>,
        end: i64,
        limit: i64,
    ) -> Result<Vec<Result<Task, CorruptRow>>> {
        let keys = serde_json::to_string(f.owner_keys)?;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks
             WHERE tenant_key = ?1 AND state = 'active'
               AND next_retry_at IS NOT NULL AND next_retry_at <= ?2
               AND EXISTS (SELECT 1 FROM json_each(tasks.owner_keys) AS o
                           WHERE o.value IN (SELECT value FROM json_each(?3)))
             ORDER BY next_retry_at LIMIT ?4"
        ))?;
        let rows = stmt
            .query_map(params![f.tenant_key, end, keys, limit], decode_task)?
            .collect::<Result<Vec<_>, _>>()
            .context("reading pending retries")?;
        Ok(rows)
    }

    fn tenants_owned(&mut self, owner_keys: &[String]) -> Result<Vec<(String, i64)>> {
        let keys = serde_json::to_string(owner_keys)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT tenant_key, count(*) FROM tasks
             WHERE state <> 'deleted'
               AND EXISTS (SELECT 1 FROM json_each(tasks.owner_keys) AS o
                           WHERE o.value IN (SELECT value FROM json_each(?1)))
             GROUP BY tenant_key ORDER BY tenant_key",
        )?;
        let found = stmt
            .query_map([keys], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<Vec<(String, i64)>>>()
            .context("reading the caller's tenants")?;
        Ok(found)
    }

    fn managers(&mut self, tenant_key: &str) -> Result<HashMap<String, String>> {
        let mut stmt = self.conn.prepare_cached(&numbered(sql::MANAGERS))?;
        let found = stmt
            .query_map([tenant_key], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<HashMap<String, String>>>()
            .context("reading which source created each task")?;
        Ok(found)
    }

    fn quarantine_task(&mut self, task_id: &str, problem: &str, now: i64) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE tasks
                 SET state = 'error', state_reason = ?1, next_run_at = NULL, next_retry_at = NULL,
                     retry_run_id = NULL, queued_for = NULL, queued_since = NULL, queued_next = NULL, state_changed_at = ?2, updated_at = ?2,
                     trigger_at = NULL, trigger_actor = NULL, trigger_reason = NULL,
                     revision = revision + 1
                 WHERE task_id = ?3 AND state NOT IN ('error', 'deleted')",
            )?
            .execute(params![problem, now, task_id])
            .context("quarantining the task")?;
        expect_one(changed, || {
            format!("task {task_id} was already quarantined")
        })
    }
}
