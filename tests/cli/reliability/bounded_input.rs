//! Issue 23 item 7: every input is bounded. `plan` and `import` read
//! regular files only (a FIFO blocked forever, `/dev/zero` grew the process
//! to 3-5 GB on the way to the OOM killer), under a cap: 16 MiB for a plan,
//! 1 MiB per line for an import. One error line, exit 2, nothing written.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Outcome, TestEnv};

/// Runs agentcron, failing the test (not hanging it) past `limit`.
fn run_bounded(env: &TestEnv, args: &[&str], limit: Duration) -> Outcome {
    let mut child = env
        .command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

#[test]
fn plan_and_import_refuse_devices_fifos_and_directories_at_once() {
    let env = TestEnv::new();
    let fifo = env.path("tasks.fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let dir = env.dir.path().to_str().unwrap();
    let limit = Duration::from_secs(10);
    for (args, is) in [
        (vec!["plan", "/dev/zero"], "a device"),
        (vec!["plan", fifo], "a FIFO"),
        (vec!["plan", dir], "a directory"),
        (vec!["import", "/dev/zero"], "a device"),
        (vec!["import", fifo], "a FIFO"),
    ] {
        let out = run_bounded(&env, &args, limit).fails(2);
        assert!(
            out.stderr.contains(&format!("is {is}, not a regular file")),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert!(!env.db.exists(), "nothing was written");
}

#[test]
fn a_plan_past_16_mib_and_an_import_line_past_1_mib_are_refused() {
    let env = TestEnv::new();
    let big = env.path("big.toml");
    // A valid TOML comment, one byte past the cap.
    let mut text = String::from("#");
    text.push_str(&" ".repeat((16 << 20) - 1));
    text.push('\n');
    std::fs::write(&big, text).unwrap();
    let out = env.run(&["plan", big.to_str().unwrap()]).fails(2);
    assert!(out.stderr.contains("larger than 16 MiB"), "{}", out.stderr);

    let export = env.path("export.jsonl");
    let line = format!(
        "{{\"table\":\"events\",\"detail\":\"{}\"}}\n",
        "x".repeat(1 << 20)
    );
    std::fs::write(&export, format!("\n{line}")).unwrap();
    let out = env.run(&["import", export.to_str().unwrap()]).fails(2);
    assert!(
        out.stderr.contains("line 2 is longer than 1 MiB"),
        "{}",
        out.stderr
    );
    // From standard input too: a line without end is cut at the cap.
    let mut child = env
        .command(&["import", "-"])
        .stdin(Stdio::from(std::fs::File::open("/dev/zero").unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "import - of /dev/zero runs on");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1 is longer than 1 MiB"));
}
