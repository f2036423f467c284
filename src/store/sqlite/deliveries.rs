//! SQLite side of the delivery ledger.

use super::numbered;
use crate::store::deliveries::{SkipSent, LAST_SKIP_SENT, NOTICE_COLUMNS};
use crate::store::sql::deliveries as sql;
use anyhow::{Context, Result};
use rusqlite::{params, Row};

use super::{expect_one, SqliteTx};
use crate::model::Notice;
use crate::store::{DeliveryTx, NoticeFinish};

/// A notice row, by the decoder both stores share.
fn decode_notice(row: &Row<'_>) -> rusqlite::Result<Notice> {
    crate::store::rows::notice(row)
}

impl DeliveryTx for SqliteTx<'_> {
    fn insert_notice(&mut self, n: &Notice) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(&sql::INSERT_NOTICE))?
            .execute(params![
                n.delivery_id,
                n.run_id,
                n.tenant_key,
                n.seq,
                n.state.as_str(),
                n.target,
                n.message,
                n.created_at,
                n.updated_at,
                n.claim_token,
                n.deadline,
                n.attempts,
                n.last_error,
                n.kind.map(|k| k.as_str()),
                n.suppressed_since_last,
                n.suppressed_reason
            ])
            .context("recording the notice")?;
        Ok(())
    }

    fn last_skip_sent(&mut self, task_id: &str, since: i64) -> Result<Option<SkipSent>> {
        use rusqlite::OptionalExtension;
        self.conn
            .prepare_cached(&numbered(LAST_SKIP_SENT))?
            .query_row(rusqlite::params![task_id, since], |row| {
                Ok(SkipSent {
                    status: row.get(0)?,
                    reason: row.get(1)?,
                    summary: row.get(2)?,
                    at: row.get(3)?,
                })
            })
            .optional()
            .context("reading the task's last skip notice")
    }

    fn notice_sending(&mut self, run_id: &str) -> Result<bool> {
        self.conn
            .prepare_cached(&numbered(sql::NOTICE_SENDING))?
            .query_row([run_id], |row| row.get(0))
            .context("looking for a notice being sent")
    }

    fn next_notice_seq(&mut self, run_id: &str) -> Result<i64> {
        self.conn
            .prepare_cached(&numbered(sql::NEXT_NOTICE_SEQ))?
            .query_row([run_id], |row| row.get(0))
            .context("numbering the notice")
    }

    fn pending_notices(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Notice>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {NOTICE_COLUMNS} FROM deliveries
             WHERE state = 'pending' AND (?1 IS NULL OR tenant_key = ?1)
             ORDER BY created_at, delivery_id LIMIT ?2"
        ))?;
        let notices = stmt
            .query_map(params![tenant, limit], decode_notice)?
            .collect::<Result<Vec<_>, _>>()
            .context("reading pending notices")?;
        Ok(notices)
    }

    fn notices_to_send(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notice>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {NOTICE_COLUMNS} FROM deliveries
             WHERE state = 'pending' AND coalesce(next_attempt_at, 0) <= ?1
               AND (?2 IS NULL OR tenant_key = ?2)
             ORDER BY created_at, delivery_id LIMIT ?3"
        ))?;
        let notices = stmt
            .query_map(params![now, tenant, limit], decode_notice)?
            .collect::<Result<Vec<_>, _>>()
            .context("reading notices to send")?;
        Ok(notices)
    }

    fn give_up_notices(
        &mut self,
        created_before: i64,
        now: i64,
        tenant: Option<&str>,
    ) -> Result<Vec<Notice>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "UPDATE deliveries SET state = 'undeliverable', updated_at = ?1, next_attempt_at = NULL
             WHERE state = 'pending' AND created_at < ?2 AND (?3 IS NULL OR tenant_key = ?3)
             RETURNING {NOTICE_COLUMNS}"
        ))?;
        let notices = stmt
            .query_map(params![now, created_before, tenant], decode_notice)?
            .collect::<Result<Vec<_>, _>>()
            .context("giving up on undelivered notices")?;
        Ok(notices)
    }

    fn claim_notice(
        &mut self,
        delivery_id: &str,
        token: &str,
        deadline: i64,
        now: i64,
    ) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::CLAIM_NOTICE))?
            .execute(params![token, deadline, now, delivery_id])
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
            .conn
            .prepare_cached(
                "UPDATE deliveries
                 SET state = ?1, last_error = ?2, updated_at = ?3,
                     claim_token = CASE WHEN ?1 = 'pending' THEN NULL ELSE claim_token END,
                     deadline = CASE WHEN ?1 = 'pending' THEN NULL ELSE deadline END,
                     next_attempt_at = CASE WHEN ?1 = 'pending' THEN ?6 END
                 WHERE delivery_id = ?4 AND state = 'sending' AND claim_token = ?5",
            )?
            .execute(params![
                f.to.as_str(),
                f.error,
                f.now,
                f.delivery_id,
                f.token,
                f.retry_at
            ])
            .context("recording the delivery")?;
        expect_one(changed, || {
            format!("notice {} is no longer ours to record", f.delivery_id)
        })
    }

    fn expire_notices(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Notice>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "UPDATE deliveries
             SET state = 'unknown', updated_at = ?1,
                 last_error = 'delivery deadline passed; the notifier may or may not have sent it'
             WHERE state = 'sending' AND deadline < ?1 AND (?2 IS NULL OR tenant_key = ?2)
             RETURNING {NOTICE_COLUMNS}"
        ))?;
        let notices = stmt
            .query_map(params![now, tenant], decode_notice)?
            .collect::<Result<Vec<_>, _>>()
            .context("expiring delivery attempts")?;
        Ok(notices)
    }

    fn announce_pending(&mut self, tenant: Option<&str>) -> Result<u64> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE deliveries SET announced = 1
                 WHERE state = 'pending' AND announced = 0 AND (?1 IS NULL OR tenant_key = ?1)",
            )?
            .execute(params![tenant])
            .context("noting undelivered notices")?;
        Ok(changed as u64)
    }
}
