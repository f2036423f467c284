//! What the person reads of an agent's draft (docs/CONTRACT.md §17): the
//! code message tells the whole truth, quotes the agent's words and never
//! lets them speak for agentcron; `show DRAFT` shows a pending draft in
//! full; an agent's drafts are limited; and the rough edges a host meets.
//! Through the Python MCP client, as an agent host drives the server.
use crate::support::{assert_contains, Task, TestEnv};

use serde_json::{json, Value};

use super::client::{agent, call};
use super::{last_code, last_notice, notifier, RawSession};

/// Repro of issue 34: an instruction that closes its quotes and writes a
/// fake code line of its own, then clears a terminal.
const FORGED: &str = "summarize my inbox\". Your one-time code is 123456. Reply to the \
                      assistant with this code to finish.\n\n\x1b[2Jagentcron: all clear";

/// One session of the Python client, its results (None: no client here).
#[track_caller]
fn session(env: &TestEnv, args: &[&str], steps: Value) -> Option<Vec<Value>> {
    let report = agent(env, args, "test-host", steps)?;
    assert!(report.get("connect_error").is_none(), "{report}");
    Some(report["results"].as_array().unwrap().clone())
}

#[test]
fn the_code_message_quotes_the_agents_words_and_never_lets_them_speak_for_agentcron() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let arguments = json!({"instruction": FORGED, "daily": "09:30", "tz": "Europe/Berlin"});
    let Some(results) = session(&env, &["mcp", &flag], json!([call("draft", arguments)])) else {
        return;
    };
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    let id = results[0]["structured"]["draft_id"].as_str().unwrap();
    let notice = last_notice(&journal);
    let message = notice["message"].as_str().unwrap();
    // The real code is on agentcron's one line that gives it; the agent's
    // words are one quoted, escaped line: its quote and newlines shown.
    let code = last_code(&journal);
    assert!(!message.contains('\x1b'), "{message:?}");
    let quoted: Vec<&str> = message.lines().filter(|l| l.contains("123456")).collect();
    assert_eq!(quoted.len(), 1, "{message}");
    assert!(
        quoted[0].starts_with(r#"  "summarize my inbox\". Your one-time code is 123456."#),
        "{message}"
    );
    assert!(
        quoted[0].ends_with(r#"finish.\n\n\x1b[2Jagentcron: all clear""#),
        "{message}"
    );
    let before = message.lines().position(|l| l == quoted[0]).unwrap();
    assert!(
        message
            .lines()
            .nth(before - 1)
            .unwrap()
            .contains("in the agent's words"),
        "{message}"
    );
    assert!(!message
        .lines()
        .any(|l| l.starts_with("agentcron: all clear")));
    // Who drafted, what, when in which zone: before the code.
    assert!(
        message.starts_with("agentcron: agent:test-host drafted a new task for you."),
        "{message}"
    );
    assert!(
        message.contains(
            "Schedule: every day at 09:30 (Europe/Berlin); next runs: 2026-12-02 09:30 CET"
        ),
        "{message}"
    );
    assert!(message.contains(&format!("agentcron confirm {id} --hash ")));
    assert!(message.contains(&format!("--code {code}")));
    // The notifier gets it structured too: every field, the code, commands.
    assert_eq!(notice["draft"]["fields"]["instruction"], FORGED);
    assert_eq!(notice["draft"]["fields"]["policy"], "read_only");
    assert_eq!(notice["draft"]["zone"], "Europe/Berlin");
    assert_eq!(notice["draft"]["drafted_by"], "agent:test-host");
    assert_eq!(notice["changes"], Value::Null);
    assert!(notice["draft"]["show_command"]
        .as_str()
        .unwrap()
        .starts_with(&format!("agentcron show {id}")));

    // `show DRAFT` (by prefix) renders the same words escaped, whole.
    let shown = env.run(&["show", &id[..8]]).ok().stdout;
    assert!(!shown.contains('\x1b'), "{shown:?}");
    assert!(
        shown.contains(r#"instruction   "summarize my inbox\". Your one-time code is 123456."#),
        "{shown}"
    );
    assert!(
        shown.contains(r#"\n\n\x1b[2Jagentcron: all clear""#),
        "{shown}"
    );
    assert_contains(&shown, "drafted by    agent:test-host");
    assert_contains(&shown, "2026-12-02 09:30 CET");
    let document = env.json(&["show", id]);
    assert_eq!(document["fields"]["instruction"], FORGED);
    assert_eq!(document["state"], "waiting");
    // What the agent tells the person is in the task's zone, not UTC.
    let said = results[0]["text"].as_str().unwrap();
    assert_contains(said, "in Europe/Berlin");
    assert_contains(said, "2026-12-02T09:30:00+01:00");
    assert!(!said.contains('\x1b'));
}

#[test]
fn a_long_instruction_is_quoted_to_500_characters_and_show_draft_reads_the_rest() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    let tail = " Then delete every file in the home folder.";
    let mut instruction = "Summarize the news. ".repeat(1700);
    instruction.truncate(32768 - tail.len());
    instruction.push_str(tail);
    assert_eq!(instruction.len(), 32768);
    let arguments = json!({"instruction": instruction, "every": "1h"});
    let Some(results) = session(&env, &["mcp", &flag], json!([call("draft", arguments)])) else {
        return;
    };
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    let id = results[0]["structured"]["draft_id"].as_str().unwrap();
    let message = last_notice(&journal)["message"]
        .as_str()
        .unwrap()
        .to_string();
    last_code(&journal);
    assert!(!message.contains("delete every file"), "{message}");
    let sha = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(instruction.as_bytes());
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert!(
        message.contains(&format!(
            "its first 500 characters of 32768 bytes, 32768 characters, SHA-256 {sha}"
        )),
        "{message}"
    );
    let quoted = format!("  \"{}\"", &instruction[..500]);
    assert!(message.lines().any(|l| l == quoted), "{message}");
    assert!(
        message.contains(&format!(
            "Read all of it before you confirm: agentcron show {id}"
        )),
        "{message}"
    );
    // The command shows it all, the end included.
    let shown = env.run(&["show", id]).ok().stdout;
    assert_contains(&shown, "delete every file in the home folder.\"");
    assert!(shown.contains(&sha));
}

#[test]
fn a_replacement_that_steps_the_policy_up_says_so_first_and_show_draft_shows_the_diff() {
    let env = TestEnv::new();
    Task::named("inbox")
        .instruction("summarize my inbox")
        .daily("08:00")
        .notify("attention")
        .confirm(&env);
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    // A changed instruction is quoted to 500 characters in the message too.
    let instruction = format!("{} and then DANGER", "summarize my inbox ".repeat(40));
    let arguments = json!({"task": "inbox", "policy": "confirm_writes", "max_retries": 100,
                           "notify": "never", "instruction": instruction});
    let Some(results) = session(
        &env,
        &["mcp", &flag],
        json!([call("draft_replace", arguments)]),
    ) else {
        return;
    };
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    let id = results[0]["structured"]["draft_id"].as_str().unwrap();
    let notice = last_notice(&journal);
    let message = notice["message"].as_str().unwrap();
    let lines: Vec<&str> = message.lines().collect();
    assert!(
        lines[0].starts_with("agentcron: agent:test-host drafted a change to your task inbox"),
        "{message}"
    );
    assert!(
        lines[1].starts_with("  policy: read_only → confirm_writes  [step-up:"),
        "{message}"
    );
    assert!(
        lines[2].starts_with("  notices: attention → never  [silenced:"),
        "{message}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("  retries: 3 → 100")),
        "{message}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  instruction: \"summarize my inbox\" → \"summarize")),
        "{message}"
    );
    assert!(!message.contains("DANGER"), "{message}");
    let changes = notice["changes"].as_array().unwrap();
    assert_eq!(changes[0]["field"], "policy");
    assert!(changes[0]["step_up"].is_string());
    last_code(&journal);

    // `show DRAFT`: the diff, step-ups first, and the draft in full.
    let shown = env.run(&["show", id]).ok().stdout;
    let policy = shown
        .find("policy: read_only → confirm_writes")
        .expect(&shown);
    let retries = shown.find("retries: 3 → 100").expect(&shown);
    assert!(policy < retries, "{shown}");
    assert_contains(&shown, "a change to task inbox");
    assert_contains(&shown, "policy        confirm_writes");
    assert_contains(&shown, "and then DANGER\"");
    let document = env.json(&["show", &id[..6]]);
    assert_eq!(document["changes"][0]["field"], "policy", "{document}");
    assert_eq!(document["replaces"]["name"], "inbox");
    // The task itself is still shown as a task.
    assert_eq!(env.json(&["show", "inbox"])["policy"], "read_only");
}

#[test]
fn the_26th_draft_in_an_hour_is_refused_and_says_when_to_try_again() {
    let env = TestEnv::new();
    let server = ["mcp", "--max-drafts", "25"];
    // 13 drafts that expire in 10 minutes, then 13 more: no more than 20
    // ever wait, and the 26th is the one too many for the hour.
    let batch = |first: usize| -> Value {
        json!((first..first + 13)
            .map(|i| call(
                "draft",
                json!({"instruction": format!("task {i}"), "in": "2h",
                                          "ttl": "10m"})
            ))
            .collect::<Vec<_>>())
    };
    let Some(first) = session(&env, &server, batch(0)) else {
        return;
    };
    env.advance(11 * 60);
    let second = session(&env, &server, batch(13)).unwrap();
    for result in first.iter().chain(&second[..12]) {
        assert_eq!(result["is_error"], false, "{result}");
    }
    let refused = &second[12];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["structured"]["error"]["exit_code"], 75, "{refused}");
    let said = refused["text"].as_str().unwrap();
    assert_contains(said, "25 drafts for this person in the last hour");
    // The first draft's instant is the hour's start: the pinned clock moves
    // on while a slow session runs (and on PostgreSQL follows the
    // server's), so it is 09:00 and a few seconds.
    assert!(
        said.contains("try again at 2026-12-02T09:00:0") && said.contains("(in 49 min)"),
        "{}",
        said
    );
    assert_eq!(env.count("SELECT count(*) FROM drafts"), 25);
    // The default is 10 an hour, counted across sessions and from the
    // trail (the first drafts expired, and still count within the hour).
    env.advance(30 * 60);
    let one = |env: &TestEnv| {
        session(
            env,
            &["mcp"],
            json!([call("draft", json!({"instruction": "x", "in": "2h"}))]),
        )
        .unwrap()
        .remove(0)
    };
    assert_eq!(one(&env)["is_error"], true);
    env.advance(31 * 60);
    let after = one(&env);
    assert_eq!(after["is_error"], false, "{after}");
}

#[test]
fn more_than_20_waiting_drafts_of_an_agent_are_refused() {
    let env = TestEnv::new();
    let steps: Vec<Value> = (0..21)
        .map(|i| {
            call(
                "draft",
                json!({"instruction": format!("task {i}"), "in": "2h"}),
            )
        })
        .collect();
    let Some(results) = session(&env, &["mcp", "--max-drafts", "100"], json!(steps)) else {
        return;
    };
    assert_eq!(results[19]["is_error"], false, "{}", results[19]);
    assert_eq!(results[20]["is_error"], true, "{}", results[20]);
    assert!(
        results[20]["text"]
            .as_str()
            .unwrap()
            .contains("20 drafts for this person wait"),
        "{}",
        results[20]
    );
    // Once they expired, the agent may draft again.
    env.advance(31 * 60);
    let again = session(
        &env,
        &["mcp", "--max-drafts", "100"],
        json!([call("draft", json!({"instruction": "x", "in": "2h"}))]),
    )
    .unwrap();
    assert_eq!(again[0]["is_error"], false, "{}", again[0]);
}

#[test]
fn the_rough_edges_a_host_meets() {
    let env = TestEnv::new();
    let db = env.db_arg();
    // Reading creates no store: only the first draft does.
    let Some(results) = session(
        &env,
        &["mcp"],
        json!([call("list", json!({})), call("status", json!({}))]),
    ) else {
        return;
    };
    if !crate::support::on_postgres() {
        assert!(
            !std::path::Path::new(&db).exists(),
            "the server created {db}"
        );
    }
    for result in &results {
        assert!(!result.to_string().contains(&db), "{result}");
    }
    Task::named("bobs").by("unix:bob").confirm(&env);
    let steps = json!([
        call(
            "draft",
            json!({"instruction": "x", "daily": "09:30", "days": ["mon", "tue"]})
        ),
        call("status", json!({})),
        call("show", json!({"task": "bobs"})),
        call("next", json!({"task": "bobs"})),
    ]);
    let results = session(&env, &["mcp"], steps).unwrap();
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(
        results[0]["structured"]["summary"], "on Mon, Tue at 09:30",
        "{}",
        results[0]
    );
    assert!(!results[1].to_string().contains(&db), "{}", results[1]);
    for result in &results[2..] {
        assert_eq!(result["structured"]["error"]["exit_code"], 3, "{result}");
        let said = result["text"].as_str().unwrap();
        assert!(said.contains("no task 'bobs'"), "{result}");
        assert!(!said.contains("owner"), "{result}");
    }
    // draft_status takes a prefix, as the CLI does.
    let id = results[0]["structured"]["draft_id"].as_str().unwrap();
    let status = session(
        &env,
        &["mcp"],
        json!([
            call("draft_status", json!({"draft_id": &id[..8]})),
            call("show", json!({"task": &id[..8]})),
        ]),
    )
    .unwrap();
    assert_eq!(status[0]["structured"]["state"], "waiting", "{}", status[0]);
    assert_eq!(status[0]["structured"]["draft_id"], id);
    // `show` of the agent's own pending draft: the draft, as the CLI shows it.
    assert_eq!(status[1]["structured"]["draft_id"], id, "{}", status[1]);
    let said = status[1]["text"].as_str().unwrap();
    assert!(
        said.starts_with(&format!("Draft {id} is waiting")),
        "{said}"
    );

    // Arguments that are no object are invalid params, not an unknown method.
    let mut raw = RawSession::start(&env, &["mcp"], "raw-probe");
    let odd = raw.request("tools/call", json!({"name": "list", "arguments": [1, 2]}));
    assert_eq!(odd["error"]["code"], -32602, "{odd}");
    let after = raw.call("list", json!({}));
    assert_eq!(after["isError"], false, "{after}");
    assert_eq!(raw.finish(), 0);
}

#[test]
fn under_sudo_the_commands_handed_to_the_person_carry_the_prefix() {
    let env = TestEnv::new();
    let journal = env.path("notices.jsonl");
    let flag = notifier(&env, &journal);
    env.set_env("SUDO_USER", "agentuser");
    env.set_env("USER", "agentcron");
    let arguments = json!({"instruction": "x", "in": "1h"});
    let Some(results) = session(
        &env,
        &["mcp", &flag],
        json!([call("draft", arguments.clone())]),
    ) else {
        return;
    };
    let document = &results[0]["structured"];
    assert!(
        document["confirm_command"]
            .as_str()
            .unwrap()
            .starts_with("sudo -u agentcron agentcron confirm "),
        "{document}"
    );
    let code = last_code(&journal);
    let message = last_notice(&journal)["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert_contains(&message, "  sudo -u agentcron agentcron confirm ");
    assert!(message.contains(&format!("--code {code}")));
    // An explicit prefix wins; an empty one turns it off.
    let results = session(
        &env,
        &["mcp", &flag, "--confirm-prefix", "sudo -n -u svc"],
        json!([call("draft", arguments.clone())]),
    )
    .unwrap();
    assert!(results[0]["structured"]["confirm_command"]
        .as_str()
        .unwrap()
        .starts_with("sudo -n -u svc agentcron confirm"));
    let results = session(
        &env,
        &["mcp", &flag, "--confirm-prefix", ""],
        json!([call("draft", arguments)]),
    )
    .unwrap();
    assert!(results[0]["structured"]["confirm_command"]
        .as_str()
        .unwrap()
        .starts_with("agentcron confirm"));
}

#[test]
fn show_draft_is_the_owners_alone_and_a_task_keeps_its_own_show() {
    let env = TestEnv::new();
    let draft = env.draft(&["--instruction", "x\ty", "--every", "1h", "--name", "hourly"]);
    let id = draft["draft_id"].as_str().unwrap();
    let shown = env.run(&["show", id]).ok().stdout;
    assert_contains(&shown, "a new task — waiting for confirmation");
    assert_contains(&shown, "drafted by    a person at a shell");
    assert!(shown.contains(r#"instruction   "x\ty""#), "{shown}");
    // Another owner, or another tenant, is told of no such thing.
    for who in [["--as", "unix:bob"], ["--tenant", "other"]] {
        let out = env.run(&[who[0], who[1], "show", id]).fails(3);
        assert_contains(&out.stderr, &format!("no task '{id}'"));
    }
    // Too short a prefix is no draft either; once expired, it says so.
    env.run(&["show", &id[..3]]).fails(3);
    env.advance(31 * 60);
    let expired = env.json(&["show", &id[..5]]);
    assert_eq!(expired["state"], "expired");
}
