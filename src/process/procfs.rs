//! What the subreaper and the run check read of other processes in /proc:
//! a process's state, parent, group, session and start time, its children,
//! and the run id in its environment. Reads only; a process that is gone
//! (or not ours to read) reads as `None`, never as an error.

use std::fs;

/// The fields of `/proc/PID/stat` agentcron uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub zombie: bool,
    pub ppid: i32,
    pub pgrp: i32,
    /// Clock ticks after boot: with the pid, names one process for the
    /// life of the machine (a pid alone is recycled).
    pub start: u64,
}

pub(super) fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses `pid (comm) state ppid pgrp session … starttime …`; the command
/// name may hold spaces and parentheses, so fields are counted after the
/// last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after = text.get(text.rfind(')')? + 1..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(Stat {
        zombie: matches!(*fields.first()?, "Z" | "X"),
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        // Field 22 of the line, the 20th after the command name.
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The children of `pid`, every thread's. `thread_only` reads just the
/// thread `pid` itself (the main thread: where the kernel reparents
/// orphans to a subreaper). Without CONFIG_PROC_CHILDREN, every process is
/// looked at for its parent.
pub(super) fn children(pid: i32, thread_only: bool) -> Vec<i32> {
    let mut out = Vec::new();
    let tasks: Vec<String> = if thread_only {
        vec![pid.to_string()]
    } else {
        match fs::read_dir(format!("/proc/{pid}/task")) {
            Ok(dir) => dir
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => return out,
        }
    };
    for task in tasks {
        match fs::read_to_string(format!("/proc/{pid}/task/{task}/children")) {
            Ok(text) => out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && task == pid.to_string() => {
                // No such file for a live thread: the kernel lacks it.
                if fs::metadata(format!("/proc/{pid}/task/{task}")).is_ok() {
                    return children_by_scan(pid);
                }
            }
            Err(_) => {}
        }
    }
    out
}

fn children_by_scan(pid: i32) -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| stat(p).is_some_and(|s| s.ppid == pid))
        .collect()
}

/// The process's name (`comm`: its program's, or what it set).
pub(super) fn comm(pid: i32) -> Option<String> {
    let text = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end_matches('\n').to_string())
}

/// `AGENTCRON_RUN_ID` as the process was started with it (exec's
/// environment), if it was.
pub(super) fn run_marker(pid: i32) -> Option<String> {
    let environ = fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ.split(|&b| b == 0).find_map(|entry| {
        let value = entry.strip_prefix(b"AGENTCRON_RUN_ID=")?;
        (!value.is_empty()).then(|| String::from_utf8_lossy(value).into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_parses_after_the_last_parenthesis() {
        let line = "4242 (a (odd) name) S 17 4242 4242 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                zombie: false,
                ppid: 17,
                pgrp: 4242,
                start: 987654
            })
        );
        assert!(
            parse_stat("12 (x) Z 1 12 12 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55")
                .unwrap()
                .zombie
        );
        assert_eq!(parse_stat("12 (x) S 1"), None);
    }

    #[test]
    fn this_process_reads_itself() {
        let me = std::process::id() as i32;
        let own = stat(me).expect("our own stat");
        assert_eq!(own.ppid, std::os::unix::process::parent_id() as i32);
        assert!(own.start > 0);
    }
}
