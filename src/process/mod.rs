//! Running one child process — an executor, a gate or a notifier — safely.
//!
//! This module owns everything between "here is an argv" and "here is how the child
//! ended": spawning without a shell under a supervisor, feeding stdin, draining
//! stdout and stderr under a size cap, the wall-clock timeout, the heartbeat that
//! renews the caller's lease, and ending everything the child started.
//!
//! Invariants:
//! - No shell is ever involved: the command line is split by shell word rules here
//!   and the program is executed directly.
//! - Every child starts under its own supervisor (`supervisor.rs`), which runs as
//!   the run's user and is the child subreaper of all the child starts; the tick
//!   talks to it only over the supervisor's stdin (`control.rs`). When `run_child`
//!   returns, the supervisor has killed everything the child started (or, if it was
//!   itself killed from outside, the tick's own subreaper sweep has, `reaper`), so
//!   nothing outlives the run and its recorded result.
//! - The child inherits no file descriptor besides 0, 1 and 2.
//! - The child inherits no environment: it gets exactly `Launch::env` (the
//!   caller's allowlisted variables, `environment`) and the spec's own.
//! - With `Launch::run_as`, the supervisor (and so the child) runs as that user
//!   (`user`): its ids set before exec as root, else through `sudo -n -u USER`.
//! - Pipes are always drained to the end, so a child never blocks on output; at most
//!   `output_cap` bytes of each stream are kept, and they are the last ones.
//! - `run_child` returns within `timeout + 3 × kill_grace` plus half a second and
//!   the time spent in the heartbeat callback, whatever the child does.
//! - Nothing here panics on anything a child or the OS can do.

mod ancestry;
mod capture;
mod control;
pub mod endpoint;
pub mod environment;
mod group;
mod launch;
pub mod notifier;
mod procfs;
mod reaper;
pub mod supervisor;
#[cfg(test)]
mod tests;
pub mod user;
mod wake;

pub use ancestry::{descends_from, runner_identity, under_supervisor};
pub use reaper::{become_subreaper, Subreaper};

use std::fmt;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use capture::Capture;
use wake::Waker;

pub use launch::{resolve, supervisor_words, use_supervisor, Launch, SUPERVISE};
pub use user::{RunAs, Switch};

/// The uid this process runs as, and so the uid of what it runs unless
/// told otherwise.
pub fn own_uid() -> u32 {
    group::effective_uid()
}

/// Heartbeats come at most this often, whatever the caller asks.
const MIN_HEARTBEAT: Duration = Duration::from_millis(10);

/// Longer limits are treated as this, so adding them to an `Instant` cannot overflow.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What to run and under which limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSpec {
    /// Program and arguments, already split; `argv[0]` is looked up in PATH.
    pub argv: Vec<String>,
    /// Written to the child's stdin in full, then stdin is closed.
    pub stdin: Vec<u8>,
    /// The run's own variables, added to `launch.env`.
    pub env: Vec<(String, String)>,
    /// The environment every child starts from, and as whom it runs.
    pub launch: Launch,
    /// Wall-clock limit for the whole run.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL; also how long output may trail the exit.
    pub kill_grace: Duration,
    /// Most bytes kept per stream (the tail).
    pub output_cap: usize,
    /// The run's lease endpoint, told which process tree it answers: the
    /// one this child starts (`endpoint::Root`).
    pub lease_root: Option<endpoint::Root>,
}

/// The heartbeat callback's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    Continue,
    /// The lease is lost: kill the child.
    Abort,
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    Exited(i32),
    /// Killed by a signal we did not send.
    Signaled(i32),
    /// We killed it because `timeout` passed.
    TimedOut,
    /// We killed it because the heartbeat said Abort.
    Aborted,
}

/// Everything known about a finished child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildOutcome {
    pub exit: ChildExit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// From spawn until the group was killed and reaped.
    pub elapsed: Duration,
}

/// Why a child could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnError {
    Empty,
    NotFound(String),
    NotExecutable(String),
    Other(String),
    /// The child did start, but how it ended could not be observed (someone
    /// else reaped it): its side effects are uncertain, never "not started".
    Lost(String),
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Empty => f.write_str(EMPTY_COMMAND),
            SpawnError::NotFound(program) if program.contains('/') => write!(
                f,
                "`{program}` does not exist (or the interpreter on its #! line does not)"
            ),
            SpawnError::NotFound(program) => write!(f, "`{program}` was not found in PATH"),
            SpawnError::NotExecutable(program) => write!(
                f,
                "`{program}` cannot be executed: it needs execute permission and must be \
                 a program or a script starting with #!"
            ),
            SpawnError::Other(message) | SpawnError::Lost(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SpawnError {}

const EMPTY_COMMAND: &str = "the command is empty: give a program to run";

/// Splits a command line by POSIX shell word rules; no shell is involved, so
/// `$VAR`, globs, pipes and redirections are plain characters. As in a shell, a
/// word starting with `#` starts a comment that runs to the end: quote it (`'#1'`)
/// to pass it as an argument.
pub fn split_command(cmd: &str) -> Result<Vec<String>, String> {
    let words =
        shell_words::split(cmd).map_err(|e| format!("cannot split the command `{cmd}`: {e}"))?;
    if words.is_empty() {
        return Err(EMPTY_COMMAND.to_string());
    }
    Ok(words)
}

/// Runs the child under its supervisor and waits for it, calling `heartbeat`
/// every `heartbeat_every` (never more often than every 10 ms) while it runs.
///
/// On timeout or `Heartbeat::Abort` the supervisor is told `term`: everything
/// gets SIGTERM (and SIGCONT, so a stopped process can act on it), and SIGKILL
/// after `kill_grace`.
///
/// After a normal exit, output may trail the exit for up to `kill_grace` (a
/// background job finishing its last line); once both output pipes are closed, or
/// the grace has passed, the supervisor is told `kill` and SIGKILLs what is left.
/// We kill rather than leave survivors because a stray process still acting after
/// its run was recorded would break "at most once"; we stop waiting because a
/// stray holding our pipes open must not hang the tick. Output still unread after
/// a further `kill_grace` is abandoned to a detached reader thread.
pub fn run_child(
    spec: &ChildSpec,
    heartbeat_every: Duration,
    heartbeat: &mut dyn FnMut() -> Heartbeat,
) -> Result<ChildOutcome, SpawnError> {
    let program = spec.argv.first().ok_or(SpawnError::Empty)?;
    let started = Instant::now();
    let marker = spec
        .env
        .iter()
        .find(|(key, _)| key == "AGENTCRON_RUN_ID")
        .map(|(_, value)| value.clone());
    let not_started = |e: io::Error| SpawnError::Other(format!("could not start `{program}`: {e}"));
    // The supervisor's channel: its stdin, and the tick's only way to it.
    let (channel, theirs) = UnixStream::pair().map_err(not_started)?;
    let mut child = reaper::start(marker.clone(), || spawn(spec, theirs), Child::id)?;
    let pid = child.id();
    if let Some(root) = &spec.lease_root {
        root.set(pid);
    }
    // Every wait below wakes on the supervisor's exit or a stream's end,
    // not on a poll: a quick child costs no sleeping.
    let mut waker = Waker::new(pid);
    let streams = match start_io(&mut child, spec, &channel, &waker) {
        Ok(captures) => captures,
        Err(e) => {
            group::signal_group(pid, libc::SIGKILL);
            // Reaping only; the run never really started.
            let _ = child.wait();
            reaper::ended(pid);
            return Err(not_started(e));
        }
    };
    let deadline = later(started, spec.timeout);
    let stopped = watch(
        &mut child,
        &mut waker,
        &streams[2],
        deadline,
        heartbeat_every,
        heartbeat,
    );
    if stopped.is_some() {
        // The supervisor TERMs everything, KILLs it a grace later and
        // exits once nothing is left.
        let _ = (&channel).write_all(control::TERM);
        let within = spec.kill_grace.saturating_mul(2) + SUPERVISOR_MARGIN;
        settle(
            &mut child,
            &mut waker,
            &streams,
            later(Instant::now(), within),
        );
    } else {
        // The child ended: its output may trail the exit for the grace (a
        // background job's last line); once stdout and stderr are closed,
        // or the grace has passed, whatever is left is killed at once.
        linger(&mut waker, &streams[..2], spec.kill_grace);
        let _ = (&channel).write_all(control::KILL);
        let within = SUPERVISOR_MARGIN;
        settle(
            &mut child,
            &mut waker,
            &streams,
            later(Instant::now(), within),
        );
    }
    // The supervisor's own group (it, or sudo): only a supervisor that did
    // not finish in time is still there.
    group::signal_group(pid, libc::SIGKILL);
    let status = child.wait();
    reaper::ended(pid);
    if let Some(root) = &spec.lease_root {
        root.set(0);
    }
    // A supervisor killed before its children leaves them to this process
    // (same user): they go now.
    reaper::sweep(marker.as_deref(), spec.kill_grace);
    linger(&mut waker, &streams, spec.kill_grace);
    // A supervisor still alive (through sudo, beyond our signals) reads the
    // end of its channel here and kills what is left.
    drop(channel);
    let elapsed = started.elapsed();

    let [stdout, stderr, said] = streams;
    let (said, _) = said.finish();
    let exit = match stopped {
        Some(exit) => exit,
        None => match control::outcome(&said, program) {
            Some(ended) => ended?,
            None => return Err(unreported(status, &said, program)),
        },
    };
    let (stdout, stdout_truncated) = stdout.finish();
    let (stderr, stderr_truncated) = stderr.finish();
    Ok(ChildOutcome {
        exit,
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        elapsed,
    })
}

/// Beyond the supervisor's own 2 × grace: the time it takes to start and
/// to report.
const SUPERVISOR_MARGIN: Duration = Duration::from_millis(500);

/// Why a supervisor that never said how its child ended gives no outcome:
/// one that exited having said nothing never started it (sudo refused, the
/// request was unreadable); one killed may have.
fn unreported(status: io::Result<ExitStatus>, said: &[u8], program: &str) -> SpawnError {
    match status.ok().and_then(|s| s.code()) {
        Some(code) if said.is_empty() => SpawnError::Other(format!(
            "could not start `{program}`: its supervisor exited {code} before starting it"
        )),
        _ => SpawnError::Lost(format!(
            "lost track of `{program}`: its supervisor ended without saying how it ended"
        )),
    }
}

/// Waits for the streams to close, at most `grace`: output still unread
/// then (a process that left the group keeps a pipe open) is abandoned to
/// its reader thread.
fn linger(waker: &mut Waker, streams: &[Capture], grace: Duration) {
    let until = later(Instant::now(), grace);
    loop {
        let now = Instant::now();
        if streams.iter().all(|stream| stream.is_done()) || now >= until {
            break;
        }
        waker.wait(until - now, false);
    }
}

/// Starts the child's supervisor (`supervisor.rs`) as the launch says,
/// with `channel` as its stdin; the child's own stdout and stderr are the
/// supervisor's, which we read.
fn spawn(spec: &ChildSpec, channel: UnixStream) -> Result<Child, SpawnError> {
    let mut command = spec.launch.supervisor()?;
    command
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(channel)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // Descriptors this process inherited (from cron, a shell, a test
    // harness) are marked close-on-exec here, in the parent, just before the
    // spawn: one close_range call; everything Rust, SQLite and the
    // PostgreSQL client open is close-on-exec already. With no `pre_exec`
    // hook, `spawn` can use posix_spawn (vfork) instead of a fork that copies
    // the tick's page tables for every run.
    group::cloexec_from_3(group::fd_limit());
    command.spawn().map_err(|e| {
        SpawnError::Other(format!(
            "could not start the supervisor `{}`: {e}",
            launch::supervisor_words().unwrap_or_default().join(" ")
        ))
    })
}

fn classify_spawn_error(program: &str, e: &io::Error) -> SpawnError {
    match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => SpawnError::NotFound(program.to_string()),
        Some(libc::EACCES | libc::ENOEXEC | libc::EISDIR) => {
            SpawnError::NotExecutable(program.to_string())
        }
        _ => match e.kind() {
            io::ErrorKind::NotFound => SpawnError::NotFound(program.to_string()),
            io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(program.to_string()),
            _ => SpawnError::Other(format!("could not start `{program}`: {e}")),
        },
    }
}

/// Starts the readers of stdout, stderr and the supervisor's reports, and
/// the writer of its request (the child's argv, environment and stdin).
fn start_io(
    child: &mut Child,
    spec: &ChildSpec,
    channel: &UnixStream,
    waker: &Waker,
) -> io::Result<[Capture; 3]> {
    let missing = |name| io::Error::other(format!("the child's {name} pipe is missing"));
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
    let stdout = Capture::start("stdout", stdout, spec.output_cap, waker.notify())?;
    let stderr = Capture::start("stderr", stderr, spec.output_cap, waker.notify())?;
    let said = Capture::start_eager("control", channel.try_clone()?, REPORTS_CAP, waker.notify())?;
    let request = control::Request {
        argv: spec.argv.clone(),
        env: spec.launch.environment(&spec.env),
        grace_ms: spec.kill_grace.as_millis().min(u64::MAX as u128) as u64,
        stdin_len: spec.stdin.len() as u64,
        cwd: spec.launch.cwd.clone(),
    };
    let mut message = serde_json::to_vec(&request).map_err(io::Error::other)?;
    message.push(b'\n');
    message.extend_from_slice(&spec.stdin);
    let mut writer = channel.try_clone()?;
    // A thread, because a supervisor that does not read (it could not
    // start) would block a direct write once the socket buffer is full.
    // It ends by itself when all is written or the reader is gone.
    thread::Builder::new()
        .name("agentcron-stdin".to_string())
        .spawn(move || {
            let _ = writer.write_all(&message);
        })?;
    Ok([stdout, stderr, said])
}

/// The most the supervisor's reports may take (they are a few short lines).
const REPORTS_CAP: usize = 4096;

/// Waits while the child runs; returns why we must stop it, or `None` once it
/// exited by itself.
fn watch(
    child: &mut Child,
    waker: &mut Waker,
    said: &Capture,
    deadline: Instant,
    heartbeat_every: Duration,
    heartbeat: &mut dyn FnMut() -> Heartbeat,
) -> Option<ChildExit> {
    let every = heartbeat_every.clamp(MIN_HEARTBEAT, CENTURY);
    let mut next_beat = later(Instant::now(), every);
    loop {
        if has_exited(child) || control::ended(&said.peek()) {
            return None;
        }
        let now = Instant::now();
        if now >= deadline {
            return Some(ChildExit::TimedOut);
        }
        if now >= next_beat {
            if heartbeat() == Heartbeat::Abort {
                return Some(ChildExit::Aborted);
            }
            // Keep the cadence, but after a slow callback start afresh
            // instead of firing a burst of catch-up beats.
            next_beat = later(next_beat, every);
            let now = Instant::now();
            if next_beat <= now {
                next_beat = later(now, every);
            }
            continue;
        }
        waker.wait(deadline.min(next_beat) - now, true);
    }
}

/// Waits until the direct child has exited and both streams reached end-of-file,
/// or until `until`.
fn settle(child: &mut Child, waker: &mut Waker, streams: &[Capture], until: Instant) {
    loop {
        let exited = has_exited(child);
        if exited && streams.iter().all(|stream| stream.is_done()) {
            return;
        }
        let now = Instant::now();
        if now >= until {
            return;
        }
        waker.wait(until - now, !exited);
    }
}

fn has_exited(child: &mut Child) -> bool {
    match group::has_exited(child.id()) {
        Ok(exited) => exited,
        // waitid failing on our own child leaves only std's reaping check; it
        // caches the status for the final `wait`.
        Err(_) => !matches!(child.try_wait(), Ok(None)),
    }
}

fn exit_of(status: ExitStatus) -> Option<ChildExit> {
    status
        .code()
        .map(ChildExit::Exited)
        .or_else(|| status.signal().map(ChildExit::Signaled))
}

/// `from + by`, with absurdly long durations cut to a century.
fn later(from: Instant, by: Duration) -> Instant {
    from.checked_add(by.min(CENTURY)).unwrap_or(from)
}
