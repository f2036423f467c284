//! `agentcron mcp` (docs/CONTRACT.md §17): agents draft, people confirm.
//!
//! `client`: through a real MCP client this project did not write, the
//! Python SDK's stdio client (tests/mcp/client.py, installed by
//! scripts/ensure-mcp-client); a missing client skips with a note, unless
//! AGENTCRON_REQUIRE_MCP_CLIENT is set (CI). `protocol`: raw JSON-RPC on
//! stdio from Rust, and the person's terminal. `deployment`: the strong
//! deployment under a dedicated user and a sudoers rule, where root and
//! sudo are at hand. Both stores, as the rest of the suite.

pub mod client;
mod clock;
mod deployment;
mod protocol;
mod sessions;
mod truth;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{json, Value};

use crate::support::{fixture, TestEnv};

/// The tools that draft, as the server lists them first.
pub const DRAFT_TOOLS: [&str; 2] = ["draft", "draft_replace"];

/// The read-only tools an agent is offered by default, in the server's
/// order after the drafting ones.
pub const READ_TOOLS: [&str; 9] = [
    "draft_status",
    "profiles",
    "list",
    "show",
    "runs",
    "next",
    "upcoming",
    "explain",
    "status",
];

/// The environment the server gets: what `TestEnv` gives every invocation.
pub fn server_env(env: &TestEnv) -> Vec<(String, String)> {
    env.command(&[])
        .get_envs()
        .filter_map(|(k, v)| {
            Some((
                k.to_string_lossy().into_owned(),
                v?.to_string_lossy().into_owned(),
            ))
        })
        .collect()
}

/// Makes the test's notifier the fixture that journals each notice to
/// `journal`; returns the server flag that names it.
pub fn notifier(env: &TestEnv, journal: &Path) -> String {
    env.set_env("NOTIFIER_JOURNAL", &journal.display().to_string());
    format!("--notifier={}", fixture("notifier.sh"))
}

/// The last `confirm_code` notice of the journal.
#[track_caller]
pub fn last_notice(journal: &Path) -> Value {
    let text = std::fs::read_to_string(journal).expect("the notifier journaled a notice");
    let notice: Value =
        serde_json::from_str(text.lines().last().expect("a notice")).expect("the notice is JSON");
    assert_eq!(notice["kind"], "confirm_code", "{notice}");
    notice
}

/// The one-time code in the last `confirm_code` notice of the journal: its
/// `code`, which its message gives on the one line of agentcron's own that
/// says "Your one-time code is".
#[track_caller]
pub fn last_code(journal: &Path) -> String {
    let notice = last_notice(journal);
    let code = notice["code"]
        .as_str()
        .expect("the notice carries the code");
    assert!(
        code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()),
        "{notice}"
    );
    let message = notice["message"].as_str().expect("a message");
    let said: Vec<&str> = message
        .lines()
        .filter(|l| l.starts_with("Your one-time code is"))
        .collect();
    assert_eq!(said.len(), 1, "{message}");
    assert!(
        said[0].starts_with(&format!("Your one-time code is {code}.")),
        "{message}"
    );
    code.to_string()
}

/// An MCP session spoken in raw JSON-RPC lines over the server's stdio,
/// one request answered before the next is sent.
pub struct RawSession {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
    pub initialized: Value,
}

impl RawSession {
    /// Starts `agentcron mcp` with `args` (global flags first) and
    /// initializes as client `client`.
    #[track_caller]
    pub fn start(env: &TestEnv, args: &[&str], client: &str) -> RawSession {
        RawSession::over(env.command(args), client)
    }

    /// Starts the server `command` runs (`sudo … agentcron mcp`, say) and
    /// initializes as client `client`.
    #[track_caller]
    pub fn over(command: std::process::Command, client: &str) -> RawSession {
        RawSession::over_with_stderr(command, client, Stdio::inherit())
    }

    /// As `over`, with the server's stderr (its warnings) going to `stderr`.
    #[track_caller]
    pub fn over_with_stderr(
        mut command: std::process::Command,
        client: &str,
        stderr: Stdio,
    ) -> RawSession {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn agentcron mcp");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut session = RawSession {
            child,
            stdin,
            stdout,
            next_id: 1,
            initialized: Value::Null,
        };
        let init = session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": client, "version": "1.0"}}),
        );
        session.initialized = init["result"].clone();
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Writes one line as it is, JSON or not.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        writeln!(stdin, "{line}").expect("write to the server");
        stdin.flush().expect("flush to the server");
    }

    /// Sends one request and returns its response (the whole JSON-RPC object).
    #[track_caller]
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read the server");
            assert!(
                read > 0,
                "the server closed stdout before answering {method}"
            );
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the server wrote a line that is not JSON ({e}): {line}")
            });
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls a tool and returns its result (`isError`, `content`, `structuredContent`).
    #[track_caller]
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(
            response.get("error").is_none(),
            "protocol error: {response}"
        );
        response["result"].clone()
    }

    /// Closes stdin, as a host does when it is done; returns the exit code.
    pub fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        self.child
            .wait()
            .map(|s| s.code().unwrap_or(-1))
            .unwrap_or(-1)
    }
}

/// A tool result's text.
pub fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
