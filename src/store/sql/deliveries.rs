//! The statements of the delivery ledger that both stores run as written (see
//! `store::sql`).

use crate::store::deliveries::NOTICE_COLUMNS;
use std::sync::LazyLock;

/// Run by `DeliveryTx::insert_notice`.
pub static INSERT_NOTICE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO deliveries ({NOTICE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
    )
});

/// Run by `DeliveryTx::notice_sending`.
pub const NOTICE_SENDING: &str =
    "SELECT EXISTS (SELECT 1 FROM deliveries WHERE state = 'sending' AND run_id = $1)";

/// Run by `DeliveryTx::next_notice_seq`.
pub const NEXT_NOTICE_SEQ: &str =
    "SELECT coalesce(max(seq), 0) + 1 FROM deliveries WHERE run_id = $1";

/// Run by `DeliveryTx::claim_notice`.
pub const CLAIM_NOTICE: &str =
    "UPDATE deliveries SET state = 'sending', claim_token = $1, deadline = $2, updated_at = $3,
        attempts = attempts + 1
    WHERE delivery_id = $4 AND state = 'pending'
      AND NOT EXISTS (SELECT 1 FROM deliveries AS earlier
                      WHERE earlier.state = 'sending'
                        AND earlier.run_id = deliveries.run_id)";
