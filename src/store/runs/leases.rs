//! The lease guards of `RunTx`: a change to a leased run applies only while
//! its lease holds, judged after waiting for the run's row, never by a
//! clock read before the wait.

use anyhow::{Context, Result};

use super::RunFinish;
use crate::store::connection::args;
use crate::store::connection::{expect_one, Connection, Dialect};

/// A lease guard's clock on PostgreSQL, in the guarded statement itself:
/// `with` locks the run's row ($`param`, its id) and only then reads how
/// long this transaction has lasted; `from` joins that one row in (an
/// UPDATE's FROM, a DELETE's USING) and `waited` adds its seconds to `now`.
/// The caller read `now` when the transaction began, so time spent waiting
/// for the row cannot let an expired lease pass. The wait comes first
/// because an UPDATE that waits for a lock held by a `SELECT … FOR UPDATE`
/// (which changes no row) does not re-evaluate its WHERE afterwards: it
/// would judge the lease by the clock of before the wait. Here the seconds
/// exist only once the lock is held, and a row changed meanwhile is read
/// again as it now is (READ COMMITTED's recheck of an updated row). One
/// statement, one round trip, where a lock and then the change were two.
/// SQLite's writer holds the whole file before `now` is read: nothing to add.
struct LeaseClock {
    with: String,
    from: &'static str,
    waited: &'static str,
}

impl LeaseClock {
    /// No lease judged, or SQLite: the statement as it is.
    fn none() -> LeaseClock {
        LeaseClock {
            with: String::new(),
            from: "",
            waited: "",
        }
    }
}

fn lease_clock(dialect: Dialect, param: &str, join: &'static str) -> LeaseClock {
    match dialect {
        Dialect::Sqlite => LeaseClock::none(),
        Dialect::Postgres => LeaseClock {
            with: format!(
                "WITH locked AS MATERIALIZED
                      (SELECT run_id FROM runs WHERE run_id = {param} FOR UPDATE),
                  waited AS MATERIALIZED
                      (SELECT floor(extract(epoch FROM clock_timestamp()
                                                      - transaction_timestamp()))::bigint
                              AS seconds
                       FROM locked)
                 "
            ),
            from: join,
            waited: " + waited.seconds",
        },
    }
}

pub(super) fn renew_lease(
    tx: &mut impl Connection,
    run_id: &str,
    token: &str,
    until: i64,
    now: i64,
) -> Result<bool> {
    let larger = tx.dialect().pick("max", "greatest");
    let LeaseClock { with, from, waited } = lease_clock(tx.dialect(), "$2", " FROM waited");
    let changed = tx
        .execute(
            &format!(
                "{with}UPDATE runs SET lease_until = {larger}(lease_until, $1){from}
                 WHERE run_id = $2 AND lease_token = $3 AND status = 'running'
                   AND lease_until >= CAST($4 AS BIGINT){waited}"
            ),
            args![until, run_id, token, now],
        )
        .context("renewing the lease")?;
    Ok(changed == 1)
}

pub(super) fn finish_run(tx: &mut impl Connection, f: &RunFinish<'_>) -> Result<()> {
    // Without a token no lease is judged: no lock to wait for first.
    let LeaseClock { with, from, waited } = match f.token {
        Some(_) => lease_clock(tx.dialect(), "$8", " FROM waited"),
        None => LeaseClock::none(),
    };
    let changed = tx
        .execute(
            &format!(
                "{with}UPDATE runs
                 SET status = $1, summary = coalesce($2, summary), reason = $3,
                     wait_kind = $4, wait_id = $5, wait_deadline = $6,
                     lease_until = NULL, stderr_tail = coalesce($11, stderr_tail),
                     approved_at = NULL, approved_by = NULL,
                     finished_at = CASE WHEN $1 IN ('awaiting_confirmation', 'awaiting_authorization')
                                        THEN NULL ELSE CAST($7 AS BIGINT) END{from}
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
    let LeaseClock { with, from, waited } = lease_clock(tx.dialect(), "$1", " USING waited");
    let changed = tx
        .execute(
            &format!(
                "{with}DELETE FROM runs{from}
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
