//! Reading the files `plan` and `import` are given, bounded (docs/CONTRACT.md
//! §11): a regular file only — never a FIFO (opening one blocks until a
//! writer comes, reading it may never end), a device (`/dev/zero` never
//! ends) or a directory — and never more than a cap, so no input can make
//! agentcron block forever or grow until the OOM killer comes.
//!
//! A FIFO is opened with O_NONBLOCK, so even the open cannot block; the
//! file's type is judged on the opened descriptor, not on the path, so a
//! path swapped in between cannot slip a device past the check.

use std::fs::File;
use std::io::{BufRead, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use anyhow::Result;

use crate::error::{fail, CmdError};

/// The largest tasks file `plan` and `apply` read.
pub const PLAN_MAX_BYTES: u64 = 16 << 20;

/// The longest line `import` reads; an exported row is a few KiB.
pub const IMPORT_LINE_MAX_BYTES: usize = 1 << 20;

/// Opens `path` for reading if it is a regular file. `what` names it in
/// errors ("the tasks file").
pub fn open_regular(path: &Path, what: &str) -> Result<File> {
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            CmdError::usage(format!("cannot read {what} {shown}: {e}"))
                .with_hint(format!("give the path of {what}"))
        })?;
    let kind = file
        .metadata()
        .map_err(|e| CmdError::usage(format!("cannot read {what} {shown}: {e}")))?
        .file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let is = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    fail(
        CmdError::usage(format!("{what} {shown} is {is}, not a regular file"))
            .with_hint("give the path of a file (write a pipe's output to a file first)"),
    )
}

/// The whole of a regular file as text, at most `cap` bytes.
pub fn read_capped(path: &Path, what: &str, cap: u64) -> Result<String> {
    let shown = path.display();
    let file = open_regular(path, what)?;
    let too_large = || {
        CmdError::usage(format!("{what} {shown} is larger than {} MiB", cap >> 20))
            .with_hint("split it into several files")
    };
    if file.metadata().map(|m| m.len()).unwrap_or(0) > cap {
        return fail(too_large());
    }
    // The file may grow after the look: read one byte past the cap at most.
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CmdError::usage(format!("cannot read {what} {shown}: {e}")))?;
    if bytes.len() as u64 > cap {
        return fail(too_large());
    }
    String::from_utf8(bytes)
        .map_err(|_| CmdError::usage(format!("{what} {shown} is not UTF-8 text")).into())
}

/// The next line of `reader` (without its newline), at most `cap` bytes;
/// `None` at the end. `number` is the line's, for the error.
pub fn next_line(reader: &mut dyn BufRead, cap: usize, number: usize) -> Result<Option<String>> {
    let mut bytes = Vec::new();
    let read = reader
        .take(cap as u64 + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(|e| CmdError::usage(format!("line {number}: cannot read it: {e}")))?;
    if read == 0 {
        return Ok(None);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    } else if bytes.len() > cap {
        return fail(
            CmdError::usage(format!("line {number} is longer than {} MiB", cap >> 20))
                .with_hint("give the output of `agentcron export`, one row per line"),
        );
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| CmdError::usage(format!("line {number} is not UTF-8 text")).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_may_be_as_long_as_the_cap_and_no_longer() {
        let text = b"abcd\nabcde\n";
        let mut reader: &[u8] = text;
        assert_eq!(
            next_line(&mut reader, 4, 1).unwrap().as_deref(),
            Some("abcd")
        );
        let err = next_line(&mut reader, 4, 2).unwrap_err();
        assert!(
            err.to_string().starts_with("line 2 is longer than"),
            "{err}"
        );
        let mut last: &[u8] = b"ab";
        assert_eq!(next_line(&mut last, 4, 1).unwrap().as_deref(), Some("ab"));
        assert_eq!(next_line(&mut last, 4, 2).unwrap(), None);
    }
}
