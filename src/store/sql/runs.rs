//! The statements of runs and reconciliations that both stores run as written
//! (see `store::sql`).

/// Run by `RunTx::insert_run`.
pub const INSERT_RUN: &str =
    "INSERT INTO runs (run_id, task_id, tenant_key, scheduled_for, scheduled_local,
       attempt, due_at, status, payload_hash, created_at, started_at, finished_at,
       lease_token, lease_until, summary, reason, skipped_occurrences, blocked_by,
       wait_kind, wait_id, wait_deadline, queued_seconds, trigger, runner, catch_up)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
       $17, $18, $19, $20, $21, $22, $23, $24, $25)";

/// Run by `RunTx::insert_reconciliation`.
pub const INSERT_RECONCILIATION: &str = "INSERT INTO reconciliations (run_id, tenant_key, actor, decision, reason, prior_reason, decided_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Run by `RunTx::lease_holds`.
pub const LEASE_HOLDS: &str = "SELECT count(*) FROM runs
    WHERE run_id = $1 AND lease_token = $2 AND status = 'running' AND lease_until >= $3";

/// Run by `RunTx::approve_parked`.
pub const APPROVE_PARKED: &str = "UPDATE runs SET approved_at = $1, approved_by = $2
    WHERE run_id = $3 AND wait_id = $4 AND approved_at IS NULL
      AND status IN ('awaiting_confirmation', 'awaiting_authorization')";

/// Run by `RunTx::mark_runner`.
pub const MARK_RUNNER: &str =
    "UPDATE runs SET runner = $1 WHERE run_id = $2 AND status = 'running'";

/// Run by `RunTx::reclaim_parked`.
pub const RECLAIM_PARKED: &str =
    "UPDATE runs SET status = 'running', lease_token = $1, lease_until = $2, started_at = $3,
        approved_at = NULL, approved_by = NULL
    WHERE run_id = $4 AND wait_id = $5
      AND status IN ('awaiting_confirmation', 'awaiting_authorization')";
