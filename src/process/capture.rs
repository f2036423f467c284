//! Draining one output pipe of a child on its own thread, keeping only the tail.
//!
//! Invariants: the reader never stops reading before end-of-file (bytes beyond the
//! cap are read and discarded), so a chatty child can never block on a full pipe;
//! at most `cap` bytes are held, and they are always the *last* bytes written,
//! because the executor's result is its last line. The buffer is shared with the
//! caller so it can be taken even while the thread is still blocked on a pipe
//! that some escaped process keeps open.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use super::wake::Notify;

/// Read size: large enough that 10 MB of output costs ~160 reads.
const CHUNK: usize = 64 * 1024;

/// The last `cap` bytes of a stream, and whether anything before them was dropped.
#[derive(Debug, Default)]
pub(super) struct TailBuffer {
    bytes: VecDeque<u8>,
    cap: usize,
    truncated: bool,
}

impl TailBuffer {
    pub(super) fn new(cap: usize) -> TailBuffer {
        TailBuffer {
            bytes: VecDeque::new(),
            cap,
            truncated: false,
        }
    }

    pub(super) fn push(&mut self, data: &[u8]) {
        if data.len() >= self.cap {
            // The chunk alone fills the cap: everything held before it goes.
            self.truncated |= data.len() > self.cap || !self.bytes.is_empty();
            self.bytes.clear();
            self.bytes.extend(&data[data.len() - self.cap..]);
            return;
        }
        self.bytes.extend(data);
        let excess = self.bytes.len().saturating_sub(self.cap);
        if excess > 0 {
            self.truncated = true;
            self.bytes.drain(..excess);
        }
    }

    /// Hands out the bytes held so far, leaving the buffer empty.
    pub(super) fn take(&mut self) -> (Vec<u8>, bool) {
        (Vec::from(std::mem::take(&mut self.bytes)), self.truncated)
    }
}

/// One stream being drained by its own thread.
pub(super) struct Capture {
    shared: Arc<Mutex<TailBuffer>>,
    handle: JoinHandle<()>,
    /// Set at end-of-file, before `notify` is told: a waiter woken by the
    /// notice must see the stream done (the thread itself may not have
    /// returned yet, so `JoinHandle::is_finished` could still say no).
    done: Arc<AtomicBool>,
}

impl Capture {
    /// Drains `reader` on a new thread, which tells `notify` when the
    /// stream is done.
    pub(super) fn start<R>(name: &str, reader: R, cap: usize, notify: Notify) -> io::Result<Capture>
    where
        R: Read + Send + 'static,
    {
        Capture::spawn(name, reader, cap, notify, false)
    }

    /// Like `start`, but `notify` is told at every read too, not only at
    /// the end: for the supervisor's reports, which matter as they come.
    pub(super) fn start_eager<R>(
        name: &str,
        reader: R,
        cap: usize,
        notify: Notify,
    ) -> io::Result<Capture>
    where
        R: Read + Send + 'static,
    {
        Capture::spawn(name, reader, cap, notify, true)
    }

    fn spawn<R>(
        name: &str,
        mut reader: R,
        cap: usize,
        notify: Notify,
        eager: bool,
    ) -> io::Result<Capture>
    where
        R: Read + Send + 'static,
    {
        let shared = Arc::new(Mutex::new(TailBuffer::new(cap)));
        let sink = Arc::clone(&shared);
        let done = Arc::new(AtomicBool::new(false));
        let finished = Arc::clone(&done);
        let handle = thread::Builder::new()
            .name(format!("agentcron-{name}"))
            .spawn(move || {
                let mut chunk = vec![0u8; CHUNK];
                loop {
                    match reader.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => {
                            lock(&sink).push(&chunk[..n]);
                            if eager {
                                notify.done();
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        // A read error on a pipe means it is unusable; what was
                        // read so far is all we will get.
                        Err(_) => break,
                    }
                }
                finished.store(true, Ordering::Release);
                notify.done();
            })?;
        Ok(Capture {
            shared,
            handle,
            done,
        })
    }

    /// True once the stream reached end-of-file (every writer closed it).
    pub(super) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// A copy of what is held so far, leaving it in place.
    pub(super) fn peek(&self) -> Vec<u8> {
        lock(&self.shared).bytes.iter().copied().collect()
    }

    /// The tail captured so far. A thread still blocked on an open pipe is left
    /// detached: it ends on its own when the last writer goes away.
    pub(super) fn finish(self) -> (Vec<u8>, bool) {
        let taken = lock(&self.shared).take();
        // Done means the thread is returning: joining it cannot block.
        if self.is_done() || self.handle.is_finished() {
            // The thread cannot panic on its own; a join error carries nothing we need.
            let _ = self.handle.join();
        }
        taken
    }
}

/// A poisoned lock still holds valid bytes (pushes do not unwind midway).
fn lock(buffer: &Mutex<TailBuffer>) -> MutexGuard<'_, TailBuffer> {
    buffer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tail_of(cap: usize, chunks: &[&[u8]]) -> (Vec<u8>, bool) {
        let mut buffer = TailBuffer::new(cap);
        for chunk in chunks {
            buffer.push(chunk);
        }
        buffer.take()
    }

    #[test]
    fn output_within_the_cap_is_kept_whole() {
        assert_eq!(tail_of(10, &[b"abc", b"def"]), (b"abcdef".to_vec(), false));
    }

    #[test]
    fn output_exactly_at_the_cap_is_not_truncated() {
        assert_eq!(tail_of(6, &[b"abc", b"def"]), (b"abcdef".to_vec(), false));
        assert_eq!(tail_of(6, &[b"abcdef"]), (b"abcdef".to_vec(), false));
    }

    #[test]
    fn output_over_the_cap_keeps_the_last_bytes() {
        assert_eq!(tail_of(4, &[b"abc", b"def"]), (b"cdef".to_vec(), true));
        assert_eq!(tail_of(4, &[b"abcdefgh"]), (b"efgh".to_vec(), true));
        assert_eq!(tail_of(4, &[b"ab", b"cdefgh"]), (b"efgh".to_vec(), true));
    }

    #[test]
    fn a_zero_cap_keeps_nothing_but_notices_output() {
        assert_eq!(tail_of(0, &[]), (Vec::new(), false));
        assert_eq!(tail_of(0, &[b""]), (Vec::new(), false));
        assert_eq!(tail_of(0, &[b"x"]), (Vec::new(), true));
    }

    #[test]
    fn capture_reads_a_stream_to_the_end() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let capture = Capture::start("test", io::Cursor::new(data.clone()), 1000, Notify::none())
            .expect("spawning a thread");
        while !capture.is_done() {
            thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(capture.finish(), (data[data.len() - 1000..].to_vec(), true));
    }

    proptest! {
        #[test]
        fn the_tail_is_the_end_of_everything_written(
            cap in 0usize..64,
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..12),
        ) {
            let all: Vec<u8> = chunks.concat();
            let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let (kept, truncated) = tail_of(cap, &slices);
            let keep = all.len().min(cap);
            prop_assert_eq!(kept, all[all.len() - keep..].to_vec());
            prop_assert_eq!(truncated, all.len() > cap);
        }
    }
}
