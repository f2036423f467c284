//! `agentcron supervise`: the one small process every executor, gate and
//! notifier starts under (docs/CONTRACT.md §19.4). It runs as the run's
//! user — the tick's own, root's ids switched before exec, or through
//! `sudo -n -u USER -- agentcron supervise` — so it may signal everything
//! the run starts, which a tick running as another user may not.
//!
//! Invariants:
//! - It is the child subreaper: whatever the child leaves behind (`nohup`,
//!   `setsid`, a double fork) is reparented here, never to init, so "the
//!   run's processes" are exactly this process's descendants.
//! - Nothing it started outlives it: when the child ends, its leftovers may
//!   run on for the grace (a background job's last line), then are killed;
//!   when the tick says `term`, or its end of the channel closes (the tick
//!   exited or was killed with -9), or this process is told to stop by a
//!   signal, all of it gets TERM (and CONT, so a stopped one can act on
//!   it), then KILL after the grace. It exits only once no descendant is
//!   left (or after a bounded number of KILL rounds against one that cannot
//!   die, such as a process stuck in the kernel).
//! - It talks to the tick only through its standard input, a socket the
//!   tick made (`control.rs`): nothing needs the tick to signal it, and the
//!   child gets neither that socket nor any other descriptor but 0, 1, 2.
//! - Its `comm` is `agentcron-super`: a writing command whose ancestors
//!   include one refuses (the speed bump, `ancestry.rs`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::control::{self, Report, Request, SpawnKind};
use super::{group, procfs, ChildExit};

/// The name a supervisor carries in /proc (at most 15 bytes).
pub const NAME: &str = "agentcron-super";

/// How long the tick may take to hand over the request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How often leftovers are looked for once the child ended (their ends
/// wake nothing here).
const LEFTOVER_POLL: Duration = Duration::from_millis(5);
/// The longest wait without looking at the stop signals.
const IDLE_POLL: Duration = Duration::from_millis(100);
/// KILL rounds against descendants that fork as they die.
const KILL_ROUNDS: usize = 200;

/// The supervisor's whole life; the process exits with its code.
pub fn main() -> ! {
    let code = match supervise() {
        Ok(()) => 0,
        Err(e) => {
            // One write: the line may share a log with other processes.
            let _ = io::stderr().write_all(format!("agentcron supervise: {e}\n").as_bytes());
            70
        }
    };
    std::process::exit(code)
}

fn supervise() -> io::Result<()> {
    group::set_name(c"agentcron-super");
    group::set_child_subreaper()?;
    crate::interrupt::catch_stop_signals()?;
    let channel = UnixStream::from(group::take_stdin()?);
    channel.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    let mut reader = BufReader::new(channel.try_clone()?);
    let request = read_request(&mut reader)?;
    let mut stdin = Vec::new();
    (&mut reader)
        .take(request.stdin_len.min(control::STDIN_CAP))
        .read_to_end(&mut stdin)?;
    let grace = Duration::from_millis(request.grace_ms);
    let mut said = Said(channel.try_clone()?);
    let pid = match spawn(&request, stdin) {
        Ok(pid) => pid,
        Err((kind, message)) => {
            said.say(&Report::NotStarted(kind, message));
            said.say(&Report::Done);
            return Ok(());
        }
    };
    // The child holds the tick's stdout and stderr now; once the run's
    // processes close them, the tick sees their end.
    let _ = group::null_onto(&[1, 2]);
    let mut watch = Watch {
        pid,
        pidfd: super::wake::pidfd_open(pid as u32),
        grace,
        ended: None,
        stop_since: None,
        ended_at: None,
        tick_gone: false,
        kill_now: false,
    };
    // Anything the tick sent after the request (a quick `term`) is in the
    // reader's buffer; the rest is read from the socket as it comes.
    let early = reader.buffer().to_vec();
    channel.set_nonblocking(true)?;
    watch.heard(&early);
    watch.run(&channel, &mut said);
    said.say(&Report::Done);
    Ok(())
}

fn read_request(reader: &mut impl BufRead) -> io::Result<Request> {
    let mut line = String::new();
    reader
        .take(control::REQUEST_LINE_CAP)
        .read_line(&mut line)?;
    serde_json::from_str(&line)
        .map_err(|e| io::Error::other(format!("the tick's request is not readable: {e}")))
}

/// What the supervisor tells the tick; a tick that is gone is not told.
struct Said(UnixStream);

impl Said {
    fn say(&mut self, report: &Report) {
        let _ = self.0.write_all(report.line().as_bytes());
    }
}

/// Starts the child in a process group of its own with exactly the
/// request's environment, and feeds it its stdin from a thread (a child
/// that never reads must not block this process).
fn spawn(request: &Request, stdin: Vec<u8>) -> Result<i32, (SpawnKind, String)> {
    let program = request
        .argv
        .first()
        .ok_or((SpawnKind::Other, "the command is empty".to_string()))?;
    let path = request
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
    // Found here, in the child's PATH, as the tick would have: argv[0]
    // stays the name given.
    let mut command = match super::resolve(program, path).filter(|_| !program.contains('/')) {
        Some(absolute) => {
            let mut command = Command::new(absolute);
            command.arg0(program);
            command
        }
        None => Command::new(program),
    };
    if let Some(cwd) = &request.cwd {
        // Checked here, as the run's user: std would report a folder it
        // cannot enter as the program not being found.
        match std::fs::metadata(cwd) {
            Ok(meta) if meta.is_dir() => {
                command.current_dir(cwd);
            }
            Ok(_) => {
                return Err((
                    SpawnKind::Other,
                    format!("the folder {cwd} is not a folder"),
                ))
            }
            Err(e) => return Err((SpawnKind::Other, format!("the folder {cwd}: {e}"))),
        }
    }
    command
        .args(&request.argv[1..])
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0);
    group::cloexec_from_3(group::fd_limit());
    let mut child = command.spawn().map_err(|e| spawn_kind(program, &e))?;
    if let Some(mut pipe) = child.stdin.take() {
        let _ = std::thread::Builder::new()
            .name("agentcron-stdin".into())
            .spawn(move || {
                // EPIPE: the child closed stdin unread; its exit tells that story.
                let _ = pipe.write_all(&stdin);
            });
    }
    // Dropping std's handle neither waits nor kills: the child is reaped
    // below with every other descendant.
    Ok(child.id() as i32)
}

fn spawn_kind(program: &str, e: &io::Error) -> (SpawnKind, String) {
    match super::classify_spawn_error(program, e) {
        super::SpawnError::NotFound(p) => (SpawnKind::NotFound, p),
        super::SpawnError::NotExecutable(p) => (SpawnKind::NotExecutable, p),
        other => (SpawnKind::Other, other.to_string()),
    }
}

/// The child and everything below it, until none is left.
struct Watch {
    pid: i32,
    pidfd: Option<std::os::fd::OwnedFd>,
    grace: Duration,
    ended: Option<ExitStatus>,
    /// When TERM went to everything: KILL follows a grace later.
    stop_since: Option<Instant>,
    /// When the child ended by itself: its leftovers have a grace.
    ended_at: Option<Instant>,
    tick_gone: bool,
    /// The tick said `kill`: what is left goes at once.
    kill_now: bool,
}

impl Watch {
    fn run(&mut self, channel: &UnixStream, said: &mut Said) {
        loop {
            if self.reap(said) {
                return;
            }
            if crate::interrupt::received().is_some() {
                self.stop();
            }
            let now = Instant::now();
            let kill_at = match (self.stop_since, self.ended_at) {
                (Some(since), _) => Some(since + self.grace),
                (None, Some(ended)) => Some(ended + self.grace),
                (None, None) => None,
            };
            if self.kill_now || kill_at.is_some_and(|at| now >= at) {
                self.kill_everything(said);
                return;
            }
            let wait = match (kill_at, self.ended) {
                (Some(at), _) => at.saturating_duration_since(now).min(LEFTOVER_POLL),
                (None, None) if self.pidfd.is_some() => IDLE_POLL,
                _ => LEFTOVER_POLL,
            };
            let mut fds = Vec::with_capacity(2);
            if !self.tick_gone {
                fds.push(channel.as_raw_fd());
            }
            if let (Some(pidfd), None) = (&self.pidfd, self.ended) {
                fds.push(pidfd.as_raw_fd());
            }
            let ready = group::poll_readable(&fds, wait);
            if !self.tick_gone && ready.first() == Some(&true) {
                self.hear(channel);
            }
        }
    }

    /// Reaps what ended; tells the tick how the child ended the moment it
    /// did. True once nothing is left to wait for.
    fn reap(&mut self, said: &mut Said) -> bool {
        loop {
            match group::reap_any() {
                Ok(Some((pid, status))) => {
                    if pid == self.pid && self.ended.is_none() {
                        self.ended = Some(status);
                        self.ended_at = Some(Instant::now());
                        said.say(&Report::Ended(exit_of(status)));
                    }
                }
                Ok(None) => return false,
                // No child at all: the child and all it left are gone.
                Err(_) => return self.ended.is_some(),
            }
        }
    }

    /// Reads what the tick said: `term`, or the end of the stream.
    fn hear(&mut self, mut channel: &UnixStream) {
        let mut buffer = [0u8; 256];
        match channel.read(&mut buffer) {
            Ok(0) => {
                self.tick_gone = true;
                self.stop();
            }
            Ok(n) => self.heard(&buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => {
                self.tick_gone = true;
                self.stop();
            }
        }
    }

    fn heard(&mut self, words: &[u8]) {
        let says = |word: &[u8]| words.windows(word.len()).any(|w| w == word);
        if says(control::TERM) {
            self.stop();
        }
        if says(control::KILL) {
            self.kill_now = true;
        }
    }

    /// TERM (and CONT) to everything, once.
    fn stop(&mut self) {
        if self.stop_since.is_some() {
            return;
        }
        self.stop_since = Some(Instant::now());
        for signal in [libc::SIGTERM, libc::SIGCONT] {
            group::signal_group(self.pid as u32, signal);
            for pid in descendants() {
                group::signal_pid(pid, signal);
            }
        }
    }

    /// KILL to everything left, found afresh each round (a dying process
    /// may fork), until nothing is left or the rounds run out.
    fn kill_everything(&mut self, said: &mut Said) {
        for _ in 0..KILL_ROUNDS {
            group::signal_group(self.pid as u32, libc::SIGKILL);
            let left = descendants();
            for &pid in &left {
                group::signal_pid(pid, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(1));
            if self.reap(said) {
                return;
            }
            if left.is_empty() && self.ended.is_some() {
                return;
            }
        }
    }
}

/// Every process below this one.
fn descendants() -> Vec<i32> {
    let mut found = Vec::new();
    let mut frontier = procfs::children(std::process::id() as i32, false);
    while let Some(pid) = frontier.pop() {
        if found.contains(&pid) {
            continue;
        }
        frontier.extend(procfs::children(pid, false));
        found.push(pid);
    }
    found
}

fn exit_of(status: ExitStatus) -> ChildExit {
    super::exit_of(status).unwrap_or(ChildExit::Signaled(libc::SIGKILL))
}
