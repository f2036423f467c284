//! The lease guards of `RunTx`: a change to a leased run applies only while
//! its lease holds, judged after waiting for the run's row, never by a
//! clock read before the wait.

use anyhow::{Context, Result};

use super::RunFinish;
use crate::store::connection::args;
use crate::store::connection::{expect_one, Connection, Dialect};

/// Seconds this transaction has lasted so far, on PostgreSQL's clock. The
/// caller read `now` when the transaction began; a lease guard adds this so
/// that time spent waiting for a row lock cannot let an expired lease pass.
/// SQLite's write lock is taken before `now` is read: nothing to add.
fn waited(dialect: Dialect) -> &'static str {
    dialect.pick(
        "",
        " + floor(extract(epoch FROM clock_timestamp() - transaction_timestamp()))::bigint",
    )
}

/// Waits for the run's row lock before a lease guard is judged. An UPDATE
/// that waits for a lock held by a `SELECT … FOR UPDATE` (which changes no
/// row) does not re-evaluate its WHERE afterwards, so it would judge the
/// lease by the clock of before the wait. SQLite's writer holds the whole
/// file already.
fn lock_run(tx: &mut impl Connection, run_id: &str) -> Result<()> {
    if tx.dialect() == Dialect::Postgres {
        tx.execute(
            "SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE",
            args![run_id],
        )
        .context("locking the run")?;
    }
    Ok(())
}

pub(super) fn renew_lease(
    tx: &mut impl Connection,
    run_id: &str,
    token: &str,
    until: i64,
    now: i64,
) -> Result<bool> {
    lock_run(tx, run_id)?;
    let larger = tx.dialect().pick("max", "greatest");
    let waited = waited(tx.dialect());
    let changed = tx
        .execute(
            &format!(
                "UPDATE runs SET lease_until = {larger}(lease_until, $1)
                 WHERE run_id = $2 AND lease_token = $3 AND status = 'running'
                   AND lease_until >= CAST($4 AS BIGINT){waited}"
            ),
            args![until, run_id, token, now],
        )
        .context("renewing the lease")?;
    Ok(changed == 1)
}

pub(super) fn finish_run(tx: &mut impl Connection, f: &RunFinish<'_>) -> Result<()> {
    if f.token.is_some() {
        lock_run(tx, f.run_id)?;
    }
    let waited = waited(tx.dialect());
    let changed = tx
        .execute(
            &format!(
                "UPDATE runs
                 SET status = $1, summary = coalesce($2, summary), reason = $3,
                     wait_kind = $4, wait_id = $5, wait_deadline = $6,
                     lease_until = NULL, stderr_tail = coalesce($11, stderr_tail),
                     approved_at = NULL, approved_by = NULL,
                     finished_at = CASE WHEN $1 IN ('awaiting_confirmation', 'awaiting_authorization')
                                        THEN NULL ELSE CAST($7 AS BIGINT) END
                 WHERE run_id = $8 AND status = $9
                   AND (CAST($10 AS TEXT) IS NULL
                        OR (lease_token = $10 AND lease_until >= CAST($7 AS BIGINT){waited}))"
            ),
            args![
                f.to.as_str(),
                f.summary,
                f.reason,
                f.wait_kind,
                f.wait_id,
                f.wait_deadline,
                f.now,
                f.run_id,
                f.from.as_str(),
                f.token,
                f.stderr
            ],
        )
        .context("recording the run's outcome")?;
    expect_one(changed, || {
        format!(
            "run {} is no longer {} under this lease; its outcome was not recorded",
            f.run_id, f.from
        )
    })
}

pub(super) fn release_unstarted(
    tx: &mut impl Connection,
    run_id: &str,
    token: &str,
    now: i64,
) -> Result<()> {
    lock_run(tx, run_id)?;
    let waited = waited(tx.dialect());
    let changed = tx
        .execute(
            &format!(
                "DELETE FROM runs
                 WHERE run_id = $1 AND status = 'running' AND lease_token = $2
                   AND lease_until >= CAST($3 AS BIGINT){waited}"
            ),
            args![run_id, token, now],
        )
        .context("taking back a run that never started")?;
    expect_one(changed, || {
        format!("run {run_id} is no longer running under this lease")
    })
}

pub(super) fn lease_holds(
    tx: &mut impl Connection,
    run_id: &str,
    token: &str,
    now: i64,
) -> Result<bool> {
    let count: i64 = tx
        .value(
            "SELECT count(*) FROM runs
             WHERE run_id = $1 AND lease_token = $2 AND status = 'running'
               AND lease_until >= $3",
            args![run_id, token, now],
        )
        .context("checking the lease")?;
    Ok(count == 1)
}
