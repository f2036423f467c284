//! `agentcron confirm`: turn a draft into an active task, atomically, only
//! when the person confirms the exact payload hash.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::resolve::Caller;
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Event, Task, TaskState};
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
    let (task, replaced) = ctx.store()?.write(|tx| {
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
        if let Some(replaces) = &draft.replaces {
            let old = replace(tx, &caller, &draft.payload_hash, replaces, &payload, now)?;
            tx.consume_draft(&draft.draft_id)?;
            let task = tx
                .task(&old.task_id)?
                .ok_or_else(|| CmdError::not_found("the replaced task vanished"))?
                .map_err(anyhow::Error::new)?;
            tx.append_event(&Event {
                at: now,
                tenant_key: task.tenant_key.clone(),
                actor: actor.clone(),
                action: "replace".into(),
                task_id: Some(task.task_id.clone()),
                run_id: None,
                detail: json!({"draft_id": draft.draft_id,
                               "old_payload_hash": old.payload_hash,
                               "payload_hash": task.payload_hash,
                               "revision": task.revision,
                               "next_run_at": time(task.next_run_at)}),
            })?;
            return Ok((task, Some(old)));
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
        Ok((task, None))
    })?;
    if ctx.out.json {
        return ctx.out.document(&crate::output::json::task(&task));
    }
    if let Some(old) = replaced {
        return ctx.out.line(&format!(
            "Replaced the payload of task {} ({}): revision {} → {}, hash {}… → {}…. Next run {}.",
            task.task_id,
            crate::output::escape(&task.label()),
            old.revision,
            task.revision,
            &old.payload_hash[..8],
            &task.payload_hash[..8],
            crate::output::human::when(task.next_run_at, task.timezone, ctx.out.now())
        ));
    }
    ctx.out.line(&format!(
        "Confirmed task {} ({}). Next run {}.",
        task.task_id,
        crate::output::escape(&task.label()),
        crate::output::human::when(task.next_run_at, task.timezone, ctx.out.now())
    ))
}

/// Swaps the task's payload for the draft's, after checking that the caller
/// still owns the task and that it has not moved since the draft was made
/// (docs/CONTRACT.md §13). Returns the task as it was.
pub(super) fn replace(
    tx: &mut dyn crate::store::Tx,
    caller: &Caller<'_>,
    payload_hash: &str,
    replaces: &crate::model::Replaces,
    payload: &Payload,
    now: i64,
) -> Result<Task> {
    let old = match tx.task(&replaces.task_id)? {
        Some(Ok(task)) => task,
        Some(Err(corrupt)) => {
            return fail(CmdError::conflict(format!(
                "the task to replace cannot be read: {}",
                corrupt.problem
            )))
        }
        None => {
            return fail(CmdError::not_found(format!(
                "the task {} this draft replaces no longer exists",
                replaces.task_id
            )))
        }
    };
    if old.tenant_key != caller.tenant || old.tenant_key != payload.tenant_key {
        return fail(CmdError::denied("the task belongs to another tenant"));
    }
    if !old.is_owned_by(caller.identity) {
        return fail(
            CmdError::denied(format!(
                "you ({}) are not an owner of task {}",
                caller.identity.join(", "),
                old.label()
            ))
            .with_hint("act as an owner with --as KEY"),
        );
    }
    if old.revision != replaces.revision {
        return fail(
            CmdError::conflict(format!(
                "task {} changed since the draft (revision {} → {}, now {})",
                crate::output::escape(&old.label()),
                replaces.revision,
                old.revision,
                old.state
            ))
            .with_hint("look at it with `agentcron show`, then draft --replace again"),
        );
    }
    if !matches!(old.state, TaskState::Active | TaskState::Paused) {
        return fail(CmdError::conflict(format!(
            "task {} is {}; only an active or paused task can be replaced",
            crate::output::escape(&old.label()),
            old.state
        )));
    }
    if payload.owner_keys != old.owner_keys {
        return fail(CmdError::draft_rejected(
            "the draft would change the task's owners; a replacement keeps them",
        ));
    }
    // A paused task stays paused: `resume` picks its next run then.
    let next_run_at = match old.state {
        TaskState::Paused => None,
        _ => match schedule::next_after(&payload.schedule, payload.timezone, now) {
            Some(next) => Some(next.at),
            None => {
                return fail(
                    CmdError::draft_rejected("the new schedule has no occurrence after now")
                        .with_hint("draft it again with a future time"),
                )
            }
        },
    };
    let mut new = payload.new_task(
        old.task_id.clone(),
        payload_hash.to_string(),
        next_run_at.unwrap_or(0),
        now,
    );
    new.next_run_at = next_run_at;
    tx.replace_task(&new, old.revision, now)?;
    Ok(old)
}
