//! What an executor's reply means: the last JSON line is the result, else
//! the exit code; a reply that does not parse, carries a stray byte or is
//! longer than the capture is never a success.
use crate::support::{write_script, Rig, Task, T0};

// Item 5: a failure reply longer than the capture cap.

#[test]
fn a_failure_reply_longer_than_the_capture_is_not_a_success() {
    let rig = crate::support::Rig::new();
    let env = &rig.env;
    // One line: {"status":"failed","summary":"<1.5 MB>"}, then exit 0.
    let executor = env.path("long-failure.sh");
    crate::support::write_script(
        &executor,
        "#!/bin/sh\ncat >/dev/null\nprintf '{\"status\":\"failed\",\"summary\":\"'\nhead -c 1500000 /dev/zero | tr '\\0' x\nprintf '\"}\\n'\n",
    );
    env.set_env("AGENTCRON_EXECUTOR", executor.to_str().unwrap());
    let task = Task::named("long").confirm(env);
    let id = task.task_id.as_str();
    env.advance(3600);
    env.run(&["tick"]).ok();
    let runs = rig.runs(id);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "failed", "{}", runs[0]);
    let reason = runs[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("1 MiB"), "{}", runs[0]);
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
    Task::named("h").max_retries("2").confirm(&rig.env);
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
    Task::named("h").confirm(&rig.env);
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

const HOUR: i64 = 3600;

#[test]
fn the_last_json_line_is_the_result_else_the_exit_code() {
    let rig = Rig::new();
    Task::named("j").max_retries("0").confirm(&rig.env);
    rig.env.set_env(
        "FIXTURE_MODE",
        r#"json:{"status":"delivery_failed","summary":"sent nothing"}"#,
    );
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let run = &rig.runs("j")[0];
    assert_eq!(run["status"], "delivery_failed");
    assert_eq!(run["summary"], "sent nothing");
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    let run = &rig.runs("j")[0];
    assert_eq!(run["status"], "failed");
    assert!(
        run["summary"].as_str().unwrap().contains("it broke"),
        "{run}"
    );
}
