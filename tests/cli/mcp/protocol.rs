//! The protocol itself, from Rust, with nothing between the test and the
//! server's stdio: the JSON-RPC of initialize, tools/list and tools/call;
//! and an agent's draft confirmed at the person's own terminal (a
//! pseudo-terminal Python's pty module gives `confirm`).
use crate::support::terminal::Terminal;
use crate::support::{assert_contains, texts, Task, TestEnv};

use serde_json::{json, Value};

use super::{last_code, notifier, text, RawSession, DRAFT_TOOLS, READ_TOOLS};

#[test]
fn initialize_list_and_call_over_raw_json_rpc() {
    let env = TestEnv::new();
    let mut session = RawSession::start(&env, &["mcp"], "raw-probe");
    let init = &session.initialized;
    assert_eq!(init["serverInfo"]["name"], "agentcron");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(init["instructions"]
        .as_str()
        .unwrap()
        .contains("You cannot confirm"));

    let listed = session.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let offered: Vec<&str> = DRAFT_TOOLS.iter().chain(&READ_TOOLS).copied().collect();
    assert_eq!(names, offered);
    for tool in tools {
        let read_only = tool["annotations"]["readOnlyHint"] == Value::Bool(true);
        let drafts = tool["name"].as_str().unwrap().starts_with("draft_")
            && tool["name"] != "draft_status"
            || tool["name"] == "draft";
        assert_eq!(read_only, !drafts, "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        let properties = tool["inputSchema"]["properties"].as_object().unwrap();
        for global in ["as", "as_keys", "tenant", "db", "now", "json"] {
            assert!(!properties.contains_key(global), "{global} in {tool}");
        }
    }

    let drafted = session.call(
        "draft",
        json!({"instruction": "summarize the on-call channel", "daily": "09:30", "name": "oncall"}),
    );
    assert_eq!(drafted["isError"], false, "{drafted}");
    let document = &drafted["structuredContent"];
    assert_eq!(document["drafted_by"], "agent:raw-probe");
    assert_eq!(document["summary"], "every day at 09:30");
    assert_eq!(document["next_runs"][0], "2026-12-02T09:30:00Z");
    assert!(document["payload"]
        .as_str()
        .unwrap()
        .starts_with(r#"{"drafted_by":"agent:raw-probe","#));
    // No notifier configured: the person is pointed to their terminal.
    assert_eq!(document["confirm_code"]["state"], "not_sent");
    assert!(
        text(&drafted).contains("at their own terminal"),
        "{drafted}"
    );

    let bad = session.call("upcoming", json!({"within": "soon"}));
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["structuredContent"]["error"]["exit_code"], 2, "{bad}");
    let unknown = session.request("tools/call", json!({"name": "confirm", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // A line that is not JSON-RPC at all, or arguments that are no object:
    // refused or ignored, and the session goes on.
    session.send_line("this is not json");
    let odd = session.request("tools/call", json!({"name": "list", "arguments": [1, 2]}));
    assert!(odd["error"]["code"].is_i64(), "{odd}");
    let after = session.call("list", json!({}));
    assert_eq!(after["structuredContent"]["items"], json!([]), "{after}");
    assert_eq!(session.finish(), 0);
}

#[test]
fn a_refused_allow_is_one_line_and_no_server() {
    let env = TestEnv::new();
    for allow in ["confirm", "pause,delete", "everything"] {
        let out = env.run(&["mcp", "--allow", allow]).fails(2);
        assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
        assert_contains(&out.stderr, "--allow");
        assert!(out.stderr.contains("only --allow pause exists"));
    }
}

#[test]
fn an_agents_draft_is_confirmed_at_the_persons_own_terminal() {
    let env = TestEnv::new();
    let mut session = RawSession::start(&env, &["mcp"], "host");
    let drafted = session.call(
        "draft",
        json!({"instruction": "water the plants\n\x1b[2J", "every": "1h"}),
    );
    assert_eq!(session.finish(), 0);
    let id = drafted["structuredContent"]["draft_id"]
        .as_str()
        .unwrap()
        .to_string();
    let hash = drafted["structuredContent"]["payload_hash"]
        .as_str()
        .unwrap()
        .to_string();
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("python3 is missing: confirming at a terminal is not tested");
        return;
    }
    // The code typed back: a wrong one, or the one the terminal showed.
    let at_terminal = |typed: &str| {
        let terminal = Terminal {
            answer_code: Some(typed.to_string()),
            ..Terminal::default()
        };
        let screen = terminal.run(&env, &["confirm", &id, "--hash", &hash]);
        format!("{}\n{}", screen.code, screen.text)
    };
    // A wrong code typed at the terminal counts as one.
    let wrong = at_terminal("000000");
    assert!(wrong.starts_with("4\n"), "{wrong}");
    assert_contains(&wrong, "type this one-time code");
    assert_contains(&wrong, "wrong code");
    // The draft in full, its instruction escaped, before the code prompt.
    let shown = wrong.find("type this one-time code").unwrap();
    for part in [
        r#"instruction   "water the plants\n\x1b[2J""#,
        "drafted by    agent:host",
        "schedule      every 1h from 2026-12-02 08:00 UTC (UTC)",
        hash.as_str(),
    ] {
        let at = wrong
            .find(part)
            .unwrap_or_else(|| panic!("{part} missing: {wrong}"));
        assert!(at < shown, "{wrong}");
    }
    assert!(!wrong.contains('\x1b'), "{wrong:?}");
    let right = at_terminal("echo");
    assert!(right.starts_with("0\n"), "{right}");
    assert_contains(&right, "Confirmed task");
    let tasks = env.json(&["list"]);
    assert_eq!(tasks[0]["drafted_by"], "agent:host");
    assert!(env.run(&["log"]).ok().stdout.contains("wrong_code"));
}

#[test]
fn without_a_terminal_an_agents_draft_needs_its_code() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let mut session = RawSession::start(&env, &["mcp", &flag], "host");
    let drafted = session.call("draft", json!({"instruction": "x", "in": "2h"}));
    session.finish();
    let document = &drafted["structuredContent"];
    let (id, hash) = (
        document["draft_id"].as_str().unwrap(),
        document["payload_hash"].as_str().unwrap(),
    );
    let out = env.run(&["confirm", id, "--hash", hash]).fails(4);
    assert!(out
        .stderr
        .contains("needs the one-time code sent to unix:tester"));
    assert_contains(&out.stderr, "--code NNNNNN");
    assert_eq!(env.count("SELECT code_wrong_attempts FROM drafts"), 0);
    let code = last_code(&journal);
    env.run(&["confirm", id, "--hash", hash, "--code", &code])
        .ok();
}

#[test]
fn an_agent_drafts_a_change_the_person_confirms_with_the_code() {
    let env = TestEnv::new();
    let before = Task::named("hourly").confirm(&env);
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let mut session = RawSession::start(&env, &["mcp", &flag], "host");
    let missing = session.call("draft_replace", json!({"every": "2h"}));
    assert_eq!(missing["isError"], true);
    assert!(
        text(&missing).contains("needs the task it replaces"),
        "{missing}"
    );
    let drafted = session.call("draft_replace", json!({"task": "hourly", "every": "2h"}));
    assert_eq!(session.finish(), 0);
    assert_eq!(drafted["isError"], false, "{drafted}");
    let document = &drafted["structuredContent"];
    assert_eq!(document["replaces"]["task_id"], before["task_id"]);
    let changed: Vec<&str> = texts(&document["diff"], "field");
    // As the person reads them: step-ups first (none here), each group in
    // key order.
    assert_eq!(changed, ["drafted_by", "schedule"], "{document}");
    assert!(text(&drafted).contains("a change to task"), "{drafted}");
    let (id, hash) = (
        document["draft_id"].as_str().unwrap(),
        document["payload_hash"].as_str().unwrap(),
    );
    env.run(&["confirm", id, "--hash", hash]).fails(4);
    let code = last_code(&journal);
    env.run(&["confirm", id, "--hash", hash, "--code", &code])
        .ok();
    let after = env.json(&["show", "hourly"]);
    assert_eq!(after["revision"], 2);
    assert_eq!(after["drafted_by"], "agent:host");
    assert_eq!(after["schedule"]["seconds"], 7200, "{after}");
}

#[test]
fn status_shows_the_agent_its_own_tenant_only() {
    let env = TestEnv::new();
    Task::new().tenant("other").confirm(&env);
    let mut session = RawSession::start(&env, &["mcp"], "host");
    let status = session.call("status", json!({}));
    session.finish();
    assert_eq!(
        status["structuredContent"]["tasks"]["active"], 0,
        "{status}"
    );
    assert_eq!(env.json(&["status"])["tasks"]["active"], 1);
}

#[test]
fn the_plan_shows_that_an_agent_drafted_a_task_the_file_declares() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let mut session = RawSession::start(&env, &["mcp", &flag], "host");
    let drafted = session.call(
        "draft",
        json!({"instruction": "x", "daily": "09:30", "name": "report", "tz": "UTC"}),
    );
    session.finish();
    let document = &drafted["structuredContent"];
    let code = last_code(&journal);
    env.run(&[
        "confirm",
        document["draft_id"].as_str().unwrap(),
        "--hash",
        document["payload_hash"].as_str().unwrap(),
        "--code",
        &code,
    ])
    .ok();
    let file = env.path("tasks.toml");
    std::fs::write(
        &file,
        "[report]\ninstruction = \"x\"\ndaily = \"09:30\"\ntz = \"UTC\"\n",
    )
    .unwrap();
    // The same task but for its drafter: applying the file would make it a
    // person's, and the plan says so.
    let plan = env.run(&["plan", &file.display().to_string()]).ok().stdout;
    assert_contains(&plan, "drafted_by");
    assert_contains(&plan, "agent:host");
}
