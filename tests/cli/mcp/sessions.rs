//! Long sessions: every read tool after every other on the one connection
//! a server keeps for its life, with rows of every shape to read.
use crate::support::{assert_contains, Rig, Task};

use serde_json::{json, Value};

use super::{text, RawSession};

/// An order of `n` items in which every ordered pair (a, b), a == b
/// included, appears once as neighbours: an Eulerian circuit of the
/// complete directed graph with loops (Hierholzer), `n * n + 1` long.
fn every_ordered_pair(n: usize) -> Vec<usize> {
    let mut unused: Vec<Vec<usize>> = (0..n).map(|_| (0..n).collect()).collect();
    let (mut stack, mut circuit) = (vec![0], Vec::new());
    while let Some(&at) = stack.last() {
        match unused[at].pop() {
            Some(next) => stack.push(next),
            None => circuit.push(stack.pop().unwrap()),
        }
    }
    circuit.reverse();
    circuit
}

#[test]
fn every_ordered_pair_of_read_tools_answers_in_one_session() {
    let rig = Rig::new();
    let env = &rig.env;
    let task = Task::named("hourly").confirm(env);
    Task::named("daily")
        .instruction("y")
        .daily("09:30")
        .confirm(env);
    for _ in 0..2 {
        env.advance(3600);
        rig.tick(&[]).ok();
    }
    let draft = env.draft(&["--instruction", "z", "--in", "2h"]);
    let calls: [(&str, Value); 8] = [
        ("draft_status", json!({"draft_id": draft["draft_id"]})),
        ("list", json!({})),
        ("show", json!({"task": "hourly"})),
        ("runs", json!({})),
        ("next", json!({"task": "hourly"})),
        ("upcoming", json!({})),
        ("explain", json!({"task": task["task_id"]})),
        ("status", json!({})),
    ];
    let order = every_ordered_pair(calls.len());
    assert_eq!(order.len(), calls.len() * calls.len() + 1);
    let mut session = RawSession::start(env, &["mcp"], "pairs");
    let mut previous = "(none)";
    for i in order {
        let (tool, arguments) = &calls[i];
        let result = session.call(tool, arguments.clone());
        assert_eq!(
            result["isError"], false,
            "{tool} after {previous}: {result}"
        );
        previous = tool;
    }
    assert_eq!(session.finish(), 0);
}

/// Reads the server's lines until the answer to request `id`; every
/// message read, that answer last.
fn read_until_answer(session: &mut RawSession, id: i64) -> Vec<Value> {
    use std::io::BufRead;
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        let read = session
            .stdout
            .read_line(&mut line)
            .expect("read the server");
        assert!(read > 0, "the server closed stdout; it answered {seen:?}");
        let message: Value = serde_json::from_str(&line).expect("the server writes JSON");
        let done = message["id"] == json!(id);
        seen.push(message);
        if done {
            return seen;
        }
    }
}

/// A 50 MB line (longer than the 1 MiB a line the server reads) is answered
/// with an error naming the bound, by its id when the line's start has one,
/// and the session goes on; so is one that is not JSON at all.
#[test]
fn an_overlong_line_is_answered_with_an_error_and_the_session_goes_on() {
    let env = crate::support::TestEnv::new();
    // The store exists (a task at the shell): before the first draft a
    // reading tool finds none (docs/CONTRACT.md §17), and here `list` must
    // answer as it does once there is one.
    Task::new().confirm(&env);
    let mut session = RawSession::start(&env, &["mcp"], "big");
    let huge = "x".repeat(50 << 20);
    let request = json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "draft", "arguments": {"instruction": huge, "every": "1h"}}});
    session.send_line(&request.to_string());
    session.send_line(&format!("not json {huge}"));
    session.send(&json!({"jsonrpc": "2.0", "id": 78, "method": "tools/call",
        "params": {"name": "list", "arguments": {}}}));
    let seen = read_until_answer(&mut session, 78);
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (refused, id) in seen[..2].iter().zip([json!(77), Value::Null]) {
        assert_eq!(refused["id"], id, "{refused}");
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
        assert_eq!(
            refused["error"]["message"],
            "the message is longer than 1 MiB, the most agentcron mcp reads in one line; \
             nothing was done",
        );
    }
    assert_eq!(seen[2]["result"]["isError"], false, "{}", seen[2]);
    assert_eq!(session.next_id, 2);
    session.next_id = 79;
    let after = session.call("list", json!({}));
    assert_eq!(after["isError"], false, "{after}");
    assert_eq!(env.count("SELECT count(*) FROM drafts"), 0);
    assert_eq!(session.finish(), 0);
}

/// Waits at most `limit` for the server to exit; its exit code (a death by
/// signal is 128 + the signal and `by_signal`).
fn exit_within(session: &mut RawSession, limit: std::time::Duration) -> (i32, bool) {
    use std::os::unix::process::ExitStatusExt;
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = session.child.try_wait().expect("wait") {
            return match status.code() {
                Some(code) => (code, false),
                None => (128 + status.signal().unwrap_or(0), true),
            };
        }
        if std::time::Instant::now() > deadline {
            let _ = session.child.kill();
            panic!("agentcron mcp still runs {limit:?} after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// SIGTERM while the code notifier runs: the notifier is stopped (within
/// --kill-grace), the `confirm_code` event records that the code may have
/// been sent, and the server exits 143 — as it does, at once, when idle.
#[test]
fn sigterm_during_the_code_notifier_records_its_notice_before_exiting() {
    let env = crate::support::TestEnv::new();
    let started = env.path("notifier.pid");
    let notifier = env.path("slow-notifier");
    crate::support::write_script(
        &notifier,
        &format!(
            "#!/bin/sh\ncat > /dev/null\necho $$ > '{}.tmp'\nmv '{0}.tmp' '{0}'\nsleep 30\n",
            started.display()
        ),
    );
    let flag = format!("--notifier={}", notifier.display());
    let mut session = RawSession::start(&env, &["mcp", &flag, "--kill-grace=1s"], "host");
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "draft", "arguments": {"instruction": "x", "every": "1h"}}}));
    crate::support::wait_for("the notifier", || started.exists());
    let notifier_pid: i32 = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    crate::support::kill(session.child.id() as i32, libc::SIGTERM);
    let (code, by_signal) = exit_within(&mut session, std::time::Duration::from_secs(10));
    assert_eq!((code, by_signal), (143, false));
    // SAFETY: signal 0 only asks whether the process exists.
    assert_ne!(
        unsafe { libc::kill(notifier_pid, 0) },
        0,
        "the notifier lives on"
    );
    let events = env.sql("SELECT detail FROM events WHERE action = 'confirm_code'");
    assert_eq!(events.len(), 1, "{events:?}");
    let detail: Value = serde_json::from_str(&events[0][0]).unwrap();
    assert_eq!(detail["state"], "unknown", "{detail}");
    assert_eq!(
        detail["error"],
        "agentcron mcp was stopped by SIGTERM while the notifier ran: the code may have been sent"
    );

    let mut idle = RawSession::start(&env, &["mcp"], "host");
    crate::support::kill(idle.child.id() as i32, libc::SIGTERM);
    assert_eq!(
        exit_within(&mut idle, std::time::Duration::from_secs(5)),
        (143, false)
    );
}

/// `draft_status` of another tenant's draft is not found (3), in the same
/// words as a draft that never was: the server's tenant sees no other.
#[test]
fn another_tenants_draft_is_not_found_by_draft_status() {
    let env = crate::support::TestEnv::new();
    let theirs = env.draft(&["--tenant", "other", "--instruction", "x", "--every", "1h"]);
    let id = theirs["draft_id"].as_str().unwrap();
    let mut session = RawSession::start(&env, &["mcp"], "host");
    let status = session.call("draft_status", json!({"draft_id": id}));
    let missing = session.call("draft_status", json!({"draft_id": "0123456789abcdef"}));
    assert_eq!(session.finish(), 0);
    assert_eq!(status["isError"], true, "{status}");
    let error = &status["structuredContent"]["error"];
    assert_eq!(error["exit_code"], 3, "{status}");
    assert_eq!(error["message"], format!("no draft '{id}'"));
    assert_eq!(
        missing["structuredContent"]["error"]["hint"], error["hint"],
        "{missing}"
    );
}

/// A code notifier that journals its stdin and waits for `gate` to exist
/// before it exits 0; `started` appears once it runs.
fn gated_notifier(
    env: &crate::support::TestEnv,
) -> (String, std::path::PathBuf, std::path::PathBuf) {
    let (script, started, gate) = (env.path("gated"), env.path("started"), env.path("gate"));
    crate::support::write_script(
        &script,
        &format!(
            "#!/bin/sh\ncat > /dev/null\ntouch '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\n",
            started.display(),
            gate.display()
        ),
    );
    (format!("--notifier={}", script.display()), started, gate)
}

/// The draft call's answer after the database went away while its code
/// notifier ran (`lose` makes it go away; `gate` lets the notifier end).
fn draft_across(
    session: &mut RawSession,
    started: &std::path::Path,
    gate: &std::path::Path,
    lose: impl FnOnce(),
) -> Value {
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "draft", "arguments": {"instruction": "x", "every": "1h"}}}));
    crate::support::wait_for("the notifier", || started.exists());
    lose();
    std::fs::write(gate, "").unwrap();
    let answer = read_until_answer(session, 2).pop().unwrap();
    assert!(answer.get("error").is_none(), "{answer}");
    session.next_id = 3;
    answer["result"].clone()
}

/// PostgreSQL ends the server's session (as a restart does) while the code
/// notifier runs: the next transaction reconnects, so the notice is
/// recorded and the agent is told its draft exists, with the code sent.
#[test]
fn a_session_ended_during_the_code_notifier_still_answers_with_the_draft() {
    let env = crate::support::TestEnv::new();
    if !crate::support::on_postgres() {
        return; // about PostgreSQL's sessions
    }
    let (flag, started, gate) = gated_notifier(&env);
    let mut session = RawSession::start(&env, &["mcp", &flag], "host");
    let pid = session.child.id();
    let result = draft_across(&mut session, &started, &gate, || {
        let ended = env.sql(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'agentcron/{pid}'"
        ));
        assert_eq!(ended.len(), 1, "{ended:?}");
    });
    assert_eq!(result["isError"], false, "{result}");
    let document = &result["structuredContent"];
    assert_eq!(document["confirm_code"]["state"], "delivered", "{result}");
    assert_eq!(document["confirm_code"]["recorded"], true, "{result}");
    let id = document["draft_id"].as_str().unwrap();
    assert_eq!(
        env.count("SELECT count(*) FROM events WHERE action = 'confirm_code'"),
        1
    );
    let status = session.call("draft_status", json!({"draft_id": id}));
    assert_eq!(status["structuredContent"]["state"], "waiting", "{status}");
    assert_eq!(session.finish(), 0);
}

/// The server is still down when the notifier ends: the notice cannot be
/// recorded, but the agent is told that its draft exists (by id) and that
/// the code was sent — so it does not draft again.
#[test]
fn a_database_down_after_the_code_notifier_still_names_the_draft() {
    let env = crate::support::TestEnv::new();
    if !crate::support::on_postgres() {
        return; // about PostgreSQL's sessions
    }
    let proxy = crate::pg_proxy::Proxy::start();
    let (flag, started, gate) = gated_notifier(&env);
    let url = proxy.url(&env.db_arg());
    let mut session = RawSession::start(&env, &["--db", &url, "mcp", &flag], "host");
    let result = draft_across(&mut session, &started, &gate, || proxy.go_down());
    assert_eq!(result["isError"], false, "{result}");
    let document = &result["structuredContent"];
    let id = document["draft_id"].as_str().unwrap();
    assert_eq!(document["confirm_code"]["state"], "delivered", "{result}");
    assert_eq!(document["confirm_code"]["recorded"], false, "{result}");
    let said = text(&result);
    assert_contains(&said, &format!("Draft {id} exists"));
    assert_contains(&said, "do not draft it again");
    assert_contains(&said, "A one-time code was sent");
    proxy.come_up();
    assert_eq!(env.count("SELECT count(*) FROM drafts"), 1);
    let status = session.call("draft_status", json!({"draft_id": id}));
    assert_eq!(status["structuredContent"]["state"], "waiting", "{status}");
    assert_eq!(session.finish(), 0);
}
