//! Upgrading a store's schema (`agentcron migrate`, docs/CONTRACT.md §21):
//! the steps from the store's schema to this build's, applied one
//! transaction per step under the store's migration lock, and one audit
//! event naming both versions and this build.
//!
//! Invariant: the event is written only when this call applied a step;
//! another `migrate` that got the lock first leaves nothing to apply, and
//! nothing to audit twice.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::store::schema::build;
use crate::store::Store;

/// What a migration found, and what it did.
pub struct Migration {
    /// The schema the store was at.
    pub found: i64,
    /// The schema this build writes.
    pub latest: i64,
    /// The steps from `found` to `latest`: (version reached, what it does).
    pub pending: Vec<(i64, &'static str)>,
    /// The versions this call committed: empty for a dry run, and when
    /// another `migrate` applied the steps while this one waited.
    pub applied: Vec<i64>,
}

/// Lists the steps the store needs and, unless `dry_run`, applies them.
pub fn migrate(store: &mut dyn Store, dry_run: bool, actor: &str, now: i64) -> Result<Migration> {
    let found = store.schema_version()?;
    let descriptions = store.migrations();
    let latest = descriptions.len() as i64;
    let pending: Vec<(i64, &'static str)> = (found..latest)
        .map(|i| (i + 1, descriptions[i as usize]))
        .collect();
    let mut applied = Vec::new();
    if !dry_run && !pending.is_empty() {
        store.migrate(&mut |version| {
            applied.push(version);
            Ok(())
        })?;
        // Another `migrate` may have applied the steps while this one waited.
        if !applied.is_empty() {
            store.write(|tx| {
                tx.append_event(&Event::of_tenant(
                    AuditAction::Migrate,
                    "*",
                    actor,
                    now,
                    json!({"from": found, "to": latest, "build": build()}),
                ))
            })?;
        }
    }
    Ok(Migration {
        found,
        latest,
        pending,
        applied,
    })
}
