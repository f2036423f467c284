//! `prune`: settled history older than a cutoff, counted or deleted, at
//! once or in batches of short transactions. Which rows may go is written
//! once (`PRUNABLE_RUNS`, `prunable_events`); how a batch's runs are held
//! while their notices, reconciliations and selves are deleted stays each
//! server's: a temporary table on SQLite, the ids as one array argument on
//! PostgreSQL.

use anyhow::{Context, Result};

use super::PruneCounts;
use crate::store::connection::args;
use crate::store::connection::{Connection, Dialect};

/// Runs `prune` may remove ($1 the cutoff, $2 the tenant or null): settled
/// long enough ago, every notice delivered or held back by the policy (or
/// none), not the subject of a pending retry.
const PRUNABLE_RUNS: &str = "
    SELECT r.run_id FROM runs r
    WHERE r.status IN ('succeeded', 'failed', 'delivery_failed', 'missed', 'skipped_overlap',
                       'skipped_gate')
      AND r.finished_at < $1 AND (CAST($2 AS TEXT) IS NULL OR r.tenant_key = $2)
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.run_id = r.run_id AND d.state NOT IN ('delivered', 'suppressed'))
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.retry_run_id = r.run_id)";

/// Audit events older than the cutoff, except the record of how a task that
/// still exists came to be: its confirm (or replace) events and the draft
/// events they consumed. Those stay as long as the task does; once it is
/// deleted they age out like the rest.
fn prunable_events(dialect: Dialect) -> String {
    let draft_id = |event: &str| match dialect {
        Dialect::Sqlite => format!("json_extract({event}.detail, '$.draft_id')"),
        Dialect::Postgres => format!("({event}.detail::jsonb ->> 'draft_id')"),
    };
    let (drafted, confirmed) = (draft_id("e"), draft_id("c"));
    format!(
        "
    SELECT e.event_id FROM events e
    WHERE e.at < $1 AND (CAST($2 AS TEXT) IS NULL OR e.tenant_key = $2)
      AND NOT (e.action IN ('confirm', 'replace') AND EXISTS (
          SELECT 1 FROM tasks t WHERE t.task_id = e.task_id AND t.state <> 'deleted'))
      -- IN (subquery) is evaluated once (into an index on SQLite), not once per event.
      AND NOT (e.action = 'draft' AND coalesce({drafted} IN (
          SELECT {confirmed} FROM events c
          JOIN tasks t ON t.task_id = c.task_id
          WHERE c.action IN ('confirm', 'replace') AND t.state <> 'deleted'), FALSE))"
    )
}

/// Expired drafts ($1 the cutoff, $2 the tenant or null).
const PRUNABLE_DRAFTS: &str =
    "FROM drafts WHERE expires_at < $1 AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)";

/// SQLite's table of the runs a deletion is for, chosen once, so that
/// notices, reconciliations and runs are deleted for exactly the same set.
const PRUNE_RUNS_TABLE: &str =
    "CREATE TEMP TABLE IF NOT EXISTS prune_runs (run_id TEXT PRIMARY KEY)";

/// `MaintenanceTx::prunable`.
pub(super) fn prunable(
    tx: &mut impl Connection,
    cutoff: i64,
    tenant: Option<&str>,
) -> Result<PruneCounts> {
    let events = prunable_events(tx.dialect());
    let mut count = |sql: String| -> Result<i64> {
        tx.value(&sql, args![cutoff, tenant])
            .context("counting prunable rows")
    };
    Ok(PruneCounts {
        runs: count(format!("SELECT count(*) FROM ({PRUNABLE_RUNS}) p"))?,
        notices: count(format!(
            "SELECT count(*) FROM deliveries WHERE run_id IN ({PRUNABLE_RUNS})"
        ))?,
        reconciliations: count(format!(
            "SELECT count(*) FROM reconciliations WHERE run_id IN ({PRUNABLE_RUNS})"
        ))?,
        events: count(format!("SELECT count(*) FROM ({events}) p"))?,
        drafts: count(format!("SELECT count(*) {PRUNABLE_DRAFTS}"))?,
    })
}

pub(super) fn prune_batch(
    tx: &mut impl Connection,
    cutoff: i64,
    tenant: Option<&str>,
    limit: i64,
) -> Result<PruneCounts> {
    // Children first: notices and reconciliations point at runs.
    let [notices, reconciliations, runs] = match tx.dialect() {
        Dialect::Sqlite => {
            clear_prune_runs(tx)?;
            tx.execute(
                &format!("INSERT INTO prune_runs {PRUNABLE_RUNS} LIMIT $3"),
                args![cutoff, tenant, limit],
            )
            .context("pruning")?;
            let deleted = delete_prune_runs(tx)?;
            tx.execute("DELETE FROM prune_runs", args![])
                .context("pruning")?;
            deleted
        }
        Dialect::Postgres => {
            // The batch's runs are chosen once, so that notices,
            // reconciliations and runs are deleted for exactly the same set.
            let ids = tx
                .query(
                    &format!("SELECT run_id FROM ({PRUNABLE_RUNS}) p LIMIT $3"),
                    args![cutoff, tenant, limit],
                )
                .context("choosing runs to prune")?
                .iter()
                .map(|r| r.get::<String>(0))
                .collect::<Result<Vec<_>>>()?;
            let ids = text_array(&ids);
            let mut by_ids = |table: &str| -> Result<i64> {
                let sql = format!(
                    "DELETE FROM {table} WHERE run_id = ANY(CAST(CAST($1 AS TEXT) AS TEXT[]))"
                );
                let n = tx.execute(&sql, args![&ids]).context("pruning")?;
                Ok(n as i64)
            };
            [
                by_ids("deliveries")?,
                by_ids("reconciliations")?,
                by_ids("runs")?,
            ]
        }
    };
    let events = match tx.dialect() {
        Dialect::Sqlite => format!("{} LIMIT $3", prunable_events(Dialect::Sqlite)),
        Dialect::Postgres => format!(
            "SELECT event_id FROM ({}) p LIMIT $3",
            prunable_events(Dialect::Postgres)
        ),
    };
    let mut limited = |sql: String| -> Result<i64> {
        let n = tx
            .execute(&sql, args![cutoff, tenant, limit])
            .context("pruning")?;
        Ok(n as i64)
    };
    let events = limited(format!("DELETE FROM events WHERE event_id IN ({events})"))?;
    let drafts = limited(format!(
        "DELETE FROM drafts WHERE draft_id IN (SELECT draft_id {PRUNABLE_DRAFTS} LIMIT $3)"
    ))?;
    Ok(PruneCounts {
        runs,
        notices,
        reconciliations,
        events,
        drafts,
    })
}

/// SQLite: an empty `prune_runs`, made if this connection has none yet.
fn clear_prune_runs(tx: &mut impl Connection) -> Result<()> {
    tx.execute(PRUNE_RUNS_TABLE, args![]).context("pruning")?;
    tx.execute("DELETE FROM prune_runs", args![])
        .context("pruning")?;
    Ok(())
}

/// SQLite: deletes the notices, reconciliations and runs of the runs in
/// `prune_runs`, children first; how many of each.
fn delete_prune_runs(tx: &mut impl Connection) -> Result<[i64; 3]> {
    let mut deleted = [0; 3];
    for (n, table) in deleted
        .iter_mut()
        .zip(["deliveries", "reconciliations", "runs"])
    {
        let sql = format!("DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM prune_runs)");
        *n = tx.execute(&sql, args![]).context("pruning")? as i64;
    }
    Ok(deleted)
}

/// `ids` as a PostgreSQL array literal (`{"a","b"}`), each quoted, so that
/// no id can end or split an element.
fn text_array(ids: &[String]) -> String {
    let quoted: Vec<String> = ids
        .iter()
        .map(|id| format!("\"{}\"", id.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{{{}}}", quoted.join(","))
}

#[cfg(test)]
mod tests {
    use super::text_array;

    #[test]
    fn an_id_with_quotes_or_commas_stays_one_element() {
        assert_eq!(text_array(&[]), "{}");
        assert_eq!(
            text_array(&["a,b".into(), "c\"d\\".into()]),
            r#"{"a,b","c\"d\\"}"#
        );
    }
}
