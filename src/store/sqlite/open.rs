//! Opening the database file safely and setting the connection up.

use std::fs;
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};

use super::files;
use crate::error::CmdError;
use crate::store::OpenOptions;

pub fn connect(path: &Path, options: &OpenOptions) -> Result<Connection> {
    if !check_path(path)? && !options.create {
        // Without CREATE in the flags below, SQLite itself would refuse too
        // (were the file removed after this check), so nothing is created.
        return Err(CmdError::not_found(format!(
            "no database at {}; `agentcron draft` creates it",
            path.display()
        ))
        .into());
    }
    // The bundled SQLite is built with URI names enabled globally; only a
    // name beginning with `file:` is read as a URI, and an absolute path never
    // does, so `file:x?mode=memory` stays a plain file name.
    let absolute = std::path::absolute(path)
        .with_context(|| format!("resolving the database path {}", path.display()))?;
    let path = absolute.as_path();
    // Who may write these files decides who chooses what the tick runs.
    files::check_folders(path)?;
    if options.create {
        ensure_file(path)?;
    }
    let owner = files::check_database(path)?;
    files::prepare_sidecars(path, owner)?;
    // No SQLITE_OPEN_URI: `file:x?nolock=1` stays a plain file name. NOFOLLOW
    // closes the race between our symlink check and SQLite's own open.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_EXRESCODE;
    let conn = Connection::open_with_flags(path, flags)
        .with_context(|| format!("opening the database {}", path.display()))?;
    conn.busy_timeout(options.busy_timeout)
        .context("setting busy_timeout")?;
    configure(&conn).map_err(|e| not_a_database(path, e))?;
    files::tighten_sidecars(path)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> Result<()> {
    // journal_mode is persistent; asking again on an existing WAL database is
    // a cheap read, not a write.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        anyhow::bail!("could not switch the journal to WAL (got {mode})");
    }
    // journal_size_limit: when a checkpoint resets the kept WAL, truncate it
    // back to 8 MiB, so bursts of overlapping ticks cannot leave it large.
    conn.execute_batch(
        "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 8388608;",
    )?;
    // Every invocation is a short process. Letting the last one out
    // checkpoint and delete the WAL costs the next one two extra fsyncs to
    // recreate it; keep the WAL (commits stay fsynced, and the automatic
    // checkpoint at 1000 pages still bounds it).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    persist_wal(conn);
    Ok(())
}

/// SQLITE_FCNTL_PERSIST_WAL: keep the -wal file when the connection closes.
fn persist_wal(conn: &Connection) {
    let mut on: std::os::raw::c_int = 1;
    // SAFETY: a file-control call on our own open handle with a pointer to
    // a live int, as the SQLite documentation prescribes.
    unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&mut on as *mut std::os::raw::c_int).cast(),
        );
    }
}

fn not_a_database(path: &Path, err: anyhow::Error) -> anyhow::Error {
    let is_notadb = err.chain().any(|c| {
        matches!(
            c.downcast_ref::<rusqlite::Error>(),
            Some(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::NotADatabase
        )
    });
    if is_notadb {
        anyhow::Error::new(
            CmdError::new(
                crate::error::ErrorKind::Runtime,
                format!(
                    "{} is not an agentcron database (not SQLite, or damaged)",
                    path.display()
                ),
            )
            .with_hint("point --db at another file, or restore this one from a backup"),
        )
    } else {
        err.context(format!("setting up the database {}", path.display()))
    }
}

/// Refuses paths that cannot hold persistent, private state; says whether
/// the file exists.
fn check_path(path: &Path) -> Result<bool> {
    let text = path.as_os_str();
    if text.is_empty() {
        return Err(CmdError::usage("--db is empty")
            .with_hint("give a file path")
            .into());
    }
    if text == ":memory:" {
        return Err(
            CmdError::usage("--db :memory: is refused: state must persist")
                .with_hint("give a file path, e.g. --db ~/.local/state/agentcron/agentcron.db")
                .into(),
        );
    }
    match fs::symlink_metadata(path) {
        Ok(meta) => {
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(CmdError::usage(format!(
                    "--db {} is a symbolic link, which is refused",
                    path.display()
                ))
                .with_hint("point --db at the real file")
                .into());
            }
            if kind.is_dir() {
                return Err(
                    CmdError::usage(format!("--db {} is a directory", path.display()))
                        .with_hint("give a file path inside it, e.g. --db DIR/agentcron.db")
                        .into(),
                );
            }
            if !kind.is_file() {
                return Err(CmdError::usage(format!(
                    "--db {} is not a regular file",
                    path.display()
                ))
                .into());
            }
            if meta.nlink() > 1 {
                return Err(CmdError::usage(format!(
                    "--db {} has other hard links, which is refused",
                    path.display()
                ))
                .with_hint("copy the database to a file of its own")
                .into());
            }
            Ok(true)
        }
        Err(e) if e.kind() == IoKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("inspecting {}", path.display())),
    }
}

/// Creates the file (0600) and its missing parents (0700) on first use.
fn ensure_file(path: &Path) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("creating the folder {}", parent.display()))?;
            // The umask may have removed bits we need; set the mode exactly.
            fs::set_permissions(parent, fs::Permissions::from_mode(0o700))
                .with_context(|| format!("setting the mode of {}", parent.display()))?;
        }
    }
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file
            .set_permissions(fs::Permissions::from_mode(0o600))
            .with_context(|| format!("setting the mode of {}", path.display())),
        Err(e) if e.kind() == IoKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating the database {}", path.display())),
    }
}
