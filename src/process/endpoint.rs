//! The lease endpoint (docs/CONTRACT.md §19): a Unix socket the tick makes
//! for one run, through which `agentcron lease check` inside the run asks
//! the tick whether the lease holds, with no access to the store.
//!
//! Invariants:
//! - The socket lives in a fresh directory of its own, 0700 of the tick's
//!   user; under `--run-as` it is the run's user's (as root: chowned), or,
//!   through sudo, 0711 with a socket the user may connect to. Whatever the
//!   modes, a connection is answered only when its peer is the tick's user
//!   or the run's (SO_PEERCRED).
//! - One small thread per endpoint serves it; reads and writes are bounded
//!   (a request is one line of at most 512 bytes, 20 ms to send it), so a
//!   silent client never holds the answer up for long, and the tick's own
//!   loop never waits on a client.
//! - Dropping the endpoint stops the thread and removes the socket and the
//!   directory.
//!
//! Protocol: the client writes `RUN TOKEN\n`; the endpoint answers
//! `0 RUN_ID\n` while the lease holds, `5 RUN_ID\n` otherwise (a run id that
//! is neither this run's nor a prefix of it of 4+ characters does not hold).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::user::{self, RunAs, Switch};

/// The variable that names the run's endpoint.
pub const VARIABLE: &str = "AGENTCRON_LEASE_ENDPOINT";

/// Whether the lease holds for this token, answered from the tick's memory.
pub type Answer = Box<dyn Fn(&str) -> bool + Send>;

/// The longest request line.
const REQUEST_CAP: u64 = 512;
/// How long a client may take to send its line, and to read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(20);
/// How often the serving thread looks at its stop flag when no one calls.
const STOP_POLL_MS: libc::c_int = 250;

/// A live endpoint; dropping it removes it.
pub struct Endpoint {
    dir: PathBuf,
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Makes the endpoint of run `run_id` under `parent` and starts serving.
    pub fn open(
        parent: &Path,
        run_id: &str,
        run_as: Option<&RunAs>,
        answer: Answer,
    ) -> io::Result<Endpoint> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = parent.join(format!("agentcron-lease-{}", uuid::Uuid::new_v4().simple()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let socket = dir.join("lease.sock");
        let listener = match bind(&dir, &socket, run_as) {
            Ok(listener) => listener,
            Err(e) => {
                let _ = std::fs::remove_file(&socket);
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let allowed = [Some(user::effective_uid()), run_as.map(|u| u.uid)];
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, run_id) = (stop.clone(), run_id.to_string());
        let mut endpoint = Endpoint {
            dir,
            socket,
            stop,
            thread: None,
        };
        // A thread that cannot start leaves the endpoint to its drop.
        endpoint.thread = Some(
            std::thread::Builder::new()
                .name("agentcron-lease".into())
                .spawn(move || serve(&listener, &flag, &allowed, &run_id, &answer))?,
        );
        Ok(endpoint)
    }

    /// The socket's path (AGENTCRON_LEASE_ENDPOINT).
    pub fn path(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the thread from its wait at once.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn bind(dir: &Path, socket: &Path, run_as: Option<&RunAs>) -> io::Result<UnixListener> {
    let listener = UnixListener::bind(socket)?;
    match run_as {
        None => {}
        Some(user) if user.switch == Switch::Ids => {
            std::os::unix::fs::chown(socket, Some(user.uid), Some(user.gid))?;
            std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid))?;
        }
        // Not root: the folder cannot be given away. Others may pass
        // through it (not list it) to a socket anyone may connect to; the
        // peer check answers only the run's user and the tick's.
        Some(_) => {
            std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))?;
        }
    }
    Ok(listener)
}

fn serve(
    listener: &UnixListener,
    stop: &AtomicBool,
    allowed: &[Option<u32>],
    run_id: &str,
    answer: &Answer,
) {
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
        let permitted = user::peer_uid(&stream).is_ok_and(|uid| allowed.contains(&Some(uid)));
        if permitted {
            let _ = reply(stream, run_id, answer);
        }
    }
}

fn reply(stream: UnixStream, run_id: &str, answer: &Answer) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(REQUEST_CAP)).read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let (run, token) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let this_run = run == run_id || (run.len() >= 4 && run_id.starts_with(run));
    let holds = this_run && words.next().is_none() && answer(token);
    let code = if holds { 0 } else { 5 };
    (&stream).write_all(format!("{code} {run_id}\n").as_bytes())
}

/// Waits up to `timeout_ms` for a connection to accept.
fn readable(listener: &UnixListener, timeout_ms: libc::c_int) -> bool {
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `fd` is one valid, writable pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut fd, 1, timeout_ms) };
    rc > 0 && fd.revents & libc::POLLIN != 0
}

/// What the endpoint at `socket` says of `run` and `token`: whether the
/// lease holds, and the run's full id.
pub fn ask(socket: &Path, run: &str, token: &str) -> io::Result<(bool, String)> {
    let stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    (&stream).write_all(format!("{run} {token}\n").as_bytes())?;
    let mut line = String::new();
    BufReader::new((&stream).take(REQUEST_CAP)).read_line(&mut line)?;
    match line.trim_end().split_once(' ') {
        Some(("0", id)) => Ok((true, id.to_string())),
        Some(("5", id)) => Ok((false, id.to_string())),
        _ => Err(io::Error::other("the endpoint gave no answer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn answers_from_memory_and_vanishes_when_dropped() {
        let parent = tempfile::tempdir().expect("a temp dir");
        let lost = Arc::new(AtomicBool::new(false));
        let seen = lost.clone();
        let endpoint = Endpoint::open(
            parent.path(),
            "run-0123456789",
            None,
            Box::new(move |token| token == "t" && !seen.load(Ordering::Acquire)),
        )
        .expect("an endpoint");
        let path = endpoint.path().to_path_buf();
        let dir = path.parent().expect("a folder").to_path_buf();
        let mode = dir.metadata().expect("the folder").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            ask(&path, "run-0123456789", "t").unwrap(),
            (true, "run-0123456789".into())
        );
        assert!(ask(&path, "run-0", "t").unwrap().0);
        assert!(!ask(&path, "run-0123456789", "x").unwrap().0);
        assert!(!ask(&path, "other-run", "t").unwrap().0);
        // Well within 10 ms an answer, on average over many.
        let started = std::time::Instant::now();
        for _ in 0..200 {
            assert!(ask(&path, "run-0123456789", "t").unwrap().0);
        }
        assert!(started.elapsed() / 200 < Duration::from_millis(10));
        // A silent client holds the next one up for its bounded read only.
        let _silent = UnixStream::connect(&path).unwrap();
        let one = std::time::Instant::now();
        assert!(ask(&path, "run-0123456789", "t").unwrap().0);
        assert!(one.elapsed() < Duration::from_secs(1));
        lost.store(true, Ordering::Release);
        assert!(!ask(&path, "run-0123456789", "t").unwrap().0);
        drop(endpoint);
        assert!(!path.exists() && !dir.exists(), "the endpoint is removed");
    }
}
