//! Schedules as code (docs/CONTRACT.md §14), below the command line: what a
//! tasks file would change in the store (`compute`, with one hash over the
//! changes), and `apply`, which recomputes that plan inside its one write
//! transaction and performs it only when the hash is the one the person
//! saw. A delete goes through the lifecycle operation, as `agentcron
//! delete` does.

use anyhow::Result;
use serde_json::{json, Value};

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError};
use crate::model::{Replaces, Task, TaskState};
use crate::ops::access::{ensure_owner, Caller};
use crate::payload::{hash_hex, Payload};
use crate::schedule::{self, Occurrence};
use crate::store::{Store, Tx};
use crate::text::escape;
use crate::wire::time;

/// A task of the file: what it declares, and the payload a draft would
/// build from that now.
pub struct Desired {
    pub name: String,
    /// The file's own values for the task, as canonical JSON, with the
    /// defaults they lean on (the zone, the target) filled in. Unlike the
    /// payload, it does not depend on "now": see `declared_hash`.
    pub declared: String,
    /// The payload and its next runs, or why a draft refuses the values
    /// today (an `at` that has passed). The refusal only matters for a task
    /// the plan would create or replace, so it waits for the store lookup.
    pub built: Result<Built, CmdError>,
}

pub struct Built {
    pub payload: Payload,
    pub upcoming: Vec<Occurrence>,
}

/// One change an apply made.
pub struct Applied {
    pub name: String,
    pub kind: Kind,
    pub task_id: String,
    pub payload_hash: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Create,
    Replace,
    Delete,
    Unchanged,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Replace => "replace",
            Kind::Delete => "delete",
            Kind::Unchanged => "unchanged",
        }
    }
}

pub struct Action<'a> {
    pub name: String,
    pub kind: Kind,
    /// The task as it is now (replace, delete, unchanged).
    pub current: Option<Task>,
    /// The file's task (create, replace, unchanged).
    pub desired: Option<&'a Desired>,
    /// The source that created the current task (None: made by hand).
    pub source: Option<String>,
}

impl Action<'_> {
    /// The payload to write: only a create or a replace has one (an
    /// unchanged task's file values need not build today, see `declared_hash`).
    pub fn built(&self) -> Option<&Built> {
        match self.kind {
            Kind::Create | Kind::Replace => self.desired.and_then(|d| d.built.as_ref().ok()),
            Kind::Delete | Kind::Unchanged => None,
        }
    }

    /// The task's payload hash after the plan: the new one, or the one it keeps.
    pub fn new_hash(&self) -> Option<String> {
        match (self.kind, self.built(), &self.current) {
            (Kind::Unchanged, _, Some(task)) => Some(task.payload_hash.clone()),
            (_, Some(b), _) => Some(hash_hex(b.payload.canonical().as_bytes())),
            _ => None,
        }
    }
}

/// The stable comparison of a file's task with the store. The payload
/// `draft` builds from the file is not a function of the file alone:
/// `count = N` ends at the Nth occurrence after "now", so it resolves to a
/// new payload on every later plan, and an `at` that has passed builds no
/// payload at all. So each create or replace an apply performs records on
/// the task this hash, over the file's declared values (`Desired::declared`)
/// and the payload hash they were applied as. A later plan calls the task
/// unchanged when the file still declares the same values and the task still
/// has that payload, without building anything; a task replaced by hand
/// since (another payload hash), or never applied from a file, is compared
/// by payload as `draft` would build it now.
fn declared_hash(declared: &str, payload_hash: &str) -> String {
    hash_hex(format!("{declared}\n{payload_hash}").as_bytes())
}

/// The payload the file's task builds today, or the refusal naming its
/// file, line and key.
fn built_mut(d: &mut Desired) -> Result<&mut Built> {
    match &mut d.built {
        Ok(built) => Ok(built),
        Err(refusal) => fail(refusal.clone()),
    }
}

/// The provenance recorded on the tasks a file creates, which `--prune`
/// reads back: the file's own `source = "…"` key (`source:NAME`, the same
/// from any checkout), else the file's canonical absolute path
/// (`file:/…`). A base name would collide: `deploy/tasks.toml` pruned what
/// `examples/tasks.toml` had created. `--prune` needs the `source` key, so
/// that what it deletes never depends on where the file happens to lie.
pub fn source_identity(
    path: &std::path::Path,
    source: Option<&str>,
    prune: bool,
) -> Result<String> {
    match source {
        Some(name) => Ok(format!("source:{name}")),
        None if prune => fail(
            CmdError::usage(format!(
                "--prune needs a `source = \"…\"` key at the top of {}",
                escape(&path.display().to_string())
            ))
            .with_hint(
                "name what this file manages, e.g. source = \"ops/schedules\"; --prune deletes only \
                 the tasks created under that name",
            ),
        ),
        None => {
            let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            Ok(format!("file:{}", canonical.display()))
        }
    }
}

/// What the file would change, read in `tx`.
///
/// A task another source created is replaced only with `adopt` (docs/CONTRACT.md
/// §14): two files naming the same task would otherwise overwrite each other
/// at every apply, each plan looking like an ordinary change.
pub fn compute<'a>(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    file: &str,
    desired: &'a mut [Desired],
    prune: bool,
    adopt: bool,
) -> Result<Vec<Action<'a>>> {
    let mut actions = Vec::new();
    let mut kept = Vec::new();
    let store = Known {
        declared: tx.declared(caller.tenant)?,
        managers: tx.managers(caller.tenant)?,
    };
    for d in desired.iter_mut() {
        let current = match tx.task_id_named(caller.tenant, &d.name)? {
            Some(id) => Some(read_task(tx, &id)?),
            None => None,
        };
        let kind = match &current {
            None => {
                built_mut(d)?;
                Kind::Create
            }
            Some(task) => {
                check_owned(task, caller)?;
                kept.push(task.task_id.clone());
                compare(task, d, &store, file, adopt)?
            }
        };
        actions.push((d.name.clone(), kind, current));
    }
    let desired: &'a [Desired] = desired;
    let mut out: Vec<Action<'a>> = Vec::new();
    let mut rest = desired.iter();
    for (name, kind, current) in actions {
        let source = current
            .as_ref()
            .and_then(|t| store.managers.get(&t.task_id).cloned());
        out.push(Action {
            name,
            kind,
            current,
            desired: rest.next(),
            source,
        });
    }
    if prune {
        out.extend(pruned(tx, caller, file, &kept)?);
    }
    Ok(out)
}

/// What the store records of the tasks files made: each task's declared
/// hash, and the source that manages it.
struct Known {
    declared: std::collections::HashMap<String, String>,
    managers: std::collections::HashMap<String, String>,
}

/// What becomes of the existing `task` the file's `d` names: unchanged
/// (as declared, or building the same payload), or replaced.
fn compare(task: &Task, d: &mut Desired, store: &Known, file: &str, adopt: bool) -> Result<Kind> {
    if store.declared.get(&task.task_id) == Some(&declared_hash(&d.declared, &task.payload_hash)) {
        return Ok(Kind::Unchanged);
    }
    let built = built_mut(d)?;
    // A replacement keeps the task's owners (as `draft --replace`).
    built.payload.owner_keys = task.payload.owner_keys.clone();
    let unchanged = task.payload_hash == hash_hex(built.payload.canonical().as_bytes());
    let other_source = store.managers.get(&task.task_id).filter(|m| *m != file);
    if let (Some(other), false, false) = (other_source, unchanged, adopt) {
        return fail(
            CmdError::conflict(format!(
                "task {} was created by {}, not by this file ({})",
                escape(&d.name),
                escape(other),
                escape(file)
            ))
            .with_hint(
                "rename the task in the file, or pass --adopt to plan and apply \
                 to take it over (this file becomes its source)",
            ),
        );
    }
    if unchanged {
        Ok(Kind::Unchanged)
    } else if matches!(task.state, TaskState::Active | TaskState::Paused) {
        Ok(Kind::Replace)
    } else {
        fail(
            CmdError::conflict(format!(
                "task {} is {}; only an active or paused task can be replaced",
                escape(&d.name),
                task.state
            ))
            .with_hint("delete it, or rename the task in the file"),
        )
    }
}

/// `--prune`: the tasks this source created that the file no longer has.
fn pruned<'a>(
    tx: &mut dyn Tx,
    caller: &Caller<'_>,
    file: &str,
    kept: &[String],
) -> Result<Vec<Action<'a>>> {
    let mut out = Vec::new();
    for id in tx.managed_tasks(caller.tenant, file)? {
        if kept.contains(&id) {
            continue;
        }
        let task = read_task(tx, &id)?;
        check_owned(&task, caller)?;
        out.push(Action {
            name: task.label(),
            kind: Kind::Delete,
            current: Some(task),
            desired: None,
            source: Some(file.to_string()),
        });
    }
    Ok(out)
}

fn read_task(tx: &mut dyn Tx, id: &str) -> Result<Task> {
    match tx.task(id)? {
        Some(Ok(task)) => Ok(task),
        Some(Err(corrupt)) => fail(CmdError::conflict(format!(
            "task {id} cannot be read: {}",
            corrupt.problem
        ))),
        None => fail(CmdError::not_found(format!("task {id} vanished"))),
    }
}

fn check_owned(task: &Task, caller: &Caller<'_>) -> Result<()> {
    // Another tenant's task of the same name is not the caller's either.
    let owners: &[String] = match task.payload.tenant_key == caller.tenant {
        true => &task.payload.owner_keys,
        false => &[],
    };
    let what = format!("task {}", escape(&task.label()));
    ensure_owner(caller, owners, &what).map_err(|e| {
        e.with_hint(
            "only the task's owners may change it: ask one of them, or rename the task in the file",
        )
    })?;
    Ok(())
}

/// SHA-256 of the canonical JSON list of the changes: name, action, new
/// payload hash and current revision, in the file's (sorted) order.
pub fn plan_hash(actions: &[Action<'_>]) -> String {
    let list: Vec<Value> = actions
        .iter()
        .filter(|a| a.kind != Kind::Unchanged)
        .map(|a| {
            json!({"name": a.name, "action": a.kind.as_str(), "payload_hash": a.new_hash(),
                   "revision": a.current.as_ref().map(|t| t.revision)})
        })
        .collect();
    hash_hex(Value::Array(list).to_string().as_bytes())
}

/// What an apply is asked to do: the file's tasks under its source
/// identity, with the plan's flags and the hash the person confirmed.
pub struct Request<'a> {
    pub caller: Caller<'a>,
    /// `source_identity` of the file.
    pub file: &'a str,
    pub prune: bool,
    pub adopt: bool,
    /// The plan hash the person confirmed.
    pub hash: &'a str,
    pub actor: &'a str,
    pub now: i64,
}

/// Recomputes the plan in one write transaction of `store` and performs it
/// there when its hash is the one confirmed: every change, or none.
pub fn apply(
    store: &mut dyn Store,
    req: &Request<'_>,
    desired: &mut [Desired],
) -> Result<Vec<Applied>> {
    store.write(|tx| apply_in(tx, req, desired))
}

fn apply_in(tx: &mut dyn Tx, req: &Request<'_>, desired: &mut [Desired]) -> Result<Vec<Applied>> {
    let (caller, file, hash) = (&req.caller, req.file, req.hash);
    let actions = compute(tx, caller, file, desired, req.prune, req.adopt)?;
    // Nothing to change: an applied plan applied again, harmlessly.
    if actions.iter().all(|a| a.kind == Kind::Unchanged) {
        return Ok(Vec::new());
    }
    if plan_hash(&actions) != hash {
        return fail(
            CmdError::draft_rejected(
                "the plan changed since it was made: the file or a task in the store differs",
            )
            .with_hint("run `agentcron plan` again, check it, and apply its new hash"),
        );
    }
    let mut done = Vec::new();
    let changes = actions.iter().filter(|a| a.kind != Kind::Unchanged).count();
    for a in actions.iter().filter(|a| a.kind != Kind::Unchanged) {
        #[cfg(feature = "test-hooks")]
        if done.len() == changes / 2 {
            crate::hooks::at("apply_midway");
        }
        let task_id = perform(tx, req, a)?;
        done.push(Applied {
            name: a.name.clone(),
            kind: a.kind,
            task_id,
            payload_hash: a.new_hash(),
        });
    }
    debug_assert_eq!(done.len(), changes);
    Ok(done)
}

/// One change, with the audit event its command writes plus the plan hash.
fn perform(tx: &mut dyn Tx, req: &Request<'_>, a: &Action<'_>) -> Result<String> {
    match (a.kind, a.desired, a.built(), &a.current) {
        (Kind::Create, Some(d), Some(b), _) => create(tx, req, a, d, b),
        (Kind::Replace, Some(d), Some(b), Some(current)) => replace(tx, req, a, d, b, current),
        (Kind::Delete, _, _, Some(task)) => {
            let extra = json!({"plan_hash": req.hash, "file": req.file});
            crate::ops::lifecycle::delete_in(tx, task, req.actor, req.now, extra)?;
            Ok(task.task_id.clone())
        }
        _ => {
            unreachable!("compute pairs each kind with its tasks, and refuses what does not build")
        }
    }
}

/// The audit event of a change: its command's, plus the plan hash and file.
fn event(req: &Request<'_>, action: AuditAction, task: &Task, mut detail: Value) -> Event {
    detail["plan_hash"] = json!(req.hash);
    detail["file"] = json!(req.file);
    Event::of_task(action, task, req.actor, req.now, detail)
}

/// A task the file adds, created as `confirm` creates one.
fn create(
    tx: &mut dyn Tx,
    req: &Request<'_>,
    a: &Action<'_>,
    d: &Desired,
    b: &Built,
) -> Result<String> {
    let hash = hash_hex(b.payload.canonical().as_bytes());
    let zone = crate::ops::zones::zone_in_force(tx, &b.payload)?;
    let Some(next) = schedule::next_after(&b.payload.schedule, zone, req.now) else {
        return fail(CmdError::draft_rejected(format!(
            "task {}: the schedule has no occurrence after now",
            escape(&a.name)
        )));
    };
    let task = b.payload.new_task(
        uuid::Uuid::new_v4().to_string(),
        hash,
        next.at,
        zone,
        req.now,
    );
    tx.insert_task(&task)?;
    if task.payload.expect_success_seconds.is_some() {
        crate::tick::start_overdue_clock(tx, &task, req.now)?;
    }
    tx.set_declared(
        &task.task_id,
        Some(req.file),
        &declared_hash(&d.declared, &task.payload_hash),
    )?;
    tx.append_event(&event(
        req,
        AuditAction::Confirm,
        &task,
        json!({"payload_hash": task.payload_hash, "next_run_at": time(task.next_run_at)}),
    ))?;
    Ok(task.task_id)
}

/// A task whose payload the file changes, replaced as `confirm` replaces one.
fn replace(
    tx: &mut dyn Tx,
    req: &Request<'_>,
    a: &Action<'_>,
    d: &Desired,
    b: &Built,
    current: &Task,
) -> Result<String> {
    let hash = hash_hex(b.payload.canonical().as_bytes());
    let replaces = Replaces {
        task_id: current.task_id.clone(),
        revision: current.revision,
    };
    let old = crate::ops::confirm::replace(tx, &req.caller, &hash, &replaces, &b.payload, req.now)?;
    let task = read_task(tx, &old.task_id)?;
    // Adopted (compute let it through): this file manages it now.
    let adopted = a.source.as_deref().is_some_and(|s| s != req.file);
    tx.set_declared(
        &task.task_id,
        adopted.then_some(req.file),
        &declared_hash(&d.declared, &task.payload_hash),
    )?;
    tx.append_event(&event(
        req,
        AuditAction::Replace,
        &task,
        json!({"old_payload_hash": old.payload_hash,
               "payload_hash": task.payload_hash, "revision": task.revision,
               "next_run_at": time(task.next_run_at)}),
    ))?;
    Ok(task.task_id)
}
