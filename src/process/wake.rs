//! Waking the child runner the moment something it waits for happens — the
//! child exits, or an output stream reaches end-of-file — instead of polling.
//!
//! On Linux the child's exit is a pidfd (readable once the process has
//! exited, before it is reaped, so the zombie keeps its pid reserved as
//! `group::has_exited` requires), and the capture threads each add one to a
//! shared eventfd as they finish. `Waker::wait` blocks in `ppoll` on both, up
//! to a limit (the next heartbeat or deadline). Where either cannot be had (an
//! older kernel, another Unix), waiting falls back to sleeps that grow from
//! 200 µs to 10 ms; callers re-check their conditions after every wake-up
//! either way, so a spurious or missed wake costs time, never correctness.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// The longest single sleep of the fallback: a long child still costs only
/// ~100 wake-ups a second.
const POLL: Duration = Duration::from_millis(10);

/// The fallback's first sleep: a child that exits at once is noticed within
/// a fraction of a millisecond.
const FIRST_POLL: Duration = Duration::from_micros(200);

/// Told by a capture thread when its stream is done.
#[derive(Debug, Clone)]
pub(super) struct Notify(Option<Arc<OwnedFd>>);

impl Notify {
    /// Tells nobody: the waiter polls.
    #[cfg(test)]
    pub(super) fn none() -> Notify {
        Notify(None)
    }

    /// Wakes the waiter (a no-op without an eventfd: the fallback polls).
    pub(super) fn done(&self) {
        if let Some(fd) = &self.0 {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to an eventfd we own.
            // Failure (counter saturated) still leaves the fd readable.
            unsafe {
                libc::write(
                    fd.as_raw_fd(),
                    (&one as *const u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
        }
    }
}

/// What the runner waits on for one child.
pub(super) struct Waker {
    child: Option<OwnedFd>,
    streams: Option<Arc<OwnedFd>>,
    /// The fallback's next sleep.
    step: Duration,
}

impl Waker {
    pub(super) fn new(pid: u32) -> Waker {
        Waker {
            child: pidfd_open(pid),
            streams: eventfd().map(Arc::new),
            step: FIRST_POLL,
        }
    }

    /// The handle capture threads signal through.
    pub(super) fn notify(&self) -> Notify {
        Notify(self.streams.clone())
    }

    /// Blocks until the child may have exited (only while `child_running`:
    /// an exited child's pidfd stays readable), a stream may have finished,
    /// or `limit` has passed.
    pub(super) fn wait(&mut self, limit: Duration, child_running: bool) {
        let child = self.child.as_ref().filter(|_| child_running);
        let (Some(streams), true) = (&self.streams, child.is_some() || !child_running) else {
            return self.sleep(limit);
        };
        let mut fds = vec![libc::pollfd {
            fd: streams.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Some(child) = child {
            fds.push(libc::pollfd {
                fd: child.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let limit = limit.min(Duration::from_secs(3600));
        let timeout = libc::timespec {
            tv_sec: limit.as_secs() as libc::time_t,
            tv_nsec: limit.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structs and
        // `timeout` a valid timespec; a null sigmask keeps the current one.
        let ready = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &timeout,
                std::ptr::null(),
            )
        };
        if ready < 0 {
            // EINTR, or something odd: never spin, and let the caller re-check.
            return self.sleep(limit);
        }
        if fds[0].revents & libc::POLLIN != 0 {
            let mut count: u64 = 0;
            // SAFETY: reads 8 bytes into a live u64 from a non-blocking eventfd.
            unsafe {
                libc::read(
                    streams.as_raw_fd(),
                    (&mut count as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
        }
    }

    fn sleep(&mut self, limit: Duration) {
        thread::sleep(self.step.min(limit));
        self.step = (self.step * 2).min(POLL);
    }
}

#[cfg(target_os = "linux")]
pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // (close-on-exec by definition) or -1; nothing is borrowed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative result is a descriptor this process now owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

#[cfg(not(target_os = "linux"))]
pub(super) fn pidfd_open(_pid: u32) -> Option<OwnedFd> {
    None
}

#[cfg(target_os = "linux")]
fn eventfd() -> Option<OwnedFd> {
    // SAFETY: eventfd returns a new descriptor or -1; nothing is borrowed.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    // SAFETY: a non-negative result is a descriptor this process now owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(not(target_os = "linux"))]
fn eventfd() -> Option<OwnedFd> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_child_exit_wakes_the_waiter_at_once() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .expect("sleep runs");
        let mut waker = Waker::new(child.id());
        assert!(waker.child.is_some() && waker.streams.is_some());
        let started = Instant::now();
        waker.wait(Duration::from_secs(5), true);
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        child.wait().expect("reaped");
    }

    #[test]
    fn a_finished_stream_wakes_the_waiter_and_the_wake_is_used_up() {
        let mut waker = Waker::new(std::process::id());
        let notify = waker.notify();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            notify.done();
        });
        let started = Instant::now();
        waker.wait(Duration::from_secs(5), false);
        assert!(started.elapsed() < Duration::from_secs(2));
        // Drained: the next wait runs to its limit.
        let started = Instant::now();
        waker.wait(Duration::from_millis(30), false);
        assert!(started.elapsed() >= Duration::from_millis(25));
    }
}
