//! The tick as the child subreaper (docs/CONTRACT.md §19): no process of a
//! run outlives it.
//!
//! A run's executor leads its own process group, which `run_child` kills
//! when the run ends; a descendant that `setsid`s (or `setpgid`s) away
//! leaves that group, and once its parent exits it would be reparented to
//! init and live on. With `PR_SET_CHILD_SUBREAPER` it is reparented to the
//! tick instead (to its main thread), where `sweep` finds it after each
//! child's end: every child of the tick that `run_child` did not start and
//! is not waiting for is such an orphan.
//!
//! Whose orphan is it? After `setsid` its group and session are its own, so
//! they no longer say which run it came from, and with several runs in
//! flight killing every orphan at one run's end could kill another run's
//! work. The rule, correct for any number of runs in flight:
//! - an orphan in the process group of a child still running belongs to
//!   that child: that group's kill takes it;
//! - an orphan whose environment carries the ending child's run id
//!   (`AGENTCRON_RUN_ID`, which the tick gives executor and notifier and
//!   descendants inherit), and no other live child's, is that run's: it is
//!   killed now, with every process below it (whose pids are then known to
//!   be the run's, so they are killed too as they are reparented here);
//! - any other orphan (it dropped the id, or its id is ambiguous) cannot be
//!   told apart from a live run's, so it is killed once no child is live:
//!   at the end of the last run in flight, and at the latest when the tick
//!   exits (`Subreaper`'s drop sweeps everything).
//!
//! Killing is TERM (and CONT), then KILL after the child's kill grace,
//! then reaping: the tick is their parent now, and reaps them (a zombie
//! orphan is reaped at once). Only the pids of children this process holds
//! are waited for, never -1: std's `Child` reaps its own. A process that
//! outlives a SIGKILL of its tick is beyond this (the kernel reparents it
//! to init); a process handed to another service (at, systemd-run) never
//! was the tick's descendant.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{group, procfs};

/// Set once this process is the child subreaper: only then are orphans its
/// children, and sweeps have anything to do.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The children `run_child` started and has not reaped yet.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

/// One sweep at a time: two would wait for the same orphans.
static SWEEPING: Mutex<()> = Mutex::new(());

/// Rounds of one sweep: each kills what was reparented during the last.
const ROUNDS: usize = 16;

const POLL: Duration = Duration::from_millis(5);

#[derive(Debug, Clone)]
struct Live {
    pid: i32,
    marker: Option<String>,
}

fn live() -> MutexGuard<'static, Vec<Live>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// While it lives, this process is the child subreaper; dropping it kills
/// and reaps whatever orphan is left (TERM, then KILL after `grace`).
#[derive(Debug)]
pub struct Subreaper {
    grace: Duration,
}

/// Makes this process the child subreaper of everything it runs from now
/// on (the tick, `approve --here`).
pub fn become_subreaper(grace: Duration) -> std::io::Result<Subreaper> {
    group::set_child_subreaper()?;
    ENABLED.store(true, Ordering::SeqCst);
    Ok(Subreaper { grace })
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        sweep(None, self.grace);
    }
}

/// Starts a child with `start` and records it as live, both under the
/// lock a sweep scans under: a sweep never takes a child just spawned for
/// an orphan.
pub(super) fn start<T>(
    marker: Option<String>,
    start: impl FnOnce() -> Result<T, super::SpawnError>,
    pid_of: impl Fn(&T) -> u32,
) -> Result<T, super::SpawnError> {
    let mut live = live();
    let child = start()?;
    live.push(Live {
        pid: pid_of(&child) as i32,
        marker,
    });
    Ok(child)
}

/// The child `pid` was reaped: it is no longer live. Call only after std's
/// `wait` returned, so a sweep never reaps it in its place.
pub(super) fn ended(pid: u32) {
    live().retain(|l| l.pid != pid as i32);
}

/// Kills and reaps the orphans of the child that just ended (`marker`: its
/// run id), and every orphan when no child is live (see the module doc).
pub(super) fn sweep(marker: Option<&str>, grace: Duration) {
    if !ENABLED.load(Ordering::SeqCst) {
        return;
    }
    let _one = SWEEPING.lock().unwrap_or_else(|p| p.into_inner());
    let me = std::process::id() as i32;
    // Pids known to descend from an orphan of this run.
    let mut ours: HashSet<i32> = HashSet::new();
    // Orphans signalled once already: one that survived its SIGKILL (not
    // ours to signal: another user's) is not waited for again.
    let mut tried: HashSet<i32> = HashSet::new();
    for _ in 0..ROUNDS {
        let roots: Vec<i32> = {
            let live = live();
            procfs::children(me, true)
                .into_iter()
                .filter(|pid| !live.iter().any(|l| l.pid == *pid))
                .filter(|&pid| match procfs::stat(pid) {
                    None => false,
                    Some(s) if s.zombie => {
                        group::reap(pid);
                        false
                    }
                    Some(_) if tried.contains(&pid) => false,
                    Some(s) => ours.contains(&pid) || owned(pid, s, marker, &live),
                })
                .collect()
        };
        if roots.is_empty() {
            return;
        }
        tried.extend(&roots);
        let tree = descendants(&roots);
        ours.extend(&tree);
        for &pid in &tree {
            group::signal_pid(pid, libc::SIGTERM);
            group::signal_pid(pid, libc::SIGCONT);
        }
        // An orphan that is not ours to signal (a run under another user,
        // through sudo) is not waited for: waiting cannot end it.
        let roots: Vec<i32> = roots
            .into_iter()
            .filter(|&pid| group::signal_pid(pid, 0))
            .collect();
        let deadline = Instant::now() + grace;
        while roots.iter().any(|&pid| !gone(pid)) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        // KILL what is left, found afresh (a pid of the first walk may have
        // ended and been given to another process since): below a root
        // still alive, or reparented here from below one that is not.
        let alive: Vec<i32> = roots.iter().copied().filter(|&pid| !gone(pid)).collect();
        let mut left = descendants(&alive);
        for pid in procfs::children(me, true) {
            if ours.contains(&pid) && !gone(pid) && !live().iter().any(|l| l.pid == pid) {
                left.extend(descendants(&[pid]));
            }
        }
        ours.extend(&left);
        for &pid in &left {
            group::signal_pid(pid, libc::SIGKILL);
        }
        let deadline = Instant::now() + grace;
        while roots.iter().any(|&pid| !group::reap(pid)) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
    }
}

/// Whether the orphan `pid` is the ending child's (or anyone's, when no
/// child is live) to kill now.
fn owned(pid: i32, stat: procfs::Stat, marker: Option<&str>, live: &[Live]) -> bool {
    if live.is_empty() {
        return true;
    }
    if live.iter().any(|l| l.pid == stat.pgrp) {
        return false;
    }
    match (marker, procfs::run_marker(pid)) {
        (Some(mine), Some(theirs)) => {
            mine == theirs && !live.iter().any(|l| l.marker.as_deref() == Some(mine))
        }
        _ => false,
    }
}

/// An orphan we hold has exited (it may still need reaping).
fn gone(pid: i32) -> bool {
    procfs::stat(pid).is_none_or(|s| s.zombie)
}

/// `roots` and every process below them.
fn descendants(roots: &[i32]) -> HashSet<i32> {
    let mut seen: HashSet<i32> = roots.iter().copied().collect();
    let mut frontier = roots.to_vec();
    while let Some(pid) = frontier.pop() {
        for child in procfs::children(pid, false) {
            if seen.insert(child) {
                frontier.push(child);
            }
        }
    }
    seen
}
