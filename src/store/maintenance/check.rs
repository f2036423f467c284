//! `check`: the database's own integrity check, the rules of the data
//! (`store::invariants` says each broken one), and every task read back
//! against its payload. Each rule's query is written once; it takes `now`
//! as `$1` whether it needs it or not, so that one loop runs them all.

use anyhow::{Context, Result};

use crate::store::connection::args;
use crate::store::connection::{Cell, Connection, Dialect, FromCell, Row};
use crate::store::invariants::{self, Describe};
use crate::store::tasks::TASK_COLUMNS;

/// A cell as `check` prints it: any value as text, null as `null`.
struct Shown(String);

impl FromCell for Shown {
    fn from_cell(cell: &Cell) -> Result<Self> {
        Ok(Shown(match cell {
            Cell::Null => "null".into(),
            Cell::Int(n) => n.to_string(),
            Cell::Real(f) => f.to_string(),
            Cell::Text(t) => t.clone(),
        }))
    }
}

/// Every column of `row`, as text.
fn shown(row: &Row) -> Vec<String> {
    (0..)
        .map_while(|i| row.get::<Shown>(i).ok())
        .map(|s| s.0)
        .collect()
}

pub(super) fn integrity(tx: &mut impl Connection) -> Result<Vec<String>> {
    match tx.dialect() {
        Dialect::Sqlite => {
            let found: String = tx.value("PRAGMA integrity_check", args![])?;
            Ok(if found == "ok" {
                Vec::new()
            } else {
                vec![format!("integrity_check: {found}")]
            })
        }
        Dialect::Postgres => {
            // The server checks its own pages; reading the schema table
            // proves the store answers.
            tx.query("SELECT version FROM agentcron_schema", args![])
                .context("reading the schema table")?;
            Ok(Vec::new())
        }
    }
}

pub(super) fn violations(tx: &mut impl Connection, now: i64) -> Result<Vec<String>> {
    let mut found = match tx.dialect() {
        Dialect::Sqlite => integrity(tx)?,
        Dialect::Postgres => Vec::new(),
    };
    for (sql, describe) in rules(tx.dialect()) {
        let rows = tx.query(&sql, args![now]).context("checking invariants")?;
        found.extend(rows.iter().map(|row| describe(&shown(row))));
    }
    let tasks = tx
        .query(
            &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY task_id"),
            args![],
        )
        .context("checking every task against its payload")?;
    for row in &tasks {
        if let Err(bad) = crate::store::tasks::decode_task(row)? {
            found.push(bad.violation());
        }
    }
    Ok(found)
}

/// The rules `check` verifies (store/invariants.rs), each with the query
/// that finds the rows breaking it.
fn rules(dialect: Dialect) -> [(String, Describe); 8] {
    let from = dialect.pick(
        "json_extract(e.detail, '$.from')",
        "e.detail::jsonb ->> 'from'",
    );
    [
        (
            "SELECT task_id, scheduled_for, count(*) FROM runs
             WHERE attempt = 1 AND CAST($1 AS BIGINT) = $1
             GROUP BY task_id, scheduled_for HAVING count(*) > 1"
                .into(),
            invariants::DUPLICATE_FIRST_RUNS,
        ),
        (
            "SELECT run_id, lease_until FROM runs WHERE status = 'running' AND lease_until < $1"
                .into(),
            invariants::EXPIRED_LEASE,
        ),
        (
            "SELECT run_id, status FROM runs
             WHERE status NOT IN ('running', 'awaiting_confirmation', 'awaiting_authorization')
               AND finished_at IS NULL AND CAST($1 AS BIGINT) = $1"
                .into(),
            invariants::UNFINISHED_END,
        ),
        (
            "SELECT r.run_id, r.status FROM runs r JOIN reconciliations c ON c.run_id = r.run_id
             WHERE r.status NOT IN ('succeeded', 'failed') AND CAST($1 AS BIGINT) = $1"
                .into(),
            invariants::RECONCILED_UNSETTLED,
        ),
        (
            "SELECT run_id, count(*) FROM deliveries
             WHERE state = 'sending' AND CAST($1 AS BIGINT) = $1
             GROUP BY run_id HAVING count(*) > 1"
                .into(),
            invariants::NOTICES_SENT_AT_ONCE,
        ),
        (
            format!(
                "SELECT r.run_id FROM runs r WHERE r.status <> 'running' AND CAST($1 AS BIGINT) = $1 AND
                   (SELECT count(*) FROM events e WHERE e.run_id = r.run_id AND e.action = 'finish'
                      AND {from} = 'running')
                   > 1 + (SELECT count(*) FROM events e WHERE e.run_id = r.run_id
                            AND e.action = 'approve')"
            ),
            invariants::LEFT_RUNNING_TWICE,
        ),
        (
            "SELECT task_id, retry_run_id FROM tasks t
             WHERE retry_run_id IS NOT NULL AND CAST($1 AS BIGINT) = $1
               AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = t.retry_run_id)"
                .into(),
            invariants::RETRY_OF_NOTHING,
        ),
        (
            "SELECT coalesce(c.tenant_key, k.tenant_key), coalesce(c.state, k.state),
                    coalesce(k.n, 0), coalesce(c.n, 0)
               FROM (SELECT state, tenant_key, count(*) AS n FROM tasks GROUP BY state, tenant_key) c
               FULL JOIN task_counts k ON k.state = c.state AND k.tenant_key = c.tenant_key
              WHERE coalesce(k.n, 0) <> coalesce(c.n, 0) AND CAST($1 AS BIGINT) = $1
              ORDER BY c.n IS NULL, 2, 1"
                .into(),
            invariants::WRONG_TASK_COUNT,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_is_shown_as_text_and_the_row_ends_where_its_columns_do() {
        let row = Row::new(vec![
            Cell::Text("r1".into()),
            Cell::Int(3),
            Cell::Null,
            Cell::Real(0.5),
        ]);
        assert_eq!(shown(&row), ["r1", "3", "null", "0.5"]);
    }
}
