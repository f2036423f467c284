//! Running one child (executor or notifier) safely: argv without a shell,
//! task data only on stdin, output read with a cap (the tail is kept: the
//! result is the last line), the child in its own process group, which is
//! killed — SIGTERM, then SIGKILL after a grace — on timeout or when the
//! heartbeat reports the lease lost.
//!
//! Invariants: a child that never reads stdin or floods stdout cannot block
//! us; no descriptor but 0, 1 and 2 reaches the child (std and SQLite open
//! everything with O_CLOEXEC); nothing here panics on what a child does.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// What to run and how.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    pub argv: Vec<String>,
    pub stdin: Vec<u8>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// Bytes kept per stream (the last ones).
    pub output_cap: usize,
}

/// The heartbeat's verdict: keep going, or stop the child (lease lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    Continue,
    Abort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    Exited(i32),
    /// Killed by a signal we did not send.
    Signaled(i32),
    /// We killed it: the timeout passed.
    TimedOut,
    /// We killed it: the heartbeat said Abort.
    Aborted,
}

#[derive(Debug, Clone)]
pub struct ChildOutcome {
    pub exit: ChildExit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub elapsed: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnError {
    Empty,
    NotFound(String),
    NotExecutable(String),
    Other(String),
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpawnError::Empty => f.write_str("the command is empty"),
            SpawnError::NotFound(p) => write!(f, "'{p}' was not found"),
            SpawnError::NotExecutable(p) => write!(f, "'{p}' is not executable"),
            SpawnError::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for SpawnError {}

/// Splits a command line by POSIX shell word rules; no shell is involved.
pub fn split_command(cmd: &str) -> Result<Vec<String>, String> {
    let words =
        shell_words::split(cmd).map_err(|_| "unbalanced quotes in the command".to_string())?;
    if words.is_empty() {
        return Err("the command is empty".into());
    }
    Ok(words)
}

/// How often we look at the child between heartbeats.
const POLL: Duration = Duration::from_millis(10);

pub fn run_child(
    spec: &ChildSpec,
    heartbeat_every: Duration,
    heartbeat: &mut dyn FnMut() -> Heartbeat,
) -> Result<ChildOutcome, SpawnError> {
    let started = Instant::now();
    let program = spec.argv.first().ok_or(SpawnError::Empty)?;
    let mut command = Command::new(program);
    // SAFETY: the hook runs between fork and exec and makes only
    // async-signal-safe system calls (close_range, fcntl).
    unsafe {
        command.pre_exec(|| {
            cloexec_from(3);
            Ok(())
        });
    }
    let mut child = command
        .args(&spec.argv[1..])
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SpawnError::NotFound(program.clone()),
            std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(program.clone()),
            _ => SpawnError::Other(format!("'{program}' could not start: {e}")),
        })?;
    let pgid = child.id() as i32;

    if let Some(mut stdin) = child.stdin.take() {
        let bytes = spec.stdin.clone();
        // A child that exits without reading gives EPIPE: not our failure.
        thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let (sender, outputs) = mpsc::channel();
    for (index, stream) in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let (sender, cap) = (sender.clone(), spec.output_cap);
        thread::spawn(move || {
            let collected = stream.map(|s| read_tail(s, cap)).unwrap_or_default();
            let _ = sender.send((index, collected));
        });
    }
    drop(sender);

    let mut last_beat = Instant::now();
    let exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => break exit_of(status),
            Ok(None) => {}
            Err(_) => break kill_group(pgid, &mut child, spec.kill_grace, ChildExit::Aborted),
        }
        if started.elapsed() >= spec.timeout {
            break kill_group(pgid, &mut child, spec.kill_grace, ChildExit::TimedOut);
        }
        if last_beat.elapsed() >= heartbeat_every {
            last_beat = Instant::now();
            if heartbeat() == Heartbeat::Abort {
                break kill_group(pgid, &mut child, spec.kill_grace, ChildExit::Aborted);
            }
        }
        thread::sleep(POLL);
    };

    // Stray members of the group may still hold our pipes: give them the
    // grace, then kill the group so that we never wait forever.
    let mut streams: [Option<(Vec<u8>, bool)>; 2] = [None, None];
    let deadline = Instant::now() + spec.kill_grace;
    let mut killed = false;
    while streams.iter().any(Option::is_none) {
        let wait = deadline.saturating_duration_since(Instant::now()).max(POLL);
        match outputs.recv_timeout(wait) {
            Ok((index, collected)) => streams[index] = Some(collected),
            Err(mpsc::RecvTimeoutError::Timeout) if !killed => {
                signal_group(pgid, libc::SIGKILL);
                killed = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let [out, err] = streams;
    let (stdout, stdout_truncated) = out.unwrap_or_default();
    let (stderr, stderr_truncated) = err.unwrap_or_default();
    Ok(ChildOutcome {
        exit,
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        elapsed: started.elapsed(),
    })
}

/// Marks every descriptor from `first` up close-on-exec, so that nothing we
/// inherited without the flag (our own parent's descriptors) reaches the
/// child. Marking rather than closing keeps std's exec-error pipe working.
fn cloexec_from(first: u32) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: plain system calls on descriptor numbers; no memory is touched.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, u32::MAX, CLOSE_RANGE_CLOEXEC) != 0 {
            // Kernels before 5.11: do it one descriptor at a time.
            for fd in first as i32..4096 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

fn exit_of(status: ExitStatus) -> ChildExit {
    match (status.code(), status.signal()) {
        (Some(code), _) => ChildExit::Exited(code),
        (None, Some(signal)) => ChildExit::Signaled(signal),
        (None, None) => ChildExit::Signaled(0),
    }
}

fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) has no memory effects; pgid is our child's group.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// SIGTERM to the group; SIGKILL once the grace passes with any member left.
fn kill_group(pgid: i32, child: &mut Child, grace: Duration, why: ChildExit) -> ChildExit {
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    let mut reaped = false;
    while Instant::now() < deadline {
        if !reaped {
            reaped = matches!(child.try_wait(), Ok(Some(_)));
        }
        // Once the child is reaped, an empty group means everyone is gone.
        if reaped && !group_alive(pgid) {
            return why;
        }
        thread::sleep(POLL);
    }
    signal_group(pgid, libc::SIGKILL);
    let _ = child.wait();
    why
}

/// Reads a stream to its end, keeping only the last `cap` bytes.
fn read_tail(mut stream: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept: VecDeque<u8> = VecDeque::new();
    let mut truncated = false;
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                kept.extend(&buf[..n]);
                if kept.len() > cap {
                    kept.drain(..kept.len() - cap);
                    truncated = true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    (kept.into_iter().collect(), truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(script: &str) -> ChildSpec {
        ChildSpec {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            stdin: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(10),
            kill_grace: Duration::from_millis(300),
            output_cap: 1 << 16,
        }
    }

    fn run(spec: &ChildSpec) -> ChildOutcome {
        run_child(spec, Duration::from_millis(50), &mut || Heartbeat::Continue).unwrap()
    }

    fn gone(pid: i32) -> bool {
        // A zombie waiting for init to reap it is gone for our purposes.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[test]
    fn stdin_arrives_byte_identical_and_env_is_added() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("in");
        let mut s = spec(&format!("cat > '{}'; printf %s \"$EXTRA\"", file.display()));
        s.stdin = b"$(rm -rf /) `x` ; | \"q\" \xc3\xbc".to_vec();
        s.env = vec![("EXTRA".into(), "value".into())];
        let out = run(&s);
        assert_eq!(out.exit, ChildExit::Exited(0));
        assert_eq!(std::fs::read(&file).unwrap(), s.stdin);
        assert_eq!(out.stdout, b"value");
    }

    #[test]
    fn exit_codes_and_both_streams_are_captured() {
        let out = run(&spec("echo out; echo err >&2; exit 7"));
        assert_eq!(out.exit, ChildExit::Exited(7));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_flood_of_output_keeps_the_tail_without_deadlock() {
        let mut s = spec("head -c 10000000 /dev/zero; echo; echo last-line");
        s.output_cap = 1000;
        let out = run(&s);
        assert_eq!(out.exit, ChildExit::Exited(0));
        assert!(out.stdout_truncated);
        assert_eq!(out.stdout.len(), 1000);
        assert!(out.stdout.ends_with(b"last-line\n"));
    }

    #[test]
    fn timeout_kills_the_whole_group_including_grandchildren() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut s = spec(&format!(
            "sleep 30 & echo $! > '{}'; wait",
            pidfile.display()
        ));
        s.timeout = Duration::from_millis(300);
        let out = run(&s);
        assert_eq!(out.exit, ChildExit::TimedOut);
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while !gone(pid) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(pid), "grandchild {pid} survived");
        assert!(out.elapsed < Duration::from_secs(5));
    }

    #[test]
    fn a_child_ignoring_sigterm_is_killed_after_the_grace() {
        let mut s = spec("trap '' TERM; while :; do sleep 0.05; done");
        s.timeout = Duration::from_millis(200);
        s.kill_grace = Duration::from_millis(200);
        let out = run(&s);
        assert_eq!(out.exit, ChildExit::TimedOut);
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
    }

    #[test]
    fn heartbeat_abort_kills_the_child() {
        let mut beats = 0;
        let out = run_child(&spec("sleep 30"), Duration::from_millis(50), &mut || {
            beats += 1;
            if beats >= 3 {
                Heartbeat::Abort
            } else {
                Heartbeat::Continue
            }
        })
        .unwrap();
        assert_eq!(out.exit, ChildExit::Aborted);
        assert_eq!(beats, 3);
        assert!(out.elapsed < Duration::from_secs(3));
    }

    #[test]
    fn a_signal_from_elsewhere_is_reported() {
        let out = run(&spec("kill -9 $$"));
        assert_eq!(out.exit, ChildExit::Signaled(9));
    }

    #[test]
    fn spawn_errors_name_the_program() {
        let none = |argv: Vec<String>| {
            run_child(
                &ChildSpec { argv, ..spec("") },
                Duration::from_secs(1),
                &mut || Heartbeat::Continue,
            )
            .err()
        };
        assert_eq!(none(vec![]), Some(SpawnError::Empty));
        assert!(matches!(
            none(vec!["/nonexistent/x".into()]),
            Some(SpawnError::NotFound(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "echo hi").unwrap();
        assert!(matches!(
            none(vec![plain.display().to_string()]),
            Some(SpawnError::NotExecutable(_))
        ));
    }

    #[test]
    fn split_command_follows_shell_words() {
        assert_eq!(
            split_command(r#"sh -c 'echo "a b"'"#).unwrap(),
            ["sh", "-c", r#"echo "a b""#]
        );
        assert!(split_command("sh -c 'oops").is_err());
        assert!(split_command("   ").is_err());
    }

    #[test]
    fn no_descriptor_leaks_into_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let _held = std::fs::File::create(dir.path().join("held")).unwrap();
        let out = run(&spec("ls /proc/self/fd"));
        let fds: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect();
        // 0, 1, 2 and the descriptor `ls` opened to read the directory.
        assert!(fds.len() <= 4, "{fds:?}");
        assert!(
            fds.iter()
                .all(|fd| ["0", "1", "2", "3"].contains(&fd.as_str())),
            "{fds:?}"
        );
    }
}
