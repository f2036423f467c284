//! Which process runs a run, and whether the caller descends from one
//! (docs/CONTRACT.md §19, the speed bump).
//!
//! The tick records itself on each run it claims: this machine's boot id,
//! its pid and its start time (`runner_identity`), which name one process
//! for the life of the machine. Every process of a run descends from the
//! tick that runs it, whatever it does to its group or session: an orphan
//! is reparented to the tick (the child subreaper, `reaper`), not to init.
//! So "a process of a running run" is "a process with a running run's
//! runner among its ancestors": a walk up the parent chain in /proc, a
//! few small reads, done only when the store holds a running run of this
//! machine.

use std::sync::OnceLock;

use super::procfs;

/// This machine's boot: pids and start times mean something only within it.
fn boot_id() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && !s.contains(' '))
    })
    .as_deref()
}

/// "BOOT PID START": this process, as the runner of the runs it claims;
/// None where /proc cannot say (then runs are found by their marker only).
pub fn runner_identity() -> Option<&'static str> {
    static ME: OnceLock<Option<String>> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = std::process::id() as i32;
        let start = procfs::stat(pid)?.start;
        Some(format!("{} {pid} {start}", boot_id()?))
    })
    .as_deref()
}

/// Most parents walked: deeper chains are not a run's (and a loop in a
/// racing /proc must end).
const MAX_DEPTH: usize = 128;

/// Which of `runners` (as `runner_identity` wrote them), by index, is an
/// ancestor of this process, if one is.
pub fn descends_from<'a>(runners: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    let boot = boot_id()?;
    let here: Vec<(usize, (i32, u64))> = runners
        .into_iter()
        .enumerate()
        .filter_map(|(index, runner)| {
            let mut words = runner.split(' ');
            (words.next()? == boot).then_some(())?;
            let process = (words.next()?.parse().ok()?, words.next()?.parse().ok()?);
            Some((index, process))
        })
        .collect();
    if here.is_empty() {
        return None;
    }
    let mut pid = std::os::unix::process::parent_id() as i32;
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return None;
        }
        let stat = procfs::stat(pid)?;
        if let Some((index, _)) = here.iter().find(|(_, p)| *p == (pid, stat.start)) {
            return Some(*index);
        }
        pid = stat.ppid;
    }
    None
}

/// Whether a run's supervisor (`supervisor.rs`) is among this process's
/// ancestors: then it is a process of a run — its executor, its gate, its
/// notifier, or anything they started, whatever they did to their
/// environment, session or group (the supervisor is their subreaper). A
/// few small reads of /proc, no store.
pub fn under_supervisor() -> bool {
    let mut pid = std::os::unix::process::parent_id() as i32;
    for _ in 0..MAX_DEPTH {
        if pid <= 1 {
            return false;
        }
        if procfs::comm(pid).as_deref() == Some(super::supervisor::NAME) {
            return true;
        }
        match procfs::stat(pid) {
            Some(stat) => pid = stat.ppid,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_descends_from_its_parent_not_from_itself_or_a_stranger() {
        let me = runner_identity().expect("/proc says who we are");
        let parent = std::os::unix::process::parent_id() as i32;
        let start = procfs::stat(parent).expect("our parent").start;
        let boot = boot_id().unwrap();
        let parent_runner = format!("{boot} {parent} {start}");
        assert_eq!(descends_from(["garbage", parent_runner.as_str()]), Some(1));
        // The same pid started at another time is another process.
        let reused = format!("{boot} {parent} {}", start + 1);
        assert_eq!(descends_from([reused.as_str()]), None);
        // Another boot's pids mean nothing here.
        let elsewhere = format!("other-boot {parent} {start}");
        assert_eq!(descends_from([elsewhere.as_str()]), None);
        assert_eq!(descends_from([me, "garbage", ""]), None);
    }

    #[test]
    fn a_test_is_not_under_a_supervisor() {
        assert!(!under_supervisor());
    }
}
