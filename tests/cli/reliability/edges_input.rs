//! Issue 23, "the edges of a tick's life": what comes in from outside.
//! An executor's reply with a stray byte, inputs that never end (a device,
//! a FIFO, a line without a newline), rows an import cannot take, a tasks
//! file value of the wrong type, a server clock that disagrees, and errors
//! whose causes used to spill over several lines. Each ends in one clear
//! outcome: a `failed` run, or one `agentcron: error:` line and its code.

use std::os::unix::process::CommandExt;
use std::time::Duration;

use super::bad_input::{run_bounded, Ran};
use crate::support::Rig;
use crate::support::{on_postgres, write_script, TestEnv, T0};

/// Long enough for a loaded machine, short enough that a hang fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `args` under the deadline with its address space capped at 2 GiB,
/// so a regression that buffers an endless input aborts on allocation
/// instead of taking the machine's memory with it.
fn bounded(env: &TestEnv, args: &[&str]) -> Ran {
    let mut cmd = env.command(args);
    // SAFETY: setrlimit is async-signal-safe and touches no Rust state.
    unsafe {
        cmd.pre_exec(|| {
            let cap = 2 << 30;
            let limit = libc::rlimit {
                rlim_cur: cap,
                rlim_max: cap,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    run_bounded(cmd, DEADLINE)
}

/// Exit `code`, nothing on stdout, one error line (plus at most a hint)
/// that contains every one of `parts`.
fn one_error_line(ran: &Ran, code: i32, parts: &[&str]) {
    assert_eq!(
        ran.code,
        Some(code),
        "after {:?}; stderr: {}",
        ran.elapsed,
        ran.stderr
    );
    assert_eq!(ran.stdout, "");
    assert_one_line(&ran.stderr, parts);
}

fn assert_one_line(stderr: &str, parts: &[&str]) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("  hint: ")),
        "one error line and at most a hint: {stderr}"
    );
    assert!(lines[0].starts_with("agentcron: error: "), "{stderr}");
    for part in parts {
        assert!(lines[0].contains(part), "{part:?} missing from: {stderr}");
    }
}

// ---- 4. A failed result is never recorded as success ----------------------

/// An executor that prints `reply` (raw bytes, via printf's octal escapes)
/// as its last line and exits 0.
fn replying(rig: &Rig, reply: &str) {
    let script = rig.env.path("reply.sh");
    write_script(
        &script,
        &format!("#!/bin/sh\ncat >/dev/null\necho working\nprintf '{reply}\\n'\nexit 0\n"),
    );
    rig.env
        .set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
}

#[test]
fn a_failed_reply_with_an_invalid_utf8_byte_is_recorded_failed_and_retried() {
    let rig = Rig::new();
    replying(&rig, r#"{"status":"failed","summary":"bad \377"}"#);
    rig.env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "h",
        "--max-retries",
        "2",
    ]);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    let runs = rig.runs("h");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "failed", "{runs:?}");
    assert_eq!(runs[0]["summary"], "bad \u{fffd}", "{runs:?}");
    let task = rig.env.json(&["show", "h"]);
    assert!(task["next_retry_at"].is_string(), "no retry: {task}");
}

#[test]
fn a_reply_that_begins_like_a_result_but_does_not_parse_is_failed() {
    let rig = Rig::new();
    replying(&rig, r#"{"status":"succeeded","summary":"cut off"#);
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    let runs = rig.runs("h");
    assert_eq!(runs[0]["status"], "failed", "{runs:?}");
    let reason = runs[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("malformed executor reply: "),
        "the run says why: {reason}"
    );
    assert_eq!(
        runs[0]["summary"],
        "working\n{\"status\":\"succeeded\",\"summary\":\"cut off"
    );
}

// ---- 7. Bounded input -------------------------------------------------------

fn mkfifo(env: &TestEnv, name: &str) -> String {
    let path = env.path(name);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    path.display().to_string()
}

#[test]
fn plan_and_import_refuse_a_device_at_once() {
    let env = TestEnv::new();
    for cmd in ["plan", "import"] {
        let ran = bounded(&env, &[cmd, "/dev/zero"]);
        one_error_line(&ran, 2, &["/dev/zero", "not a regular file"]);
    }
}

#[test]
fn plan_and_import_refuse_a_fifo_without_blocking() {
    let env = TestEnv::new();
    let fifo = mkfifo(&env, "tasks.fifo");
    for cmd in ["plan", "apply", "import"] {
        let mut args = vec![cmd, fifo.as_str()];
        let zeros = "0".repeat(64);
        if cmd == "apply" {
            args.extend(["--hash", zeros.as_str()]);
        }
        let ran = bounded(&env, &args);
        one_error_line(&ran, 2, &[&fifo, "not a regular file"]);
        assert!(
            ran.elapsed < Duration::from_secs(5),
            "{cmd}: {:?}",
            ran.elapsed
        );
    }
    let dir = env.dir.path().display().to_string();
    let ran = bounded(&env, &["plan", &dir]);
    one_error_line(&ran, 2, &[&dir, "not a regular file"]);
}

#[test]
fn a_plan_file_over_16_mib_is_refused() {
    let env = TestEnv::new();
    let path = env.path("tasks.toml");
    let file = std::fs::File::create(&path).unwrap();
    // Sparse: sixteen MiB and one byte of zeros, written in no time.
    file.set_len((16 << 20) + 1).unwrap();
    let shown = path.display().to_string();
    let ran = bounded(&env, &["plan", &shown]);
    one_error_line(&ran, 2, &[&shown, "16 MiB"]);
}

// The import line cap (1 MiB) is tested in `bounded_input.rs`.

// ---- 8a. import of rows the store cannot take -----------------------------

/// An export of a store with one task and one run, as lines.
fn exported() -> Vec<String> {
    let rig = Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    let dump = rig.env.run(&["export"]).ok().stdout;
    dump.lines().map(str::to_string).collect()
}

fn import(lines: &[String]) -> crate::support::Outcome {
    let target = TestEnv::new();
    let mut text = lines.join("\n");
    text.push('\n');
    let out = target.run_with_stdin(&["import"], text.as_bytes());
    assert_eq!(
        target.count("SELECT count(*) FROM tasks"),
        0,
        "a refused import imports nothing"
    );
    out
}

#[test]
fn import_of_a_duplicate_or_orphan_row_names_its_line_with_2() {
    let lines = exported();
    let task = lines
        .iter()
        .position(|l| l.contains("\"table\":\"tasks\""))
        .expect("a task line");
    let mut duplicate = lines.clone();
    duplicate.push(lines[task].clone());
    let out = import(&duplicate).fails(2);
    let at = format!("line {}: ", duplicate.len());
    assert_one_line(&out.stderr, &[&at, "duplicate", "tasks"]);

    let mut orphan = lines.clone();
    orphan.remove(task);
    let run = orphan
        .iter()
        .position(|l| l.contains("\"table\":\"runs\""))
        .expect("a run line");
    let out = import(&orphan).fails(2);
    let at = format!("line {}: ", run + 1);
    assert_one_line(&out.stderr, &[&at, "runs", "not in the import"]);
}

// ---- 8b. status: the sign of the clock skew --------------------------------

#[test]
fn status_says_which_clock_is_ahead() {
    if !on_postgres() {
        // A SQLite file has no server clock to disagree with.
        return;
    }
    let env = TestEnv::new();
    env.task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    // This host's clock 30 s behind: the server's is 30 s ahead of it.
    env.set_env("AGENTCRON_TEST_CLOCK_SKEW", "-30s");
    let out = env.run(&["status"]).ok();
    assert!(
        out.stdout
            .contains("the database server's clock is 30 s ahead of this host's"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains(
            "agentcron: warning: the database server's clock is 30 s ahead of this host's"
        ),
        "{}",
        out.stderr
    );
    env.set_env("AGENTCRON_TEST_CLOCK_SKEW", "+30s");
    let out = env.run(&["status"]).ok();
    assert!(
        out.stderr
            .contains("the database server's clock is 30 s behind this host's"),
        "{}",
        out.stderr
    );
}

// ---- 8c. tasks file type errors name the task and the key ------------------

#[test]
fn a_tasks_file_value_of_the_wrong_type_names_its_task_and_key() {
    let env = TestEnv::new();
    let path = env.path("tasks.toml");
    let shown = path.display().to_string();
    for (body, expected) in [
        (
            "[backup]\ninstruction = \"x\"\ndaily = \"09:00\"\nmax_retries = \"three\"\n",
            "tasks.toml:4: task 'backup', key 'max_retries': expected a whole number, got string \"three\"",
        ),
        (
            "[backup]\ninstruction = 5\ndaily = \"09:00\"\n",
            "tasks.toml:2: task 'backup', key 'instruction': expected a string (in quotes), got integer `5`",
        ),
        (
            "backup = { instruction = \"x\", daily = \"09:00\", count = -1 }\n",
            "tasks.toml:1: task 'backup', key 'count': expected a whole number, got integer `-1`",
        ),
    ] {
        std::fs::write(&path, body).unwrap();
        let out = env.run(&["plan", &shown]).fails(2);
        assert_one_line(&out.stderr, &[expected]);
    }
}

// ---- 8d. one line for errors with causes ------------------------------------

#[test]
fn a_database_under_proc_is_one_error_line() {
    let env = TestEnv::new();
    let out = env.run(&["--db", "/proc/version", "list"]).fails(1);
    assert_one_line(
        &out.stderr,
        &["/proc/version", "unable to open database file"],
    );
    let out = env
        .run(&[
            "--db",
            "/proc/self/x.db",
            "draft",
            "--instruction",
            "x",
            "--in",
            "1h",
        ])
        .fails(1);
    assert_one_line(
        &out.stderr,
        &["/proc/self/x.db", "No such file or directory"],
    );
}

#[test]
fn sqlite_failures_to_open_are_one_error_line() {
    let env = TestEnv::new();
    // SQLite reads it as an empty database (its size is 0): no store, for a
    // command that creates none (docs/CONTRACT.md §1), in one line.
    let out = env
        .run(&["--db", "/proc/sys/kernel/hostname", "list"])
        .fails(3);
    assert_one_line(&out.stderr, &["/proc/sys/kernel/hostname"]);
    assert!(!out.stderr.contains("Error code"), "{}", out.stderr);
    // A symlinked folder (which /proc/self is) is followed (issue 33 item
    // 6): what it reaches is read as it is, an empty file, no store.
    let out = env.run(&["--db", "/proc/self/status", "list"]).fails(3);
    assert_one_line(&out.stderr, &["/proc/self/status", "no agentcron store"]);
}

/// `apply` on PostgreSQL, its session ended by the server
/// (`pg_terminate_backend`) while its transaction is open: exit 1, one line.
/// The apply is held open by a crash-point hook: test builds only.
#[cfg(feature = "test-hooks")]
#[test]
fn a_terminated_postgres_session_is_one_error_line() {
    if !on_postgres() {
        return;
    }
    let env = TestEnv::new();
    let path = env.path("tasks.toml");
    std::fs::write(
        &path,
        "[a]\ninstruction = \"x\"\ndaily = \"09:00\"\n\n[b]\ninstruction = \"y\"\ndaily = \"10:00\"\n",
    )
    .unwrap();
    let file = path.display().to_string();
    let hash = env.json(&["plan", &file])["plan_hash"]
        .as_str()
        .unwrap()
        .to_string();
    env.set_env("AGENTCRON_TEST_HOOK", "apply_midway:sleep:3000");
    let child = super::spawn(&env, &["apply", &file, "--hash", &hash]);
    let session = format!("agentcron/{}", child.id());
    let mut ended = false;
    for _ in 0..200 {
        let killed = env.sql(&format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = '{session}' AND state = 'idle in transaction'"
        ));
        if killed[0][0] != "0" {
            ended = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        ended,
        "the apply's session never showed up idle in its transaction"
    );
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_one_line(&stderr, &["terminating connection"]);
    env.set_env("AGENTCRON_TEST_HOOK", "");
    assert_eq!(env.json(&["list"]).as_array().unwrap().len(), 0);
}
