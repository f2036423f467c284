//! Opening the database file safely and setting the connection up.
//!
//! A command that only reads opens a store it may not write (a read-only
//! file system, a folder this user cannot write) read-only: SQLite reads the
//! WAL through an existing `-shm`, and a store with no WAL to read (the `.db`
//! alone holds every committed change, docs/CONTRACT.md §11) is read as immutable
//! media, needing no `-shm` at all. A command that writes there fails with
//! one line saying the store is read-only. A store opened never to write
//! (shell completion) is opened the same read-only way wherever it is.

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
    // A store opened never to write is never created either.
    let create = options.create && !options.never_write;
    let exists = check_path(path)?;
    if !exists && !create {
        // Without CREATE in the flags below, SQLite itself would refuse too
        // (were the file removed after this check), so nothing is created.
        return Err(CmdError::not_found(format!(
            "no database at {}; `agentcron draft` creates it",
            path.display()
        ))
        .with_hint(
            "check --db (or AGENTCRON_DB, e.g. on cron's command line); only draft, plan/apply, import and `zone set` or `profile set` with --create-store create a store",
        )
        .into());
    }
    // The bundled SQLite is built with URI names enabled globally; only a
    // name beginning with `file:` is read as a URI, and an absolute path never
    // does, so `file:x?mode=memory` stays a plain file name.
    // SQLITE_OPEN_NOFOLLOW refuses a symlink anywhere in the path, so the
    // folders are resolved here; the final component stays unresolved (and
    // check_path refused it as a symlink).
    let given = path;
    let resolved = files::resolve_folder(path)?;
    let path = resolved.as_path();
    // Who may write these files decides who chooses what the tick runs.
    files::check_folders(path)?;
    // A failed first open leaves behind none of the files made for it
    // (an existing store's are never removed: no stat for them).
    let made = (!exists).then(|| files::Made::before(path));
    let conn = open_resolved(path, options, create);
    if let (Err(e), Some(made)) = (&conn, made) {
        // Busy: another first use is racing this one and goes on with them.
        if !crate::store::fault::is_busy(e) {
            made.remove_new();
        }
    }
    // Errors name the resolved path; the person typed the other one.
    if path != given {
        return conn.with_context(|| format!("--db {}", given.display()));
    }
    conn
}

fn open_resolved(path: &Path, options: &OpenOptions, create: bool) -> Result<Connection> {
    if create {
        ensure_file(path)?;
    }
    let owner = files::check_database(path)?;
    // A 0-byte file (what `touch` leaves) or another program's database is
    // no store: only a command that creates stores makes one of it.
    if !create && files::holds_no_store(path)? {
        return Err(crate::store::schema::no_store(&path.display().to_string()).into());
    }
    // Never to write: read-only even where this user could write, with no
    // sidecar prepared and no WAL switch.
    // A command that only reads leaves a copy in rollback mode as it is
    // (`check` of a backup): no switch to WAL, no sidecars beside it.
    if options.never_write
        || (options.read_only && (!writable(path) || files::in_rollback_mode(path)?))
    {
        return open_read_only(path, options);
    }
    files::prepare_sidecars(path, owner)?;
    // No SQLITE_OPEN_URI: `file:x?nolock=1` stays a plain file name. NOFOLLOW
    // closes the race between our symlink check and SQLite's own open.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_EXRESCODE;
    let conn = Connection::open_with_flags(path, flags)
        .with_context(|| format!("opening the database {}", path.display()))?;
    keep_statements(&conn);
    super::busy::wait_for_locks(&conn, options.busy_timeout)?;
    // Switching a new file to WAL races the other first uses of it.
    super::busy::retry_while_busy(options.busy_timeout, || configure(&conn))
        .map_err(|e| read_only_store(path, not_a_database(path, e)))?;
    #[cfg(any(test, feature = "test-hooks"))]
    super::trace::watch(&conn);
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

/// Whether this user may write `path` (false on a read-only file system).
fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        // SAFETY: access() reads a NUL-terminated path we own.
        .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
}

/// Whether this user may write the database file and create files beside it.
fn writable(db: &Path) -> bool {
    may_write(db) && db.parent().is_none_or(may_write)
}

/// Opens a store read-only: one this user cannot write, for a command that
/// only reads, or any store opened never to write.
fn open_read_only(path: &Path, options: &OpenOptions) -> Result<Connection> {
    let wal = files::sidecar(path, "-wal");
    let wal_bytes = fs::metadata(&wal).map_or(0, |m| m.len());
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_EXRESCODE;
    let conn = if wal_bytes == 0 && !may_write(path) {
        // Nothing in a WAL and a file nobody here can change (read-only
        // media; a writable file in a read-only folder could be checkpointed
        // into under our feet, so it is read through SQLite's locks): the
        // file is the whole store, read without locks or a -shm. The URI is
        // ours, built from the absolute path with every other byte
        // percent-encoded, so no part of --db is read as a URI parameter.
        Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
    } else {
        Connection::open_with_flags(path, flags)
    }
    .with_context(|| format!("opening the database {} read-only", path.display()))?;
    keep_statements(&conn);
    super::busy::wait_for_locks(&conn, options.busy_timeout)?;
    let read: rusqlite::Result<String> =
        conn.query_row("PRAGMA journal_mode", [], |row| row.get(0));
    match read {
        Ok(_) => Ok(conn),
        // SQLite's own words ("unable to open database file") say less.
        Err(_) => Err(anyhow::Error::new(
            CmdError::runtime(format!(
                    "cannot read {}: its folder is not writable and SQLite cannot read it without a -shm beside it (-wal: {wal_bytes} bytes)",
                    path.display()
                ),
            )
            .with_hint("copy the .db with its -wal to a writable folder, or open it once where its folder is writable"),
        )),
    }
}

/// `file:///…?immutable=1` for an absolute path.
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// Says in one line that a write failed because the store is read-only here
/// (SQLITE_READONLY, or a file SQLite could not open beside a store this user
/// cannot write); any other error is returned as it is.
pub fn read_only_store(path: &Path, err: anyhow::Error) -> anyhow::Error {
    let code = err
        .chain()
        .find_map(|c| match c.downcast_ref::<rusqlite::Error>() {
            Some(rusqlite::Error::SqliteFailure(e, _)) => Some(e.code),
            _ => None,
        });
    let read_only = match code {
        Some(rusqlite::ErrorCode::ReadOnly) => true,
        Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::SystemIoFailure) => {
            !writable(path)
        }
        _ => false,
    };
    if !read_only {
        return err;
    }
    anyhow::Error::new(
        CmdError::runtime(format!(
                "the database {} is read-only here: its folder or file system is not writable",
                path.display()
            ),
        )
        .with_hint("mount it read-write, or copy the store to a writable folder, to change it; commands that only read (list, show, status, check, backup) can still read it"),
    )
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
            CmdError::runtime(format!(
                "{} is not an agentcron database (not SQLite, or damaged)",
                path.display()
            ))
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
        Err(e) => Err(super::files::inspect_error(path, e)),
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

/// Room for every statement a tick prepares over and over: each claim and
/// settle runs some 20 (a profile's read, its count, the budgets' and
/// gates' own), and rusqlite's default cache of 16 evicted them in turn, so
/// a claim re-parsed SQL it had parsed a run before (+0.3 ms of a tick's CPU
/// per run, measured; issue 47).
const STATEMENTS_KEPT: usize = 64;

fn keep_statements(conn: &Connection) {
    conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    /// Whether some process other than a fresh child of this one holds a
    /// lock on byte `offset` of `file` (F_GETLK from a forked child: POSIX
    /// locks belong to processes, so only another process sees ours).
    fn locked_for_others(file: &Path, offset: i64) -> bool {
        let name = CString::new(file.as_os_str().as_bytes()).unwrap();
        // SAFETY: the child only makes async-signal-safe calls (open, fcntl,
        // _exit) on data prepared before the fork.
        unsafe {
            match libc::fork() {
                0 => {
                    let fd = libc::open(name.as_ptr(), libc::O_RDWR);
                    let mut lock: libc::flock = std::mem::zeroed();
                    lock.l_type = libc::F_WRLCK as libc::c_short;
                    lock.l_whence = libc::SEEK_SET as libc::c_short;
                    lock.l_start = offset;
                    lock.l_len = 1;
                    let rc = libc::fcntl(fd, libc::F_GETLK, &mut lock);
                    let held = rc == 0 && lock.l_type != libc::F_UNLCK as libc::c_short;
                    libc::_exit(if held { 0 } else { 1 });
                }
                pid => {
                    let mut status = 0;
                    libc::waitpid(pid, &mut status, 0);
                    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
                }
            }
        }
    }

    #[test]
    fn a_second_connection_keeps_the_first_ones_wal_index_locks() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let options = OpenOptions {
            busy_timeout: std::time::Duration::from_secs(1),
            create: true,
            ..Default::default()
        };
        let first = connect(&db, &options).unwrap();
        first
            .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        // SQLite's unix VFS: every connection holds a shared lock on the
        // -shm's "DMS" byte (120 + 8) while it is open; without it, the next
        // process to connect thinks it is alone and rebuilds the WAL index
        // under the first connection's feet.
        let shm = dir.path().join("t.db-shm");
        assert!(locked_for_others(&shm, 128), "the first connection's lock");
        // A second connection in the same process (a shell completion
        // beside a command's own, a test's inspecting one).
        let _second = connect(&db, &options).unwrap();
        assert!(
            locked_for_others(&shm, 128),
            "opening a second connection released the first one's -shm lock"
        );
    }
}
