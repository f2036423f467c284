//! The person's own terminal (`/dev/tty`): where an interactive `confirm`
//! of an agent's draft shows a one-time code and reads it back
//! (docs/CONTRACT.md §17). Not stdout or stderr, which may be a pipe that
//! an agent reads; the controlling terminal is the person's.

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};

use anyhow::{Context, Result};

const TTY: &str = "/dev/tty";

/// Whether this process runs interactively: its standard input is a
/// terminal and it has a controlling terminal to talk to.
pub fn is_interactive() -> bool {
    io::stdin().is_terminal() && OpenOptions::new().read(true).write(true).open(TTY).is_ok()
}

/// Shows `text` on the controlling terminal and reads back one line (at
/// most 64 bytes), without its line ending.
pub fn show_and_read(text: &str, prompt: &str) -> Result<String> {
    let tty = OpenOptions::new()
        .read(true)
        .write(true)
        .open(TTY)
        .context("opening the controlling terminal")?;
    let mut writer = &tty;
    writer
        .write_all(format!("{text}\n{prompt}").as_bytes())
        .and_then(|_| writer.flush())
        .context("writing to the controlling terminal")?;
    let mut line = String::new();
    BufReader::new((&tty).take(64))
        .read_line(&mut line)
        .context("reading from the controlling terminal")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}
