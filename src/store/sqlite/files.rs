//! Who may write the database's files (docs/CONTRACT.md §11). Whoever can write
//! the database, its `-wal` or `-shm`, or replace them in their folder, can
//! insert tasks that the tick runs as the user running it (often root). So:
//!
//! - an existing database, `-wal` or `-shm` writable by the group or by
//!   others is refused, and so is any folder above it writable by the group
//!   or by others without the sticky bit (which lets them rename it away);
//! - a database owned by someone else is refused, except for root;
//! - `-wal` and `-shm` must belong to the database's owner, be regular files
//!   with one link (a symbolic link is named as such), and are created here,
//!   before SQLite would (so nobody slips theirs in between), 0600 whatever
//!   the umask and, when root opens another user's database, handed to that
//!   user; once SQLite has them open they are set back to 0600, since SQLite
//!   gives an empty one the database's mode.
//!
//! Each refusal is a usage error (exit 2) naming the file and its mode.

use std::fs::{self, Metadata};
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::CmdError;

/// Write bits for the group and for others.
const SHARED_WRITE: u32 = 0o022;
const STICKY: u32 = 0o1000;

fn refuse(path: &Path, why: String, hint: &str) -> anyhow::Error {
    CmdError::usage(format!("refusing {}: {why}", path.display()))
        .with_hint(hint)
        .into()
}

/// Every existing folder above `db` (which is absolute) is writable only by
/// its owner, or has the sticky bit (as /tmp does).
pub fn check_folders(db: &Path) -> Result<()> {
    check_folders_of(db, "the database")
}

/// `check_folders` for `file`, `what` in the refusal ("the backup": whoever
/// can swap the copy chooses what a restored store runs).
pub fn check_folders_of(file: &Path, what: &str) -> Result<()> {
    for folder in file.ancestors().skip(1) {
        if folder.as_os_str().is_empty() {
            continue;
        }
        let meta = match fs::metadata(folder) {
            Ok(meta) => meta,
            Err(e) if e.kind() == IoKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("inspecting {}", folder.display())),
        };
        let mode = meta.mode() & 0o7777;
        if meta.is_dir() && mode & SHARED_WRITE != 0 && mode & STICKY == 0 {
            return Err(refuse(
                folder,
                format!(
                    "mode {mode:04o} lets other users replace {what} (writable without the sticky bit)"
                ),
                &format!("chmod go-w the folder (or +t), or keep {what} in a private folder"),
            ));
        }
    }
    Ok(())
}

/// The error for a store path that could not be inspected: when permission
/// was denied, which folder stopped us, whose it is and its mode, so the
/// person knows whose store it is and as whom to run.
pub fn inspect_error(path: &Path, e: std::io::Error) -> anyhow::Error {
    if e.kind() != IoKind::PermissionDenied {
        return anyhow::Error::new(e).context(format!("inspecting {}", path.display()));
    }
    // The nearest folder we can still look at is the one we may not enter.
    let blocker = path
        .ancestors()
        .skip(1)
        .find_map(|folder| fs::symlink_metadata(folder).ok().map(|m| (folder, m)));
    match blocker {
        Some((folder, meta)) => CmdError::usage(format!(
            "cannot reach {}: permission denied by the folder {} (owner {}, mode {:04o})",
            path.display(),
            folder.display(),
            crate::accounts::label(meta.uid()),
            meta.mode() & 0o7777
        ))
        .with_hint(format!(
            "run agentcron as {}, whose store it is, or give --db a store of your own",
            crate::accounts::label(meta.uid())
        ))
        .into(),
        None => anyhow::Error::new(e).context(format!("inspecting {}", path.display())),
    }
}

/// Who owns the database file, once it is known to be safe to use.
#[derive(Debug, Clone, Copy)]
pub struct Owner {
    uid: u32,
    gid: u32,
}

/// Checks the existing database file's mode and owner.
pub fn check_database(db: &Path) -> Result<Owner> {
    let meta = fs::symlink_metadata(db).map_err(|e| inspect_error(db, e))?;
    not_shared(db, &meta)?;
    let me = euid();
    if meta.uid() != me && me != 0 {
        return Err(refuse(
            db,
            format!(
                "it belongs to {}, mode {:04o}, not to you (uid {me})",
                crate::accounts::label(meta.uid()),
                meta.mode() & 0o7777
            ),
            "run agentcron as the database's owner",
        ));
    }
    Ok(Owner {
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

/// Whether `db` holds no agentcron store, read from its header without
/// opening it as a database (which could switch another program's file to
/// WAL): 0 bytes, or a SQLite header whose `user_version` is 0, with no
/// WAL beside it that could hold a store the file does not yet.
pub fn holds_no_store(db: &Path) -> Result<bool> {
    let header = header(db)?;
    let no_schema = match header.len() {
        0 => true,
        // Not SQLite (or damaged): opening it says so.
        100 if header.starts_with(b"SQLite format 3\0") => header[60..64] == [0; 4],
        _ => false,
    };
    Ok(no_schema && fs::metadata(sidecar(db, "-wal")).map_or(0, |m| m.len()) == 0)
}

/// Whether the database is in a rollback journal mode, not WAL, with no
/// WAL left beside it (a copy `backup` wrote): header bytes 18 and 19 say 1.
/// Reading it needs no `-shm`, so a command that only reads opens it
/// read-only rather than switch it to WAL.
pub fn in_rollback_mode(db: &Path) -> Result<bool> {
    let header = header(db)?;
    let rollback = header.len() == 100 && header[18] == 1 && header[19] == 1;
    Ok(rollback && fs::metadata(sidecar(db, "-wal")).map_or(0, |m| m.len()) == 0)
}

/// The database's first 100 bytes (fewer when the file is shorter).
fn header(db: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut header = Vec::with_capacity(100);
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(db)
        .and_then(|file| file.take(100).read_to_end(&mut header))
        .with_context(|| format!("reading {}", db.display()))?;
    Ok(header)
}

/// Creates `-wal` and `-shm` 0600 for the database's owner, or checks the
/// ones that exist. A file that cannot be created (a read-only file system)
/// is left to SQLite, which then reports what it cannot do.
pub fn prepare_sidecars(db: &Path, owner: Owner) -> Result<()> {
    for suffix in ["-wal", "-shm"] {
        let path = sidecar(db, suffix);
        let created = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path);
        match created {
            Ok(file) => {
                // The umask may have removed bits; set the mode exactly.
                file.set_permissions(fs::Permissions::from_mode(0o600))
                    .with_context(|| format!("setting the mode of {}", path.display()))?;
                hand_to(&file, owner)
                    .with_context(|| format!("handing {} to its owner", path.display()))?;
            }
            Err(e) if e.kind() == IoKind::AlreadyExists => check_sidecar(&path, owner)?,
            Err(_) => {}
        }
    }
    Ok(())
}

/// Hands a file this process just made beside the database to the
/// database's owner, when root does it for another user's store.
pub fn hand_to(file: &fs::File, owner: Owner) -> std::io::Result<()> {
    if euid() == 0 && owner.uid != 0 {
        std::os::unix::fs::fchown(file, Some(owner.uid), Some(owner.gid))?;
    }
    Ok(())
}

/// Sets `-wal` and `-shm` back to 0600 once SQLite has opened them: SQLite
/// gives an empty one the database's own mode (0644 for a database readable
/// by others), so creating them 0600 beforehand is not enough. A read-only
/// file system keeps what it has.
///
/// By path, never through a descriptor of our own: closing any descriptor
/// of a file releases every POSIX lock this process holds on it, SQLite's
/// included. A process may open a second connection while its first is in
/// use (a tick shares one, but `completion` and the tests open more, and so
/// did ticks before issue 16); a dropped lock on the -shm lets the next process to connect
/// think it is alone and rebuild the WAL index under them, which corrupts
/// the database. prepare_sidecars refused links and foreign files, and the
/// folder is the owner's alone (check_folders), so the path cannot change
/// between the look and the chmod.
pub fn tighten_sidecars(db: &Path) -> Result<()> {
    for suffix in ["-wal", "-shm"] {
        let path = sidecar(db, suffix);
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == IoKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("inspecting {}", path.display())),
        };
        if !meta.file_type().is_file() || meta.mode() & 0o7777 == 0o600 {
            continue;
        }
        match fs::set_permissions(&path, fs::Permissions::from_mode(0o600)) {
            Err(e) if e.raw_os_error() == Some(libc::EROFS) => {}
            Err(e) if e.kind() == IoKind::NotFound => {}
            other => other.with_context(|| format!("setting the mode of {}", path.display()))?,
        }
    }
    Ok(())
}

fn check_sidecar(path: &Path, owner: Owner) -> Result<()> {
    let meta =
        fs::symlink_metadata(path).with_context(|| format!("inspecting {}", path.display()))?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(refuse(
            path,
            "it is a symbolic link".into(),
            "remove it; agentcron creates it as a plain file",
        ));
    }
    if !kind.is_file() {
        return Err(refuse(
            path,
            "it is not a regular file".into(),
            "remove it; agentcron creates it as a plain file",
        ));
    }
    if meta.nlink() > 1 {
        return Err(refuse(
            path,
            "it has other hard links".into(),
            "remove it; agentcron creates it as a plain file",
        ));
    }
    not_shared(path, &meta)?;
    if meta.uid() != owner.uid {
        return Err(refuse(
            path,
            format!(
                "it belongs to uid {}, not to the database's owner (uid {})",
                meta.uid(),
                owner.uid
            ),
            "remove it when no agentcron is running; it is created again",
        ));
    }
    Ok(())
}

fn not_shared(path: &Path, meta: &Metadata) -> Result<()> {
    let mode = meta.mode() & 0o7777;
    if mode & SHARED_WRITE != 0 {
        return Err(refuse(
            path,
            format!("mode {mode:04o} is writable by other users"),
            "chmod go-w it once you have checked its tasks (agentcron check, agentcron list --all)",
        ));
    }
    Ok(())
}

/// `path` made absolute with its folders resolved: the nearest existing
/// folder above it canonicalized (a symlinked HOME, a symlinked folder on the
/// way), the rest kept as written. The final component is not followed.
pub fn resolve_folder(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path)
        .with_context(|| format!("resolving the path {}", path.display()))?;
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Ok(absolute);
    };
    let mut missing = Vec::new();
    let mut folder = parent;
    loop {
        match fs::canonicalize(folder) {
            Ok(mut real) => {
                real.extend(missing.iter().rev());
                real.push(name);
                return Ok(real);
            }
            Err(e) if e.kind() == IoKind::NotFound => match (folder.parent(), folder.file_name()) {
                (Some(up), Some(last)) => {
                    missing.push(last);
                    folder = up;
                }
                _ => return Ok(absolute),
            },
            Err(e) => return Err(e).with_context(|| format!("resolving {}", folder.display())),
        }
    }
}

/// Which of a database's three files existed before an attempt to open it,
/// so that a failed attempt removes the ones it made (docs/CONTRACT.md §11:
/// nothing is created unless the open succeeds).
pub struct Made {
    files: Vec<(PathBuf, bool)>,
}

impl Made {
    pub fn before(db: &Path) -> Made {
        let files = ["", "-wal", "-shm"]
            .iter()
            .map(|suffix| {
                let path = sidecar(db, suffix);
                let existed = fs::symlink_metadata(&path).is_ok();
                (path, existed)
            })
            .collect();
        Made { files }
    }

    /// Removes the regular files that did not exist before, when the
    /// database itself is one of them and still empty: a store that never
    /// was. Never the sidecars of a store that existed, which another
    /// process may have open.
    pub fn remove_new(self) {
        let [(db, db_existed), ..] = self.files.as_slice() else {
            return;
        };
        if *db_existed || fs::symlink_metadata(db).map_or(true, |m| m.len() > 0) {
            return;
        }
        for (path, existed) in self.files {
            let is_file = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
            if !existed && is_file {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

pub fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
