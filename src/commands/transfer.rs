//! `agentcron export` and `agentcron import`: the whole store as JSON Lines,
//! the way from SQLite to PostgreSQL (or back).

use std::io::{BufRead, BufReader};

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use crate::commands::bounded;
use crate::context::Ctx;
use crate::error::{constraint_violation, fail, CmdError, Violation};
use crate::store::transfer::{self, TABLES};

/// Write every task, run, notice, reconciliation and audit event as JSON Lines
///
/// Each line is one row: {"table": NAME, COLUMN: VALUE, …}. Drafts are not
/// exported (they expire within the hour). Pipe it into `agentcron import`.
#[derive(Debug, Args)]
pub struct ExportArgs {}

/// Read an export into an empty store, in one transaction
///
/// Every task line is checked against the payload it was confirmed with
/// (and that payload against its hash); one that disagrees imports nothing.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The JSON Lines file; `-` reads standard input
    #[arg(default_value = "-")]
    pub file: String,
}

pub fn export(ctx: &mut Ctx, _args: ExportArgs) -> Result<()> {
    let (store, out) = ctx.store_and_output()?;
    let dumps = store.read(|tx| {
        TABLES
            .iter()
            .map(|t| Ok((t.name, tx.dump_table(t)?)))
            .collect::<Result<Vec<_>>>()
    })?;
    for (name, rows) in dumps {
        for mut row in rows {
            row.insert("table".into(), Value::String(name.into()));
            out.json_line(&Value::Object(row))?;
        }
    }
    Ok(())
}

pub fn import(ctx: &mut Ctx, args: ImportArgs) -> Result<()> {
    let mut reader: Box<dyn BufRead> = if args.file == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let path = std::path::Path::new(&args.file);
        Box::new(BufReader::new(bounded::open_regular(path, "the export")?))
    };
    // Parse and check everything before writing anything; every line is
    // bounded, so neither a device nor a line without end can exhaust memory.
    let mut rows = Vec::new();
    let mut task_ids = std::collections::HashSet::new();
    for index in 0.. {
        let Some(line) =
            bounded::next_line(&mut reader, bounded::IMPORT_LINE_MAX_BYTES, index + 1)?
        else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| {
            CmdError::usage(format!("line {}: {why}", index + 1))
                .with_hint("give the output of `agentcron export`")
        };
        let value: Value =
            serde_json::from_str(&line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(object) = value.as_object() else {
            return fail(bad("not a JSON object".into()));
        };
        let name = object.get("table").and_then(Value::as_str).unwrap_or("");
        let Some(table) = transfer::table(name) else {
            return fail(bad(format!("unknown table '{name}'")));
        };
        let values = table.values(object).map_err(|e| bad(e.to_string()))?;
        // Only what was confirmed may run: a task whose columns were edited
        // away from its payload (or the payload from its hash) is refused
        // here, as every read would quarantine it.
        if table.name == "zones" {
            let zone = object.get("zone").and_then(Value::as_str).unwrap_or("");
            if let Err(e) = crate::schedule::parse_zone(zone) {
                return fail(bad(format!("zones: {}", e.message)));
            }
        }
        if table.name == "tasks" {
            if let Err(corrupt) = transfer::raw_task(object).decode() {
                return fail(
                    CmdError::usage(format!(
                        "line {}: task {}: {}",
                        index + 1,
                        corrupt.id,
                        corrupt.problem
                    ))
                    .with_hint("the export was changed after it was written; import the original"),
                );
            }
        }
        if table.name == "tasks" {
            let task_id = object.get("task_id").and_then(Value::as_str);
            task_ids.insert(task_id.unwrap_or("").to_string());
        }
        rows.push((index + 1, table, values));
    }
    let with_memory = rows.iter().any(|(_, t, _)| t.name == "task_memory");
    let counts = ctx.store()?.write(|tx| {
        if !tx.is_empty()? {
            return fail(
                CmdError::conflict(
                    "import needs an empty store, and this one has tasks, runs or events",
                )
                .with_hint("import into a new --db"),
            );
        }
        let mut counts = serde_json::Map::new();
        for (number, table, values) in &rows {
            // The store keeps no key from a memory row to its task: the
            // import checks it, in line order, as the schema checks a run's.
            if table.name == "task_memory"
                && !values[0].as_str().is_some_and(|t| task_ids.contains(t))
            {
                return Err(orphan(*number, table.name));
            }
            tx.load_row(table, values)
                .map_err(|e| refused_row(*number, table.name, e))?;
            let n = counts.entry(table.name).or_insert(json!(0));
            *n = json!(n.as_i64().unwrap_or(0) + 1);
        }
        // An export from before the memory was exported: rebuild what the
        // runs tell, so the next run's `previous` is not null.
        if !with_memory {
            tx.rebuild_task_memory()?;
        }
        Ok(counts)
    })?;
    if ctx.out.json {
        return ctx.out.document(&Value::Object(counts));
    }
    let summary: Vec<String> = TABLES
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                counts.get(t.name).and_then(Value::as_i64).unwrap_or(0),
                t.name
            )
        })
        .collect();
    ctx.out.line(&format!("Imported {}.", summary.join(", ")))
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
