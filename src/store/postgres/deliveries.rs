//! PostgreSQL side of the delivery ledger.

use crate::store::deliveries::{SkipSent, LAST_SKIP_SENT, NOTICE_COLUMNS};
use crate::store::sql::deliveries as sql;
use anyhow::{Context, Result};
use postgres::Row;

use super::{col, expect_one, PgTx};
use crate::model::Notice;
use crate::store::{DeliveryTx, NoticeFinish};

/// A notice row, by the decoder both stores share.
fn decode_notice(row: &Row) -> Result<Notice> {
    crate::store::rows::notice(row)
}

impl DeliveryTx for PgTx<'_, '_> {
    fn insert_notice(&mut self, n: &Notice) -> Result<()> {
        self.tx
            .execute(
                &sql::INSERT_NOTICE,
                &[
                    &n.delivery_id,
                    &n.run_id,
                    &n.tenant_key,
                    &n.seq,
                    &n.state.as_str(),
                    &n.target,
                    &n.message,
                    &n.created_at,
                    &n.updated_at,
                    &n.claim_token,
                    &n.deadline,
                    &n.attempts,
                    &n.last_error,
                    &n.kind.map(|k| k.as_str()),
                    &n.suppressed_since_last,
                    &n.suppressed_reason,
                ],
            )
            .context("recording the notice")?;
        Ok(())
    }

    fn last_skip_sent(&mut self, task_id: &str, since: i64) -> Result<Option<SkipSent>> {
        let row = self
            .tx
            .query_opt(LAST_SKIP_SENT, &[&task_id, &since])
            .context("reading the task's last skip notice")?;
        row.map(|r| {
            Ok(SkipSent {
                status: col(&r, 0)?,
                reason: col(&r, 1)?,
                summary: col(&r, 2)?,
                at: col(&r, 3)?,
            })
        })
        .transpose()
    }

    fn notice_sending(&mut self, run_id: &str) -> Result<bool> {
        let row = self.tx.query_one(sql::NOTICE_SENDING, &[&run_id])?;
        col(&row, 0)
    }

    fn next_notice_seq(&mut self, run_id: &str) -> Result<i64> {
        let row = self.tx.query_one(sql::NEXT_NOTICE_SEQ, &[&run_id])?;
        col(&row, 0)
    }

    fn pending_notices(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Notice>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "SELECT {NOTICE_COLUMNS} FROM deliveries
                     WHERE state = 'pending' AND ($1::text IS NULL OR tenant_key = $1)
                     ORDER BY created_at, delivery_id LIMIT $2"
                ),
                &[&tenant, &i64::from(limit)],
            )
            .context("reading pending notices")?;
        rows.iter().map(decode_notice).collect()
    }

    fn notices_to_send(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notice>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "SELECT {NOTICE_COLUMNS} FROM deliveries
                     WHERE state = 'pending' AND coalesce(next_attempt_at, 0) <= $1
                       AND ($2::text IS NULL OR tenant_key = $2)
                     ORDER BY created_at, delivery_id LIMIT $3"
                ),
                &[&now, &tenant, &i64::from(limit)],
            )
            .context("reading notices to send")?;
        rows.iter().map(decode_notice).collect()
    }

    fn give_up_notices(
        &mut self,
        created_before: i64,
        now: i64,
        tenant: Option<&str>,
    ) -> Result<Vec<Notice>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "UPDATE deliveries
                     SET state = 'undeliverable', updated_at = $1, next_attempt_at = NULL
                     WHERE state = 'pending' AND created_at < $2
                       AND ($3::text IS NULL OR tenant_key = $3)
                     RETURNING {NOTICE_COLUMNS}"
                ),
                &[&now, &created_before, &tenant],
            )
            .context("giving up on undelivered notices")?;
        rows.iter().map(decode_notice).collect()
    }

    fn claim_notice(
        &mut self,
        delivery_id: &str,
        token: &str,
        deadline: i64,
        now: i64,
    ) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::CLAIM_NOTICE, &[&token, &deadline, &now, &delivery_id])
            .context("claiming the notice")?;
        expect_one(changed, || {
            format!(
                "notice {delivery_id} was claimed by another tick, \
                 or another notice of its run is being sent"
            )
        })
    }

    fn finish_notice(&mut self, f: &NoticeFinish<'_>) -> Result<()> {
        let changed = self
            .tx
            .execute(
                "UPDATE deliveries
                 SET state = $1, last_error = $2, updated_at = $3,
                     claim_token = CASE WHEN $1 = 'pending' THEN NULL ELSE claim_token END,
                     deadline = CASE WHEN $1 = 'pending' THEN NULL ELSE deadline END,
                     next_attempt_at = CASE WHEN $1 = 'pending' THEN $6::bigint END
                 WHERE delivery_id = $4 AND state = 'sending' AND claim_token = $5",
                &[
                    &f.to.as_str(),
                    &f.error,
                    &f.now,
                    &f.delivery_id,
                    &f.token,
                    &f.retry_at,
                ],
            )
            .context("recording the delivery")?;
        expect_one(changed, || {
            format!("notice {} is no longer ours to record", f.delivery_id)
        })
    }

    fn expire_notices(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Notice>> {
        let rows = self
            .tx
            .query(
                &format!(
                    "UPDATE deliveries
                     SET state = 'unknown', updated_at = $1,
                         last_error = 'delivery deadline passed; the notifier may or may not have sent it'
                     WHERE state = 'sending' AND deadline < $1 AND ($2::text IS NULL OR tenant_key = $2)
                     RETURNING {NOTICE_COLUMNS}"
                ),
                &[&now, &tenant],
            )
            .context("expiring delivery attempts")?;
        rows.iter().map(decode_notice).collect()
    }

    fn announce_pending(&mut self, tenant: Option<&str>) -> Result<u64> {
        let changed = self
            .tx
            .execute(
                "UPDATE deliveries SET announced = 1
                 WHERE state = 'pending' AND announced = 0 AND ($1::text IS NULL OR tenant_key = $1)",
                &[&tenant],
            )
            .context("noting undelivered notices")?;
        Ok(changed)
    }
}
