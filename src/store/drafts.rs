//! Drafts: proposed tasks waiting for their hash to be confirmed; the
//! operations and their one implementation over `Connection`.

use anyhow::{Context, Result};

use super::connection::{Connection, Row};
use crate::model::{CodeLock, Draft, Replaces};
use crate::store::connection::args;

pub trait DraftTx {
    fn insert_draft(&mut self, draft: &Draft) -> Result<()>;
    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>>;
    /// Removes a confirmed draft; Conflict when it is already gone (a
    /// concurrent confirm won).
    fn consume_draft(&mut self, draft_id: &str) -> Result<()>;
    /// Counts one more wrong confirmation code on an agent's draft, guarded
    /// by the count the caller read (`seen`); Conflict when it moved on.
    fn count_wrong_code(&mut self, draft_id: &str, seen: i64) -> Result<()>;
    /// Serializes this write transaction with every other one that counts
    /// or adds an agent's drafts for `actor` in the tenant, until it ends,
    /// so that two agents' drafts cannot both fit under one quota
    /// (docs/CONTRACT.md §17). SQLite's write transactions are serial
    /// already; PostgreSQL takes a transaction-scoped advisory lock on the
    /// (tenant, person).
    fn hold_agent_quota(&mut self, tenant_key: &str, actor: &str) -> Result<()>;
    /// When each draft an agent made for `actor` in the tenant at or after
    /// `since` was made, oldest first: from the audit trail, which keeps the
    /// drafts already confirmed or voided (docs/CONTRACT.md §17).
    fn agent_drafts_since(&mut self, tenant_key: &str, actor: &str, since: i64)
        -> Result<Vec<i64>>;
    /// How many drafts an agent made for `actor` in the tenant still wait
    /// for the person at `now` (neither confirmed, voided nor expired).
    fn agent_drafts_waiting(&mut self, tenant_key: &str, actor: &str, now: i64) -> Result<i64>;
}

const INSERT_DRAFT: &str =
    "INSERT INTO drafts (draft_id, tenant_key, payload, payload_hash, created_by,
        created_at, expires_at, replaces_task_id, replaces_revision, code_hash, code_salt)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// A draft row, from the columns `draft` selects.
fn decode_draft(row: &Row) -> Result<Draft> {
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
}

impl<C: Connection> DraftTx for C {
    fn insert_draft(&mut self, d: &Draft) -> Result<()> {
        self.execute(
            INSERT_DRAFT,
            args![
                &d.draft_id,
                &d.tenant_key,
                &d.payload,
                &d.payload_hash,
                &d.created_by,
                d.created_at,
                d.expires_at,
                d.replaces.as_ref().map(|r| r.task_id.as_str()),
                d.replaces.as_ref().map(|r| r.revision),
                d.code.as_ref().map(|c| c.hash.as_str()),
                d.code.as_ref().map(|c| c.salt.as_str()),
            ],
        )
        .context("saving the draft")?;
        Ok(())
    }

    fn draft(&mut self, draft_id: &str) -> Result<Option<Draft>> {
        // On a shared server the row stays locked until the transaction
        // ends, so two confirmations of one draft queue behind each other.
        let lock = self.dialect().pick("", " FOR UPDATE");
        let row = self
            .query_opt(
                &format!(
                    "SELECT draft_id, tenant_key, payload, payload_hash, created_by, created_at,
                            expires_at, replaces_task_id, replaces_revision,
                            code_hash, code_salt, code_wrong_attempts
                     FROM drafts WHERE draft_id = $1{lock}"
                ),
                args![draft_id],
            )
            .context("reading the draft")?;
        row.as_ref().map(decode_draft).transpose()
    }

    fn consume_draft(&mut self, draft_id: &str) -> Result<()> {
        self.guarded(
            "DELETE FROM drafts WHERE draft_id = $1",
            args![draft_id],
            "removing the confirmed draft",
            || format!("draft {draft_id} was confirmed by someone else"),
        )
    }

    fn count_wrong_code(&mut self, draft_id: &str, seen: i64) -> Result<()> {
        self.guarded(
            "UPDATE drafts SET code_wrong_attempts = code_wrong_attempts + 1
             WHERE draft_id = $1 AND code_wrong_attempts = $2",
            args![draft_id, seen],
            "counting a wrong confirmation code",
            || format!("draft {draft_id} changed while its code was checked"),
        )
    }

    fn agent_drafts_since(
        &mut self,
        tenant_key: &str,
        actor: &str,
        since: i64,
    ) -> Result<Vec<i64>> {
        let drafted_by = self.dialect().pick(
            "json_extract(detail, '$.drafted_by')",
            "(detail::jsonb ->> 'drafted_by')",
        );
        // Along events_by_time: the last hour's events, of every tenant.
        let rows = self
            .query(
                &format!(
                    "SELECT at FROM events
                     WHERE at >= $1 AND tenant_key = $2 AND actor = $3 AND action = 'draft'
                       AND {drafted_by} IS NOT NULL
                     ORDER BY at"
                ),
                args![since, tenant_key, actor],
            )
            .context("counting an agent's drafts")?;
        rows.iter().map(|r| r.get(0)).collect()
    }

    fn hold_agent_quota(&mut self, tenant_key: &str, actor: &str) -> Result<()> {
        // The newline cannot occur in a key (docs/CONTRACT.md §1), so no two
        // pairs share a text, and the prefix keeps it apart from the zones'.
        self.hold_until_end(&format!("agentcron drafts\n{tenant_key}\n{actor}"))
            .context("waiting for the person's draft quota")
    }

    fn agent_drafts_waiting(&mut self, tenant_key: &str, actor: &str, now: i64) -> Result<i64> {
        self.value(
            "SELECT count(*) FROM drafts
             WHERE expires_at > $1 AND tenant_key = $2 AND created_by = $3
               AND code_hash IS NOT NULL",
            args![now, tenant_key, actor],
        )
        .context("counting an agent's waiting drafts")
    }
}
