//! `agentcron export` and `agentcron import`: the whole store as JSON Lines,
//! the way from SQLite to PostgreSQL (or back).

use std::io::{BufRead, BufReader};

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use crate::commands::bounded;
use crate::context::Ctx;
use crate::ops::transfer::{import as import_lines, Import};
use crate::store::transfer::TABLES;

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
    let mut lines = Import::default();
    for number in 1.. {
        let Some(line) = bounded::next_line(&mut reader, bounded::IMPORT_LINE_MAX_BYTES, number)?
        else {
            break;
        };
        lines.add_line(number, &line)?;
    }
    let counts = import_lines(ctx.store()?, &lines)?;
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
