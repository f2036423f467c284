//! What shell completion reads (docs/CONTRACT.md §15): the few tasks, runs
//! and identity keys that begin with the word being typed, capped, as plain
//! values. Read through a store opened with `OpenOptions::never_writing`.
//!
//! The SQL is written once, with `$n` parameters ($1 the tenant, $2 the
//! prefix, $3 the cap), and run over `Connection` on either store; the
//! prefix is cast to text where its type cannot follow from a column
//! (`length`), which both servers accept.

use anyhow::{Context, Result};

use super::connection::Connection;
use crate::store::connection::args;

/// At most this many rows from the store: a shell shows no more usefully,
/// and the query stays quick on a large history.
pub const LIMIT: i64 = 100;

/// A task a task argument may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCandidate {
    pub task_id: String,
    pub name: Option<String>,
    pub state: String,
}

/// A run a run argument may name, with what a person recognises it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCandidate {
    pub run_id: String,
    /// Its task's name, when the task has one.
    pub task_name: Option<String>,
    pub status: String,
    pub scheduled_local: String,
}

/// An identity key the tenant knows, with its zone when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownKey {
    pub identity_key: String,
    pub zone: Option<String>,
}

/// Which runs a run argument takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// `reconcile`: runs whose outcome is unknown.
    Unknown,
    /// `approve`, `deny`: runs parked on a person's answer.
    Parked,
    /// `lease check`: runs holding a lease.
    Running,
    /// `explain`: any run, once the word has begun.
    Any,
}

pub trait CompletionTx {
    /// The rows of one of the queries below ($1 the tenant, $2 the prefix,
    /// $3 the cap), `columns` columns each, every one text or null.
    fn completion_rows(
        &mut self,
        sql: &str,
        tenant_key: &str,
        prefix: &str,
        columns: usize,
    ) -> Result<Vec<Vec<Option<String>>>>;

    /// The tenant's tasks that are not deleted whose name or id begins with
    /// `prefix`, by name then id, at most `LIMIT` of them; of those, the ones
    /// that share a key with `owner_keys` (another owner's task cannot be
    /// named).
    fn task_candidates(
        &mut self,
        tenant_key: &str,
        owner_keys: &[String],
        prefix: &str,
    ) -> Result<Vec<TaskCandidate>> {
        let rows = self.completion_rows(TASKS, tenant_key, prefix, 4)?;
        Ok(decode_tasks(fixed(rows), owner_keys))
    }

    /// The tenant's runs of `kind` whose id begins with `prefix`, at most
    /// `LIMIT` of them (newest first; in id order for `Any`, which offers
    /// nothing before the word has begun); of those, the runs of tasks that
    /// share a key with `owner_keys`.
    fn run_candidates(
        &mut self,
        tenant_key: &str,
        owner_keys: &[String],
        kind: RunKind,
        prefix: &str,
    ) -> Result<Vec<RunCandidate>> {
        let Some(sql) = runs_sql(kind, prefix) else {
            return Ok(Vec::new());
        };
        let rows = self.completion_rows(&sql, tenant_key, prefix, 5)?;
        Ok(decode_runs(fixed(rows), owner_keys))
    }

    /// The identity keys beginning with `prefix` that the tenant knows —
    /// those with a zone and those a task follows — by key, at most `LIMIT`.
    /// Whoever owns the tasks: `zone set` is the host's, acting for anyone.
    fn known_keys(&mut self, tenant_key: &str, prefix: &str) -> Result<Vec<KnownKey>> {
        let rows = self.completion_rows(KNOWN_KEYS, tenant_key, prefix, 2)?;
        Ok(decode_keys(fixed(rows)))
    }
}

impl<C: Connection> CompletionTx for C {
    fn completion_rows(
        &mut self,
        sql: &str,
        tenant_key: &str,
        prefix: &str,
        columns: usize,
    ) -> Result<Vec<Vec<Option<String>>>> {
        let rows = self
            .query(sql, args![tenant_key, prefix, LIMIT])
            .context("reading completion candidates")?;
        rows.iter()
            .map(|row| (0..columns).map(|i| row.get(i)).collect())
            .collect()
    }
}

/// Rows of `N` columns, as the store was asked for (a row of another width
/// is dropped rather than trusted).
fn fixed<const N: usize>(rows: Vec<Vec<Option<String>>>) -> Vec<Row<N>> {
    rows.into_iter()
        .filter_map(|row| row.try_into().ok())
        .collect()
}

/// A row as both stores return it: every column text or null.
type Row<const N: usize> = [Option<String>; N];

/// id, name, state, owner keys.
const TASKS: &str = "SELECT task_id, name, state, owner_keys FROM tasks
    WHERE tenant_key = $1 AND state <> 'deleted'
      AND (substr(name, 1, length(CAST($2 AS TEXT))) = $2 OR substr(task_id, 1, length(CAST($2 AS TEXT))) = $2)
    ORDER BY name, task_id LIMIT $3";

/// id, task name, status, scheduled_local, owner keys; None when `kind`
/// offers nothing for `prefix`.
fn runs_sql(kind: RunKind, prefix: &str) -> Option<String> {
    // Each filter is served by an index: runs_by_tenant_status (and the
    // partial indexes) for a status, the primary key's range for an id prefix.
    let newest = "ORDER BY r.scheduled_for DESC, r.run_id";
    let tenant = "r.tenant_key = $1";
    let (tenant, filter, order) = match kind {
        RunKind::Unknown => (tenant, "r.status = 'unknown'", newest),
        RunKind::Parked => (
            tenant,
            "r.status IN ('awaiting_confirmation', 'awaiting_authorization')",
            newest,
        ),
        RunKind::Running => (tenant, "r.status = 'running'", newest),
        // Every run of a history is too many to list: wait for a prefix.
        RunKind::Any if prefix.is_empty() => return None,
        // The primary key's range, walked in id order so that the limit
        // stops the scan (ids are hex and dashes, all below '~'). The
        // tenant as an expression keeps SQLite's planner off the tenant
        // index, which would read the tenant's whole history (measured:
        // 0.5 s on 200,000 runs, against milliseconds).
        RunKind::Any => (
            "r.tenant_key || '' = $1",
            "r.run_id >= $2 AND r.run_id < $2 || '~'",
            "ORDER BY r.run_id",
        ),
    };
    Some(format!(
        "SELECT r.run_id, t.name, r.status, r.scheduled_local, t.owner_keys FROM runs r
         JOIN tasks t ON t.task_id = r.task_id
         WHERE {tenant} AND {filter} AND substr(r.run_id, 1, length(CAST($2 AS TEXT))) = $2
         {order} LIMIT $3"
    ))
}

/// key, zone.
const KNOWN_KEYS: &str = "SELECT identity_key, zone FROM zones
    WHERE tenant_key = $1 AND substr(identity_key, 1, length(CAST($2 AS TEXT))) = $2
    UNION
    SELECT DISTINCT follow_key, NULL FROM tasks
    WHERE tenant_key = $1 AND follow_key IS NOT NULL
      AND substr(follow_key, 1, length(CAST($2 AS TEXT))) = $2
    ORDER BY 1 LIMIT $3";

/// Whether `owners` (a task's owner_keys, a JSON list) shares a key with
/// `keys`; an unreadable list shares none.
fn owned(owners: Option<&str>, keys: &[String]) -> bool {
    let owners: Vec<String> = owners
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    owners.iter().any(|k| keys.contains(k))
}

fn decode_tasks(rows: Vec<Row<4>>, owner_keys: &[String]) -> Vec<TaskCandidate> {
    rows.into_iter()
        .filter(|[.., owners]| owned(owners.as_deref(), owner_keys))
        .map(|[id, name, state, _]| TaskCandidate {
            task_id: id.unwrap_or_default(),
            name,
            state: state.unwrap_or_default(),
        })
        .collect()
}

fn decode_runs(rows: Vec<Row<5>>, owner_keys: &[String]) -> Vec<RunCandidate> {
    rows.into_iter()
        .filter(|[.., owners]| owned(owners.as_deref(), owner_keys))
        .map(|[id, name, status, local, _]| RunCandidate {
            run_id: id.unwrap_or_default(),
            task_name: name,
            status: status.unwrap_or_default(),
            scheduled_local: local.unwrap_or_default(),
        })
        .collect()
}

fn decode_keys(rows: Vec<Row<2>>) -> Vec<KnownKey> {
    rows.into_iter()
        .filter_map(|[key, zone]| {
            Some(KnownKey {
                identity_key: key?,
                zone,
            })
        })
        .collect()
}
