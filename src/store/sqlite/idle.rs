//! The idle tick's note beside a SQLite store (`store::idle`): `<db>-idle`,
//! written whole (a new file renamed over the old) by a tick that found
//! nothing to do, read by the next tick before it opens the store.

use std::fs;
use std::io::{Read, Write};
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

/// The store's files as they are now, in one line: inode, size and
/// modification time of the `.db`; inode, size and header of the `-wal`.
/// Every commit appends frames to the `-wal` (it grows) or starts it over
/// (new salts in its header); a copy put in the `.db`'s place, a
/// checkpoint or a truncation changes the rest. None when the `.db` is
/// not a regular file or cannot be looked at.
///
/// The `-wal` is read through a descriptor of our own: SQLite takes its
/// locks on the `.db` and the `-shm`, never the `-wal`, so closing it drops
/// no lock of a connection this process holds.
pub fn files_now(db: &Path) -> Option<String> {
    let store = fs::symlink_metadata(db)
        .ok()
        .filter(|m| m.file_type().is_file())?;
    let mut header = [0u8; WAL_HEADER_BYTES];
    let wal = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(files::sidecar(db, "-wal"));
    let (wal_inode, wal_len, header_len) = match wal {
        Ok(mut file) => {
            let meta = file.metadata().ok()?;
            let mut read = 0;
            while read < header.len() {
                match file.read(&mut header[read..]).ok()? {
                    0 => break,
                    n => read += n,
                }
            }
            (meta.ino(), meta.len(), read)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (0, 0, 0),
        Err(_) => return None,
    };
    let header: String = header[..header_len]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(format!(
        "{}:{}:{}.{:09}:{wal_inode}:{wal_len}:{header}",
        store.ino(),
        store.len(),
        store.mtime(),
        store.mtime_nsec(),
    ))
}

/// The note beside `db`, when there is one that reads as a note.
pub fn read_note(db: &Path) -> Option<IdleNote> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(files::sidecar(db, NOTE_SUFFIX))
        .ok()?;
    let mut text = String::new();
    file.take(NOTE_MAX_BYTES).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Replaces the note beside `db` with `note`, whole: written to a file of
/// this process's own, then renamed over the note, so that a reader sees
/// one note or the other, never parts of two. 0600, the database's owner's.
pub fn write_note(db: &Path, note: &IdleNote) -> Result<()> {
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
        hand_to_owner(db, &file)?;
        file.write_all(text.as_bytes())?;
        drop(file);
        fs::rename(&draft, &path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&draft);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

/// A tick run as root leaves the note to the store's owner, whose own
/// ticks read it.
fn hand_to_owner(db: &Path, file: &fs::File) -> std::io::Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let owner = fs::symlink_metadata(db)?;
    if owner.uid() == 0 {
        return Ok(());
    }
    std::os::unix::fs::fchown(file, Some(owner.uid()), Some(owner.gid()))
}

/// The note, when it lets a tick `asked` at `now` end without
/// opening the store (`IdleNote::lets_tick_rest`), no fold is owed (the
/// full tick's close does it), and the store's files are still those it
/// was read from.
pub fn glance(db: &Path, now: i64, asked: &Asked<'_>, gap: i64) -> Option<IdleNote> {
    let note = read_note(db)?;
    if !note.lets_tick_rest(now, asked, gap) {
        return None;
    }
    if fs::symlink_metadata(files::sidecar(db, super::FOLD_MARKER)).is_ok() {
        return None;
    }
    (files_now(db)? == note.files).then_some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(files: &str) -> IdleNote {
        IdleNote {
            at: 100,
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

    #[test]
    fn a_note_is_read_as_written_and_nothing_else_reads_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        std::fs::write(&db, b"x").unwrap();
        assert_eq!(read_note(&db), None);
        let files = files_now(&db).unwrap();
        write_note(&db, &note(&files)).unwrap();
        assert_eq!(read_note(&db), Some(note(&files)));
        let meta = std::fs::metadata(files::sidecar(&db, NOTE_SUFFIX)).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        // No draft is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        std::fs::write(files::sidecar(&db, NOTE_SUFFIX), b"{\"at\": 5").unwrap();
        assert_eq!(read_note(&db), None);
    }

    #[test]
    fn any_write_to_the_wal_or_the_file_changes_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        std::fs::write(&db, b"x").unwrap();
        let wal = files::sidecar(&db, "-wal");
        std::fs::write(&wal, [7u8; 40]).unwrap();
        let before = files_now(&db).unwrap();
        assert_eq!(files_now(&db).unwrap(), before);
        // Appended frames: the -wal grows.
        std::fs::write(&wal, [7u8; 41]).unwrap();
        let grown = files_now(&db).unwrap();
        assert_ne!(grown, before);
        // Started over at the same length: its header differs.
        let mut over = [7u8; 41];
        over[16] = 8;
        std::fs::write(&wal, over).unwrap();
        assert_ne!(files_now(&db).unwrap(), grown);
        // Another file in the .db's place.
        let other = dir.path().join("other.db");
        std::fs::write(&other, b"x").unwrap();
        let before = files_now(&db).unwrap();
        std::fs::rename(&other, &db).unwrap();
        assert_ne!(files_now(&db).unwrap(), before);
        // A symlink in its place is no store.
        std::fs::remove_file(&db).unwrap();
        std::os::unix::fs::symlink(&wal, &db).unwrap();
        assert_eq!(files_now(&db), None);
    }
}
