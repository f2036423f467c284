//! Making a draft (docs/CONTRACT.md §2, §3, §13, §17): the values of a
//! `DraftSpec` become a canonical payload (`build`), which one write
//! transaction stores as a draft waiting for confirmation, with its audit
//! event. `draft`, `draft --replace` and the MCP `draft` tools all make
//! theirs here; an agent's draft also checks the agent's limits in that
//! transaction and is locked with its one-time code.
//!
//! - `spec`: what a draft asks for, and every limit on those values;
//! - `when`: the schedule the values describe;
//! - `build`: the payload and its next runs.

mod build;
mod spec;
mod when;

pub use build::{build_payload, Drafter};
pub use spec::{
    check_instruction, check_limits, check_name, duration_flag, notify_mode, policy, DraftSpec,
    COUNT_MAX, DEFAULT_GRACE_SECONDS, INSTRUCTION_MAX_BYTES, MAX_RETRIES_MAX, NAME_MAX_BYTES,
    PAUSE_AFTER_MAX, SPREAD_MAX_SECONDS, TTL_MAX_SECONDS,
};

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError, ErrorKind};
use crate::model::{Draft, Replaces, Task, TaskState};
use crate::ops::access::{owned_task, Caller};
use crate::payload::{hash_hex, Payload};
use crate::schedule::{Occurrence, Tz};
use crate::store::{Store, Tx};
use crate::text::{escape, relative};
use crate::wire::time;

/// The agent behind a draft made through `agentcron mcp` (docs/CONTRACT.md
/// §17): recorded in the payload, and the one-time code that confirms it.
pub struct Agent<'a> {
    /// `agent:<client name>`.
    pub drafted_by: &'a str,
    /// The code in clear: only its salted hash is stored.
    pub code: &'a str,
    /// At most this many agent drafts for the person in an hour.
    pub max_per_hour: u32,
}

/// At most this many of an agent's drafts for one person wait at once.
pub const MAX_WAITING_AGENT_DRAFTS: i64 = 20;

/// Who asks for a draft, and what beyond its values: the task it replaces,
/// how long it waits, the agent that drafts it.
pub struct Request<'a> {
    pub caller: Caller<'a>,
    pub now: i64,
    /// The zone of a task that names none.
    pub default_zone: Tz,
    /// `--replace TASK`: id, unique id prefix, or name.
    pub replace: Option<&'a str>,
    /// `--ttl`, as given.
    pub ttl: &'a str,
    pub agent: Option<Agent<'a>>,
}

/// What a draft made: the stored draft, its payload and next runs, and the
/// task it replaces.
pub struct Made {
    pub draft: Draft,
    pub payload: Payload,
    /// The zone the draft is shown in: a following one's owner's, as of now.
    pub zone: Tz,
    pub upcoming: Vec<Occurrence>,
    pub replacing: Option<Task>,
}

/// Makes the draft `spec` describes, in one write transaction (the task it
/// replaces and its owner's zone are read before, as the preview is built
/// from them); an agent's draft records the agent and locks it with its code.
pub fn make(store: &mut dyn Store, req: Request<'_>, spec: &DraftSpec) -> Result<Made> {
    let replacing = match req.replace {
        Some(arg) => Some(store.read(|tx| replaced_task(tx, &req.caller, arg))?),
        None => None,
    };
    let old = replacing.as_ref().map(|t| t.payload.clone());
    let owner_zone =
        store.read(|tx| owner_zone(tx, &req.caller, spec.tz.as_deref(), old.as_ref()))?;
    let mut drafter = Drafter::of(&req.caller, req.now, req.default_zone, owner_zone);
    drafter.drafted_by = req.agent.as_ref().map(|a| a.drafted_by.to_string());
    // Read only when a profile is named or kept: most drafts have none.
    let old_profile = old.as_ref().is_some_and(|o| o.profile.is_some());
    if spec.profile.is_some() || old_profile {
        drafter.profiles = store.read(|tx| tx.profiles(Some(req.caller.tenant)))?;
    }
    let (payload, upcoming) = build_payload(&drafter, spec, old.as_ref())?;
    let ttl = spec::ttl_seconds(req.ttl)?;
    let draft = new_draft(&req, &payload, replacing.as_ref(), ttl)?;
    let event = draft_event(&req, &draft, &payload);
    let replaced_id = replacing.as_ref().map(|t| t.task_id.clone());
    store.write(|tx| {
        if let Some(agent) = &req.agent {
            check_agent_limits(tx, &req, &draft.created_by, agent.max_per_hour)?;
        }
        if let Some(name) = &payload.name {
            let holder = tx.task_id_named(&payload.tenant_key, name)?;
            if holder.is_some() && holder != replaced_id {
                return fail(
                    CmdError::conflict(format!("a task named '{name}' already exists"))
                        .with_hint("choose another --name, or delete the old task first"),
                );
            }
        }
        tx.insert_draft(&draft)?;
        tx.append_event(&event)
    })?;
    Ok(Made {
        draft,
        // A following draft is shown in its owner's zone as of now.
        zone: payload.zone.in_force(owner_zone),
        payload,
        upcoming,
        replacing,
    })
}

/// The draft to store: refused when a replacement changes nothing. An
/// agent drafts for the person whose keys the server runs with: the draft
/// names that person as its author (`log` shows drafts to their author).
fn new_draft(
    req: &Request<'_>,
    payload: &Payload,
    replacing: Option<&Task>,
    ttl: i64,
) -> Result<Draft> {
    let canonical = payload.canonical();
    let payload_hash = hash_hex(canonical.as_bytes());
    if let Some(task) = replacing {
        if task.payload_hash == payload_hash {
            return fail(
                CmdError::usage(format!(
                    "the flags given leave task {} unchanged",
                    escape(&task.label())
                ))
                .with_hint("give the flags to change, e.g. --daily 10:00 or --instruction TEXT"),
            );
        }
    }
    let draft_id = uuid::Uuid::new_v4().to_string();
    Ok(Draft {
        tenant_key: payload.tenant_key.clone(),
        payload_hash,
        payload: canonical,
        created_by: req.caller.identity[0].clone(),
        created_at: req.now,
        expires_at: req.now + ttl,
        replaces: replacing.map(|t| Replaces {
            task_id: t.task_id.clone(),
            revision: t.revision,
        }),
        code: req
            .agent
            .as_ref()
            .map(|agent| crate::ops::confirm_code::lock(agent.code, &draft_id)),
        draft_id,
    })
}

/// The `draft` audit event; its detail names the agent, if one drafted.
fn draft_event(req: &Request<'_>, draft: &Draft, payload: &Payload) -> Event {
    let mut detail = json!({"draft_id": draft.draft_id, "payload_hash": draft.payload_hash,
                            "expires_at": time(Some(draft.expires_at))});
    if let Some(replaces) = &draft.replaces {
        detail["replaces_task_id"] = json!(replaces.task_id);
        detail["replaces_revision"] = json!(replaces.revision);
    }
    if let Some(agent) = &payload.drafted_by {
        detail["drafted_by"] = json!(agent);
    }
    Event::of_tenant(
        AuditAction::Draft,
        req.caller.tenant,
        &draft.created_by,
        req.now,
        detail,
    )
}

/// The agent's limits (docs/CONTRACT.md §17), checked in the transaction
/// that would add the draft: at most `max_per_hour` drafts for the person
/// in the last hour (counted from the audit trail, which keeps the ones
/// already confirmed), and at most `MAX_WAITING_AGENT_DRAFTS` waiting.
/// Counted per person, whatever the client calls itself: a client that
/// renames itself gains nothing. A refusal says when to try again.
fn check_agent_limits(
    tx: &mut dyn Tx,
    req: &Request<'_>,
    actor: &str,
    max_per_hour: u32,
) -> Result<()> {
    let (tenant, now) = (req.caller.tenant, req.now);
    // Counted and taken in one serialized step: without it, eight servers
    // drafting at once on PostgreSQL each counted nine and all added theirs.
    tx.hold_agent_quota(tenant, actor)?;
    let made = tx.agent_drafts_since(tenant, actor, now - 3599)?;
    let max = max_per_hour as usize;
    if made.len() >= max {
        // The draft that must leave the hour for one more to fit.
        let frees = made[made.len() - max] + 3600;
        return fail(
            CmdError::new(
                ErrorKind::Busy,
                // The limit, not the count: a count past it (the limit
                // lowered since) would read as a quota that did not hold.
                format!(
                    "{max} drafts for this person in the last hour, the most allowed (--max-drafts {max})"
                ),
            )
            .with_hint(format!(
                "try again at {} ({}), or ask the person to draft at a shell",
                crate::schedule::format_utc(frees),
                relative(frees, now)
            )),
        );
    }
    let waiting = tx.agent_drafts_waiting(tenant, actor, now)?;
    if waiting >= MAX_WAITING_AGENT_DRAFTS {
        return fail(
            CmdError::new(
                ErrorKind::Busy,
                format!(
                    "{MAX_WAITING_AGENT_DRAFTS} drafts for this person wait for confirmation, the most allowed"
                ),
            )
            .with_hint("try again when the person has confirmed some, or they expired"),
        );
    }
    // Between the count and the draft it allows: where two servers' drafts
    // would both fit under one quota, were the step not serialized.
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("draft_quota_counted");
    Ok(())
}

/// The task `--replace` names, as the caller may change it: owned, in this
/// tenant, and active or paused (a completed, deleted or quarantined task
/// has nothing left to replace).
fn replaced_task(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<Task> {
    let task = owned_task(tx, caller, arg)?;
    if !matches!(task.state, TaskState::Active | TaskState::Paused) {
        return fail(
            CmdError::conflict(format!(
                "task {} is {}; only an active or paused task can be replaced",
                escape(&task.label()),
                task.state
            ))
            .with_hint("draft a new task instead"),
        );
    }
    Ok(task)
}

/// The current zone of the key a draft with `--tz` value `tz` over `old`
/// would follow (docs/CONTRACT.md §18): its first owner key's (a
/// replacement's, else the caller's); None when the draft does not follow,
/// or the key has no zone. Read only then, so a fixed-zone draft reads
/// nothing more than it did.
pub fn owner_zone(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    tz: Option<&str>,
    old: Option<&Payload>,
) -> Result<Option<Tz>> {
    let follows = match tz {
        Some(tz) => tz == crate::payload::FOLLOW,
        None => old.is_some_and(|o| o.zone.follows()),
    };
    let key = match old {
        Some(old) => old.owner_keys.first().cloned(),
        None => Drafter::owner_keys_of(caller).first().cloned(),
    };
    let (Some(key), true) = (key, follows) else {
        return Ok(None);
    };
    crate::ops::zones::current_zone(tx, caller.tenant, &key)
}
