//! `profile set` and `profile delete` (docs/CONTRACT.md §22): an operator's
//! named way to run an agent, written in one transaction with its audit
//! event, guarded by the revision read in it. A change never touches the
//! tasks bound to the profile: their payloads hold the definition their
//! owners confirmed, and the tick holds them (`skipped_profile`) until
//! their owners confirm the new one.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError};
use crate::profile::{self, Definition, Profile};
use crate::store::{Store, Tx};
use crate::text::escape;

/// What `profile set` asks for: the definition as given, and a description.
pub struct ProfileWrite<'a> {
    pub tenant_key: &'a str,
    pub name: &'a str,
    pub definition: Definition,
    pub description: Option<String>,
    pub actor: &'a str,
    pub now: i64,
}

/// What `profile set` did: the profile as stored now, the one it replaced,
/// and how many tasks the change holds until their owners confirm again.
pub struct ProfileSet {
    pub profile: Profile,
    pub previous: Option<Profile>,
    /// Whether anything was written (the same definition and description
    /// write nothing).
    pub changed: bool,
    pub tasks_held: usize,
}

/// Adds or changes the profile, with a `profile_set` event.
pub fn set(store: &mut dyn Store, w: ProfileWrite<'_>) -> Result<ProfileSet> {
    profile::check_name(w.name).map_err(CmdError::usage)?;
    let mut definition = w.definition;
    definition.pass_env.sort();
    definition.pass_env.dedup();
    definition.check().map_err(CmdError::usage)?;
    if let Some(text) = &w.description {
        let count = text.chars().count();
        if count > profile::DESCRIPTION_MAX_CHARS || text.chars().any(char::is_control) {
            return fail(CmdError::usage(format!(
                "--description must be at most {} characters, none of them control characters",
                profile::DESCRIPTION_MAX_CHARS
            )));
        }
    }
    let sha256 = definition.hash();
    store.write(|tx| {
        let previous = tx.profile(w.tenant_key, w.name)?;
        if let Some(same) = previous
            .as_ref()
            .filter(|p| p.sha256 == sha256 && p.description == w.description)
        {
            return Ok(ProfileSet {
                profile: same.clone(),
                previous: previous.clone(),
                changed: false,
                tasks_held: 0,
            });
        }
        let profile = Profile {
            tenant_key: w.tenant_key.to_string(),
            name: w.name.to_string(),
            definition: definition.clone(),
            sha256: sha256.clone(),
            description: w.description.clone(),
            revision: previous.as_ref().map_or(1, |p| p.revision + 1),
            created_at: previous.as_ref().map_or(w.now, |p| p.created_at),
            updated_at: w.now,
            updated_by: w.actor.to_string(),
        };
        tx.put_profile(&profile, previous.as_ref().map(|p| p.revision))?;
        let tasks_held = held_by(tx, w.tenant_key, w.name, Some(&sha256))?;
        let mut detail = json!({"profile": w.name, "sha256": sha256,
                                "definition": serde_json::to_value(&definition)?,
                                "command": definition.command});
        if let Some(old) = &previous {
            detail["old_sha256"] = json!(old.sha256);
        }
        if tasks_held > 0 {
            detail["tasks_held"] = json!(tasks_held);
        }
        tx.append_event(&Event::of_tenant(
            AuditAction::ProfileSet,
            w.tenant_key,
            w.actor,
            w.now,
            detail,
        ))?;
        Ok(ProfileSet {
            profile,
            previous,
            changed: true,
            tasks_held,
        })
    })
}

/// How many of the tenant's tasks bound to `name` do not bind `current`
/// (the profile's hash now; None: it is gone): held until confirmed again.
fn held_by(tx: &mut dyn Tx, tenant_key: &str, name: &str, current: Option<&str>) -> Result<usize> {
    Ok(tx
        .tasks_with_profiles(Some(tenant_key))?
        .iter()
        .filter(|t| t.profile == name && Some(t.sha256.as_str()) != current)
        .count())
}

/// Deletes the profile, with a `profile_delete` event; returns it and how
/// many tasks it leaves held.
pub fn delete(
    store: &mut dyn Store,
    tenant_key: &str,
    name: &str,
    actor: &str,
    now: i64,
) -> Result<(Profile, usize)> {
    store.write(|tx| {
        let Some(profile) = tx.profile(tenant_key, name)? else {
            return fail(
                CmdError::not_found(format!("no profile named '{}'", escape(name)))
                    .with_hint("`agentcron profile list` shows them"),
            );
        };
        tx.delete_profile(tenant_key, name, profile.revision)?;
        let held = held_by(tx, tenant_key, name, None)?;
        tx.append_event(&Event::of_tenant(
            AuditAction::ProfileDelete,
            tenant_key,
            actor,
            now,
            json!({"profile": name, "old_sha256": profile.sha256, "tasks_held": held}),
        ))?;
        Ok((profile, held))
    })
}
