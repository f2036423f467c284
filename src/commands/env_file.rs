//! The tick's environment file (`tick --env-file FILE`): the store's
//! credentials, read by the tick itself, so that no printed line, unit file
//! or process environment carries them (docs/CONTRACT.md §12, §13).
//!
//! The file holds `KEY=VALUE` lines (blank lines and `#` comments aside) of
//! the names the tick reads for its store: `PGPASSWORD` and `PGPASSFILE`.
//! Any other name is refused, because the file's values must never reach a
//! run and the tick has no other use for them. The file is refused unless
//! it is a regular file (not a symbolic link) of the tick's user with no
//! permission for group or others (0600 or stricter): whoever could write
//! it would choose the password the tick sends, whoever could read it would
//! hold the store. Every refusal is a usage error (exit 2), as for the
//! store's own file (§11), naming the file and never a value.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::CmdError;

/// The names an env file may set: what the store connection reads.
pub const NAMES: [&str; 2] = ["PGPASSWORD", "PGPASSFILE"];

/// Larger than any credentials file; a bigger one is a mistake.
const MAX_BYTES: u64 = 64 * 1024;

/// What an env file sets, for the store connection.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StoreCredentials {
    pub password: Option<String>,
    pub password_file: Option<PathBuf>,
}

/// Reads `path`, which must belong to `owner` (a uid) and be private.
pub fn read(path: &Path, owner: u32) -> Result<StoreCredentials> {
    let refuse = |why: String, hint: &str| -> anyhow::Error {
        CmdError::usage(format!("--env-file {}: {why}", path.display()))
            .with_hint(hint.to_string())
            .into()
    };
    // O_NOFOLLOW: the file named, not what a link points to; the checks
    // are of the open file, so it cannot be swapped between them.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("is a symbolic link".into(), "name the file itself"))
        }
        Err(e) => return Err(refuse(
            e.to_string(),
            "write the store's credentials (PGPASSWORD=…) in a file of the tick's user, mode 0600",
        )),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("inspecting {}", path.display()))?;
    let mode = meta.mode() & 0o7777;
    if !meta.is_file() {
        return Err(refuse("is not a regular file".into(), "name a file"));
    }
    if meta.uid() != owner {
        return Err(refuse(
            format!(
                "belongs to {}, not to the tick's user {}",
                crate::accounts::label(meta.uid()),
                crate::accounts::label(owner)
            ),
            "chown it to the user the tick runs as",
        ));
    }
    if mode & 0o077 != 0 {
        return Err(refuse(
            format!("mode {mode:04o} lets others read or write it"),
            "chmod 600 it",
        ));
    }
    let mut text = String::new();
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(refuse(
            format!("is larger than {} KiB", MAX_BYTES / 1024),
            "keep only the store's credentials in it",
        ));
    }
    parse(&text).map_err(|why| refuse(why, &allowed_hint()))
}

fn allowed_hint() -> String {
    format!(
        "it holds KEY=VALUE lines of {}; a run's own settings go through --pass-env",
        NAMES.join(" and ")
    )
}

/// The file's lines: `KEY=VALUE`, blank, or a `#` comment. The value is
/// what follows `=` to the end of the line, without surrounding blanks
/// (no quotes, no escapes). The last of a repeated name wins.
fn parse(text: &str) -> Result<StoreCredentials, String> {
    let mut found = StoreCredentials::default();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let number = number + 1;
        // The line may hold a password: say where, never what.
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("line {number} is not KEY=VALUE"));
        };
        let value = value.trim().to_string();
        match name.trim() {
            "PGPASSWORD" => found.password = Some(value).filter(|v| !v.is_empty()),
            "PGPASSFILE" => found.password_file = Some(PathBuf::from(value)),
            other if other.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                return Err(format!(
                    "line {number} sets {other}, which the tick does not read from it"
                ))
            }
            _ => return Err(format!("line {number} does not start with a variable name")),
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_names_of_the_store_comments_and_blanks() {
        let text = "# the store's role\n\nPGPASSWORD = s3cr=t \nPGPASSFILE=/etc/pgpass\n";
        assert_eq!(
            parse(text),
            Ok(StoreCredentials {
                password: Some("s3cr=t".into()),
                password_file: Some("/etc/pgpass".into()),
            })
        );
    }

    #[test]
    fn other_names_and_malformed_lines_are_refused_without_their_value() {
        let other = parse("API_KEY=abc123\n").unwrap_err();
        assert_eq!(
            other,
            "line 1 sets API_KEY, which the tick does not read from it"
        );
        let bare = parse("# x\nhunter2\n").unwrap_err();
        assert_eq!(bare, "line 2 is not KEY=VALUE");
        let odd = parse("export PGPASSWORD=hunter2\n").unwrap_err();
        assert!(!odd.contains("hunter2"), "{odd}");
    }
}
