//! Issue 23 item 7, the import side: `import` reads line by line, at most
//! 1 MiB a line, from a file or standard input (a line without end, such as
//! `/dev/zero` on stdin, is refused at the cap instead of filling memory).
//! Devices, FIFOs, directories and the 16 MiB plan cap: `edges_input.rs`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::TestEnv;

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
