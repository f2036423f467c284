//! Moving a whole store (`agentcron import`, from what `export` wrote):
//! every line is checked before anything is written, then every row goes
//! into an empty store in one write transaction, so an import either
//! loads the whole export or nothing.
//!
//! Invariant: only what was confirmed may run. A task line whose columns
//! disagree with its payload (or the payload with its hash) is refused, as
//! every read would quarantine it; a zone that does not parse and a memory
//! row without its task are refused too. A row the schema refuses names its
//! line, as a bad line does: it is a mistake in the input.

use std::collections::HashSet;

use anyhow::Result;
use serde_json::{json, Map, Value};

use crate::error::{constraint_violation, fail, CmdError, Violation};
use crate::store::transfer::{self, Table};
use crate::store::Store;

/// The lines of an export, checked and kept until they are loaded.
#[derive(Default)]
pub struct Import {
    /// (line number, table, column values) in line order.
    rows: Vec<(usize, &'static Table, Vec<Value>)>,
    /// The tasks the export holds: a memory row must name one of them.
    task_ids: HashSet<String>,
}

impl Import {
    /// Checks line `number` (counted from 1) of an export and keeps its row;
    /// a blank line is skipped.
    pub fn add_line(&mut self, number: usize, line: &str) -> Result<()> {
        if line.trim().is_empty() {
            return Ok(());
        }
        let bad = |why: String| {
            CmdError::usage(format!("line {number}: {why}"))
                .with_hint("give the output of `agentcron export`")
        };
        let value: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(object) = value.as_object() else {
            return fail(bad("not a JSON object".into()));
        };
        let name = object.get("table").and_then(Value::as_str).unwrap_or("");
        let Some(table) = transfer::table(name) else {
            return fail(bad(format!("unknown table '{name}'")));
        };
        let values = table.values(object).map_err(|e| bad(e.to_string()))?;
        if table.name == "zones" {
            let zone = object.get("zone").and_then(Value::as_str).unwrap_or("");
            if let Err(e) = crate::schedule::parse_zone(zone) {
                return fail(bad(format!("zones: {}", e.message)));
            }
        }
        if table.name == "profiles" {
            check_profile(object).map_err(|e| bad(format!("profiles: {e}")))?;
        }
        if table.name == "tasks" {
            check_task(number, object)?;
            let task_id = object.get("task_id").and_then(Value::as_str);
            self.task_ids.insert(task_id.unwrap_or("").to_string());
        }
        self.rows.push((number, table, values));
        Ok(())
    }
}

/// A profile line must be a profile the store would write: a name it
/// takes, a definition in canonical form that hashes to its `sha256`.
fn check_profile(object: &serde_json::Map<String, Value>) -> Result<(), String> {
    let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
    crate::profile::check_name(text("name"))?;
    let definition: crate::profile::Definition =
        serde_json::from_str(text("definition")).map_err(|e| format!("definition: {e}"))?;
    definition.check()?;
    if definition.canonical() != text("definition") || definition.hash() != text("sha256") {
        return Err(format!(
            "profile {}: its definition is not in canonical form or does not hash to its sha256",
            crate::text::escape(text("name"))
        ));
    }
    Ok(())
}

/// A task line must decode as the task its payload confirmed.
fn check_task(number: usize, object: &Map<String, Value>) -> Result<()> {
    match transfer::raw_task(object).decode() {
        Ok(_) => Ok(()),
        Err(corrupt) => fail(
            CmdError::usage(format!(
                "line {number}: task {}: {}",
                corrupt.id, corrupt.problem
            ))
            .with_hint("the export was changed after it was written; import the original"),
        ),
    }
}

/// Loads every checked row into `store`, which must be empty, in one write
/// transaction; returns how many rows of each table it loaded.
pub fn import(store: &mut dyn Store, import: &Import) -> Result<Map<String, Value>> {
    let with_memory = import.rows.iter().any(|(_, t, _)| t.name == "task_memory");
    store.write(|tx| {
        if !tx.is_empty()? {
            return fail(
                CmdError::conflict(
                    "import needs an empty store, and this one has tasks, runs or events",
                )
                .with_hint("import into a new --db"),
            );
        }
        let mut counts = Map::new();
        for (number, table, values) in &import.rows {
            // The store keeps no key from a memory row to its task: the
            // import checks it, in line order, as the schema checks a run's.
            if table.name == "task_memory"
                && !values[0]
                    .as_str()
                    .is_some_and(|t| import.task_ids.contains(t))
            {
                return Err(orphan(*number, table.name));
            }
            tx.load_row(table, values)
                // What the driver said the refusal was, asked here, inside the
                // transaction, where the line is known.
                .map_err(|e| refused_row(*number, table.name, crate::store::faulted(e)))?;
            let n = counts.entry(table.name).or_insert(json!(0));
            *n = json!(n.as_i64().unwrap_or(0) + 1);
        }
        // An export from before the memory was exported: rebuild what the
        // runs tell, so the next run's `previous` is not null.
        if !with_memory {
            tx.rebuild_task_memory()?;
        }
        Ok(counts)
    })
}

/// A row the store's schema refused names its line, as a bad line does:
/// a duplicate or an orphan is a mistake in the input, not the database's.
fn refused_row(number: usize, table: &str, err: anyhow::Error) -> anyhow::Error {
    let Some((violation, words)) = constraint_violation(&err) else {
        return err;
    };
    let what = match violation {
        Violation::Duplicate => format!("a duplicate {table} row, its key already imported"),
        Violation::Orphan => {
            format!("an orphan {table} row: the row it refers to is not in the import")
        }
        Violation::Invalid => format!("a {table} row the store refuses"),
    };
    CmdError::usage(format!(
        "line {number}: {what} ({})",
        crate::text::escape(&words)
    ))
    .with_hint(UNCHANGED)
    .into()
}

const UNCHANGED: &str = "give the output of `agentcron export`, unchanged; nothing was imported";

/// A row whose parent no key of the store checks (a memory row's task).
fn orphan(number: usize, table: &str) -> anyhow::Error {
    CmdError::usage(format!(
        "line {number}: an orphan {table} row: the row it refers to is not in the import"
    ))
    .with_hint(UNCHANGED)
    .into()
}
