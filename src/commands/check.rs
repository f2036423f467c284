//! `agentcron check`: verify, read-only, the invariants the store promises.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::context::Ctx;

/// Verify the store's invariants, read-only; exit 1 naming each violation
///
/// One run per occurrence attempt, no stale running run, settled runs finished once,
/// reconciled runs settled, at most one notice being sent per run, retries that point
/// at real runs, every task readable and matching the payload it was confirmed with,
/// the task counts status reads, and SQLite's own integrity check. Warns, one line,
/// when the last tick ran its runs as the user who holds the store (see `status`).
/// A store at an older schema (a backup kept for going back to an older build) is
/// verified as it is, never migrated: the database's own integrity, and "schema N,
/// older than this build's M: fine to go back with".
#[derive(Debug, Args)]
pub struct CheckArgs {}

pub fn run(ctx: &mut Ctx, _args: CheckArgs) -> Result<i32> {
    let now = ctx.clock.now();
    let store = ctx.store()?;
    let found = store.schema_version()?;
    let latest = store.migrations().len() as i64;
    if found < latest {
        return older(ctx, found, latest);
    }
    let (violations, authority) = ctx
        .store()?
        .read(|tx| Ok((tx.violations(now)?, super::status::recorded_authority(tx)?)))?;
    // Not a violation of the store: a fact about the deployment, one line.
    if let Some(authority) = authority.filter(|a| a.runs_hold_store()) {
        ctx.out.warn(&super::status::authority_warning(authority));
    }
    if ctx.out.json {
        ctx.out
            .document(&json!({"ok": violations.is_empty(), "violations": violations}))?;
    } else if violations.is_empty() {
        ctx.out.line("ok: every invariant holds")?;
    } else {
        let lines: Vec<String> = violations
            .iter()
            .map(|v| format!("violation: {}", crate::text::escape(v)))
            .collect();
        ctx.out.line(&lines.join("\n"))?;
    }
    Ok(if violations.is_empty() { 0 } else { 1 })
}

/// `check` of a store at an older schema: only what reads no table of this
/// build's schema (docs/CONTRACT.md §21), and the schema it is at.
fn older(ctx: &mut Ctx, found: i64, latest: i64) -> Result<i32> {
    let broken = ctx.store()?.read(|tx| tx.integrity())?;
    if ctx.out.json {
        ctx.out.document(&json!({
            "ok": broken.is_empty(),
            "violations": broken,
            "schema": found,
            "latest": latest,
        }))?;
    } else if broken.is_empty() {
        ctx.out.line(&format!(
            "ok: schema {found}, older than this build's {latest}: fine to go back with \
             (its integrity holds; `agentcron migrate` upgrades it for this build)"
        ))?;
    } else {
        let lines: Vec<String> = broken
            .iter()
            .map(|v| format!("violation: {}", crate::text::escape(v)))
            .collect();
        ctx.out.line(&lines.join("\n"))?;
    }
    Ok(if broken.is_empty() { 0 } else { 1 })
}
