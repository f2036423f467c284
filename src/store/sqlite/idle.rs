//! The idle tick's note beside a SQLite store (`store::idle`): `<db>-idle`,
//! written whole (a new file renamed over the old) by a tick that found
//! nothing to do, read by the next tick before it opens the store.

use std::fs;
use std::io::{Read, Write};
#[cfg(test)]
use std::os::unix::fs::PermissionsExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{Context, Result};

use super::files;
use crate::store::idle::{Asked, IdleNote, NOTE_SUFFIX};

/// A note is a few hundred bytes: a longer file is not one.
const NOTE_MAX_BYTES: u64 = 4096;

/// The `-wal`'s header: its magic, page size, checkpoint sequence, salts
/// and checksum. A checkpoint that starts the WAL over writes new salts.
const WAL_HEADER_BYTES: usize = 32;

/// The WAL index's header in the `-shm` (SQLite's `WalIndexHdr`), kept
/// twice in a row. Byte 12 says it is initialised.
const WAL_INDEX_HEADER_BYTES: usize = 48;

/// What of that header the committed state decides: the page size, the
/// last valid frame, the database's size in pages, the running checksum
/// of the frames and the WAL's salts. Not the transaction counter nor the
/// header's own checksum over it: the first process to connect after all
/// others closed (a `status`, a `metrics` run by cron) rebuilds the index
/// from the `-wal`, and the rebuilt counter starts again; the rest is what
/// the `-wal` holds, the same however often it is rebuilt.
const COMMITTED_STATE: std::ops::Range<usize> = 12..40;

/// The store's files as they are now, in one line: inode, size, change
/// time, mode and owner of the `.db` (a write, a chmod or chown, or a file
/// put in its place changes them) and the mode and owner of its folder; inode, size and
/// header of the `-wal`; and the WAL index's last frame and running
/// checksum, which every commit moves (`COMMITTED_STATE`). The `-wal` alone
/// cannot say: a WAL started over keeps its length, and the commits after
/// it write inside that length under the same header. None when any part
/// cannot be read (no `-shm`: no WAL index to compare), or the two copies
/// of the index's header differ (a commit is writing them).
pub fn files_now(db: &Path) -> Option<String> {
    let store = fs::symlink_metadata(db)
        .ok()
        .filter(|m| m.file_type().is_file())?;
    let folder = match db.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs::metadata(parent),
        _ => fs::metadata("."),
    }
    .ok()?;
    let (wal_inode, wal_len, wal_header) = wal_now(db)?;
    let index = wal_index_header(db)?;
    Some(format!(
        "{}:{}:{}.{:09}:{:o}:{}:{:o}:{}:{wal_inode}:{wal_len}:{}:{}",
        store.ino(),
        store.len(),
        store.ctime(),
        store.ctime_nsec(),
        store.mode(),
        store.uid(),
        folder.mode(),
        folder.uid(),
        hex(&wal_header),
        hex(&index),
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `-wal`'s inode, size and header (all zero and empty when there is
/// none). Read through a descriptor of our own: SQLite takes no lock on
/// the `-wal`, so closing it drops none.
fn wal_now(db: &Path) -> Option<(u64, u64, Vec<u8>)> {
    let wal = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(files::sidecar(db, "-wal"));
    match wal {
        Ok(file) => {
            let meta = file.metadata().ok()?;
            let mut header = Vec::with_capacity(WAL_HEADER_BYTES);
            file.take(WAL_HEADER_BYTES as u64)
                .read_to_end(&mut header)
                .ok()?;
            Some((meta.ino(), meta.len(), header))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some((0, 0, Vec::new())),
        Err(_) => None,
    }
}

/// The WAL index's header, when its two copies agree and it is
/// initialised. Read without SQLite's locks, as SQLite's own readers first
/// do: copies that differ are a commit under way, and say nothing.
///
/// The `-shm` is read through a descriptor this process keeps open until
/// it exits: closing a descriptor of a file drops every POSIX lock the
/// process holds on it, and a connection of this process holds SQLite's
/// locks on the `-shm` (files.rs, `tighten_sidecars`).
fn wal_index_header(db: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let shm = kept_open(&files::sidecar(db, "-shm"))?;
    let mut both = [0u8; 2 * WAL_INDEX_HEADER_BYTES];
    shm.read_exact_at(&mut both, 0).ok()?;
    let (first, second) = both.split_at(WAL_INDEX_HEADER_BYTES);
    (first == second && first[12] == 1).then(|| first[COMMITTED_STATE].to_vec())
}

/// `path` opened read-only once in this process and never closed (see
/// `wal_index_header`); opened again when another file took its place.
fn kept_open(path: &Path) -> Option<std::sync::Arc<fs::File>> {
    use std::sync::{Arc, Mutex};
    static OPENED: Mutex<Vec<(u64, Arc<fs::File>)>> = Mutex::new(Vec::new());
    let inode = fs::symlink_metadata(path).ok()?.ino();
    let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, file)) = opened.iter().find(|(i, _)| *i == inode) {
        return Some(Arc::clone(file));
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let file = Arc::new(file);
    opened.push((file.metadata().ok()?.ino(), Arc::clone(&file)));
    Some(file)
}

/// The note beside `db`, when there is one that reads as a note: a
/// regular file of the database's owner that no one else may read or
/// write (as `write_note` leaves it), so that no other user can plant one.
pub fn read_note(db: &Path) -> Option<IdleNote> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(files::sidecar(db, NOTE_SUFFIX))
        .ok()?;
    let (note, store) = (file.metadata().ok()?, fs::symlink_metadata(db).ok()?);
    if !note.file_type().is_file() || note.uid() != store.uid() || note.mode() & 0o077 != 0 {
        return None;
    }
    let mut text = String::new();
    file.take(NOTE_MAX_BYTES).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Replaces the note beside `db` with `note`, whole: written to a file of
/// this process's own, then renamed over the note, so that a reader sees
/// one note or the other, never parts of two. 0600, the database's owner's.
pub fn write_note(db: &Path, note: &IdleNote) -> Result<()> {
    // A tick run as root leaves the note to the store's owner, whose own
    // ticks read it.
    let owner = files::check_database(db)?;
    let path = files::sidecar(db, NOTE_SUFFIX);
    let draft = files::sidecar(db, &format!("{NOTE_SUFFIX}.{}", std::process::id()));
    let mut text = serde_json::to_string(note).context("writing the idle note")?;
    text.push('\n');
    let written = (|| -> std::io::Result<()> {
        // A draft a killed tick of the same pid left: never written through.
        let _ = fs::remove_file(&draft);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&draft)?;
        files::hand_to(&file, owner)?;
        file.write_all(text.as_bytes())?;
        drop(file);
        fs::rename(&draft, &path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&draft);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

/// The note, when it lets a tick `asked` at `now` end without
/// opening the store (`IdleNote::lets_tick_rest`, `rest_for`), the store's
/// files are still those it was read from, and no fold is owed.
pub fn glance(db: &Path, now: i64, asked: &Asked<'_>, rest_for: i64) -> Option<IdleNote> {
    let note = read_note(db)?;
    if !note.lets_tick_rest(now, asked, rest_for) || files_now(db)? != note.files {
        return None;
    }
    // A fold owed (a command killed during its fold) is the full tick's
    // to do as it closes.
    let fold_owed = fs::symlink_metadata(files::sidecar(db, super::FOLD_MARKER)).is_ok();
    (!fold_owed).then_some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(files: &str) -> IdleNote {
        IdleNote {
            at: 100,
            recorded_at: 100,
            seconds: "0.002".into(),
            deployment: crate::store::idle::Deployment {
                host: "h".into(),
                build: "b".into(),
                max_running: String::new(),
                runs_uid: 1,
                store_uid: 1,
            },
            notices: crate::store::idle::NoticeRules {
                notifier: false,
                give_up_seconds: 60,
            },
            until: Some(1000),
            files: files.into(),
        }
    }

    /// A WAL index whose header (twice, initialised) holds `frames` as its
    /// last valid frame.
    fn index(frames: u8) -> Vec<u8> {
        let mut header = [0u8; WAL_INDEX_HEADER_BYTES];
        header[12] = 1;
        header[16] = frames;
        [header, header].concat()
    }

    /// A `.db`, its `-wal` and `-shm` in a folder of their own.
    fn store() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        std::fs::write(&db, b"x").unwrap();
        std::fs::write(files::sidecar(&db, "-wal"), [7u8; 40]).unwrap();
        std::fs::write(files::sidecar(&db, "-shm"), index(1)).unwrap();
        (dir, db)
    }

    #[test]
    fn a_note_is_read_as_written_and_nothing_else_reads_as_one() {
        let (dir, db) = store();
        assert_eq!(read_note(&db), None);
        let files = files_now(&db).unwrap();
        write_note(&db, &note(&files)).unwrap();
        assert_eq!(read_note(&db), Some(note(&files)));
        let path = files::sidecar(&db, NOTE_SUFFIX);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        // No draft is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
        // One others may write could have been put there by them.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
        assert_eq!(read_note(&db), None);
        std::fs::write(&path, b"{\"at\": 5").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_note(&db), None);
    }

    #[test]
    fn any_commit_changes_the_files() {
        let (_dir, db) = store();
        let (wal, shm) = (files::sidecar(&db, "-wal"), files::sidecar(&db, "-shm"));
        let before = files_now(&db).unwrap();
        assert_eq!(files_now(&db).unwrap(), before);
        // A commit inside the -wal's length under the same header (a WAL
        // started over keeps its length): only the WAL index says so.
        std::fs::write(&shm, index(2)).unwrap();
        let committed = files_now(&db).unwrap();
        assert_ne!(committed, before);
        // A commit that appends: the -wal grows.
        std::fs::write(&wal, [7u8; 41]).unwrap();
        let grown = files_now(&db).unwrap();
        assert_ne!(grown, committed);
        // Started over: its header differs.
        let mut over = [7u8; 41];
        over[16] = 8;
        std::fs::write(&wal, over).unwrap();
        assert_ne!(files_now(&db).unwrap(), grown);
        // A commit writing the index's two copies: no answer until both agree.
        let mut torn = index(3);
        torn[16] = 4;
        std::fs::write(&shm, torn).unwrap();
        assert_eq!(files_now(&db), None);
        std::fs::write(&shm, index(3)).unwrap();
        // The index rebuilt by the next process to connect: its transaction
        // counter starts again, the committed state is the same.
        let before = files_now(&db).unwrap();
        let mut rebuilt = index(3);
        rebuilt[8] = 9;
        rebuilt[8 + WAL_INDEX_HEADER_BYTES] = 9;
        std::fs::write(&shm, rebuilt).unwrap();
        assert_eq!(files_now(&db).unwrap(), before);
        // Another file in the .db's place, or its mode changed.
        let before = files_now(&db).unwrap();
        let other = db.with_file_name("other.db");
        std::fs::write(&other, b"x").unwrap();
        std::fs::rename(&other, &db).unwrap();
        let replaced = files_now(&db).unwrap();
        assert_ne!(replaced, before);
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_ne!(files_now(&db).unwrap(), replaced);
        // A symlink in its place is no store.
        std::fs::remove_file(&db).unwrap();
        std::os::unix::fs::symlink(&wal, &db).unwrap();
        assert_eq!(files_now(&db), None);
    }
}
