//! `agentcron mcp` through the Python MCP SDK's stdio client, as an agent
//! host would drive it; then the person at a shell, confirming (or not)
//! what the agent drafted.
use crate::support::{assert_contains, texts, Task, TestEnv, BIN};

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::{last_code, notifier, server_env, DRAFT_TOOLS, READ_TOOLS};

/// The interpreter with the `mcp` package: $AGENTCRON_MCP_PYTHON, else the
/// one scripts/ensure-mcp-client installs. None (after a note) when there
/// is none, unless AGENTCRON_REQUIRE_MCP_CLIENT is set.
fn client_python() -> Option<PathBuf> {
    let python = std::env::var_os("AGENTCRON_MCP_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/agentcron/mcp-client/bin/python"))
        })?;
    let works = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if works {
        return Some(python);
    }
    let note = format!(
        "the Python MCP client is not installed at {}: run scripts/ensure-mcp-client",
        python.display()
    );
    if std::env::var_os("AGENTCRON_REQUIRE_MCP_CLIENT").is_some() {
        panic!("{note}");
    }
    crate::support::skipped(&format!("{note}; the MCP client tests are skipped"));
    None
}

/// One session of the Python client against `agentcron mcp ARGS`, as
/// client `client`, running `steps`; its JSON report.
#[track_caller]
pub(crate) fn agent(env: &TestEnv, args: &[&str], client: &str, steps: Value) -> Option<Value> {
    agent_with(&server_env(env), args, client, steps)
}

/// `agent`, with the server's environment given (`server_env`): for
/// sessions on threads of their own.
#[track_caller]
pub(crate) fn agent_with(
    vars: &[(String, String)],
    args: &[&str],
    client: &str,
    steps: Value,
) -> Option<Value> {
    let python = client_python()?;
    let mut command = vec![BIN.to_string()];
    command.extend(args.iter().map(|a| a.to_string()));
    let spec = json!({
        "command": command,
        "env": vars.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<String, Value>>(),
        "client": client,
        "steps": steps,
    });
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let mut child = Command::new(python)
        .arg(script)
        .env_clear()
        .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python MCP client");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(spec.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("the client ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the client's report is not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    Some(report)
}

pub(crate) fn call(tool: &str, arguments: Value) -> Value {
    json!({"op": "call", "tool": tool, "arguments": arguments})
}

/// One call in a session of its own; its result.
#[track_caller]
fn one(env: &TestEnv, args: &[&str], tool: &str, arguments: Value) -> Option<Value> {
    let report = agent(env, args, "test-host", json!([call(tool, arguments)]))?;
    assert!(report.get("connect_error").is_none(), "{report}");
    Some(report["results"][0].clone())
}

#[test]
fn an_agent_is_offered_exactly_the_allowed_tools() {
    let env = TestEnv::new();
    let list = json!([{"op": "list_tools"}]);
    let Some(plain) = agent(&env, &["mcp"], "test-host", list.clone()) else {
        return;
    };
    let allowed = agent(&env, &["mcp", "--allow", "pause"], "test-host", list).unwrap();
    assert_eq!(plain["server"], "agentcron");
    let names = |report: &Value| -> Vec<String> {
        report["results"][0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let mut expected: Vec<String> = DRAFT_TOOLS
        .iter()
        .chain(READ_TOOLS.iter())
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names(&plain), expected);
    expected.push("pause".into());
    assert_eq!(names(&allowed), expected);
    for tool in allowed["results"][0]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let read_only = tool["annotations"]["readOnlyHint"] == json!(true);
        assert_eq!(read_only, READ_TOOLS.contains(&name), "{tool}");
        if name == "pause" {
            assert_eq!(tool["inputSchema"]["required"], json!(["reason", "task"]));
        }
    }
    // The refused --allow: the client cannot even start a session.
    let refused = agent(&env, &["mcp", "--allow", "confirm"], "test-host", json!([])).unwrap();
    assert!(refused.get("connect_error").is_some(), "{refused}");
}

#[test]
fn an_agents_draft_is_confirmed_by_the_person_with_the_code_it_never_saw() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let server = ["mcp", flag.as_str()];
    let arguments =
        json!({"instruction": "check the backups", "daily": "09:30", "name": "backups"});
    let Some(drafted) = one(&env, &server, "draft", arguments) else {
        return;
    };
    assert_eq!(drafted["is_error"], false, "{drafted}");
    let document = &drafted["structured"];
    assert_eq!(document["drafted_by"], "agent:test-host");
    assert_eq!(document["confirm_code"]["state"], "delivered");
    assert_eq!(document["confirm_code"]["sent_to"], "unix:tester");
    let (id, hash) = (
        document["draft_id"].as_str().unwrap().to_string(),
        document["payload_hash"].as_str().unwrap().to_string(),
    );
    // What the agent is to tell the person: schedule, runs, hash, and that
    // *they* confirm with the code they received.
    let said = drafted["text"].as_str().unwrap();
    for part in [
        "\"check the backups\"",
        "every day at 09:30 in UTC",
        "2026-12-02T09:30:00+00:00",
        hash.as_str(),
    ] {
        assert!(said.contains(part), "{part} missing from: {said}");
    }
    assert_contains(said, "the person runs, themselves");
    assert_contains(said, "--code");
    assert_contains(said, "You cannot confirm it");
    // The code went to the target, and is nowhere in the store or the reply.
    let code = last_code(&journal);
    assert!(!drafted.to_string().contains(&code));
    for row in env.sql("SELECT * FROM drafts") {
        assert!(row.iter().all(|cell| !cell.contains(&code)), "{row:?}");
    }
    let notice: Value =
        serde_json::from_str(std::fs::read_to_string(&journal).unwrap().trim()).unwrap();
    assert_eq!(notice["target"], "unix:tester");
    assert_eq!(notice["draft"]["draft_id"], id.as_str());

    let waiting = one(&env, &["mcp"], "draft_status", json!({"draft_id": id})).unwrap();
    assert_eq!(waiting["structured"]["state"], "waiting", "{waiting}");
    let none = one(&env, &["mcp"], "list", json!({})).unwrap();
    assert_eq!(none["structured"]["items"], json!([]));

    // The person, at a shell: the hash alone is not enough, the agent's
    // own key is refused even with the code, and the code opens it.
    let out = env.run(&["confirm", &id, "--hash", &hash]).fails(4);
    assert_contains(&out.stderr, "agent:test-host drafted this");
    let out = env
        .run(&[
            "--as",
            "unix:tester",
            "--as",
            "agent:test-host",
            "confirm",
            &id,
            "--hash",
            &hash,
            "--code",
            &code,
        ])
        .fails(4);
    assert_contains(&out.stderr, "cannot confirm it");
    let task = env.json(&["confirm", &id, "--hash", &hash, "--code", &code]);
    assert_eq!(task["drafted_by"], "agent:test-host");
    assert_eq!(task["payload_hash"], hash.as_str());
    let task_id = task["task_id"].as_str().unwrap().to_string();

    // The agent reads what became of it, in the CLI's own JSON shapes.
    env.advance(3 * 3600);
    let report = agent(
        &env,
        &["mcp"],
        "test-host",
        json!([
            call("draft_status", json!({"draft_id": id})),
            call("list", json!({})),
            call("show", json!({"task": "backups"})),
            call("runs", json!({"task": "backups"})),
            call("explain", json!({"task": "backups"})),
            call("next", json!({"task": "backups", "count": 2})),
            call("upcoming", json!({})),
            call("status", json!({})),
        ]),
    )
    .unwrap();
    let results = report["results"].as_array().unwrap();
    for result in results {
        assert_eq!(result["is_error"], false, "{result}");
    }
    assert_eq!(results[0]["structured"]["state"], "confirmed");
    assert_eq!(results[0]["structured"]["task_id"], task_id.as_str());
    assert_eq!(
        results[1]["structured"]["items"][0]["task_id"],
        task_id.as_str()
    );
    assert_eq!(results[1]["structured"]["items"], env.json(&["list"]));
    assert_eq!(results[2]["structured"], env.json(&["show", "backups"]));
    assert_eq!(results[2]["structured"]["drafted_by"], "agent:test-host");
    assert_eq!(results[3]["structured"]["items"], json!([]));
    assert!(results[4]["structured"]["explanation"].is_string());
    assert_eq!(
        results[5]["structured"],
        env.json(&["next", "backups", "--count", "2"])
    );
    assert!(results[7]["text"].as_str().unwrap().contains("active task"));
    // The audit trail names the agent.
    let log = env.run(&["log"]).ok().stdout;
    assert_contains(&log, "by agent:test-host");
    assert_contains(&log, "confirm_code");
}

#[test]
fn three_wrong_codes_void_an_agents_draft_and_the_trail_says_so() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let arguments = json!({"instruction": "x", "every": "1h"});
    let Some(drafted) = one(&env, &["mcp", &flag], "draft", arguments) else {
        return;
    };
    let document = &drafted["structured"];
    let (id, hash) = (
        document["draft_id"].as_str().unwrap().to_string(),
        document["payload_hash"].as_str().unwrap().to_string(),
    );
    let code = last_code(&journal);
    let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
    for left in ["2 more", "1 more"] {
        let out = env
            .run(&["confirm", &id, "--hash", &hash, "--code", &wrong])
            .fails(4);
        assert_contains(&out.stderr, left);
    }
    let out = env
        .run(&["confirm", &id, "--hash", &hash, "--code", &wrong])
        .fails(4);
    assert_contains(&out.stderr, "is void");
    // Void: the right code finds nothing left, and nothing was created.
    env.run(&["confirm", &id, "--hash", &hash, "--code", &code])
        .fails(3);
    assert_eq!(env.count("SELECT count(*) FROM tasks"), 0);
    let log = env.json(&["log"]);
    let events = texts(&log, "action");
    assert_eq!(
        events.iter().filter(|a| **a == "wrong_code").count(),
        2,
        "{events:?}"
    );
    assert_eq!(events.iter().filter(|a| **a == "void").count(), 1);
    let status = one(&env, &["mcp"], "draft_status", json!({"draft_id": id})).unwrap();
    assert_eq!(status["structured"]["state"], "void", "{status}");
}

#[test]
fn bad_arguments_are_tool_errors_in_the_clis_words_and_the_server_lives_on() {
    let env = TestEnv::new();
    let steps = json!([
        call("draft", json!({"instruction": "x"})),
        call(
            "draft",
            json!({"instruction": "x", "in": "1h", "as": "unix:mallory"})
        ),
        call(
            "draft",
            json!({"instruction": "x", "in": "1h", "tenant": "other"})
        ),
        call(
            "draft",
            json!({"instruction": "x", "in": "1h", "target": "chat:agent"})
        ),
        call("draft", json!({"instruction": "-", "in": "1h"})),
        call("draft", json!({"instruction": "x", "daily": "25:00"})),
        call("next", json!({"task": "nothing", "count": 0})),
        call("show", json!({"task": "nothing"})),
        call("draft_status", json!({"draft_id": "nothing"})),
        call("pause", json!({"task": "nothing", "reason": "r"})),
        call("confirm", json!({"draft_id": "x", "hash": "y"})),
        call("list", json!({})),
    ]);
    let Some(report) = agent(&env, &["mcp"], "test-host", steps) else {
        return;
    };
    let results = report["results"].as_array().unwrap();
    let error = |i: usize| results[i]["structured"]["error"].clone();
    assert_eq!(error(0)["message"], "a schedule is required");
    assert!(results[0]["text"]
        .as_str()
        .unwrap()
        .contains("hint: use one of --at, --in, --every, --daily or --cron"));
    for i in [1, 2, 3] {
        assert!(
            error(i)["message"]
                .as_str()
                .unwrap()
                .contains("has no argument"),
            "{}",
            results[i]
        );
        assert_eq!(error(i)["exit_code"], 2);
    }
    assert!(error(4)["message"]
        .as_str()
        .unwrap()
        .contains("standard input"));
    assert_eq!(error(5)["kind"], "usage", "{}", results[5]);
    assert!(error(6)["message"].as_str().unwrap().contains("--count"));
    assert_eq!(error(7)["exit_code"], 3);
    assert_eq!(error(8)["exit_code"], 3);
    // Not offered without --allow pause, nor is confirm ever.
    for i in [9, 10] {
        assert_eq!(
            results[i]["protocol_error"]["code"], -32602,
            "{}",
            results[i]
        );
    }
    assert_eq!(results[11]["is_error"], false);
    assert_eq!(env.count("SELECT count(*) FROM drafts"), 0);
}

#[test]
fn pause_needs_its_allow_and_a_reason() {
    let env = TestEnv::new();
    let task = Task::named("hourly").confirm(&env);
    let steps = json!([
        call("pause", json!({"task": "hourly"})),
        call("pause", json!({"task": "hourly", "reason": "  "})),
        call(
            "pause",
            json!({"task": "hourly", "reason": "the agent saw it fail twice"})
        ),
    ]);
    let Some(report) = agent(&env, &["mcp", "--allow", "pause"], "test-host", steps) else {
        return;
    };
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[0]["is_error"], true, "{}", results[0]);
    assert!(results[1]["text"]
        .as_str()
        .unwrap()
        .contains("needs a reason"));
    assert_eq!(results[2]["is_error"], false, "{}", results[2]);
    let shown = env.json(&["show", "hourly"]);
    assert_eq!(shown["state"], "paused");
    assert_eq!(shown["pause_reason"], "the agent saw it fail twice");
    assert_eq!(shown["task_id"], task["task_id"]);
}

#[test]
fn an_agent_lists_the_profiles_offered_and_drafts_with_one_the_person_confirms() {
    let env = TestEnv::new();
    env.run(&[
        "profile",
        "set",
        "triager",
        "--command",
        "inbox-agent --read-only",
        "--cwd",
        "/srv/mail",
        "--description",
        "reads the inbox, sends nothing",
        "--create-store",
    ])
    .ok();
    let Some(listed) = one(&env, &["mcp"], "profiles", json!({})) else {
        return;
    };
    assert_eq!(listed["is_error"], false, "{listed}");
    let offered = &listed["structured"]["items"][0];
    assert_eq!(offered["name"], "triager", "{listed}");
    assert_eq!(offered["command"], "inbox-agent --read-only");
    assert_eq!(offered["description"], "reads the inbox, sends nothing");
    assert!(
        offered.get("tasks").is_none(),
        "other people's tasks: {offered}"
    );
    assert_contains(
        listed["text"].as_str().unwrap(),
        "- triager: reads the inbox",
    );
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let arguments = json!({"instruction": "triage", "daily": "08:00", "profile": "triager"});
    let drafted = one(&env, &["mcp", flag.as_str()], "draft", arguments).unwrap();
    assert_eq!(drafted["is_error"], false, "{drafted}");
    let id = drafted["structured"]["draft_id"]
        .as_str()
        .unwrap()
        .to_string();
    // The person sees the profile in what they confirm: in `show DRAFT`
    // and in the message that carries the code.
    let shown = env.run(&["show", &id]).ok().stdout;
    assert_contains(&shown, "triager (");
    assert_contains(&shown, "runs `inbox-agent --read-only`, in /srv/mail");
    let message = std::fs::read_to_string(&journal).unwrap();
    assert_contains(&message, "inbox-agent --read-only");
    // A profile the operator does not offer is refused.
    let unknown = json!({"instruction": "x", "daily": "08:00", "profile": "root-shell"});
    let refused = one(&env, &["mcp"], "draft", unknown).unwrap();
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_contains(&refused.to_string(), "no profile named 'root-shell'");
}
