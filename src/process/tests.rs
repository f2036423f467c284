//! Real-process tests of `run_child`: small /bin/sh scripts in a temp dir.
//!
//! Scripts are run as `/bin/sh SCRIPT` rather than executed directly: a file just
//! written can be briefly "busy" (ETXTBSY) while another test thread forks, and
//! reading it through sh sidesteps that. Every limit is short so the suite stays fast.

use super::*;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tempfile::TempDir;

const GRACE: Duration = Duration::from_millis(200);

fn spec(argv: &[&str]) -> ChildSpec {
    ChildSpec {
        argv: argv.iter().map(|arg| arg.to_string()).collect(),
        stdin: Vec::new(),
        env: Vec::new(),
        launch: Launch::default(),
        timeout: Duration::from_secs(10),
        kill_grace: GRACE,
        output_cap: 1 << 20,
        lease_root: None,
    }
}

/// A spec running `body` with /bin/sh; `$1` is `arg`.
fn sh(dir: &TempDir, body: &str, arg: &Path) -> ChildSpec {
    let script = dir.path().join("script.sh");
    fs::write(&script, body).expect("writing the script");
    spec(&["/bin/sh", &script.to_string_lossy(), &arg.to_string_lossy()])
}

fn run(spec: &ChildSpec) -> ChildOutcome {
    run_child(spec, Duration::from_secs(60), &mut || Heartbeat::Continue).expect("spawning")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The pid a script wrote to `path` (it writes it first thing).
fn pid_in(path: &Path) -> libc::pid_t {
    let content = fs::read_to_string(path).expect("the script wrote its pid file");
    content.trim().parse().expect("a pid")
}

/// True when `pid` no longer runs: gone, or a zombie its new parent has yet to reap.
fn is_gone(pid: libc::pid_t) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: kill with signal 0 only checks for existence.
        let missing = unsafe { libc::kill(pid, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let zombie = fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            state.is_some_and(|rest| rest.starts_with('Z') || rest.starts_with('X'))
        });
        if missing || zombie {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

fn dir() -> TempDir {
    tempfile::tempdir().expect("a temp dir")
}

#[test]
fn stdin_arrives_byte_identical() {
    let dir = dir();
    let out = dir.path().join("received");
    let mut input =
        b"$HOME `id` $(rm -rf /) 'single' \"double\" \\ ; | & > < * ? ~ #\n\t\r".to_vec();
    // Every byte but NUL, repeated past the pipe buffer so the writer must block.
    let all: Vec<u8> = (1..=255u8).collect();
    while input.len() < 300_000 {
        input.extend(&all);
    }
    let mut spec = sh(&dir, "cat > \"$1\"", &out);
    spec.stdin = input.clone();
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert_eq!(fs::read(&out).expect("the copy"), input);
}

#[test]
fn a_child_that_never_reads_stdin_does_not_block_us() {
    let dir = dir();
    let mut spec = sh(&dir, "exit 0", dir.path());
    spec.stdin = vec![b'x'; 1 << 20];
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn the_child_gets_exactly_the_launch_environment_and_its_own() {
    let dir = dir();
    let mut spec = sh(
        &dir,
        "printf '%s|%s|%s' \"$AGENTCRON_TEST_VALUE\" \"$PATH\" \"${CARGO:-none}\"",
        dir.path(),
    );
    spec.env = vec![("AGENTCRON_TEST_VALUE".into(), "a b $HOME 'q'".into())];
    spec.launch.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    // CARGO is in this test's own environment: the child does not inherit it.
    assert!(std::env::var_os("CARGO").is_some());
    assert_eq!(text(&run(&spec).stdout), "a b $HOME 'q'|/usr/bin:/bin|none");
}

#[test]
fn exit_code_and_both_streams_are_captured() {
    let dir = dir();
    let outcome = run(&sh(&dir, "echo out; echo err >&2; exit 3", dir.path()));
    assert_eq!(outcome.exit, ChildExit::Exited(3));
    assert_eq!(text(&outcome.stdout), "out\n");
    assert_eq!(text(&outcome.stderr), "err\n");
    assert!(!outcome.stdout_truncated && !outcome.stderr_truncated);
}

#[test]
fn output_over_the_cap_keeps_the_tail() {
    let dir = dir();
    let body = "i=0; while [ $i -lt 1000 ]; do echo line$i; echo e$i >&2; i=$((i+1)); done";
    let mut spec = sh(&dir, body, dir.path());
    spec.output_cap = 100;
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert_eq!(outcome.stdout.len(), 100);
    assert!(text(&outcome.stdout).ends_with("\nline998\nline999\n"));
    assert!(outcome.stdout_truncated);
    assert_eq!(outcome.stderr.len(), 100);
    assert!(text(&outcome.stderr).ends_with("\ne999\n"));
    assert!(outcome.stderr_truncated);
}

#[test]
fn a_zero_cap_keeps_nothing() {
    let dir = dir();
    let mut spec = sh(&dir, "echo something", dir.path());
    spec.output_cap = 0;
    let outcome = run(&spec);
    assert_eq!(
        (outcome.stdout, outcome.stdout_truncated),
        (Vec::new(), true)
    );
    assert_eq!(
        (outcome.stderr, outcome.stderr_truncated),
        (Vec::new(), false)
    );
}

#[test]
fn ten_megabytes_on_each_stream_do_not_deadlock() {
    let dir = dir();
    let body = "head -c 10485760 /dev/zero; head -c 10485760 /dev/zero >&2; echo done";
    let mut spec = sh(&dir, body, dir.path());
    spec.output_cap = 4096;
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert_eq!(outcome.stdout.len(), 4096);
    assert!(outcome.stdout.ends_with(b"\0\0done\n"));
    assert!(outcome.stdout_truncated && outcome.stderr_truncated);
}

#[test]
fn a_timeout_kills_the_whole_group_including_a_grandchild() {
    let dir = dir();
    let pidfile = dir.path().join("pid");
    let mut spec = sh(&dir, "sleep 30 & echo $! > \"$1\"; wait", &pidfile);
    spec.timeout = Duration::from_millis(300);
    spec.stdin = vec![b'x'; 1 << 20]; // never read: the blocked writer must not hold us
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::TimedOut);
    assert!(outcome.elapsed >= Duration::from_millis(300));
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
    assert!(is_gone(pid_in(&pidfile)), "the grandchild survived");
}

#[test]
fn a_child_ignoring_sigterm_is_killed_after_the_grace() {
    let dir = dir();
    let body = "trap '' TERM; echo ready; while :; do sleep 0.05; done";
    let mut spec = sh(&dir, body, dir.path());
    spec.timeout = Duration::from_millis(200);
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::TimedOut);
    assert!(
        outcome.elapsed >= Duration::from_millis(200) + GRACE,
        "{:?}",
        outcome.elapsed
    );
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
    assert_eq!(
        text(&outcome.stdout),
        "ready\n",
        "output before the kill is kept"
    );
}

#[test]
fn a_child_obeying_sigterm_does_not_wait_out_the_grace() {
    let dir = dir();
    let mut spec = sh(&dir, "exec sleep 30", dir.path());
    spec.timeout = Duration::from_millis(200);
    spec.kill_grace = Duration::from_secs(5);
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::TimedOut);
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn a_stray_holding_our_pipes_after_exit_is_killed_after_the_grace() {
    let dir = dir();
    let pidfile = dir.path().join("pid");
    let outcome = run(&sh(&dir, "sleep 30 & echo $! > \"$1\"; echo bye", &pidfile));
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert_eq!(text(&outcome.stdout), "bye\n");
    assert!(outcome.elapsed >= GRACE, "waited for trailing output");
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
    assert!(is_gone(pid_in(&pidfile)), "the stray survived");
}

#[test]
fn a_stray_without_our_pipes_is_killed_at_once() {
    let dir = dir();
    let pidfile = dir.path().join("pid");
    let body = "sleep 30 </dev/null >/dev/null 2>&1 & echo $! > \"$1\"";
    let mut spec = sh(&dir, body, &pidfile);
    spec.kill_grace = Duration::from_secs(5);
    let outcome = run(&spec);
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
    assert!(is_gone(pid_in(&pidfile)), "the stray survived");
}

#[test]
fn trailing_output_of_a_background_job_is_kept() {
    let dir = dir();
    let outcome = run(&sh(
        &dir,
        "(sleep 0.05; echo late) & echo early",
        dir.path(),
    ));
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert_eq!(text(&outcome.stdout), "early\nlate\n");
}

#[test]
fn the_heartbeat_beats_at_its_interval_while_the_child_runs() {
    let dir = dir();
    let spec = sh(&dir, "sleep 0.5", dir.path());
    let started = Instant::now();
    let mut beats = Vec::new();
    let outcome = run_child(&spec, Duration::from_millis(50), &mut || {
        beats.push(started.elapsed());
        Heartbeat::Continue
    })
    .expect("spawning");
    assert_eq!(outcome.exit, ChildExit::Exited(0));
    assert!((5..=11).contains(&beats.len()), "{beats:?}");
    // Beats keep to a 50 ms grid: one that came late (a loaded machine) is
    // followed by the next on time, so two may be closer than 50 ms, but
    // the n-th never comes before n × 50 ms (no beat early, none extra).
    for (n, beat) in beats.iter().enumerate() {
        assert!(
            *beat >= Duration::from_millis(50) * (n as u32 + 1),
            "{beats:?}"
        );
    }
}

#[test]
fn an_abort_from_the_heartbeat_kills_the_group() {
    let dir = dir();
    let pidfile = dir.path().join("pid");
    let spec = sh(&dir, "sleep 30 & echo $! > \"$1\"; wait", &pidfile);
    let mut beats = 0;
    let outcome = run_child(&spec, Duration::from_millis(20), &mut || {
        beats += 1;
        if beats == 3 {
            Heartbeat::Abort
        } else {
            Heartbeat::Continue
        }
    })
    .expect("spawning");
    assert_eq!(outcome.exit, ChildExit::Aborted);
    assert_eq!(beats, 3, "no beat after the abort");
    assert!(
        outcome.elapsed < Duration::from_secs(2),
        "{:?}",
        outcome.elapsed
    );
    assert!(is_gone(pid_in(&pidfile)), "the grandchild survived");
}

#[test]
fn a_signal_we_did_not_send_is_reported() {
    let dir = dir();
    let outcome = run(&sh(&dir, "echo before; kill -9 $$", dir.path()));
    assert_eq!(outcome.exit, ChildExit::Signaled(9));
    assert_eq!(text(&outcome.stdout), "before\n");
}

#[test]
fn an_empty_argv_is_refused() {
    let error = run_child(&spec(&[]), GRACE, &mut || Heartbeat::Continue).unwrap_err();
    assert_eq!(error, SpawnError::Empty);
    assert_eq!(
        error.to_string(),
        "the command is empty: give a program to run"
    );
}

fn spawn_error(argv: &[&str]) -> SpawnError {
    // A script written a moment ago may be busy while another test forks; retry that.
    for _ in 0..50 {
        match run_child(&spec(argv), GRACE, &mut || Heartbeat::Continue) {
            Err(SpawnError::Other(message)) if message.contains("busy") => {
                thread::sleep(Duration::from_millis(10));
            }
            Err(error) => return error,
            Ok(outcome) => panic!("{argv:?} ran: {outcome:?}"),
        }
    }
    panic!("{argv:?} stayed busy");
}

#[test]
fn a_missing_program_is_not_found() {
    let error = spawn_error(&["agentcron-no-such-program-zz", "arg"]);
    assert_eq!(
        error,
        SpawnError::NotFound("agentcron-no-such-program-zz".into())
    );
    assert_eq!(
        error.to_string(),
        "`agentcron-no-such-program-zz` was not found in PATH"
    );

    let error = spawn_error(&["/nonexistent/agentcron-executor"]);
    assert_eq!(
        error,
        SpawnError::NotFound("/nonexistent/agentcron-executor".into())
    );
    assert!(error
        .to_string()
        .starts_with("`/nonexistent/agentcron-executor` does not exist"));
}

#[test]
fn a_script_with_a_missing_interpreter_is_not_found() {
    let dir = dir();
    let script = dir.path().join("executor");
    fs::write(&script, "#!/nonexistent/interpreter\n").expect("writing");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
    let program = script.to_string_lossy().into_owned();
    assert_eq!(
        spawn_error(&[&program]),
        SpawnError::NotFound(program.clone())
    );
}

#[test]
fn a_file_without_execute_permission_is_not_executable() {
    let dir = dir();
    let script = dir.path().join("executor");
    fs::write(&script, "#!/bin/sh\necho hi\n").expect("writing");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).expect("chmod");
    let program = script.to_string_lossy().into_owned();
    let error = spawn_error(&[&program]);
    assert_eq!(error, SpawnError::NotExecutable(program.clone()));
    assert!(error.to_string().contains("cannot be executed"), "{error}");

    let folder = dir.path().to_string_lossy().into_owned();
    assert_eq!(
        spawn_error(&[&folder]),
        SpawnError::NotExecutable(folder.clone())
    );
}

#[test]
fn split_command_follows_shell_word_rules_without_a_shell() {
    assert_eq!(
        split_command(r#"sh -c 'echo "a b"'"#),
        Ok(vec!["sh".into(), "-c".into(), r#"echo "a b""#.into()])
    );
    assert_eq!(
        split_command(r"run a\ b $HOME *"),
        Ok(vec!["run".into(), "a b".into(), "$HOME".into(), "*".into()])
    );
    assert_eq!(
        split_command("run --tag #1 '#2'"),
        Ok(vec!["run".into(), "--tag".into()]),
        "a word starting with # is a comment, as in sh"
    );
    assert_eq!(
        split_command("run '#1' a#b"),
        Ok(vec!["run".into(), "#1".into(), "a#b".into()])
    );
}

#[test]
fn split_command_rejects_unbalanced_quotes_and_empty_commands() {
    assert_eq!(
        split_command("sh -c 'echo"),
        Err("cannot split the command `sh -c 'echo`: missing closing quote".into())
    );
    assert_eq!(
        split_command(r#"say "hi"#),
        Err(r#"cannot split the command `say "hi`: missing closing quote"#.into())
    );
    for blank in ["", "   ", "\t\n"] {
        assert_eq!(split_command(blank), Err(EMPTY_COMMAND.into()), "{blank:?}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn no_file_descriptor_leaks_into_the_child() {
    let dir = dir();
    // One descriptor opened the Rust way (close-on-exec) and one inherited the
    // old way (dup clears close-on-exec): neither may reach the child.
    let file = fs::File::create(dir.path().join("held-open")).expect("creating");
    // SAFETY: dup on a valid descriptor; the result is owned and closed below.
    let raw = unsafe { libc::dup(file.as_raw_fd()) };
    assert!(raw >= 0, "dup failed");
    // SAFETY: `raw` is a fresh descriptor nothing else owns.
    let inheritable = unsafe { OwnedFd::from_raw_fd(raw) };

    let outcome = run(&spec(&["ls", "/proc/self/fd"]));
    assert_eq!(
        outcome.exit,
        ChildExit::Exited(0),
        "{}",
        text(&outcome.stderr)
    );
    let mut fds: Vec<u32> = text(&outcome.stdout)
        .lines()
        .map(|line| line.parse().expect("a descriptor number"))
        .collect();
    fds.sort_unstable();
    // 3, when present, is the descriptor ls opened to read the directory itself.
    assert!(fds == [0, 1, 2] || fds == [0, 1, 2, 3], "{fds:?}");
    drop((inheritable, file));
}

#[test]
fn spawn_errors_name_the_program() {
    let cases = [
        (
            SpawnError::NotFound("x".into()),
            "`x` was not found in PATH",
        ),
        (
            SpawnError::NotFound("./x".into()),
            "`./x` does not exist (or the interpreter on its #! line does not)",
        ),
        (
            SpawnError::NotExecutable("x".into()),
            "`x` cannot be executed: it needs execute permission and must be a program or \
             a script starting with #!",
        ),
        (
            SpawnError::Other("could not start `x`: boom".into()),
            "could not start `x`: boom",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.to_string(), message);
    }
}
