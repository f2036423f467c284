//! The values completed: task names and ids and run ids from the store the
//! line points at, zones, and the spellings of enumerated flags.
//!
//! The store is read with one query, capped, through a read-only
//! connection of our own rather than `store::open`: opening the store
//! creates or migrates it, and completion must never write, create a file
//! or wait long. Any failure (no database, an old schema, a server that is
//! down) gives no candidates.

use std::ffi::OsStr;
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;

use super::{Line, LINE};
use crate::model::{RunStatus, TaskState};
use crate::store::Location;

/// At most this many candidates from the store: a shell shows no more
/// usefully, and the query stays quick on a large history.
const LIMIT: i64 = 100;

/// How long completion waits for a busy SQLite file or a PostgreSQL server.
const WAIT: Duration = Duration::from_millis(500);

/// Task names (ids for unnamed tasks, or when the word starts an id) of the
/// tenant's tasks that are not deleted.
pub fn tasks(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let sql = "SELECT task_id, name, state, owner_keys FROM tasks
               WHERE tenant_key = $1 AND state <> 'deleted'
                 AND (substr(name, 1, length($2)) = $2 OR substr(task_id, 1, length($2)) = $2)
               ORDER BY name, task_id LIMIT $3";
    query(sql, prefix)
        .into_iter()
        .map(|[id, name, state]| {
            let (id, state) = (id.unwrap_or_default(), state.unwrap_or_default());
            let short = id.get(..8).unwrap_or(&id).to_string();
            match name.filter(|n| n.starts_with(prefix)) {
                Some(name) => candidate(name, format!("{state} task {short}")),
                None => candidate(id, format!("{state} task")),
            }
        })
        .collect()
}

/// Which runs a run argument takes.
#[derive(Debug, Clone, Copy)]
enum Runs {
    /// `reconcile`: runs whose outcome is unknown.
    Unknown,
    /// `approve`, `deny`: runs parked on a person's answer.
    Parked,
    /// `lease check`: runs holding a lease.
    Running,
    /// `explain`: any run, once the word has begun.
    Any,
}

pub fn runs_unknown(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(Runs::Unknown, current)
}

pub fn runs_parked(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(Runs::Parked, current)
}

pub fn runs_running(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(Runs::Running, current)
}

pub fn runs_any(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(Runs::Any, current)
}

/// `explain` takes a task or a run.
pub fn tasks_or_runs(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = tasks(current);
    out.extend(runs_any(current));
    out
}

fn runs(which: Runs, current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    // Each filter is served by an index: runs_by_tenant_status for a
    // status, the primary key's range for an id prefix.
    let newest = "ORDER BY r.scheduled_for DESC, r.run_id";
    let tenant = "r.tenant_key = $1";
    let (tenant, filter, order) = match which {
        Runs::Unknown => (tenant, "r.status = 'unknown'", newest),
        Runs::Parked => (
            tenant,
            "r.status IN ('awaiting_confirmation', 'awaiting_authorization')",
            newest,
        ),
        Runs::Running => (tenant, "r.status = 'running'", newest),
        // Every run of a history is too many to list: wait for a prefix.
        Runs::Any if prefix.is_empty() => return Vec::new(),
        // The primary key's range, walked in id order so that the limit
        // stops the scan (ids are hex and dashes, all below '~'). The
        // tenant as an expression keeps SQLite's planner off the tenant
        // index, which would read the tenant's whole history (measured:
        // 0.5 s on 200,000 runs, against milliseconds).
        Runs::Any => (
            "r.tenant_key || '' = $1",
            "r.run_id >= $2 AND r.run_id < $2 || '~'",
            "ORDER BY r.run_id",
        ),
    };
    let sql = format!(
        "SELECT r.run_id, t.name, r.status || ' ' || r.scheduled_local, t.owner_keys FROM runs r
         JOIN tasks t ON t.task_id = r.task_id
         WHERE {tenant} AND {filter} AND substr(r.run_id, 1, length($2)) = $2
         {order} LIMIT $3"
    );
    query(&sql, prefix)
        .into_iter()
        .map(|[id, name, what]| {
            let id = id.unwrap_or_default();
            let task = name.unwrap_or_else(|| "task".to_string());
            candidate(id, format!("{task}: {}", what.unwrap_or_default()))
        })
        .collect()
}

/// `zone set|show|unset KEY`: the identity keys the tenant knows — those
/// with a zone and those a task follows (along tasks_following) — and the
/// caller's own. `zone set` is the host's, acting for anyone, so these are
/// not filtered by owner.
pub fn identity_keys(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let line = LINE.get().cloned().unwrap_or_default();
    let sql = "SELECT identity_key, zone, NULL, NULL FROM zones
               WHERE tenant_key = $1 AND substr(identity_key, 1, length($2)) = $2
               UNION
               SELECT DISTINCT follow_key, NULL, NULL, NULL FROM tasks
               WHERE tenant_key = $1 AND follow_key IS NOT NULL
                 AND substr(follow_key, 1, length($2)) = $2
               ORDER BY 1 LIMIT $3";
    let mut keys: Vec<(String, Option<String>)> = rows(&line, sql, prefix)
        .into_iter()
        .filter_map(|[key, zone, ..]| Some((key?, zone)))
        .collect();
    keys.extend(
        line.as_keys
            .iter()
            .filter(|k| k.starts_with(prefix))
            .map(|k| (k.clone(), None)),
    );
    // A key with a zone shows it; each key once.
    keys.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.is_some().cmp(&a.1.is_some())));
    keys.dedup_by(|later, first| later.0 == first.0);
    keys.into_iter()
        .map(|(key, zone)| match zone {
            Some(zone) => candidate(key, format!("zone {zone}")),
            None => CompletionCandidate::new(key),
        })
        .collect()
}

/// IANA zone names, for `--tz`.
pub fn zones(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    chrono_tz::TZ_VARIANTS
        .iter()
        .map(|tz| tz.name())
        .filter(|name| name.starts_with(prefix))
        .map(CompletionCandidate::new)
        .collect()
}

/// `draft --tz`: the zones, and `follow` (docs/CONTRACT.md §18).
pub fn draft_zones(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = zones(current);
    if current
        .to_str()
        .is_some_and(|p| crate::payload::FOLLOW.starts_with(p))
    {
        out.insert(
            0,
            candidate(
                crate::payload::FOLLOW.into(),
                "the owner's current zone".into(),
            ),
        );
    }
    out
}

/// `--days`: the words and day names, after the commas already typed.
pub fn days(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(text) = current.to_str() else {
        return Vec::new();
    };
    let (done, word) = match text.rfind(',') {
        Some(at) => text.split_at(at + 1),
        None => ("", text),
    };
    [
        "weekdays", "weekends", "daily", "mon", "tue", "wed", "thu", "fri", "sat", "sun",
    ]
    .iter()
    .filter(|d| d.starts_with(word))
    .map(|d| CompletionCandidate::new(format!("{done}{d}")))
    .collect()
}

/// `list --state`.
pub fn task_states() -> Vec<CompletionCandidate> {
    TaskState::ALL
        .iter()
        .map(|s| CompletionCandidate::new(s.as_str()))
        .collect()
}

/// `runs --status`.
pub fn run_statuses() -> Vec<CompletionCandidate> {
    RunStatus::ALL
        .iter()
        .map(|s| CompletionCandidate::new(s.as_str()))
        .collect()
}

fn candidate(value: String, help: String) -> CompletionCandidate {
    CompletionCandidate::new(value).help(Some(help.into()))
}

/// Rows of three text columns for `sql` with $1 the tenant, $2 the prefix,
/// $3 the limit, and the owner keys (a JSON array) fourth: those of tasks
/// the caller owns; none on any failure.
fn query(sql: &str, prefix: &str) -> Vec<[Option<String>; 3]> {
    let line = LINE.get().cloned().unwrap_or_default();
    rows(&line, sql, prefix)
        .into_iter()
        .filter(|[.., owners]| {
            let owners: Vec<String> = owners
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default();
            owners.iter().any(|k| line.as_keys.contains(k))
        })
        .map(|[a, b, c, _]| [a, b, c])
        .collect()
}

/// Every row of `sql` (parameters as for `query`), whoever owns it; none on
/// any failure.
fn rows(line: &Line, sql: &str, prefix: &str) -> Vec<[Option<String>; 4]> {
    let tenant = line.tenant.clone().unwrap_or_else(|| "default".to_string());
    let Some(location) = location(line) else {
        return Vec::new();
    };
    match location {
        Location::Sqlite(path) => sqlite(&path, sql, &tenant, prefix).unwrap_or_default(),
        Location::Postgres(url) => postgres(&url, sql, &tenant, prefix).unwrap_or_default(),
    }
}

fn location(line: &Line) -> Option<Location> {
    let db = line.db.as_deref().map(std::path::Path::new);
    crate::context::location(db).ok()
}

fn sqlite(
    path: &std::path::Path,
    sql: &str,
    tenant: &str,
    prefix: &str,
) -> rusqlite::Result<Vec<[Option<String>; 4]>> {
    use rusqlite::OpenFlags;
    // Read-only: a missing file stays missing (no file, no folders).
    let conn = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(WAIT)?;
    // rusqlite numbers its parameters ?1, ?2…
    let sql = sql.replace('$', "?");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params![tenant, prefix, LIMIT], |row| {
        Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?])
    })?;
    rows.collect()
}

fn postgres(
    url: &str,
    sql: &str,
    tenant: &str,
    prefix: &str,
) -> Result<Vec<[Option<String>; 4]>, postgres::Error> {
    let Ok(mut config) = url.parse::<postgres::Config>() else {
        return Ok(Vec::new());
    };
    config.connect_timeout(WAIT);
    let mut client = config.connect(postgres::NoTls)?;
    let mut tx = client.build_transaction().read_only(true).start()?;
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = {}",
        WAIT.as_millis()
    ))?;
    // substr/length on text, the limit as bigint: the same SQL on both.
    let sql = sql.replace("length($2)", "length($2::text)");
    let rows = tx.query(&sql, &[&tenant, &prefix, &LIMIT])?;
    Ok(rows
        .iter()
        .map(|r| [r.get(0), r.get(1), r.get(2), r.get(3)])
        .collect())
}
