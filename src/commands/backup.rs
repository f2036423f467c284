//! `agentcron backup`: a consistent, self-contained copy of the store.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use crate::context::Ctx;

/// Write a consistent copy of the SQLite store to a new file, while ticks run
///
/// The copy is one snapshot (ticks may go on meanwhile), compacted, with no
/// `-wal` of its own, mode 0600; an existing FILE is never replaced. It is
/// written as `.FILE.agentcron-partial-<random>` beside FILE and renamed to
/// FILE once complete and synced, so an interrupted backup leaves no FILE
/// (TERM, INT and HUP remove the temporary too; exit 128 + the signal). Restore by
/// stopping cron's ticks, moving the copy to the `--db` path (removing the old
/// file's `-wal` and `-shm`), and running `agentcron check`. On PostgreSQL use
/// pg_dump (or `export`, which `import` reads back).
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The new file to write
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub file: PathBuf,
}

pub fn run(ctx: &mut Ctx, args: BackupArgs) -> Result<i32> {
    // The copy's folder is held to the store's rule (docs/CONTRACT.md §11):
    // whoever can rename the copy away can leave a store of theirs to be
    // restored, whose tasks the tick then runs.
    let file = std::path::absolute(&args.file)
        .with_context(|| format!("resolving the backup path {}", args.file.display()))?;
    crate::store::sqlite::check_folders_of(&file, "the backup")?;
    // TERM, INT and HUP stop the copy and remove its temporary file.
    crate::interrupt::catch_stop_signals()
        .map_err(|e| anyhow::anyhow!("cannot catch stop signals: {e}"))?;
    let store = ctx.store()?;
    // A store at an older schema is copied as it is (docs/CONTRACT.md §21):
    // the copy is the way back to the build that wrote it.
    let (found, latest) = (store.schema_version()?, store.migrations().len() as i64);
    let written = store.backup_to(&args.file);
    if let (Err(_), Some(signal)) = (&written, crate::interrupt::received()) {
        ctx.out.warn(&format!(
            "interrupted by {}: no backup was written",
            crate::interrupt::name(signal)
        ));
        return Ok(crate::interrupt::exit_code(signal));
    }
    written?;
    let bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    let shown = args.file.display().to_string();
    if ctx.out.json {
        ctx.out
            .document(&json!({"backup": shown, "bytes": bytes, "schema": found}))?;
        return Ok(0);
    }
    // A line to paste: the path quoted for a shell.
    let verify = shell_words::join(["agentcron", "--db", shown.as_str(), "check"]);
    let older = if found < latest {
        format!(", at schema {found} as the store is (older than this build's {latest})")
    } else {
        String::new()
    };
    ctx.out.line(&format!(
        "Backed up to {} ({bytes} bytes{older}); `{}` verifies it.",
        crate::text::escape(&shown),
        crate::text::escape(&verify)
    ))?;
    Ok(0)
}
