//! Running one child process — the executor or the notifier — safely.
//!
//! This module owns everything between "here is an argv" and "here is how the child
//! ended": spawning without a shell, feeding stdin, draining stdout and stderr under
//! a size cap, the wall-clock timeout, the heartbeat that renews the caller's lease,
//! and killing the child's process group.
//!
//! Invariants:
//! - No shell is ever involved: the command line is split by shell word rules here
//!   and the program is executed directly.
//! - The child leads its own process group, and when `run_child` returns that group
//!   has been sent SIGKILL, so nothing the child started outlives the run and its
//!   recorded result; in a child subreaper (the tick), what left the group is
//!   killed too (`reaper`).
//! - The child inherits no file descriptor besides 0, 1 and 2.
//! - The child inherits no environment: it gets exactly `Launch::env` (the
//!   caller's allowlisted variables, `environment`) and the spec's own.
//! - With `Launch::run_as`, the child runs as that user (`user`): its ids set
//!   before exec as root, else through `sudo -n -u USER`.
//! - Pipes are always drained to the end, so a child never blocks on output; at most
//!   `output_cap` bytes of each stream are kept, and they are the last ones.
//! - `run_child` returns within `timeout + 2 × kill_grace` plus the time spent in the
//!   heartbeat callback, whatever the child does.
//! - Nothing here panics on anything a child or the OS can do.

mod ancestry;
mod capture;
pub mod endpoint;
pub mod environment;
mod group;
mod launch;
pub mod notifier;
mod procfs;
mod reaper;
#[cfg(test)]
mod tests;
pub mod user;
mod wake;

pub use ancestry::{descends_from, runner_identity};
pub use reaper::{become_subreaper, Subreaper};

use std::fmt;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use capture::Capture;
use wake::Waker;

pub use launch::{resolve, Launch};
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

/// Runs the child in its own process group and waits for it, calling `heartbeat`
/// every `heartbeat_every` (never more often than every 10 ms) while it runs.
///
/// On timeout or `Heartbeat::Abort` the group gets SIGTERM (and SIGCONT, so a
/// stopped member can act on it); once the direct child has exited and both output
/// pipes are closed, or `kill_grace` has passed, the group gets SIGKILL.
///
/// After a normal exit the same rule applies: output may trail the exit for up to
/// `kill_grace` (a background job finishing its last line), then the group is
/// SIGKILLed. We kill rather than leave survivors because a stray process still
/// acting after its run was recorded would break "at most once"; we stop waiting
/// because a stray holding our pipes open must not hang the tick. Output still
/// unread after a further `kill_grace` (a process that left the group keeps a pipe
/// open) is abandoned to a detached reader thread.
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
    let mut child = reaper::start(marker.clone(), || spawn(spec, program), Child::id)?;
    let pid = child.id();
    // Every wait below wakes on the child's exit or a stream's end, not on
    // a poll: a quick child costs no sleeping.
    let mut waker = Waker::new(pid);
    let (stdout, stderr) = match start_io(&mut child, spec, &waker) {
        Ok(captures) => captures,
        Err(e) => {
            group::signal_group(pid, libc::SIGKILL);
            // Reaping only; the run never really started.
            let _ = child.wait();
            reaper::ended(pid);
            return Err(SpawnError::Other(format!(
                "could not start `{program}`: {e}"
            )));
        }
    };

    let deadline = later(started, spec.timeout);
    let stopped = watch(&mut child, &mut waker, deadline, heartbeat_every, heartbeat);
    if stopped.is_some() {
        group::signal_group(pid, libc::SIGTERM);
        group::signal_group(pid, libc::SIGCONT);
    }
    settle(
        &mut child,
        &mut waker,
        &[&stdout, &stderr],
        later(Instant::now(), spec.kill_grace),
    );
    group::signal_group(pid, libc::SIGKILL);
    let status = child.wait();
    reaper::ended(pid);
    // What left the group (setsid, double-fork) and was reparented to a
    // subreaper tick goes now: it must not outlive the run either, nor hold
    // our pipes open.
    reaper::sweep(marker.as_deref(), spec.kill_grace);
    linger(&mut waker, &[&stdout, &stderr], spec.kill_grace);
    let elapsed = started.elapsed();

    let exit = match stopped {
        Some(exit) => exit,
        None => exit_observed(status, program)?,
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

/// Waits for the streams to close, at most `grace`: output still unread
/// then (a process that left the group keeps a pipe open) is abandoned to
/// its reader thread.
fn linger(waker: &mut Waker, streams: &[&Capture], grace: Duration) {
    let until = later(Instant::now(), grace);
    loop {
        let now = Instant::now();
        if streams.iter().all(|stream| stream.is_done()) || now >= until {
            break;
        }
        waker.wait(until - now, false);
    }
}

/// How a child we did not stop ended, from its wait status.
fn exit_observed(status: io::Result<ExitStatus>, program: &str) -> Result<ChildExit, SpawnError> {
    let status = status.map_err(|e| SpawnError::Lost(format!("lost track of `{program}`: {e}")))?;
    exit_of(status).ok_or_else(|| {
        SpawnError::Lost(format!(
            "`{program}` ended with an unrecognised wait status"
        ))
    })
}

fn spawn(spec: &ChildSpec, program: &str) -> Result<Child, SpawnError> {
    let env = spec.launch.environment(&spec.env);
    let mut command = spec.launch.command(program, &env)?;
    command
        .args(&spec.argv[1..])
        .env_clear()
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::piped())
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
    command
        .spawn()
        .map_err(|e| classify_spawn_error(program, &e))
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

/// Starts the stdout and stderr readers and the stdin writer.
fn start_io(child: &mut Child, spec: &ChildSpec, waker: &Waker) -> io::Result<(Capture, Capture)> {
    let missing = |name| io::Error::other(format!("the child's {name} pipe is missing"));
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
    let stdout = Capture::start("stdout", stdout, spec.output_cap, waker.notify())?;
    let stderr = Capture::start("stderr", stderr, spec.output_cap, waker.notify())?;
    let mut stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    if !spec.stdin.is_empty() {
        let data = spec.stdin.clone();
        // A thread, because a child that never reads would block a direct write
        // once the pipe buffer is full. The handle is dropped: the writer ends by
        // itself when all is written or the pipe's reader is gone.
        thread::Builder::new()
            .name("agentcron-stdin".to_string())
            .spawn(move || {
                // EPIPE means the child exited or closed stdin without reading it
                // all; its exit status tells that story, so this is not an error.
                let _ = stdin.write_all(&data);
            })?;
    }
    // With nothing to write, `stdin` was dropped above and the child reads EOF.
    Ok((stdout, stderr))
}

/// Waits while the child runs; returns why we must stop it, or `None` once it
/// exited by itself.
fn watch(
    child: &mut Child,
    waker: &mut Waker,
    deadline: Instant,
    heartbeat_every: Duration,
    heartbeat: &mut dyn FnMut() -> Heartbeat,
) -> Option<ChildExit> {
    let every = heartbeat_every.clamp(MIN_HEARTBEAT, CENTURY);
    let mut next_beat = later(Instant::now(), every);
    loop {
        if has_exited(child) {
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
fn settle(child: &mut Child, waker: &mut Waker, streams: &[&Capture], until: Instant) {
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
