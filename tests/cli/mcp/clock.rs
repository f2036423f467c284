//! The server's "now" across a long session (issue 37 item 2): the MCP
//! server lives as long as its agent's session, so every tool call reads the
//! clock afresh, and `status` compares the database server's clock with this
//! host's clock as it is at that call, never as it was when the server
//! started. Real time passes in this test (15 s): that is what it tests.
use crate::support::{on_postgres, Task, TestEnv};

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use super::RawSession;

/// How long the server runs before the second `status`: well past the
/// skew `status` warns about (5 s).
const SESSION_AGE: Duration = Duration::from_secs(15);

#[test]
fn a_server_that_has_run_15_s_reports_no_clock_skew() {
    if !on_postgres() {
        eprintln!(
            "skipped: a SQLite store has no server clock; runs with AGENTCRON_TEST_STORE=postgres"
        );
        return;
    }
    let env = TestEnv::new();
    Task::named("hourly").confirm(&env);
    let log = env.path("mcp.stderr");
    let stderr = std::fs::File::create(&log).unwrap();
    let mut session =
        RawSession::over_with_stderr(env.command(&["mcp"]), "clock-probe", Stdio::from(stderr));
    let first = session.call("status", json!({}));
    assert_eq!(first["isError"], false, "{first}");
    std::thread::sleep(SESSION_AGE);
    let later = session.call("status", json!({}));
    assert_eq!(later["isError"], false, "{later}");
    assert_eq!(session.finish(), 0);
    for (when, result) in [("at start", &first), ("15 s later", &later)] {
        let skew = result["structuredContent"]["clock_skew_seconds"]
            .as_i64()
            .unwrap_or_else(|| panic!("{when}: a skew on PostgreSQL: {result}"));
        assert!(
            skew.abs() <= 2,
            "{when}: this host and its own server agree, but status says {skew} s"
        );
    }
    let warned = std::fs::read_to_string(&log).unwrap();
    assert!(!warned.contains("run NTP"), "{warned}");
}
