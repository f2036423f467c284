//! The strong deployment of the README's "Agents" section, performed: the
//! store belongs to a dedicated unix user; the agent's own user may run
//! exactly `agentcron mcp --as unix:alice` as that user through a sudoers
//! rule, and can neither read the store nor run anything else there — so it
//! cannot confirm what it drafts. The person confirms as a user who can
//! reach the store, with the code the notifier gave them.
//!
//! It creates two system users, a folder under /tmp and a sudoers drop-in,
//! and removes them after. It needs root, sudo, visudo and useradd, and a
//! SQLite store (the boundary is a file's permissions); elsewhere it skips
//! with a note, unless AGENTCRON_REQUIRE_SUDO is set (CI installs sudo with
//! scripts/ensure-sudo).
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;

use super::RawSession;
use crate::support::{assert_contains, on_postgres, write_script, BIN};

/// Why this machine cannot perform the deployment, if it cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("it needs root (to add users and a sudoers rule)".into());
    }
    for tool in ["sudo", "visudo", "useradd", "userdel", "runuser"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("{tool} is not installed (scripts/ensure-sudo)"));
        }
    }
    None
}

/// The users, folder and sudoers rule of one deployment, removed on drop.
struct Deployment {
    dir: PathBuf,
    service: String,
    agent: String,
    sudoers: PathBuf,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.sudoers);
        for user in [&self.agent, &self.service] {
            let _ = Command::new("userdel")
                .arg(user)
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[track_caller]
fn sh(command: &mut Command) -> Output {
    command.output().expect("the command starts")
}

/// `argv` run as `user` (its own groups only: runuser calls initgroups),
/// with a minimal environment.
fn as_user(user: &str, argv: &[&str]) -> Command {
    let mut command = Command::new("runuser");
    command
        .args(["-u", user, "--"])
        .args(argv)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .env("AGENTCRON_TZ", "UTC")
        .current_dir("/");
    command
}

fn chown(path: &Path, user: &str) {
    assert!(
        sh(Command::new("chown").args([user, &path.display().to_string()]))
            .status
            .success()
    );
}

#[test]
fn an_agent_user_runs_only_the_server_and_cannot_reach_the_store() {
    if on_postgres() {
        // By design, not for want of a tool: the boundary is a file's permissions.
        eprintln!("the sudo deployment guards a SQLite file; not tested on PostgreSQL");
        return;
    }
    if let Some(why) = unavailable() {
        if std::env::var_os("AGENTCRON_REQUIRE_SUDO").is_some() {
            panic!("the sudo deployment cannot be tested here: {why}");
        }
        crate::support::skipped(&format!("the sudo deployment is not tested: {why}"));
        return;
    }
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let deployment = Deployment {
        dir: PathBuf::from(format!("/tmp/agentcron-deploy-{suffix}")),
        service: format!("acsvc{suffix}"),
        agent: format!("acagt{suffix}"),
        sudoers: PathBuf::from(format!("/etc/sudoers.d/agentcron-test-{suffix}")),
    };
    for user in [&deployment.service, &deployment.agent] {
        let out = sh(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            user,
        ]));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Root's: the binary and the notifier; the service's: the store's folder
    // (0700) and the notices (which the test, as root, reads).
    let dir = &deployment.dir;
    let (bin, state, notices) = (
        dir.join("agentcron"),
        dir.join("state"),
        dir.join("notices"),
    );
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir_all(&notices).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    let notify = dir.join("notify");
    write_script(
        &notify,
        &format!("#!/bin/sh\ncat >> {}/journal\n", notices.display()),
    );
    for folder in [&state, &notices] {
        chown(folder, &deployment.service);
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let store = state.join("agentcron.db");
    let (bin_s, store_s, notify_s) = (
        bin.display().to_string(),
        store.display().to_string(),
        notify.display().to_string(),
    );
    // The rule: exactly this command line, as the service user, no password.
    let rule = format!(
        "{} ALL=({}) NOPASSWD: {bin_s} --db {store_s} mcp --as unix\\:alice --notifier {notify_s}\n",
        deployment.agent, deployment.service
    );
    let draft_rule = dir.join("rule");
    std::fs::write(&draft_rule, &rule).unwrap();
    let checked = sh(Command::new("visudo").args(["-cf", &draft_rule.display().to_string()]));
    assert!(checked.status.success(), "visudo refused: {rule}");
    std::fs::write(&deployment.sudoers, &rule).unwrap();
    std::fs::set_permissions(&deployment.sudoers, std::fs::Permissions::from_mode(0o440)).unwrap();

    // The agent host starts the server through sudo and drafts.
    let server = [
        "sudo",
        "-n",
        "-u",
        &deployment.service,
        &bin_s,
        "--db",
        &store_s,
        "mcp",
        "--as",
        "unix:alice",
        "--notifier",
        &notify_s,
    ];
    let mut session = RawSession::over(as_user(&deployment.agent, &server), "sandboxed-agent");
    let drafted = session.call(
        "draft",
        json!({"instruction": "water the plants", "in": "1h"}),
    );
    assert_eq!(session.finish(), 0);
    assert_eq!(drafted["isError"], false, "{drafted}");
    let document = &drafted["structuredContent"];
    assert_eq!(document["drafted_by"], "agent:sandboxed-agent");
    assert_eq!(document["confirm_code"]["state"], "delivered", "{document}");
    let (id, hash) = (
        document["draft_id"].as_str().unwrap().to_string(),
        document["payload_hash"].as_str().unwrap().to_string(),
    );

    // The store is the service's, and the agent's user cannot read it…
    let meta = std::fs::metadata(&store).expect("the server created the store");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let agent = &deployment.agent;
    let read = sh(&mut as_user(agent, &["cat", &store_s]));
    assert!(!read.status.success());
    let direct = sh(&mut as_user(agent, &[&bin_s, "--db", &store_s, "list"]));
    let said = String::from_utf8_lossy(&direct.stderr);
    assert!(
        !direct.status.success(),
        "the agent read the store directly"
    );
    assert!(
        said.contains("ermission denied") || said.contains("unable to open"),
        "{}",
        said
    );
    // …nor run anything else as the service: not confirm, not another identity.
    for argv in [
        vec![
            &bin_s[..],
            "--db",
            &store_s,
            "--as",
            "unix:alice",
            "confirm",
            &id,
            "--hash",
            &hash,
        ],
        vec![
            &bin_s[..],
            "--db",
            &store_s,
            "mcp",
            "--as",
            "unix:mallory",
            "--notifier",
            &notify_s,
        ],
    ] {
        let mut sudo = vec!["sudo", "-n", "-u", &deployment.service];
        sudo.extend(argv);
        let refused = sh(&mut as_user(agent, &sudo));
        assert!(!refused.status.success(), "sudo let the agent run {sudo:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert_contains(&said, "sudo");
    }

    // The person confirms with the code they got, by the line the message
    // handed them: the server knew it runs under sudo as the service, so the
    // line says so. Run as printed (by root, whom sudo lets be the service;
    // only the program word is this test's copy, which sudo's secure_path
    // would not find under its name).
    let notice = super::last_notice(&notices.join("journal"));
    let code = super::last_code(&notices.join("journal"));
    let message = notice["message"].as_str().unwrap();
    let printed = format!(
        "sudo -u {} agentcron confirm {id} --hash {hash} --code {code} --db {store_s} --as unix:alice",
        deployment.service
    );
    assert!(
        message.lines().any(|l| l.trim() == printed),
        "{printed}\nnot in:\n{message}"
    );
    assert!(document["confirm_command"]
        .as_str()
        .unwrap()
        .starts_with(&format!("sudo -u {} agentcron confirm", deployment.service)));
    let line = printed.replace(" agentcron confirm ", &format!(" {bin_s} confirm "));
    let confirmed = sh(Command::new("sh")
        .args(["-c", &line])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .env("AGENTCRON_TZ", "UTC")
        .current_dir("/"));
    assert!(
        confirmed.status.success(),
        "{}",
        String::from_utf8_lossy(&confirmed.stderr)
    );
    assert!(String::from_utf8_lossy(&confirmed.stdout).contains("Confirmed task"));
}
