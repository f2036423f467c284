//! `agentcron confirm`: turn a draft into an active task, atomically, only
//! when the person confirms the exact payload hash.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::resolve::Caller;
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::Event;
use crate::output::json::time;
use crate::payload::{hash_hex, Payload};
use crate::schedule;

/// Confirm a draft: create the task it describes
///
/// Checks, in one transaction, that the draft exists and has not expired, that HASH
/// is its payload hash (and the hash of the stored payload), that you own it in this
/// tenant, and that its schedule still has a future occurrence. Any failed check
/// creates nothing.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The draft id printed by `agentcron draft`
    pub draft_id: String,

    /// The full 64-hex payload hash printed by `agentcron draft`
    #[arg(long, value_name = "HASH", value_parser = parse_hash)]
    pub hash: String,
}

fn parse_hash(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected the full 64-character hex SHA-256 printed by `agentcron draft`".into())
    }
}

pub fn run(ctx: &mut Ctx, args: ConfirmArgs) -> Result<()> {
    let now = ctx.now;
    let actor = ctx.actor().to_string();
    let identity = ctx.identity.clone();
    let tenant = ctx.tenant.clone();
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let task = ctx.store()?.write(|tx| {
        let Some(draft) = tx.draft(&args.draft_id)? else {
            return fail(
                CmdError::not_found(format!(
                    "no draft '{}'",
                    crate::output::escape(&args.draft_id)
                ))
                .with_hint("it may have been confirmed already or pruned; draft again"),
            );
        };
        if draft.tenant_key != caller.tenant {
            return fail(
                CmdError::denied("the draft belongs to another tenant")
                    .with_hint("pass --tenant for the tenant that drafted it"),
            );
        }
        let payload = Payload::from_canonical(&draft.payload)
            .map_err(|e| CmdError::draft_rejected(format!("the stored draft is damaged: {e}")))?;
        if !payload
            .owner_keys
            .iter()
            .any(|k| caller.identity.contains(k))
        {
            return fail(
                CmdError::denied(format!(
                    "you ({}) do not own this draft",
                    caller.identity.join(", ")
                ))
                .with_hint("confirm as the person who drafted it (--as KEY)"),
            );
        }
        if now >= draft.expires_at {
            return fail(
                CmdError::draft_rejected(format!(
                    "the draft expired at {}",
                    schedule::format_utc(draft.expires_at)
                ))
                .with_hint("draft it again; a longer --ttl keeps it open longer"),
            );
        }
        if args.hash != draft.payload_hash {
            return fail(
                CmdError::draft_rejected("the hash does not match the draft's payload hash")
                    .with_hint("copy the hash from the draft output; it changes with any field"),
            );
        }
        if hash_hex(draft.payload.as_bytes()) != draft.payload_hash {
            return fail(CmdError::draft_rejected(
                "the stored payload no longer matches its hash; the draft was altered",
            ));
        }
        let Some(next) = schedule::next_after(&payload.schedule, payload.timezone, now) else {
            return fail(
                CmdError::draft_rejected("the schedule has no occurrence after now")
                    .with_hint("draft it again with a future time"),
            );
        };
        let task = payload.new_task(
            uuid::Uuid::new_v4().to_string(),
            draft.payload_hash.clone(),
            next.at,
            now,
        );
        tx.insert_task(&task)?;
        tx.consume_draft(&draft.draft_id)?;
        tx.append_event(&Event {
            at: now,
            tenant_key: task.tenant_key.clone(),
            actor: actor.clone(),
            action: "confirm".into(),
            task_id: Some(task.task_id.clone()),
            run_id: None,
            detail: json!({"draft_id": draft.draft_id, "payload_hash": task.payload_hash,
                           "next_run_at": time(task.next_run_at)}),
        })?;
        Ok(task)
    })?;
    if ctx.out.json {
        return ctx.out.document(&crate::output::json::task(&task));
    }
    ctx.out.line(&format!(
        "Confirmed task {} ({}). Next run {}.",
        task.task_id,
        crate::output::escape(&task.label()),
        crate::output::human::when(task.next_run_at, task.timezone, ctx.out.now())
    ))
}
