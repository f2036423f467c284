//! PostgreSQL side of the drafts table.

use crate::store::sql::drafts as sql;
use anyhow::{Context, Result};

use super::{col, expect_one, PgTx};
use crate::model::{CodeLock, Draft, Replaces};
use crate::store::DraftTx;

impl DraftTx for PgTx<'_, '_> {
    fn insert_draft(&mut self, d: &Draft) -> Result<()> {
        self.tx
            .execute(
                sql::INSERT_DRAFT,
                &[
                    &d.draft_id,
                    &d.tenant_key,
                    &d.payload,
                    &d.payload_hash,
                    &d.created_by,
                    &d.created_at,
                    &d.expires_at,
                    &d.replaces.as_ref().map(|r| r.task_id.as_str()),
                    &d.replaces.as_ref().map(|r| r.revision),
                    &d.code.as_ref().map(|c| c.hash.as_str()),
                    &d.code.as_ref().map(|c| c.salt.as_str()),
                ],
            )
            .context("saving the draft")?;
        Ok(())
    }

    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>> {
        let row = self.tx.query_opt(
            "SELECT draft_id, tenant_key, payload, payload_hash, created_by, created_at, expires_at,
                    replaces_task_id, replaces_revision, code_hash, code_salt, code_wrong_attempts
             FROM drafts WHERE draft_id = $1 FOR UPDATE",
            &[&draft_id],
        )?;
        row.map(|r| {
            Ok(Draft {
                draft_id: col(&r, 0)?,
                tenant_key: col(&r, 1)?,
                payload: col(&r, 2)?,
                payload_hash: col(&r, 3)?,
                created_by: col(&r, 4)?,
                created_at: col(&r, 5)?,
                expires_at: col(&r, 6)?,
                replaces: match (col(&r, 7)?, col(&r, 8)?) {
                    (Some(task_id), Some(revision)) => Some(Replaces { task_id, revision }),
                    _ => None,
                },
                code: match (col(&r, 9)?, col(&r, 10)?) {
                    (Some(hash), Some(salt)) => Some(CodeLock {
                        hash,
                        salt,
                        wrong_attempts: col(&r, 11)?,
                    }),
                    _ => None,
                },
            })
        })
        .transpose()
    }

    fn consume_draft(&mut self, draft_id: &str) -> Result<()> {
        let changed = self.tx.execute(sql::CONSUME_DRAFT, &[&draft_id])?;
        expect_one(changed, || {
            format!("draft {draft_id} was confirmed by someone else")
        })
    }

    fn count_wrong_code(&mut self, draft_id: &str, seen: i64) -> Result<()> {
        let changed = self
            .tx
            .execute(sql::COUNT_WRONG_CODE, &[&draft_id, &seen])?;
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
             WHERE draft_id >= $1 AND draft_id < $2 AND starts_with(draft_id, $1)
               AND tenant_key = $3
             ORDER BY draft_id LIMIT $4",
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
        let rows = self
            .tx
            .query(
                "SELECT at FROM events
                 WHERE at >= $1 AND tenant_key = $2 AND actor = $3 AND action = 'draft'
                   AND (detail::jsonb ->> 'drafted_by') IS NOT NULL
                 ORDER BY at",
                &[&since, &tenant_key, &actor],
            )
            .context("counting an agent's drafts")?;
        rows.iter().map(|r| col(r, 0)).collect()
    }

    fn hold_agent_quota(&mut self, tenant_key: &str, actor: &str) -> Result<()> {
        // One lock per (tenant, person), released at commit or rollback; the
        // newline cannot occur in a key (docs/CONTRACT.md §1), so no two
        // pairs share a text, and the prefix keeps it apart from the zones'.
        let name = format!("agentcron drafts\n{tenant_key}\n{actor}");
        self.tx
            .execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[&name],
            )
            .context("waiting for the person's draft quota")?;
        Ok(())
    }

    fn agent_drafts_waiting(&mut self, tenant_key: &str, actor: &str, now: i64) -> Result<i64> {
        let row = self
            .tx
            .query_one(sql::AGENT_DRAFTS_WAITING, &[&now, &tenant_key, &actor])
            .context("counting an agent's waiting drafts")?;
        col(&row, 0)
    }
}
