//! The values completed: task names and ids and run ids from the store the
//! line points at, zones, and the spellings of enumerated flags.
//!
//! The store is read through `store::open` with `OpenOptions::never_writing`
//! and the store's completion operations (`CompletionTx`): one capped query,
//! nothing created, migrated or written, no long wait. Any failure (no
//! database, another schema, a server that is down) gives no candidates.

use std::ffi::OsStr;
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;

use super::{Line, LINE};
use crate::model::{RunStatus, TaskState};
use crate::store::completion::RunKind;
use crate::store::{OpenOptions, Tx};

/// How long completion waits for a busy SQLite file or a PostgreSQL server.
const WAIT: Duration = Duration::from_millis(500);

/// Task names (ids for unnamed tasks, or when the word starts an id) of the
/// tenant's tasks that are not deleted.
pub fn tasks(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    read(|tx, line| tx.task_candidates(&tenant(line), &line.as_keys, prefix))
        .into_iter()
        .map(|task| {
            let (id, state) = (task.task_id, task.state);
            let short = id.get(..8).unwrap_or(&id).to_string();
            match task.name.filter(|n| n.starts_with(prefix)) {
                Some(name) => candidate(name, format!("{state} task {short}")),
                None => candidate(id, format!("{state} task")),
            }
        })
        .collect()
}

pub fn runs_unknown(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(RunKind::Unknown, current)
}

pub fn runs_parked(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(RunKind::Parked, current)
}

pub fn runs_running(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(RunKind::Running, current)
}

pub fn runs_any(current: &OsStr) -> Vec<CompletionCandidate> {
    runs(RunKind::Any, current)
}

/// `explain` takes a task or a run.
pub fn tasks_or_runs(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = tasks(current);
    out.extend(runs_any(current));
    out
}

fn runs(kind: RunKind, current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    read(|tx, line| tx.run_candidates(&tenant(line), &line.as_keys, kind, prefix))
        .into_iter()
        .map(|run| {
            let task = run.task_name.unwrap_or_else(|| "task".to_string());
            let what = format!("{task}: {} {}", run.status, run.scheduled_local);
            candidate(run.run_id, what)
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
    let mut keys: Vec<(String, Option<String>)> =
        read(|tx, line| tx.known_keys(&tenant(line), prefix))
            .into_iter()
            .map(|known| (known.identity_key, known.zone))
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

/// `--profile` and `profile show|set|delete NAME`: the tenant's profiles,
/// with what each runs.
pub fn profile_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    read(|tx, line| tx.profiles(Some(&tenant(line))))
        .into_iter()
        .filter(|p| p.name.starts_with(prefix))
        .map(|p| {
            let what = p.description.unwrap_or(p.definition.command);
            candidate(p.name, crate::text::escape(&what))
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

/// The tenant the line names, else the default one.
fn tenant(line: &Line) -> String {
    line.tenant.clone().unwrap_or_else(|| "default".to_string())
}

/// What `f` reads, in one read transaction of the store the line names,
/// opened never to write; nothing on any failure.
fn read<T>(f: impl FnOnce(&mut dyn Tx, &Line) -> anyhow::Result<Vec<T>>) -> Vec<T> {
    let line = LINE.get().cloned().unwrap_or_default();
    let db = line.db.as_deref().map(std::path::Path::new);
    let Ok(location) = crate::context::location(db) else {
        return Vec::new();
    };
    let Ok(mut store) = crate::store::open(&location, &OpenOptions::never_writing(WAIT)) else {
        return Vec::new();
    };
    store.read(|tx| f(tx, &line)).unwrap_or_default()
}
