//! Stop signals for the commands that run children (`tick`, `approve
//! --here`): SIGTERM, SIGINT and SIGHUP are noted, never acted on inside the
//! handler. The tick's threads look at the note where they already wake
//! (the child runner's heartbeat every 100 ms, the main loop on each
//! message): they stop claiming, kill their children's process groups and
//! settle what was running as `unknown` ("tick interrupted") before the
//! command exits 128 + the signal (docs/CONTRACT.md §6).
//!
//! Invariant: once noted, a signal stays noted for the life of the process;
//! the first one wins (a second Ctrl-C while the children are being killed
//! changes nothing but is not lost either: the exit code names the first).

use std::sync::atomic::{AtomicI32, Ordering};

/// The first stop signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signals that ask a tick to stop.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

extern "C" fn note(signal: libc::c_int) {
    // Async-signal-safe: one atomic compare-and-swap, nothing else.
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// Notes the stop signals from now on instead of dying of them. Children
/// start with the default actions again (exec resets caught signals).
pub fn catch_stop_signals() -> std::io::Result<()> {
    for signal in STOP_SIGNALS {
        // SAFETY: `sigaction` with a zeroed struct, an empty mask and a
        // handler that only touches an atomic; SA_RESTART so that system
        // calls of other threads (reads of a child's pipes, SQLite's I/O)
        // are not cut short by the signal.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The stop signal received, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// The signal's name, for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The exit code of a command stopped by `signal`, as shells report one.
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}

/// Runs `f` with the stop signals held back (blocked for this thread), then
/// lets any that arrived meanwhile act: a closing checkpoint, which is
/// bounded, finishes before a TERM ends the process. A process whose other
/// threads could receive them blocks them there too (the tick's workers are
/// gone when its store closes; other commands have no threads).
pub fn hold_stop_signals<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: pthread_sigmask with sets built by sigemptyset/sigaddset on
    // zeroed structs we own.
    let previous = unsafe {
        let mut held: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut held);
        for signal in STOP_SIGNALS {
            libc::sigaddset(&mut held, signal);
        }
        (libc::pthread_sigmask(libc::SIG_BLOCK, &held, &mut previous) == 0).then_some(previous)
    };
    let out = f();
    if let Some(previous) = previous {
        // SAFETY: restores the mask saved above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        }
    }
    out
}
