//! The reads of a caller's own tasks: each is filtered by the owner keys
//! the caller holds, which the two servers test differently (SQLite walks
//! both JSON lists, PostgreSQL asks `?|` of the jsonb).

use anyhow::{Context, Result};

use super::{CorruptRow, EachTask, TaskFilter, TASK_COLUMNS};
use crate::model::Task;
use crate::store::connection::args;
use crate::store::connection::{Arg, Connection, Dialect, Row};

/// True when the row of `tasks` has an owner key in `$param`, a JSON list
/// of the caller's keys.
fn owned(dialect: Dialect, param: usize) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "EXISTS (SELECT 1 FROM json_each(tasks.owner_keys) AS o
                     WHERE o.value IN (SELECT value FROM json_each(${param})))"
        ),
        // The list is expanded once per statement, not per row.
        Dialect::Postgres => format!(
            "(tasks.owner_keys::jsonb
              ?| ARRAY(SELECT jsonb_array_elements_text(CAST(${param} AS TEXT)::jsonb)))"
        ),
    }
}

/// The tenant's tasks the filter lists ($1 the tenant, $2 whether deleted
/// ones are, $3 the state or null, $4 the caller's keys), in `order`.
fn listed(dialect: Dialect, order: &str) -> String {
    format!(
        "SELECT {TASK_COLUMNS} FROM tasks
         WHERE tenant_key = $1
           AND ($2 OR state <> 'deleted')
           AND (CAST($3 AS TEXT) IS NULL OR state = $3)
           -- owned: the task's owner keys intersect the caller's
           AND {owned}
         ORDER BY {order}",
        owned = owned(dialect, 4),
    )
}

/// `listed`'s arguments; `keys` is the filter's owner keys as JSON.
fn listed_args<'a>(f: &'a TaskFilter<'_>, keys: &'a str) -> [Arg<'a>; 4] {
    [
        Arg::from(f.tenant_key),
        Arg::from(f.include_deleted),
        Arg::from(f.state.map(|s| s.as_str())),
        Arg::from(keys),
    ]
}

/// Tasks from `TASK_COLUMNS` rows, each readable or not.
fn tasks_of(rows: &[Row]) -> Result<Vec<Result<Task, CorruptRow>>> {
    rows.iter().map(super::decode_task).collect()
}

/// `TaskTx::list_tasks`.
pub(super) fn list(
    tx: &mut impl Connection,
    f: &TaskFilter<'_>,
) -> Result<Vec<Result<Task, CorruptRow>>> {
    let keys = serde_json::to_string(f.owner_keys)?;
    let sql = listed(tx.dialect(), "created_at, task_id");
    let rows = tx
        .query(&sql, &listed_args(f, &keys))
        .context("listing tasks")?;
    tasks_of(&rows)
}

/// `TaskTx::each_listed_task`.
pub(super) fn each_listed(
    tx: &mut impl Connection,
    f: &TaskFilter<'_>,
    each: &mut EachTask<'_>,
) -> Result<()> {
    let keys = serde_json::to_string(f.owner_keys)?;
    // The query walks `tasks_listed` in the listing's order, so no sort
    // of the whole result, and no row is held past its turn. Tasks that
    // will not run again come after the others: SQLite's index holds the
    // same `next_run_at IS NULL` expression; ASC puts NULL last on
    // PostgreSQL.
    let order = tx.dialect().pick(
        "next_run_at IS NULL, next_run_at, created_at, task_id",
        "next_run_at, created_at, task_id",
    );
    tx.each_row(
        &listed(tx.dialect(), order),
        &listed_args(f, &keys),
        &mut |tx, row| {
            let task = super::decode_task(row).context("listing tasks")?;
            each(tx, task)
        },
    )
}

/// `TaskTx::tenants_owned`.
pub(super) fn tenants_owned(
    tx: &mut impl Connection,
    owner_keys: &[String],
) -> Result<Vec<(String, i64)>> {
    let keys = serde_json::to_string(owner_keys)?;
    let rows = tx
        .query(
            &format!(
                "SELECT tenant_key, count(*) FROM tasks
                 WHERE state <> 'deleted' AND {owned}
                 GROUP BY tenant_key ORDER BY tenant_key",
                owned = owned(tx.dialect(), 1),
            ),
            args![&keys],
        )
        .context("reading the caller's tenants")?;
    rows.iter().map(|r| Ok((r.get(0)?, r.get(1)?))).collect()
}

/// `TaskTx::pending_retries`.
pub(super) fn pending_retries(
    tx: &mut impl Connection,
    f: &TaskFilter<'_>,
    end: i64,
    limit: i64,
) -> Result<Vec<Result<Task, CorruptRow>>> {
    let keys = serde_json::to_string(f.owner_keys)?;
    let rows = tx
        .query(
            &format!(
                "SELECT {TASK_COLUMNS} FROM tasks
                 WHERE tenant_key = $1 AND state = 'active'
                   AND next_retry_at IS NOT NULL AND next_retry_at <= $2
                   AND {owned}
                 ORDER BY next_retry_at LIMIT $4",
                owned = owned(tx.dialect(), 3),
            ),
            args![f.tenant_key, end, &keys, limit],
        )
        .context("reading pending retries")?;
    tasks_of(&rows)
}
