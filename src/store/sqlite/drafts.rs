//! SQLite side of the drafts table.

use super::numbered;
use crate::store::sql::drafts as sql;
use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};

use super::{expect_one, SqliteTx};
use crate::model::{CodeLock, Draft, Replaces};
use crate::store::DraftTx;

impl DraftTx for SqliteTx<'_> {
    fn insert_draft(&mut self, d: &Draft) -> Result<()> {
        self.conn
            .prepare_cached(&numbered(sql::INSERT_DRAFT))?
            .execute(params![
                d.draft_id,
                d.tenant_key,
                d.payload,
                d.payload_hash,
                d.created_by,
                d.created_at,
                d.expires_at,
                d.replaces.as_ref().map(|r| &r.task_id),
                d.replaces.as_ref().map(|r| r.revision),
                d.code.as_ref().map(|c| &c.hash),
                d.code.as_ref().map(|c| &c.salt),
            ])
            .context("saving the draft")?;
        Ok(())
    }

    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>> {
        self.conn
            .prepare_cached(
                "SELECT draft_id, tenant_key, payload, payload_hash, created_by, created_at,
                        expires_at, replaces_task_id, replaces_revision,
                        code_hash, code_salt, code_wrong_attempts
                 FROM drafts WHERE draft_id = ?1",
            )?
            .query_row([draft_id], |row| {
                Ok(Draft {
                    draft_id: row.get(0)?,
                    tenant_key: row.get(1)?,
                    payload: row.get(2)?,
                    payload_hash: row.get(3)?,
                    created_by: row.get(4)?,
                    created_at: row.get(5)?,
                    expires_at: row.get(6)?,
                    replaces: match (row.get(7)?, row.get(8)?) {
                        (Some(task_id), Some(revision)) => Some(Replaces { task_id, revision }),
                        _ => None,
                    },
                    code: match (row.get(9)?, row.get(10)?) {
                        (Some(hash), Some(salt)) => Some(CodeLock {
                            hash,
                            salt,
                            wrong_attempts: row.get(11)?,
                        }),
                        _ => None,
                    },
                })
            })
            .optional()
            .context("reading the draft")
    }

    fn consume_draft(&mut self, draft_id: &str) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::CONSUME_DRAFT))?
            .execute([draft_id])
            .context("removing the confirmed draft")?;
        expect_one(changed, || {
            format!("draft {draft_id} was confirmed by someone else")
        })
    }

    fn count_wrong_code(&mut self, draft_id: &str, seen: i64) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql::COUNT_WRONG_CODE))?
            .execute(params![draft_id, seen])
            .context("counting a wrong confirmation code")?;
        expect_one(changed, || {
            format!("draft {draft_id} changed while its code was checked")
        })
    }

    fn draft_ids_with_prefix(
        &mut self,
        tenant_key: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>> {
        self.ids_with_prefix(
            "SELECT draft_id FROM drafts
             WHERE draft_id >= ?1 AND draft_id < ?2 AND tenant_key = ?3
             ORDER BY draft_id LIMIT ?4",
            tenant_key,
            prefix,
            limit,
        )
        .context("looking up drafts by id prefix")
    }

    fn agent_drafts_since(
        &mut self,
        tenant_key: &str,
        actor: &str,
        since: i64,
    ) -> Result<Vec<i64>> {
        // Along events_by_time: the last hour's events, of every tenant.
        let mut stmt = self.conn.prepare_cached(
            "SELECT at FROM events
             WHERE at >= ?1 AND tenant_key = ?2 AND actor = ?3 AND action = 'draft'
               AND json_extract(detail, '$.drafted_by') IS NOT NULL
             ORDER BY at",
        )?;
        let times = stmt
            .query_map(params![since, tenant_key, actor], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>();
        times.context("counting an agent's drafts")
    }

    fn hold_agent_quota(&mut self, _tenant_key: &str, _actor: &str) -> Result<()> {
        // Every write transaction is IMMEDIATE: it holds the one write lock.
        Ok(())
    }

    fn agent_drafts_waiting(&mut self, tenant_key: &str, actor: &str, now: i64) -> Result<i64> {
        self.conn
            .prepare_cached(&numbered(sql::AGENT_DRAFTS_WAITING))?
            .query_row(params![now, tenant_key, actor], |row| row.get(0))
            .context("counting an agent's waiting drafts")
    }
}
