//! `agentcron backup FILE`: a copy that is either whole or absent.
//!
//! `VACUUM INTO` writes a hidden temporary beside FILE, named
//! `.FILE.agentcron-partial-<random>`, which is fsynced and then renamed into
//! place without replacing anything (RENAME_NOREPLACE), and the folder
//! fsynced. So FILE appears only once it is complete: a backup killed half-way
//! (even by SIGKILL) leaves no FILE, only that temporary, whose name is never
//! one a backup was asked for. TERM, INT and HUP stop the copy (SQLite's
//! interrupt, from a watcher thread that sees the noted signal) and remove the
//! temporary before the command exits.

use std::fs;
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use rusqlite::Connection;

use super::files;
use crate::error::CmdError;

/// The infix of a backup's temporary name (docs/CONTRACT.md §11).
pub const PARTIAL: &str = ".agentcron-partial-";

/// How often the watcher looks for a stop signal while the copy runs.
const WATCH_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

pub fn write(conn: &Connection, path: &Path) -> Result<()> {
    // A symlinked folder on the way is followed (SQLite's NOFOLLOW would
    // refuse it); FILE itself must not exist, not even as a symlink.
    let target = files::resolve_folder(path)?;
    if fs::symlink_metadata(&target).is_ok() {
        return Err(already_exists(path));
    }
    let partial = partial_name(&target)?;
    // VACUUM INTO needs a new or empty file: made here, 0600, never followed.
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&partial)
        .map_err(|e| {
            CmdError::usage(format!("cannot create the backup {}: {e}", path.display()))
        })?;
    let written = copy(conn, &partial)
        .and_then(|()| sync(&partial))
        .and_then(|()| match crate::interrupt::received() {
            Some(signal) => Err(interrupted(signal)),
            None => publish(&partial, &target, path),
        });
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written.with_context(|| format!("writing the backup {}", path.display()))
}

/// `VACUUM INTO partial`, interrupted when a stop signal is noted.
fn copy(conn: &Connection, partial: &Path) -> Result<()> {
    let name = partial.to_str().context("the backup path is not UTF-8")?;
    let handle = conn.get_interrupt_handle();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if crate::interrupt::received().is_some() {
                    handle.interrupt();
                    return;
                }
                std::thread::sleep(WATCH_PAUSE);
            }
        });
        let copied = conn.execute("VACUUM INTO ?1", [name]);
        done.store(true, Ordering::SeqCst);
        match (copied, crate::interrupt::received()) {
            (_, Some(signal)) => Err(interrupted(signal)),
            (Ok(_), None) => Ok(()),
            (Err(e), None) => Err(e.into()),
        }
    })
}

fn sync(file: &Path) -> Result<()> {
    fs::File::open(file)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("syncing {}", file.display()))
}

/// Renames the complete copy into place, refusing to replace a file that
/// appeared meanwhile, and makes the new name durable.
fn publish(partial: &Path, target: &Path, asked: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(partial.as_os_str().as_bytes())?;
    let to = std::ffi::CString::new(target.as_os_str().as_bytes())?;
    // SAFETY: renameat2 reads two NUL-terminated paths we own.
    let renamed = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if renamed != 0 {
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EEXIST) => return Err(already_exists(asked)),
            // A file system without RENAME_NOREPLACE: a hard link never
            // replaces either, then the temporary name goes.
            Some(libc::EINVAL | libc::ENOSYS) => {
                fs::hard_link(partial, target).map_err(|e| match e.kind() {
                    IoKind::AlreadyExists => already_exists(asked),
                    _ => anyhow::Error::new(e).context("renaming the copy into place"),
                })?;
                fs::remove_file(partial).context("removing the temporary copy")?;
            }
            _ => return Err(anyhow::Error::new(error).context("renaming the copy into place")),
        }
    }
    if let Some(folder) = target.parent() {
        fs::File::open(folder)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing the folder {}", folder.display()))?;
    }
    Ok(())
}

/// `.FILE.agentcron-partial-<random>` in FILE's folder.
fn partial_name(target: &Path) -> Result<PathBuf> {
    let name = target
        .file_name()
        .with_context(|| format!("{} names no file", target.display()))?;
    let mut hidden = std::ffi::OsString::from(".");
    hidden.push(name);
    hidden.push(PARTIAL);
    hidden.push(uuid::Uuid::new_v4().simple().to_string());
    Ok(target.with_file_name(hidden))
}

fn already_exists(path: &Path) -> anyhow::Error {
    CmdError::usage(format!("the backup {} already exists", path.display()))
        .with_hint("backup never replaces a file: name a new one")
        .into()
}

/// The copy was stopped by a signal; the command exits 128 + it.
fn interrupted(signal: i32) -> anyhow::Error {
    anyhow::Error::new(crate::error::CmdError::runtime(format!(
        "interrupted by {}: no backup was written",
        crate::interrupt::name(signal)
    )))
}
