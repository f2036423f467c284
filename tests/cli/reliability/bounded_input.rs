//! Issue 23 item 7, the import side: `import` reads line by line, at most
//! 1 MiB a line, from a file or standard input (a line without end, such as
//! `/dev/zero` on stdin, is refused at the cap instead of filling memory).
//! Devices, FIFOs and the 16 MiB plan cap are refused at once, too.
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::bad_input::{bounded, one_error_line};
use crate::support::{assert_contains, TestEnv};

#[test]
fn an_import_line_past_1_mib_is_refused_from_a_file_and_from_stdin() {
    let env = TestEnv::new();
    let export = env.path("export.jsonl");
    let line = format!(
        "{{\"table\":\"events\",\"detail\":\"{}\"}}\n",
        "x".repeat(1 << 20)
    );
    std::fs::write(&export, format!("\n{line}")).unwrap();
    let out = env.run(&["import", export.to_str().unwrap()]).fails(2);
    assert_contains(&out.stderr, "line 2 is longer than 1 MiB");
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
