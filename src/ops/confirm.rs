//! Confirming a draft (docs/CONTRACT.md §3, §13): in the caller's one write
//! transaction, the draft becomes an active task — or replaces the payload
//! of the task it was drafted against — only when the person gives its exact
//! payload hash, owns it in this tenant, and it has not expired. Any failed
//! check changes nothing — except a wrong one-time code on an agent's draft
//! (docs/CONTRACT.md §17), which is counted, and the third voids the draft:
//! those refusals come back as `Outcome::Refused` so that the caller commits
//! the count before reporting them.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event, StoredEvent};
use crate::error::{fail, CmdError};
use crate::model::{short_id, Draft, Task, TaskState};
use crate::ops::access::{ensure_owner, Caller};
use crate::ops::confirm_code::{self, Proof};
use crate::payload::{hash_hex, Payload};
use crate::schedule;
use crate::store::{EventFilter, Store, Tx};
use crate::wire::time;

/// What a confirmation made.
pub struct Confirmed {
    /// The task as it now is.
    pub task: Task,
    /// For a replacement: the task as it was.
    pub replaced: Option<Task>,
}

/// What a confirmation came to. `Refused` is an error whose trace (a wrong
/// code counted, a draft voided) must be committed before it is reported.
pub enum Outcome {
    Confirmed(Box<Confirmed>),
    Refused(CmdError),
}

/// Confirms draft `draft_id` with `hash` (and `proof` for an agent's
/// draft) as `caller`, recording `actor`, in one write transaction of
/// `store`: a refusal's trace (a wrong code counted) is committed with it.
pub fn confirm_in(
    store: &mut dyn Store,
    caller: &Caller<'_>,
    draft_id: &str,
    hash: &str,
    proof: Proof<'_>,
    actor: &str,
    now: i64,
) -> Result<Outcome> {
    store.write(|tx| confirm(tx, caller, draft_id, hash, proof, actor, now))
}

/// `confirm_in`, inside the caller's transaction `tx`.
pub fn confirm(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    draft_id: &str,
    hash: &str,
    proof: Proof<'_>,
    actor: &str,
    now: i64,
) -> Result<Outcome> {
    let draft = draft_in_tenant(tx, caller, draft_id)?;
    let payload = Payload::from_canonical(&draft.payload)
        .map_err(|e| CmdError::draft_rejected(format!("the stored draft is damaged: {e}")))?;
    if let Some(agent) = &payload.drafted_by {
        if caller.identity.contains(agent) {
            return fail(
                CmdError::denied(format!(
                    "{} drafted this draft and cannot confirm it",
                    crate::text::escape(agent)
                ))
                .with_hint("a person confirms an agent's draft, as their own key (--as)"),
            );
        }
    }
    ensure_owner(caller, &payload.owner_keys, "this draft")
        .map_err(|e| e.with_hint("only the person it was drafted for may confirm it"))?;
    if now >= draft.expires_at {
        return fail(
            CmdError::draft_rejected(format!(
                "the draft expired at {}",
                schedule::format_utc(draft.expires_at)
            ))
            .with_hint("draft it again; a longer --ttl keeps it open longer"),
        );
    }
    if hash != draft.payload_hash {
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
    if let Some(refused) = confirm_code::check(tx, &draft, &payload, proof, actor, now)? {
        return Ok(Outcome::Refused(refused));
    }
    confirm_checked(tx, caller, draft, payload, actor, now).map(|c| Outcome::Confirmed(Box::new(c)))
}

/// The draft, once it exists and is in the caller's tenant.
fn draft_in_tenant(tx: &mut dyn Tx, caller: &Caller<'_>, draft_id: &str) -> Result<Draft> {
    let found = match crate::ops::access::draft_id(tx, caller.tenant, draft_id)? {
        Some(id) => tx.draft(&id)?,
        None => None,
    };
    let Some(draft) = found else {
        return fail(gone_draft(tx, caller, draft_id)?);
    };
    if draft.tenant_key != caller.tenant {
        return fail(
            CmdError::denied("the draft belongs to another tenant")
                .with_hint("pass --tenant for the tenant that drafted it"),
        );
    }
    Ok(draft)
}

/// How far back in the tenant's audit trail a gone draft is looked for.
pub const EVENTS_SEARCHED: u64 = 2000;

/// The confirm, replace or void event that ended a draft no longer in the
/// store (a confirmed or voided draft leaves its table; the audit trail
/// records both), among the caller's recent events.
pub fn draft_fate(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    draft_id: &str,
) -> Result<Option<StoredEvent>> {
    let events = tx.events(&EventFilter {
        tenant_key: caller.tenant,
        owner_keys: caller.identity,
        task_id: None,
        limit: EVENTS_SEARCHED,
    })?;
    Ok(events.into_iter().find(|e| {
        let id = e.event.detail["draft_id"].as_str().unwrap_or_default();
        // A prefix names a gone draft as it named the pending one.
        let named = id == draft_id || (draft_id.chars().count() >= 4 && id.starts_with(draft_id));
        matches!(
            e.event.action,
            AuditAction::Confirm | AuditAction::Replace | AuditAction::Void
        ) && named
    }))
}

/// Why there is no draft `draft_id`: confirmed already (as which task; a
/// second confirm must not suggest drafting again, which would make a
/// second task), voided, or never seen.
fn gone_draft(tx: &mut dyn Tx, caller: &Caller<'_>, draft_id: &str) -> Result<CmdError> {
    let shown = crate::text::escape(draft_id);
    let Some(fate) = draft_fate(tx, caller, draft_id)? else {
        return Ok(CmdError::not_found(format!("no draft '{shown}'"))
            .with_hint("it may have expired and been pruned; `agentcron list` shows your tasks"));
    };
    let at = schedule::format_wall(fate.event.at, chrono_tz::UTC);
    if fate.event.action == AuditAction::Void {
        return Ok(CmdError::not_found(format!(
            "draft {shown} was voided at {at} after three wrong codes"
        ))
        .with_hint("nothing was confirmed; draft it again if it is still wanted"));
    }
    let task_id = fate.event.task_id.unwrap_or_default();
    let name = match tx.task(&task_id)? {
        Some(Ok(task)) => task
            .payload
            .name
            .map(|n| format!("{} ", crate::text::escape(&n))),
        _ => None,
    };
    Ok(CmdError::not_found(format!(
        "draft {shown} was confirmed at {at} as task {}({})",
        name.unwrap_or_default(),
        short_id(&task_id)
    ))
    .with_hint(format!(
        "it is confirmed already; `agentcron show {}` shows the task",
        short_id(&task_id)
    )))
}

/// Whether the draft needs a one-time code (it was drafted by an agent).
pub fn needs_code(tx: &mut dyn Tx, caller: &Caller<'_>, draft_id: &str) -> Result<bool> {
    let draft = draft_in_tenant(tx, caller, draft_id)?;
    Ok(Payload::from_canonical(&draft.payload).is_ok_and(|p| p.drafted_by.is_some()))
}

/// The rest of a confirmation, once every check of the draft passed.
fn confirm_checked(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    draft: Draft,
    payload: Payload,
    actor: &str,
    now: i64,
) -> Result<Confirmed> {
    if let Some(replaces) = &draft.replaces {
        let old = replace(tx, caller, &draft.payload_hash, replaces, &payload, now)?;
        tx.consume_draft(&draft.draft_id)?;
        let task = tx
            .task(&old.task_id)?
            .ok_or_else(|| CmdError::not_found("the replaced task vanished"))?
            .map_err(anyhow::Error::new)?;
        tx.append_event(&Event::of_task(
            AuditAction::Replace,
            &task,
            actor,
            now,
            json!({"draft_id": draft.draft_id,
                   "drafted_by": payload.drafted_by,
                   "old_payload_hash": old.payload_hash,
                   "payload_hash": task.payload_hash,
                   "revision": task.revision,
                   "next_run_at": time(task.next_run_at)}),
        ))?;
        return Ok(Confirmed {
            task,
            replaced: Some(old),
        });
    }
    // A following task starts in its owner's zone as of now (§18).
    let zone = crate::ops::zones::zone_in_force(tx, &payload)?;
    let Some(next) = schedule::next_after(&payload.schedule, zone, now) else {
        return fail(
            CmdError::draft_rejected("the schedule has no occurrence after now")
                .with_hint("draft it again with a future time"),
        );
    };
    let task = payload.new_task(
        uuid::Uuid::new_v4().to_string(),
        draft.payload_hash.clone(),
        next.at,
        zone,
        now,
    );
    tx.insert_task(&task)?;
    if task.payload.expect_success_seconds.is_some() {
        crate::tick::start_overdue_clock(tx, &task, now)?;
    }
    tx.consume_draft(&draft.draft_id)?;
    tx.append_event(&Event::of_task(
        AuditAction::Confirm,
        &task,
        actor,
        now,
        json!({"draft_id": draft.draft_id, "payload_hash": task.payload_hash,
               "drafted_by": payload.drafted_by,
               "next_run_at": time(task.next_run_at)}),
    ))?;
    Ok(Confirmed {
        task,
        replaced: None,
    })
}

/// Swaps the task's payload for the draft's, after checking that the caller
/// still owns the task and that it has not moved since the draft was made
/// (docs/CONTRACT.md §13). Returns the task as it was.
pub fn replace(
    tx: &mut dyn crate::store::Tx,
    caller: &Caller<'_>,
    payload_hash: &str,
    replaces: &crate::model::Replaces,
    payload: &Payload,
    now: i64,
) -> Result<Task> {
    let old = replaceable(tx, caller, replaces, payload)?;
    let zone = crate::ops::zones::zone_in_force(tx, payload)?;
    let next_run_at = next_run_of_replacement(&old, payload, zone, now)?;
    let mut new = payload.new_task(
        old.task_id.clone(),
        payload_hash.to_string(),
        next_run_at.unwrap_or(0),
        zone,
        now,
    );
    new.next_run_at = next_run_at;
    tx.replace_task(&new, old.revision, now)?;
    // A replacement is a confirmation: the success clock starts over (or
    // stops, when the new payload expects no successes).
    if old.payload.expect_success_seconds.is_some() || new.payload.expect_success_seconds.is_some()
    {
        crate::tick::start_overdue_clock(tx, &new, now)?;
    }
    Ok(old)
}

/// The task the draft replaces, when it may still be replaced by `caller`:
/// it exists and reads, is in the caller's and the draft's tenant, the
/// caller owns it, it is at the draft's revision, active or paused, and
/// the draft keeps its owners.
fn replaceable(
    tx: &mut dyn crate::store::Tx,
    caller: &Caller<'_>,
    replaces: &crate::model::Replaces,
    payload: &Payload,
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
    if old.payload.tenant_key != caller.tenant || old.payload.tenant_key != payload.tenant_key {
        return fail(CmdError::denied("the task belongs to another tenant"));
    }
    let what = format!("task {}", crate::text::escape(&old.label()));
    ensure_owner(caller, &old.payload.owner_keys, &what)
        .map_err(|e| e.with_hint("only the task's owners may do this: ask one of them"))?;
    if old.revision != replaces.revision {
        return fail(
            CmdError::conflict(format!(
                "task {} changed since the draft (revision {} → {}, now {})",
                crate::text::escape(&old.label()),
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
            crate::text::escape(&old.label()),
            old.state
        )));
    }
    if payload.owner_keys != old.payload.owner_keys {
        return fail(CmdError::draft_rejected(
            "the draft would change the task's owners; a replacement keeps them",
        ));
    }
    Ok(old)
}

/// The replacement's next run: the new schedule's next occurrence after
/// now, none for a paused task (it stays paused: `resume` picks its next
/// run then); refused when an active task's new schedule has none.
fn next_run_of_replacement(
    old: &Task,
    payload: &Payload,
    zone: schedule::Tz,
    now: i64,
) -> Result<Option<i64>> {
    Ok(match old.state {
        TaskState::Paused => None,
        _ => match schedule::next_after(&payload.schedule, zone, now) {
            Some(next) => Some(next.at),
            None => {
                return fail(
                    CmdError::draft_rejected("the new schedule has no occurrence after now")
                        .with_hint("draft it again with a future time"),
                )
            }
        },
    })
}
