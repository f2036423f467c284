//! `draft_status`: what became of a draft the agent made — still waiting
//! for the person, expired, confirmed (as which task), or void. A draft
//! leaves its table when it is confirmed or voided, so those answers come
//! from the audit trail, which records both. A draft is named by its id or
//! a unique prefix of 4+ characters, as the CLI names ids.

use anyhow::Result;
use serde_json::{json, Value};

use crate::audit::AuditAction;
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::ops::access::{ensure_owner, Caller};
use crate::ops::confirm::{draft_fate, EVENTS_SEARCHED};
use crate::payload::Payload;
use crate::store::{EventFilter, Ids, Tx};
use crate::wire::time;

/// The draft's state as a JSON document.
pub fn status(ctx: &mut Ctx, draft_id: &str) -> Result<Value> {
    let (tenant, identity, now) = (ctx.tenant.clone(), ctx.identity.clone(), ctx.clock.now());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    ctx.store()?.read(|tx| {
        let draft_id = &resolve(tx, &tenant, &identity, draft_id)?;
        // Another tenant's draft is not found, as one that never was: the
        // server's tenant is fixed, and sees no other (docs/CONTRACT.md §17).
        if let Some(draft) = tx.draft(draft_id)?.filter(|d| d.tenant_key == tenant) {
            let payload = Payload::from_canonical(&draft.payload).map_err(|e| {
                CmdError::draft_rejected(format!("the stored draft is damaged: {e}"))
            })?;
            ensure_owner(&caller, &payload.owner_keys, "this draft")?;
            let state = if now >= draft.expires_at {
                "expired"
            } else {
                "waiting"
            };
            return Ok(json!({
                "draft_id": draft.draft_id,
                "state": state,
                "expires_at": time(Some(draft.expires_at)),
                "payload_hash": draft.payload_hash,
                "drafted_by": payload.drafted_by,
                "wrong_codes": draft.code.as_ref().map_or(0, |c| c.wrong_attempts),
                "task_id": draft.replaces.as_ref().map(|r| r.task_id.clone()),
            }));
        }
        match draft_fate(tx, &caller, draft_id)? {
            Some(e) => Ok(json!({
                "draft_id": draft_id,
                "state": if e.event.action == AuditAction::Void { "void" } else { "confirmed" },
                "at": time(Some(e.event.at)),
                "payload_hash": e.event.detail["payload_hash"],
                "drafted_by": e.event.detail["drafted_by"],
                "task_id": e.event.task_id,
            })),
            None => fail(
                CmdError::not_found(format!("no draft '{}'", crate::text::escape(draft_id)))
                    .with_hint("a draft that expired long ago may have been pruned"),
            ),
        }
    })
}

/// The full id a prefix of 4+ characters stands for, as the CLI reads ids:
/// a waiting draft of the tenant's, else one the audit trail saw end. An
/// id that is not a unique prefix stands for itself.
fn resolve(tx: &mut dyn Tx, tenant: &str, identity: &[String], arg: &str) -> Result<String> {
    if arg.chars().count() < 4 || tx.draft(arg)?.is_some() {
        return Ok(arg.to_string());
    }
    let mut ids = tx.ids_with_prefix(Ids::Drafts, tenant, arg)?;
    if ids.is_empty() {
        for e in tx.events(&EventFilter {
            tenant_key: tenant,
            owner_keys: identity,
            task_id: None,
            limit: EVENTS_SEARCHED,
        })? {
            let id = e.event.detail["draft_id"].as_str().unwrap_or_default();
            let ended = matches!(
                e.event.action,
                AuditAction::Confirm | AuditAction::Replace | AuditAction::Void
            );
            if ended && id.starts_with(arg) && !ids.iter().any(|i| i == id) {
                ids.push(id.to_string());
            }
        }
    }
    match ids.len() {
        1 => Ok(ids.remove(0)),
        0 => Ok(arg.to_string()),
        _ => fail(
            CmdError::usage(format!(
                "'{}' matches several drafts: {}",
                crate::text::escape(arg),
                ids.join(", ")
            ))
            .with_hint("give more characters of the draft id"),
        ),
    }
}
