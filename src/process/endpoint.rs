//! The lease endpoint (docs/CONTRACT.md §19.2): the channel through which
//! `agentcron lease check` inside a run asks the tick whether the lease
//! holds, with no access to the store.
//!
//! Threat model: another run — even of the same unix user, which can read
//! this run's environment and token — must not read, replace, answer or
//! slow down this run's channel. So:
//! - The socket is in Linux's abstract namespace (`@agentcron-lease-…`):
//!   it has no file to replace or leave behind (a tick killed with -9
//!   leaves nothing), and no one else can bind its name while it lives.
//! - The tick answers a connection only when its peer (SO_PEERCRED) is a
//!   descendant of this run's own process tree — the supervisor this run's
//!   child starts under (`Root`), which is the subreaper of everything the
//!   run starts. Another run's processes descend from another supervisor.
//! - The client (`ask`) trusts an answer only from a server that is its own
//!   ancestor: a process of another run cannot be that.
//! - Each request has one deadline of 20 ms for the whole of it (not per
//!   read), is served on a thread of its own (at most `MAX_IN_FLIGHT` at
//!   once), and a peer that is refused is never read from: a slow or
//!   flooding peer delays no other run's check.
//! - Dropping the endpoint stops its thread and frees the name.
//!
//! Protocol: the client writes `RUN TOKEN [KEY=N …]\n` (the run's usage so
//! far, `lease check --usage`); the endpoint answers
//! `0 RUN_ID\n` while the lease holds, `5 RUN_ID\n` otherwise (a run id that
//! is neither this run's nor a prefix of it of 4+ characters does not hold).
//!
//! A process in another network namespace cannot reach an abstract socket:
//! its `lease check` answers 5 (the safe side).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{procfs, user};

/// The variable that names the run's endpoint.
pub const VARIABLE: &str = "AGENTCRON_LEASE_ENDPOINT";

/// Whether the lease holds for this token, answered from the tick's memory;
/// the words after the token (usage reports, `KEY=N`) are handed over too.
pub type Answer = Box<dyn Fn(&str, &[&str]) -> bool + Send + Sync>;

/// The longest request line.
const REQUEST_CAP: u64 = 512;
/// Most usage words one request may carry.
const MAX_REPORTS: usize = 16;
/// The whole of one request: reading it and writing the answer.
const REQUEST_DEADLINE: Duration = Duration::from_millis(20);
/// Requests served at once; a connection beyond them is closed unanswered.
const MAX_IN_FLIGHT: usize = 16;
/// How often the serving thread looks at its stop flag when no one calls.
const STOP_POLL_MS: libc::c_int = 250;
/// Most parents walked from a peer up to the run's root.
const MAX_DEPTH: usize = 128;

/// The process whose descendants the endpoint answers: the supervisor (or
/// sudo before it) of the run's current child, 0 while none runs.
#[derive(Debug, Clone, Default)]
pub struct Root(Arc<AtomicU32>);

impl Root {
    pub fn set(&self, pid: u32) {
        self.0.store(pid, Ordering::Release);
    }

    fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
}

/// Two specs that share one endpoint's root are alike.
impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Root {}

/// A live endpoint; dropping it removes it.
pub struct Endpoint {
    name: String,
    root: Root,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Makes the endpoint of run `run_id` and starts serving.
    pub fn open(run_id: &str, answer: Answer) -> io::Result<Endpoint> {
        let name = format!("agentcron-lease-{}", uuid::Uuid::new_v4().simple());
        let listener = UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name)?)?;
        let root = Root::default();
        let stop = Arc::new(AtomicBool::new(false));
        let server = Server {
            run_id: run_id.to_string(),
            root: root.clone(),
            answer: Arc::new(answer),
            in_flight: Arc::new(AtomicUsize::new(0)),
        };
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("agentcron-lease".into())
            .spawn(move || server.serve(&listener, &flag))?;
        Ok(Endpoint {
            name,
            root,
            stop,
            thread: Some(thread),
        })
    }

    /// What AGENTCRON_LEASE_ENDPOINT says: `@` and the abstract name.
    pub fn address(&self) -> String {
        format!("@{}", self.name)
    }

    /// The root the run's children are started with (`ChildSpec::lease_root`).
    pub fn root(&self) -> Root {
        self.root.clone()
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the thread from its wait at once.
        let _ =
            SocketAddr::from_abstract_name(&self.name).and_then(|a| UnixStream::connect_addr(&a));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Server {
    run_id: String,
    root: Root,
    answer: Arc<Answer>,
    in_flight: Arc<AtomicUsize>,
}

impl Server {
    fn serve(&self, listener: &UnixListener, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            if !readable(listener, STOP_POLL_MS) {
                continue;
            }
            let Ok((stream, _)) = listener.accept() else {
                continue;
            };
            if stop.load(Ordering::Acquire) {
                return;
            }
            // Checked before a byte is read: a stranger costs one lookup.
            if !self.is_the_runs(&stream) {
                continue;
            }
            if self.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                continue;
            }
            let (run_id, answer, in_flight) = (
                self.run_id.clone(),
                self.answer.clone(),
                self.in_flight.clone(),
            );
            let served = std::thread::Builder::new()
                .name("agentcron-lease-reply".into())
                .spawn(move || {
                    let _ = reply(&stream, &run_id, &answer);
                    in_flight.fetch_sub(1, Ordering::AcqRel);
                });
            if served.is_err() {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Whether the peer descends from this run's root.
    fn is_the_runs(&self, stream: &UnixStream) -> bool {
        let root = self.root.get() as i32;
        root > 1 && user::peer_pid(stream).is_ok_and(|peer| descends(peer, root))
    }
}

/// Whether `pid` is `ancestor` or below it.
fn descends(mut pid: i32, ancestor: i32) -> bool {
    for _ in 0..MAX_DEPTH {
        if pid == ancestor {
            return true;
        }
        match procfs::stat(pid) {
            Some(stat) if stat.ppid > 1 => pid = stat.ppid,
            _ => return false,
        }
    }
    false
}

/// Reads one request and answers it, all within one deadline.
fn reply(stream: &UnixStream, run_id: &str, answer: &Answer) -> io::Result<()> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let line = read_line_by(stream, deadline)?;
    let mut words = line.split_whitespace();
    let (run, token) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let this_run = run == run_id || (run.len() >= 4 && run_id.starts_with(run));
    let reports: Vec<&str> = words.take(MAX_REPORTS).collect();
    let holds = this_run && answer(token, &reports);
    let code = if holds { 0 } else { 5 };
    let left = deadline.saturating_duration_since(Instant::now());
    stream.set_write_timeout(Some(left.max(Duration::from_millis(1))))?;
    let mut stream = stream;
    stream.write_all(format!("{code} {run_id}\n").as_bytes())
}

/// One line of at most `REQUEST_CAP` bytes, read before `deadline`: each
/// read may wait only for what is left of it.
fn read_line_by(stream: &UnixStream, deadline: Instant) -> io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 64];
    let mut stream = stream;
    while !line.contains(&b'\n') {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || line.len() as u64 > REQUEST_CAP {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "request too slow"));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut byte)? {
            0 => break,
            n => line.extend_from_slice(&byte[..n]),
        }
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// Waits up to `timeout_ms` for a connection to accept.
fn readable(listener: &UnixListener, timeout_ms: libc::c_int) -> bool {
    super::group::poll_readable(
        &[listener.as_raw_fd()],
        Duration::from_millis(timeout_ms as u64),
    )
    .first()
    .copied()
    .unwrap_or(false)
}

/// What the endpoint at `address` (`@name`, from AGENTCRON_LEASE_ENDPOINT)
/// says of `run` and `token`, told the run's `usage` so far (`KEY=N`
/// words): whether the lease holds, and the run's full id. An endpoint
/// whose server is not an ancestor of this process is not this run's tick,
/// and is not asked.
pub fn ask(address: &str, run: &str, token: &str, usage: &[String]) -> io::Result<(bool, String)> {
    retrying(ATTEMPTS, || ask_once(address, run, token, usage))
}

/// How many times `ask` asks when the endpoint hangs up without an answer.
/// On a loaded host a client descheduled between connecting and writing
/// can miss its request's deadline; read as "no answer", that would end a
/// run whose lease holds. Asking again is safe: a request is a question,
/// and the usage it reports is a total so far.
const ATTEMPTS: usize = 3;

/// `once` until it answers or fails otherwise than by a hang-up, at most
/// `attempts` times.
fn retrying<T>(attempts: usize, mut once: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut tried = 1;
    loop {
        match once() {
            Err(e) if hung_up(&e) && tried < attempts => tried += 1,
            other => return other,
        }
    }
}

/// The endpoint closed the connection before answering.
fn hung_up(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

fn ask_once(address: &str, run: &str, token: &str, usage: &[String]) -> io::Result<(bool, String)> {
    let name = address
        .strip_prefix('@')
        .ok_or_else(|| io::Error::other("the endpoint is not an abstract socket name"))?;
    let stream = UnixStream::connect_addr(&SocketAddr::from_abstract_name(name)?)?;
    let server = user::peer_pid(&stream)?;
    if !is_ancestor(server) {
        return Err(io::Error::other(
            "the endpoint is not served by this run's tick",
        ));
    }
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut request = format!("{run} {token}");
    for word in usage {
        request.push(' ');
        request.push_str(word);
    }
    request.push('\n');
    (&stream).write_all(request.as_bytes())?;
    let mut line = String::new();
    BufReader::new((&stream).take(REQUEST_CAP)).read_line(&mut line)?;
    match line.trim_end().split_once(' ') {
        Some(("0", id)) => Ok((true, id.to_string())),
        Some(("5", id)) => Ok((false, id.to_string())),
        _ if line.is_empty() => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the endpoint hung up without an answer",
        )),
        _ => Err(io::Error::other("the endpoint gave no answer")),
    }
}

/// Whether `pid` is an ancestor of this process.
fn is_ancestor(pid: i32) -> bool {
    pid > 1
        && procfs::stat(std::process::id() as i32)
            .is_some_and(|me| me.ppid > 1 && descends(me.ppid, pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays `script` through `retrying`, one step an attempt (the last
    /// step repeats): an error kind, or None for an answer. What it
    /// returned, and how many times it asked.
    fn replay(script: &[Option<io::ErrorKind>]) -> (Result<(), io::ErrorKind>, usize) {
        let mut calls = 0;
        let result = retrying(ATTEMPTS, || {
            let step = script[calls.min(script.len() - 1)];
            calls += 1;
            step.map_or(Ok(()), |kind| Err(io::Error::from(kind)))
        });
        (result.map_err(|e| e.kind()), calls)
    }

    #[test]
    fn a_hang_up_is_asked_again_and_other_failures_are_not() {
        use io::ErrorKind::{BrokenPipe, ConnectionRefused, UnexpectedEof};
        assert_eq!(
            replay(&[Some(UnexpectedEof), Some(BrokenPipe), None]),
            (Ok(()), 3)
        );
        assert_eq!(
            replay(&[Some(ConnectionRefused)]),
            (Err(ConnectionRefused), 1)
        );
        assert_eq!(
            replay(&[Some(UnexpectedEof)]),
            (Err(UnexpectedEof), ATTEMPTS)
        );
    }

    #[test]
    fn a_peer_is_answered_only_below_the_root() {
        let me = std::process::id() as i32;
        let parent = std::os::unix::process::parent_id() as i32;
        assert!(descends(me, me));
        assert!(descends(me, parent));
        assert!(!descends(parent, me));
        assert!(!descends(me, 999_999_999));
        assert!(is_ancestor(parent));
        assert!(!is_ancestor(me));
    }

    #[test]
    fn answers_from_memory_and_vanishes_when_dropped() {
        let lost = Arc::new(AtomicBool::new(false));
        let seen = lost.clone();
        let endpoint = Endpoint::open(
            "run-0123456789",
            Box::new(move |token, _| token == "t" && !seen.load(Ordering::Acquire)),
        )
        .expect("an endpoint");
        let address = endpoint.address();
        // No root yet: nobody is answered.
        let early =
            UnixStream::connect_addr(&SocketAddr::from_abstract_name(&address[1..]).unwrap())
                .unwrap();
        // The endpoint may hang up on a stranger before its line is written
        // (a broken pipe): either way it gets no answer.
        let _ = (&early).write_all(b"run-0123456789 t\n");
        early
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut nothing = String::new();
        let _ = BufReader::new(&early).read_line(&mut nothing);
        assert_eq!(nothing, "", "a peer outside the run's tree is not answered");
        // This test process stands for the run's root; its own server is
        // not its ancestor, so ask through the raw protocol.
        endpoint.root().set(std::process::id());
        let raw = |run: &str, token: &str| -> String {
            let s =
                UnixStream::connect_addr(&SocketAddr::from_abstract_name(&address[1..]).unwrap())
                    .unwrap();
            (&s).write_all(format!("{run} {token}\n").as_bytes())
                .unwrap();
            let mut line = String::new();
            BufReader::new(&s).read_line(&mut line).unwrap();
            line
        };
        assert_eq!(raw("run-0123456789", "t"), "0 run-0123456789\n");
        assert_eq!(raw("run-0", "t"), "0 run-0123456789\n");
        assert_eq!(raw("run-0123456789", "x"), "5 run-0123456789\n");
        assert_eq!(raw("other-run", "t"), "5 run-0123456789\n");
        // A silent client holds no one up: requests are served apart.
        let _silent =
            UnixStream::connect_addr(&SocketAddr::from_abstract_name(&address[1..]).unwrap())
                .unwrap();
        let one = Instant::now();
        assert_eq!(raw("run-0123456789", "t"), "0 run-0123456789\n");
        assert!(
            one.elapsed() < Duration::from_millis(50),
            "{:?}",
            one.elapsed()
        );
        lost.store(true, Ordering::Release);
        assert_eq!(raw("run-0123456789", "t"), "5 run-0123456789\n");
        drop(endpoint);
        assert!(
            UnixStream::connect_addr(&SocketAddr::from_abstract_name(&address[1..]).unwrap())
                .is_err(),
            "the name is free once the endpoint is dropped"
        );
    }
}
