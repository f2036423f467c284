//! The statements of drafts that both stores run as written (see `store::sql`).

/// Run by `DraftTx::insert_draft`.
pub const INSERT_DRAFT: &str = "INSERT INTO drafts (draft_id, tenant_key, payload, payload_hash, created_by, created_at, expires_at,
                        replaces_task_id, replaces_revision, code_hash, code_salt)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// Run by `DraftTx::consume_draft`.
pub const CONSUME_DRAFT: &str = "DELETE FROM drafts WHERE draft_id = $1";

/// Run by `DraftTx::count_wrong_code`.
pub const COUNT_WRONG_CODE: &str = "UPDATE drafts SET code_wrong_attempts = code_wrong_attempts + 1
    WHERE draft_id = $1 AND code_wrong_attempts = $2";

/// Run by `DraftTx::agent_drafts_waiting`.
pub const AGENT_DRAFTS_WAITING: &str = "SELECT count(*) FROM drafts
    WHERE expires_at > $1 AND tenant_key = $2 AND created_by = $3
      AND code_hash IS NOT NULL";
