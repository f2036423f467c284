//! The one place that prints. Commands hand it text, tables and JSON values;
//! it writes them, escapes what came from the database or a child, and treats
//! a closed pipe (`agentcron list | head -1`) as success. The words and
//! shapes it prints come from below: `crate::text` (escaping, times,
//! clipping) and `crate::wire` (JSON shapes); `human`, `events`, `metrics`
//! and the per-command reports (`status_report`, …)
//! here lay out what only the printer shows.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod confirmed;
pub mod events;
mod fit;
pub mod human;
pub mod logfile;
pub mod metrics;
pub mod metrics_report;
pub mod run_table;
pub mod status_report;
pub mod terminal;
pub mod tick_report;
pub mod upcoming_report;

use std::io::{self, Write};

use comfy_table::{presets, ContentArrangement, Table};
use serde_json::Value;

use crate::error::{classify, is_disk_full, sentence, ErrorKind, Step};

use crate::text::escape;

/// The printer every command writes through.
#[derive(Debug, Clone)]
pub struct Output {
    pub json: bool,
}

/// A write to stdout failed because the reader went away; `main` exits 0.
#[derive(Debug)]
pub struct BrokenPipe;

impl std::fmt::Display for BrokenPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for BrokenPipe {}

impl Output {
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    /// Where stdout's bytes go: the terminal or pipe, buffered.
    fn stdout(&self) -> Box<dyn Write> {
        Box::new(io::BufWriter::new(io::stdout().lock()))
    }

    /// Writes one block of text (a newline is added).
    pub fn line(&self, text: &str) -> anyhow::Result<()> {
        self.write_stdout(&format!("{text}\n"))
    }

    /// Writes one JSON document (pretty for people, one line per document is
    /// what `json_line` is for).
    pub fn document(&self, value: &Value) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(value)?;
        self.write_stdout(&format!("{text}\n"))
    }

    /// A JSON array printed one element at a time, byte for byte what
    /// `document` prints for the whole array, so that a list of any length
    /// is never held in memory (`list --json`, `runs --json`).
    pub fn json_array(&self) -> JsonArray {
        JsonArray {
            out: self.stdout(),
            empty: true,
        }
    }

    /// Writes one JSON Lines record.
    pub fn json_line(&self, value: &Value) -> anyhow::Result<()> {
        self.write_stdout(&format!("{value}\n"))
    }

    fn write_stdout(&self, text: &str) -> anyhow::Result<()> {
        let mut out = self.stdout();
        out.write_all(text.as_bytes())
            .and_then(|_| out.flush())
            .map_err(stdout_error)
    }

    /// A note for the person on stderr (never part of machine output).
    pub fn note(&self, text: &str) {
        write_stderr(&format!("agentcron: {text}\n"));
    }

    /// A warning on stderr: `agentcron: warning: …`, or with `--json` one
    /// JSON line `{"warning": "…"}` that a script can parse.
    pub fn warn(&self, text: &str) {
        if self.json {
            write_stderr(&format!("{}\n", serde_json::json!({ "warning": text })));
        } else {
            write_stderr(&format!("agentcron: warning: {text}\n"));
        }
    }

    /// Whether a table goes to a terminal (fitted by `table`) or into a pipe
    /// or file (where `PipeTable` prints it at full width, row by row).
    pub fn to_terminal(&self) -> bool {
        io::IsTerminal::is_terminal(&io::stdout())
    }

    /// A table fitted to the terminal (`fit`: low-value columns dropped, long
    /// text cut with `…`, no cell ever wrapped). Into a pipe or a file, or on
    /// a terminal that reports no width, it is printed at full width, one
    /// row per line, so that `grep`, `awk` and `head` see whole rows.
    pub fn table(&self, header: &[&str], rows: Vec<Vec<String>>) -> anyhow::Result<()> {
        let mut table = Table::new();
        let width = match self.to_terminal() {
            true => table.width().map(usize::from).filter(|&w| w > 0),
            false => None,
        };
        let (header, rows) = match width {
            Some(width) => fit::fit(header, rows, width),
            None => (header.iter().map(|h| h.to_string()).collect(), rows),
        };
        table
            .load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(header.iter().map(|h| h.to_uppercase()));
        for row in rows {
            table.add_row(row);
        }
        // Line by line into a buffer: no second copy of a long table.
        let mut out = self.stdout();
        for line in table.lines() {
            let line = line.strip_prefix(' ').unwrap_or(&line).trim_end();
            out.write_all(line.as_bytes())
                .and_then(|_| out.write_all(b"\n"))
                .map_err(stdout_error)?;
        }
        out.flush().map_err(stdout_error)
    }
}

/// A table into a pipe or a file without holding its rows: the caller
/// hands every row to `measure`, then the same rows again to the writer
/// `print` returns. The lines are byte for byte what `Output::table` prints
/// there: each cell padded to its column's width (as comfy-table measures
/// it), columns two spaces apart, no trailing blanks.
pub struct PipeTable {
    header: Vec<String>,
    widths: Vec<usize>,
    rows: usize,
}

impl PipeTable {
    pub fn new(header: &[&str]) -> PipeTable {
        let header: Vec<String> = header.iter().map(|h| h.to_uppercase()).collect();
        let widths = header.iter().map(|h| width(h)).collect();
        PipeTable {
            header,
            widths,
            rows: 0,
        }
    }

    pub fn measure(&mut self, row: &[String]) {
        for (w, cell) in self.widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
        self.rows += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Prints the header; the rows follow through `PipeRows::row`.
    pub fn print(self) -> anyhow::Result<PipeRows> {
        let mut rows = PipeRows {
            out: io::BufWriter::new(io::stdout().lock()),
            widths: self.widths,
            line: String::new(),
        };
        rows.row(&self.header)?;
        Ok(rows)
    }
}

/// See `PipeTable`.
pub struct PipeRows {
    out: io::BufWriter<io::StdoutLock<'static>>,
    widths: Vec<usize>,
    line: String,
}

impl PipeRows {
    pub fn row(&mut self, row: &[String]) -> anyhow::Result<()> {
        self.line.clear();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                self.line.push_str("  ");
            }
            self.line.push_str(cell);
            let pad = self
                .widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(width(cell));
            self.line.extend(std::iter::repeat_n(' ', pad));
        }
        let line = self.line.trim_end();
        let out = &mut self.out;
        out.write_all(line.as_bytes())
            .and_then(|_| out.write_all(b"\n"))
            .map_err(stdout_error)
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        self.out.flush().map_err(stdout_error)
    }
}

/// A cell's width in columns, the widest of its lines (comfy-table's measure).
fn width(cell: &str) -> usize {
    cell.split('\n')
        .map(unicode_width::UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

/// See `Output::json_array`; `finish` closes the array.
pub struct JsonArray {
    out: Box<dyn Write>,
    empty: bool,
}

impl JsonArray {
    pub fn push(&mut self, value: &Value) -> anyhow::Result<()> {
        // serde_json's pretty form of an array indents each element by two
        // spaces; a pretty element has raw newlines only between tokens
        // (a newline inside a string is escaped), so indenting after each
        // one gives the same bytes.
        let text = serde_json::to_string_pretty(value)?.replace('\n', "\n  ");
        let open = if self.empty { "[\n  " } else { ",\n  " };
        self.empty = false;
        let out = &mut self.out;
        out.write_all(open.as_bytes())
            .and_then(|_| out.write_all(text.as_bytes()))
            .map_err(stdout_error)
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        let close = if self.empty { "[]\n" } else { "\n]\n" };
        let out = &mut self.out;
        out.write_all(close.as_bytes())
            .and_then(|_| out.flush())
            .map_err(stdout_error)
    }
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(stdout_error)
}

/// Writes `text` to stderr in one write: stderr is unbuffered, and
/// `writeln!` on it writes each piece of the format on its own, so another
/// process writing to the same log (ticks started by cron share one) could
/// land inside a line, and a terminal that closes as the process exits may
/// drop the line's end.
pub fn write_stderr(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

fn stdout_error(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        BrokenPipe.into()
    } else {
        anyhow::Error::new(e).context("writing to standard output")
    }
}

/// Reports what clap found wrong with the command line (exit 2), or prints
/// the help or version it was asked for (exit 0). Usage errors are escaped,
/// since they echo the offending argument, and follow `--json`.
///
/// `detailed` (the line asked for `plan --detailed-exitcode`): the error
/// exits 1 instead, as one `agentcron: error:` line and a hint, since a
/// pipeline branching on that flag reads 2 as "changes".
pub fn report_parse_error(err: &clap::Error, detailed: bool) -> i32 {
    use clap::error::ErrorKind as Clap;
    if matches!(err.kind(), Clap::DisplayHelp | Clap::DisplayVersion) {
        let text = err.render().to_string();
        return match write_stdout(&text) {
            Ok(()) | Err(_) => 0,
        };
    }
    let text = err.render().to_string();
    let json = std::env::args_os().any(|a| a == "--json");
    let code = if detailed { 1 } else { 2 };
    // clap's first paragraph, on one line: "the following required
    // arguments were not provided:" is followed by what they are.
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let first = match first.join(" ") {
        joined if joined.is_empty() => "invalid command line".to_string(),
        joined => joined,
    };
    let message = escape(first.trim_start_matches("error: "));
    if json {
        let value = serde_json::json!({
            "error": {"kind": "usage", "message": message, "causes": [], "hint": "see --help",
                      "exit_code": code}
        });
        write_stderr(&format!("{value}\n"));
    } else if detailed {
        write_stderr(&format!(
            "agentcron: error: {message}\n  hint: see `agentcron plan --help`\n"
        ));
    } else {
        let lines: Vec<String> = text.lines().map(escape).collect();
        write_stderr(&format!("{}\n", lines.join("\n").trim_end()));
    }
    code
}

/// Prints the error the way docs/CONTRACT.md §10 asks and returns the exit code.
pub fn report_error(err: &anyhow::Error, json: bool) -> i32 {
    report_error_as(err, json, None)
}

/// `report_error`, with `exit_code` instead of the one docs/CONTRACT.md §10 gives
/// the error's kind (`plan --detailed-exitcode` exits 1 on every error).
pub fn report_error_as(err: &anyhow::Error, json: bool, exit_code: Option<i32>) -> i32 {
    if err.chain().any(|c| c.is::<BrokenPipe>()) {
        return 0;
    }
    let ErrorWords {
        kind,
        message,
        hint,
        one_line,
    } = error_words(err, json);
    let code = exit_code.unwrap_or(kind.exit_code());
    let causes: Vec<String> = err
        .chain()
        .skip(1)
        .map(|c| escape(&c.to_string()))
        .collect();
    let report = if json {
        let value = serde_json::json!({
            "error": {
                "kind": kind.as_str(),
                "message": message,
                "causes": causes,
                "hint": hint,
                "exit_code": code,
            }
        });
        format!("{value}\n")
    } else if one_line {
        let hint = hint
            .map(|h| format!("; {}", escape(&h)))
            .unwrap_or_default();
        format!("agentcron: error: {message}{hint}\n")
    } else {
        let hint = hint
            .map(|h| format!("  hint: {}\n", escape(&h)))
            .unwrap_or_default();
        format!("agentcron: error: {message}\n{hint}")
    };
    write_stderr(&report);
    code
}

/// An error in the CLI's words: its kind, its message (escaped) and its
/// hint (as written). The CLI prints them; `agentcron mcp` hands them to
/// the agent, so both say a busy database or a full disk alike.
pub struct ErrorWords {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    /// Busy and disk full: the hint joins the message on its one line.
    pub one_line: bool,
}

/// The words of `err`: with `json`, the message is the error's own (its
/// causes go beside it), else one sentence of it and its causes.
pub fn error_words(err: &anyhow::Error, json: bool) -> ErrorWords {
    let (kind, leaf) = classify(err);
    // Busy and disk full are one line (docs/CONTRACT.md §10): their causes only
    // repeat SQLite's or PostgreSQL's wording of the same thing.
    let disk_full = kind == ErrorKind::Runtime && leaf.is_none() && is_disk_full(err);
    let step = err.downcast_ref::<Step>();
    // The store's own busy (SQLite's, PostgreSQL's lock) is said in these
    // words; agentcron's own refusal of kind busy (an agent's draft limit,
    // docs/CONTRACT.md §17) keeps its words and hint, which say when to retry.
    let store_busy = kind == ErrorKind::Busy && leaf.is_none();
    let message = match kind {
        _ if store_busy => match step {
            Some(step) => format!(
                "the database was busy while {step} (another agentcron held it past busy_timeout)"
            ),
            None => {
                "the database is busy (another agentcron held it past busy_timeout)".to_string()
            }
        },
        _ if disk_full => format!(
            "the disk holding the database is full ({})",
            escape(&err.to_string())
        ),
        _ if json => escape(&err.to_string()),
        // One line (docs/CONTRACT.md §10): the causes join the sentence.
        _ => escape(&sentence(err)),
    };
    let hint = match (kind, leaf) {
        // A step names one transaction of several: only that one is undone.
        (ErrorKind::Busy, None) if step.is_some() => {
            Some("that step changed nothing; retry in a moment".to_string())
        }
        (ErrorKind::Busy, None) => Some("nothing was changed; retry in a moment".to_string()),
        _ if disk_full => Some("free some space, then retry".to_string()),
        (_, Some(leaf)) => leaf.hint.clone(),
        _ => None,
    };
    ErrorWords {
        kind,
        message,
        hint,
        one_line: kind == ErrorKind::Busy || disk_full,
    }
}
