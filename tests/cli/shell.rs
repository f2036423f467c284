//! At home in the shell: closed pipes, crontab and systemd lines, the
//! completions command, and the example executor and notifiers.
use crate::support::{finished, journal, Rig, Task, TestEnv, T0};

use std::io::{Read, Write};
use std::process::Stdio;

#[test]
fn a_closed_pipe_is_success() {
    let env = TestEnv::new();
    for i in 0..200 {
        if i % 50 == 0 {
            Task::new().instruction(&format!("t{i}")).confirm(&env);
        }
    }
    // `agentcron next … | head -1`: the reader goes away after one line.
    let task = env.json(&["list"])[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut child = env
        .command(&["next", &task, "--count", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = finished(child, 0);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn crontab_and_systemd_lines_are_absolute_and_carry_the_environment() {
    let env = TestEnv::new();
    env.set_env("AGENTCRON_EXECUTOR", "/opt/agent/run --mode 'read only'");
    env.set_env("AGENTCRON_NOTIFIER", "/opt/agent/notify");
    let out = env.run(&["crontab", "--log", "tick.log"]).ok();
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("* * * * * "))
        .unwrap();
    let words = shell_words::split(line.trim_start_matches("* * * * * ")).unwrap();
    // PATH=… comes first (the environment), then the absolute binary.
    assert!(words[0].starts_with("PATH=/"), "{line}");
    assert!(words[1].starts_with('/'), "{line}");
    assert_eq!(words[2], "--db");
    // cron turns `\%` back into `%` before running the line.
    assert_eq!(words[3].replace("\\%", "%"), env.db_arg());
    assert!(
        words
            .windows(2)
            .any(|w| w == ["--executor", "/opt/agent/run --mode 'read only'"]),
        "{line}"
    );
    assert!(
        words
            .windows(2)
            .any(|w| w == ["--notifier", "/opt/agent/notify"]),
        "{line}"
    );
    // The narrative goes to the log (`tick --log`); cron mails stdout.
    assert!(
        words
            .windows(2)
            .any(|w| w[0] == "--log" && w[1].starts_with('/') && w[1].ends_with("/tick.log")),
        "{line}"
    );
    assert!(!line.contains(">>"), "{line}");
    let unit = env.run(&["systemd"]).ok().stdout;
    assert!(
        unit.contains("[Service]")
            && unit.contains("[Timer]")
            && unit.contains("OnCalendar=*-*-* *:*:00")
    );
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(
        // systemd writes `%` as `%%`.
        exec.replace("%%", "%")
            .contains(&format!("--db {}", shell_words::quote(&env.db_arg()))),
        "{exec}"
    );
}

#[test]
fn completions_print_for_each_shell() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.run(&["completions", shell]).ok();
        assert!(out.stdout.contains("agentcron"), "{shell}");
    }
    let bash = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/completions/agentcron.bash"
    ))
    .unwrap();
    assert_eq!(
        env.run(&["completions", "bash"]).ok().stdout.trim_end(),
        bash.trim_end()
    );
    env.run(&["completions", "tcsh"]).fails(2);
}

fn example(name: &str) -> String {
    format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_example_executor_runs_the_tasks_script_and_the_file_notifier_appends() {
    let rig = Rig::new();
    let scripts = rig.env.path("scripts");
    std::fs::create_dir(&scripts).unwrap();
    crate::support::write_script(
        &scripts.join("report"),
        "#!/bin/sh\ncat > \"$0.stdin\"\necho report written\n",
    );
    crate::support::write_script(
        &scripts.join("broken"),
        "#!/bin/sh\necho no disk >&1\nexit 4\n",
    );
    // The folder is the executor's argument: a run receives no AGENTCRON_*
    // setting of the tick's (docs/CONTRACT.md §19).
    rig.env.set_env(
        "AGENTCRON_EXECUTOR",
        &format!("'{}' '{}'", example("executor.sh"), scripts.display()),
    );
    rig.env
        .set_env("AGENTCRON_NOTIFIER", &example("notifier-file.sh"));
    rig.env
        .set_env("NOTICE_FILE", rig.env.path("notices.log").to_str().unwrap());
    Task::named("report")
        .instruction("write the {\"name\":\"broken\"} report")
        .flags(&["--target", "ops"])
        .confirm(&rig.env);
    Task::named("broken").max_retries("0").confirm(&rig.env);
    Task::named("noscript").confirm(&rig.env);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("report")[0]["status"], "succeeded");
    assert_eq!(rig.runs("report")[0]["summary"], "report written");
    let got: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scripts.join("report.stdin")).unwrap())
            .unwrap();
    assert_eq!(got["instruction"], "write the {\"name\":\"broken\"} report");
    assert_eq!(rig.runs("broken")[0]["status"], "failed");
    assert_eq!(rig.runs("noscript")[0]["status"], "failed");
    let notices = journal(&rig.env.path("notices.log"));
    assert_eq!(notices.len(), 3, "{notices:?}");
    assert!(
        notices
            .iter()
            .any(|l| l.contains("\tops\t") && l.contains("succeeded")),
        "{notices:?}"
    );
}

/// A one-shot HTTP server on loopback: answers `status` to each request and
/// hands back the bodies it received.
fn serve(status: u16, requests: usize) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        for _ in 0..requests {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let mut data = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                data.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&data).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        bodies.push(body.to_string());
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        bodies
    });
    (url, handle)
}

#[test]
fn the_webhook_notifier_posts_and_maps_failures() {
    let rig = Rig::new();
    rig.env
        .set_env("AGENTCRON_NOTIFIER", &example("notifier-webhook.sh"));
    // Nothing listening: nothing was sent, so the notice stays pending.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    rig.env.set_env("WEBHOOK_URL", &dead);
    Task::named("w").confirm(&rig.env);
    rig.env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("w")[0]["delivery_status"], "pending");
    // A server that accepts: delivered, with the notice JSON as the body.
    let (url, server) = serve(200, 1);
    rig.env.set_env("WEBHOOK_URL", &url);
    // After the first "try later" (exit 75) the next attempt waits 60 s.
    rig.env.advance(61);
    rig.tick(&[]).ok();
    let bodies = server.join().unwrap();
    assert_eq!(rig.runs("w")[0]["delivery_status"], "delivered");
    let body: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(body["run"]["status"], "succeeded");
    // A server error after sending: uncertain, never resent.
    let (url, server) = serve(500, 1);
    rig.env.set_env("WEBHOOK_URL", &url);
    rig.env.set_now(T0 + 7200);
    rig.tick(&[]).ok();
    server.join().unwrap();
    assert_eq!(rig.runs("w")[0]["delivery_status"], "unknown");
}
