//! Profiles (docs/CONTRACT.md §22): an operator's named ways to run an
//! agent, one row per tenant and name, each change guarded by the row's
//! revision; and what the tick counts of them: the runs running under a
//! profile, for `--max-concurrent`. The operations and their one
//! implementation over `Connection`.

use anyhow::{anyhow, Context, Result};
use serde::Deserialize;

use super::connection::{expect_one, Connection, Row};
use crate::profile::{Definition, Profile};
use crate::store::connection::args;

pub trait ProfileTx {
    fn profile(&mut self, tenant_key: &str, name: &str) -> Result<Option<Profile>>;
    /// The profiles of `tenant` (or of every tenant), by tenant and name.
    fn profiles(&mut self, tenant: Option<&str>) -> Result<Vec<Profile>>;
    /// Adds the profile (`expected_revision` None: Conflict when one of that
    /// name exists) or changes it, guarded by the revision read in this
    /// transaction; the stored revision becomes `profile.revision`.
    fn put_profile(&mut self, profile: &Profile, expected_revision: Option<i64>) -> Result<()>;
    /// Deletes the profile, guarded by the revision read in this transaction.
    fn delete_profile(&mut self, tenant_key: &str, name: &str, revision: i64) -> Result<()>;
    /// Runs `running` under the tenant's profile `name`. On PostgreSQL this
    /// serializes the claims that count the same profile until the
    /// transaction ends, so `--max-concurrent` holds across hosts.
    fn running_under_profile(&mut self, tenant_key: &str, name: &str) -> Result<i64>;
    /// Whether any profile exists (in `tenant`, or in the whole store).
    fn has_profiles(&mut self, tenant: Option<&str>) -> Result<bool>;
    /// Whether any of the tenant's tasks (not deleted) is bound to a
    /// profile: one seek along the tasks' profile index.
    fn any_task_bound(&mut self, tenant_key: &str) -> Result<bool>;
    /// Whether the task has a `skipped_profile` run under the payload
    /// `payload_hash`: held already since its owner last confirmed it.
    fn held_for_profile_before(&mut self, task_id: &str, payload_hash: &str) -> Result<bool>;
    /// The tasks (not deleted) bound to a profile, of `tenant` (or of
    /// every tenant), by profile, then id.
    fn tasks_with_profiles(&mut self, tenant: Option<&str>) -> Result<Vec<BoundTask>>;
}

/// A task bound to a profile, and the version it binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundTask {
    pub tenant_key: String,
    pub task_id: String,
    pub name: Option<String>,
    pub state: String,
    pub profile: String,
    /// The profile's hash the task's owner confirmed.
    pub sha256: String,
}

#[derive(Deserialize)]
struct BoundRow {
    tenant_key: String,
    task_id: String,
    name: Option<String>,
    state: String,
    profile: String,
    payload: String,
}

/// The bound version read from the payload's `"profile"`; a payload that
/// does not say is the claim's to quarantine, and binds nothing here.
fn bound_task(row: &Row) -> Result<BoundTask> {
    let raw: BoundRow = row.decode()?;
    let payload: serde_json::Value = serde_json::from_str(&raw.payload).unwrap_or_default();
    let sha256 = payload["profile"]["sha256"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Ok(BoundTask {
        tenant_key: raw.tenant_key,
        task_id: raw.task_id,
        name: raw.name,
        state: raw.state,
        profile: raw.profile,
        sha256,
    })
}

/// A profile's row as stored.
#[derive(Deserialize)]
struct RawProfile {
    tenant_key: String,
    name: String,
    definition: String,
    sha256: String,
    description: Option<String>,
    revision: i64,
    created_at: i64,
    updated_at: i64,
    updated_by: String,
}

const PROFILE_COLUMNS: &str = "tenant_key, name, definition, sha256, description, revision, \
                               created_at, updated_at, updated_by";

/// A row whose definition does not read, or does not hash to its sha256,
/// is an error naming the profile: the tick then holds its tasks rather
/// than run something nobody set.
fn decode(row: &Row) -> Result<Profile> {
    let raw: RawProfile = row.decode()?;
    let definition: Definition = serde_json::from_str(&raw.definition)
        .with_context(|| format!("profile {}: its definition does not read", raw.name))?;
    if definition.canonical() != raw.definition || definition.hash() != raw.sha256 {
        return Err(anyhow!(
            "profile {}: its stored definition does not match its hash",
            raw.name
        ));
    }
    Ok(Profile {
        tenant_key: raw.tenant_key,
        name: raw.name,
        definition,
        sha256: raw.sha256,
        description: raw.description,
        revision: raw.revision,
        created_at: raw.created_at,
        updated_at: raw.updated_at,
        updated_by: raw.updated_by,
    })
}

impl<C: Connection> ProfileTx for C {
    fn profile(&mut self, tenant_key: &str, name: &str) -> Result<Option<Profile>> {
        let row = self
            .query_opt(
                &format!(
                    "SELECT {PROFILE_COLUMNS} FROM profiles WHERE tenant_key = $1 AND name = $2"
                ),
                args![tenant_key, name],
            )
            .context("reading the profile")?;
        row.as_ref().map(decode).transpose()
    }

    fn profiles(&mut self, tenant: Option<&str>) -> Result<Vec<Profile>> {
        // By tenant and name, byte by byte on both servers.
        let collate = self.dialect().pick("", " COLLATE \"C\"");
        self.query(
            &format!(
                "SELECT {PROFILE_COLUMNS} FROM profiles
                 WHERE CAST($1 AS TEXT) IS NULL OR tenant_key = $1
                 ORDER BY tenant_key{collate}, name{collate}"
            ),
            args![tenant],
        )
        .context("reading the profiles")?
        .iter()
        .map(decode)
        .collect()
    }

    fn put_profile(&mut self, p: &Profile, expected_revision: Option<i64>) -> Result<()> {
        let definition = p.definition.canonical();
        let changed = match expected_revision {
            // The primary key is the guard: a profile another writer added
            // meanwhile is not overwritten.
            None => self.execute(
                &format!(
                    "INSERT INTO profiles ({PROFILE_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING"
                ),
                args![
                    &p.tenant_key,
                    &p.name,
                    &definition,
                    &p.sha256,
                    &p.description,
                    p.revision,
                    p.created_at,
                    p.updated_at,
                    &p.updated_by
                ],
            ),
            Some(expected) => self.execute(
                "UPDATE profiles SET definition = $1, sha256 = $2, description = $3,
                     revision = $4, updated_at = $5, updated_by = $6
                 WHERE tenant_key = $7 AND name = $8 AND revision = $9",
                args![
                    &definition,
                    &p.sha256,
                    &p.description,
                    p.revision,
                    p.updated_at,
                    &p.updated_by,
                    &p.tenant_key,
                    &p.name,
                    expected
                ],
            ),
        }
        .context("writing the profile")?;
        expect_one(changed, || format!("profile {} changed meanwhile", p.name))
    }

    fn delete_profile(&mut self, tenant_key: &str, name: &str, revision: i64) -> Result<()> {
        self.guarded(
            "DELETE FROM profiles WHERE tenant_key = $1 AND name = $2 AND revision = $3",
            args![tenant_key, name, revision],
            "deleting the profile",
            || format!("profile {name} changed meanwhile"),
        )
    }

    fn running_under_profile(&mut self, tenant_key: &str, name: &str) -> Result<i64> {
        // The newline cannot occur in a tenant key nor a profile's name.
        self.hold_until_end(&format!("agentcron profile\n{tenant_key}\n{name}"))
            .context("taking the profile's running-limit lock")?;
        self.value(
            "SELECT count(*) FROM runs
             WHERE tenant_key = $1 AND profile = $2 AND status = 'running'",
            args![tenant_key, name],
        )
        .context("counting the profile's running runs")
    }

    fn has_profiles(&mut self, tenant: Option<&str>) -> Result<bool> {
        let found = self
            .query_opt(
                "SELECT 1 FROM profiles WHERE CAST($1 AS TEXT) IS NULL OR tenant_key = $1 LIMIT 1",
                args![tenant],
            )
            .context("reading whether there are profiles")?;
        Ok(found.is_some())
    }

    fn any_task_bound(&mut self, tenant_key: &str) -> Result<bool> {
        let found = self
            .query_opt(
                "SELECT 1 FROM tasks
                 WHERE tenant_key = $1 AND profile IS NOT NULL AND state <> 'deleted' LIMIT 1",
                args![tenant_key],
            )
            .context("reading whether a task has a profile")?;
        Ok(found.is_some())
    }

    fn held_for_profile_before(&mut self, task_id: &str, payload_hash: &str) -> Result<bool> {
        let found = self
            .query_opt(
                "SELECT 1 FROM runs
                 WHERE task_id = $1 AND status = 'skipped_profile' AND payload_hash = $2 LIMIT 1",
                args![task_id, payload_hash],
            )
            .context("reading whether the task was held for its profile")?;
        Ok(found.is_some())
    }

    fn tasks_with_profiles(&mut self, tenant: Option<&str>) -> Result<Vec<BoundTask>> {
        let collate = self.dialect().pick("", " COLLATE \"C\"");
        self.query(
            &format!(
                "SELECT tenant_key, task_id, name, state, profile, payload FROM tasks
                 WHERE profile IS NOT NULL AND state <> 'deleted'
                   AND (CAST($1 AS TEXT) IS NULL OR tenant_key = $1)
                 ORDER BY profile{collate}, task_id"
            ),
            args![tenant],
        )
        .context("reading the tasks bound to profiles")?
        .iter()
        .map(bound_task)
        .collect()
    }
}
