//! Who may act on what: turning a TASK argument (id, unique prefix of 4+
//! characters, or name) into the caller's task and a RUN argument (id, or
//! unique prefix of 4+ characters) into the caller's run, enforcing tenant
//! and owner rules. `ensure_owner` is the one owner check every operation
//! uses (a task's, a draft's, a plan's).

use anyhow::Result;

use crate::error::{fail, CmdError};
use crate::model::{Draft, Run, Task};
use crate::payload::Payload;
use crate::store::{Ids, Tx};

/// Who is asking: enough to check tenant and ownership inside a transaction.
pub struct Caller<'a> {
    pub tenant: &'a str,
    pub identity: &'a [String],
}

/// Finds the task `arg` names and checks the caller may act on it.
pub fn owned_task(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<Task> {
    let id = task_id(tx, caller, arg)?;
    let task = match tx.task(&id)? {
        Some(Ok(task)) => task,
        // Another tenant's unreadable row says nothing of itself.
        Some(Err(corrupt)) if corrupt.tenant_key != caller.tenant => {
            return fail(another_tenant("task", arg))
        }
        Some(Err(corrupt)) => {
            return Err(CmdError::runtime(corrupt.to_string())
                .with_hint("the task is quarantined; `agentcron tick` marks it error")
                .into())
        }
        None => return fail(not_found(caller, arg)),
    };
    if task.payload.tenant_key != caller.tenant {
        return fail(another_tenant("task", arg));
    }
    let what = format!("task {}", crate::text::escape(&task.label()));
    ensure_owner(caller, &task.payload.owner_keys, &what)
        .map_err(|e| e.with_hint("only the task's owners may do this: ask one of them"))?;
    Ok(task)
}

/// Whether one of the caller's identity keys is among `owner_keys`; the
/// error names `what` ("task backup", "this draft").
pub fn ensure_owner(
    caller: &Caller<'_>,
    owner_keys: &[String],
    what: &str,
) -> Result<(), CmdError> {
    if owner_keys.iter().any(|k| caller.identity.contains(k)) {
        return Ok(());
    }
    Err(CmdError::denied(format!(
        "you ({}) are not an owner of {what}",
        caller.identity.join(", ")
    )))
}

/// The task of a run the caller named by id. The run's tenant is checked
/// first, so another tenant's run is denied naming only the id the caller
/// gave, never its task.
pub fn run_task(tx: &mut dyn Tx, caller: &Caller<'_>, run: &Run) -> Result<Task> {
    if run.tenant_key != caller.tenant {
        return fail(another_tenant("run", &run.run_id));
    }
    owned_task(tx, caller, &run.task_id)
}

fn another_tenant(what: &str, id: &str) -> CmdError {
    CmdError::denied(format!("{what} {id} belongs to another tenant"))
        .with_hint("pass --tenant for the tenant that owns it")
}

fn task_id(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<String> {
    // Exact ids are looked up in every tenant so that another tenant's id is
    // reported as denied rather than as missing.
    if tx.task(arg)?.is_some() {
        return Ok(arg.to_string());
    }
    if let Some(id) = tx.task_id_named(caller.tenant, arg)? {
        return Ok(id);
    }
    if arg.chars().count() >= 4 {
        let ids = tx.ids_with_prefix(Ids::Tasks, caller.tenant, arg)?;
        match ids.len() {
            0 => {}
            1 => return Ok(ids[0].clone()),
            _ => {
                return fail(
                    CmdError::usage(format!("'{arg}' matches several tasks: {}", ids.join(", ")))
                        .with_hint("give more characters of the id, or the task's name"),
                )
            }
        }
    }
    fail(not_found(caller, arg))
}

fn not_found(caller: &Caller<'_>, arg: &str) -> CmdError {
    let shown = crate::text::escape(arg);
    let hint = if arg.chars().count() < 4 {
        "give a name, a full id, or at least 4 characters of one; `agentcron list` shows them"
    } else {
        "`agentcron list --all` shows your tasks"
    };
    CmdError::not_found(format!("no task '{shown}' in tenant '{}'", caller.tenant)).with_hint(hint)
}

/// Finds the run `arg` names (a full id, or a unique prefix of at least 4
/// characters among the tenant's runs) and checks the caller owns its task.
pub fn owned_run(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<(Task, Run)> {
    let run = run_in_tenant(tx, caller, arg)?;
    let task = owned_task(tx, caller, &run.task_id)?;
    Ok((task, run))
}

/// The run `arg` names within the caller's tenant. A full id of another
/// tenant's run is denied without a word about that run; a prefix only ever
/// matches the caller's tenant, so it cannot reveal another's runs.
pub fn run_in_tenant(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<Run> {
    if let Some(run) = tx.run(arg)? {
        if run.tenant_key != caller.tenant {
            return fail(
                CmdError::denied(format!(
                    "run {} belongs to another tenant",
                    crate::text::escape(arg)
                ))
                .with_hint("pass --tenant for the tenant that owns it"),
            );
        }
        return Ok(run);
    }
    if arg.chars().count() >= 4 {
        let ids = tx.ids_with_prefix(Ids::Runs, caller.tenant, arg)?;
        match ids.len() {
            0 => {}
            1 => {
                if let Some(run) = tx.run(&ids[0])? {
                    return Ok(run);
                }
            }
            _ => {
                return fail(
                    CmdError::usage(format!(
                        "'{}' matches several runs: {}",
                        crate::text::escape(arg),
                        ids.join(", ")
                    ))
                    .with_hint("give more characters of the run id"),
                )
            }
        }
    }
    let hint = if arg.chars().count() < 4 {
        "give a full run id or at least 4 characters of one; `agentcron runs` shows them"
    } else {
        "`agentcron runs` shows your runs"
    };
    fail(
        CmdError::not_found(format!(
            "no run '{}' in tenant '{}'",
            crate::text::escape(arg),
            caller.tenant
        ))
        .with_hint(hint),
    )
}

/// The id of the pending draft `arg` names: a full id (of any tenant: the
/// caller checks), or a unique prefix of at least 4 characters among the
/// tenant's drafts, as task and run ids are taken; None when none matches.
pub fn draft_id(tx: &mut dyn Tx, tenant: &str, arg: &str) -> Result<Option<String>> {
    if tx.draft(arg)?.is_some() {
        return Ok(Some(arg.to_string()));
    }
    if arg.chars().count() < 4 {
        return Ok(None);
    }
    let ids = tx.ids_with_prefix(Ids::Drafts, tenant, arg)?;
    if ids.len() > 1 {
        return fail(
            CmdError::usage(format!(
                "'{}' matches several drafts: {}",
                crate::text::escape(arg),
                ids.join(", ")
            ))
            .with_hint("give more characters of the draft id"),
        );
    }
    Ok(ids.into_iter().next())
}

/// The pending draft `arg` names (a full id, or a unique prefix of at least
/// 4 characters) among the caller's own in their tenant, with its payload.
/// Another tenant's or another owner's draft is "no draft", as one that does
/// not exist: nothing of it is told.
pub fn owned_draft(tx: &mut dyn Tx, caller: &Caller<'_>, arg: &str) -> Result<(Draft, Payload)> {
    let shown = crate::text::escape(arg);
    let found = match draft_id(tx, caller.tenant, arg)? {
        Some(id) => tx.draft(&id)?,
        None => None,
    };
    let owned = found
        .filter(|d| d.tenant_key == caller.tenant)
        .and_then(|d| {
            let payload = Payload::from_canonical(&d.payload).ok()?;
            ensure_owner(caller, &payload.owner_keys, "this draft").ok()?;
            Some((d, payload))
        });
    match owned {
        Some(owned) => Ok(owned),
        None => fail(
            CmdError::not_found(format!("no draft '{shown}' in tenant '{}'", caller.tenant))
                .with_hint("a draft ends when it is confirmed, voided or expired and pruned"),
        ),
    }
}

/// Parses `--expect-revision`, when given, against the task's revision.
pub fn check_revision(task: &Task, expected: Option<i64>) -> Result<()> {
    match expected {
        Some(rev) if rev != task.revision => fail(
            CmdError::conflict(format!(
                "task {} is at revision {}, not {rev}",
                task.label(),
                task.revision
            ))
            .with_hint("re-read it with `agentcron show` and decide again"),
        ),
        _ => Ok(()),
    }
}
