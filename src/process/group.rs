//! The few raw system calls the runner needs that std does not offer: signalling a
//! whole process group, noticing that a child exited without reaping it,
//! keeping inherited file descriptors out of the child, and the subreaper's
//! own (becoming one, signalling and reaping one orphan by pid).
//!
//! Invariants: every `unsafe` block of the runner lives here; no signal is ever
//! sent to a group id of 0 or 1 (that would mean our own group or every process
//! we may signal); the pre-exec hook only makes async-signal-safe system calls.

use std::io;

/// Sends `signal` to every process in the group led by `pgid`.
///
/// A group that is already gone (ESRCH) is not an error: that is the outcome we want.
pub(super) fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // kill(0, …) is our own group and kill(-1, …) is every process we may signal.
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill has no memory-safety preconditions. Its result is ignored on
    // purpose: ESRCH means the group already ended, and EPERM cannot happen for a
    // group made of our own children.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// True once the child `pid` has exited, *without* reaping it.
///
/// Leaving the zombie in place keeps its pid, and so its process-group id,
/// reserved: a later `signal_group` can never hit an unrelated group that
/// happened to receive the recycled number.
pub(super) fn has_exited(pid: u32) -> io::Result<bool> {
    let id = libc::id_t::from(pid);
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value (it is plain data), and
        // waitid only writes into the buffer we pass.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                id,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            // With WNOHANG, si_pid stays 0 while the child is still running.
            // SAFETY: waitid succeeded, so the pid field of `info` is initialised.
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Makes this process the child subreaper of its descendants: an orphan
/// among them (its parent exited: `setsid` and double-fork included) is
/// reparented here instead of to init.
pub(super) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// This process's effective uid: what its children run as, unless told otherwise.
pub(super) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Sends `signal` to the one process `pid` (never to 0, 1 or ourselves);
/// false when it is not ours to signal (EPERM: another user's). A process
/// already gone counts as signalled.
pub(super) fn signal_pid(pid: i32, signal: libc::c_int) -> bool {
    if pid <= 1 || pid == std::process::id() as i32 {
        return false;
    }
    // SAFETY: kill has no memory-safety preconditions.
    let rc = unsafe { libc::kill(pid, signal) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EPERM)
}

/// Reaps the child `pid` if it has exited; true once it is reaped (or is
/// not our child at all). Never blocks, and never touches any other child:
/// std's `Child` reaps its own.
pub(super) fn reap(pid: i32) -> bool {
    if pid <= 1 {
        return true;
    }
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid, writable int.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        match rc {
            0 => return false,
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => return true,
        }
    }
}

/// Reaps any one child that has ended, without blocking: its pid and how it
/// ended, `Ok(None)` while every child still runs, `Err` (ECHILD) when there
/// is no child at all. Only the supervisor calls it: it holds no `Child` of
/// std's whose status this could steal.
pub(super) fn reap_any() -> io::Result<Option<(i32, std::process::ExitStatus)>> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid, writable int.
        let rc = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match rc {
            0 => return Ok(None),
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            -1 => return Err(io::Error::last_os_error()),
            pid => return Ok(Some((pid, std::process::ExitStatus::from_raw(status)))),
        }
    }
}

/// Names this process in /proc (`comm`, 15 bytes at most): what the speed
/// bump looks for among a caller's ancestors.
pub(super) fn set_name(name: &std::ffi::CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of ours.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
}

/// Moves descriptor 0 to a new close-on-exec descriptor and puts /dev/null
/// in its place: the supervisor's channel must not leak into the child it
/// runs, nor be read by anything that reads "standard input".
pub(super) fn take_stdin() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_DUPFD_CLOEXEC on descriptor 0 returns a new descriptor or -1.
    let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let channel = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    null_onto(&[0])?;
    Ok(channel)
}

/// Puts /dev/null in place of each of `fds` (0, 1, 2): the supervisor lets
/// go of the tick's pipes once its child holds them, so that their end
/// means the run's processes closed them.
pub(super) fn null_onto(fds: &[libc::c_int]) -> io::Result<()> {
    use std::os::fd::IntoRawFd;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?
        .into_raw_fd();
    let mut failed = None;
    for &fd in fds {
        // SAFETY: dup2 of a descriptor we own onto a standard one.
        if unsafe { libc::dup2(null, fd) } < 0 {
            failed = Some(io::Error::last_os_error());
        }
    }
    // SAFETY: `null` is ours and no longer needed.
    unsafe { libc::close(null) };
    failed.map_or(Ok(()), Err)
}

/// Waits until one of `fds` is readable (or hung up) or `timeout` passes;
/// which of them are.
pub(super) fn poll_readable(fds: &[libc::c_int], timeout: std::time::Duration) -> Vec<bool> {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(60_000) as libc::c_int;
    // SAFETY: `polled` is a live array of `polled.len()` pollfd structs.
    let rc = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    polled
        .iter()
        .map(|p| rc > 0 && p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
        .collect()
}

/// The highest descriptor number the fallback of `cloexec_from_3` must cover,
/// computed in the parent because the child may only make async-signal-safe calls.
pub(super) fn fd_limit() -> libc::c_int {
    // Only used on kernels without close_range; a bound keeps that loop finite
    // when the limit is "unlimited".
    const CEILING: libc::rlim_t = 1 << 20;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc != 0 {
        return 1024;
    }
    libc::c_int::try_from(limit.rlim_cur.min(CEILING)).unwrap_or(1024)
}

/// Marks every descriptor from 3 up close-on-exec, in the parent just before
/// each child is spawned (raw syscalls only, so it would also be safe
/// between fork and exec).
///
/// Rust and SQLite open their own descriptors with O_CLOEXEC, but descriptors
/// *inherited* by agentcron (from cron, a shell, a test harness) are not, and
/// would otherwise pass straight through to the executor. Setting the flag rather
/// than closing keeps every descriptor this process uses working.
pub(super) fn cloexec_from_3(fallback_limit: libc::c_int) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let first: libc::c_uint = 3;
        // SAFETY: close_range takes plain integers; CLOSE_RANGE_CLOEXEC only sets flags.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                first,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if rc == 0 {
            return;
        }
        // ENOSYS (before Linux 5.9) or EINVAL (flag unknown before 5.11): fall through.
    }
    cloexec_each(3, fallback_limit);
}

/// The portable way: one fcntl per possible descriptor in `first..limit`.
fn cloexec_each(first: libc::c_int, limit: libc::c_int) {
    for fd in first..limit {
        // SAFETY: fcntl on any integer is memory-safe; closed descriptors give EBADF.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    fn is_cloexec(fd: libc::c_int) -> bool {
        // SAFETY: F_GETFD on a descriptor we own.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        flags >= 0 && flags & libc::FD_CLOEXEC != 0
    }

    #[test]
    fn the_fallback_marks_inherited_descriptors_close_on_exec() {
        let file = tempfile::tempfile().expect("a temp file");
        // SAFETY: dup on a valid descriptor.
        let raw = unsafe { libc::dup(file.as_raw_fd()) };
        assert!(raw >= 0, "dup failed");
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let _owned = unsafe { OwnedFd::from_raw_fd(raw) };
        assert!(!is_cloexec(raw), "dup clears close-on-exec");
        // Only this descriptor: the test process's own inherited ones stay as they are.
        cloexec_each(raw, raw + 1);
        assert!(is_cloexec(raw));
    }

    #[test]
    fn the_descriptor_limit_is_positive() {
        assert!(fd_limit() > 3);
    }
}
