//! Real processes in the background: a tick spawned and waited for, a
//! condition waited for with a deadline (a hang fails the test, never hangs
//! it), a signal sent.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::rig::Rig;

/// `agentcron tick EXTRA…` in the background, output piped.
pub fn spawn_tick(rig: &Rig, extra: &[&str]) -> Child {
    let mut args = vec!["tick"];
    args.extend_from_slice(extra);
    rig.env
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tick")
}

/// Waits up to 20 s for `done`; fails naming `what`.
#[track_caller]
pub fn wait_for(what: &str, done: impl FnMut() -> bool) {
    wait_for_within(what, Duration::from_secs(20), done);
}

/// Waits up to `limit` for `done`; fails naming `what`.
#[track_caller]
pub fn wait_for_within(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Writes `input` to `child`'s piped stdin, closes it, and waits for the
/// child's output.
pub fn fed(mut child: Child, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("a piped stdin")
        .write_all(input)
        .expect("write the child's stdin");
    child.wait_with_output().expect("wait for the child")
}

pub fn kill(pid: i32, signal: i32) {
    // SAFETY: sending a signal has no memory effects on this process.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Waits for `child` and asserts its exit code, showing its stderr when the
/// code is another.
#[track_caller]
pub fn finished(child: std::process::Child, code: i32) -> std::process::Output {
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether process `pid` has ended (gone, or a zombie).
pub fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
    }
}

/// Whether process `pid` still runs (not a zombie) with `tag` in its
/// command line.
pub fn alive(pid: i32, tag: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat[stat.rfind(')').map_or(0, |i| i + 2)..]
        .split(' ')
        .next()
        .unwrap_or("");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    state != "Z" && String::from_utf8_lossy(&cmdline).contains(tag)
}
