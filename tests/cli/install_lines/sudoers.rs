//! `agentcron sudoers`: one rule, for the supervisor alone, that visudo
//! accepts and sudo applies to nothing else; root only when allowed.
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use crate::support::{assert_contains, assert_starts_with, write_sudoers, TestEnv, BIN};

/// Where sudo and visudo are, or why this host cannot check a rule.
fn visudo_missing() -> Option<&'static str> {
    let found = Command::new("sh")
        .args(["-c", "command -v sudo && command -v visudo"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match found {
        true => None,
        false if std::env::var_os("AGENTCRON_REQUIRE_SUDO").is_some() => {
            panic!("sudo or visudo is missing (scripts/ensure-sudo)")
        }
        false => Some("sudo or visudo is missing"),
    }
}

/// The binary as the rule names it: absolute, as installed.
fn binary() -> String {
    std::fs::canonicalize(BIN).unwrap().display().to_string()
}

/// The small supervisor binary cargo built beside it, which the rule names.
fn supervisor() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_agentcron-supervise"))
        .unwrap()
        .display()
        .to_string()
}

/// The lines of a printed rule that are not comments.
fn rule_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

#[test]
fn sudoers_prints_one_rule_for_the_supervisor_alone_and_visudo_accepts_it() {
    let env = TestEnv::new();
    // Whatever executor or notifier is configured, the rule is the same.
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    env.set_env("AGENTCRON_NOTIFIER", "/bin/false");
    let out = env
        .run(&["sudoers", "--run-as", "nobody", "--user", "daemon"])
        .ok();
    assert_eq!(out.stderr, "");
    assert_eq!(
        rule_lines(&out.stdout),
        [
            "Defaults:daemon !use_pty".to_string(),
            format!("daemon ALL=(nobody) NOPASSWD: {} \"\"", supervisor()),
        ],
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("SETENV:"), "{}", out.stdout);
    assert!(!out.stdout.contains('*'), "{}", out.stdout);
    assert_starts_with(&out.stdout, "# /etc/sudoers.d/agentcron-daemon-as-nobody\n");
    let json = env
        .run(&[
            "--json", "sudoers", "--run-as", "nobody", "--user", "daemon",
        ])
        .json();
    assert_eq!(json["path"], "/etc/sudoers.d/agentcron-daemon-as-nobody");
    assert_eq!(
        json["text"].as_str().unwrap().trim_end(),
        out.stdout.trim_end()
    );
    // A user name's `.` would make sudo skip the file.
    let dotted = env
        .run(&[
            "--json", "sudoers", "--run-as", "a.gent", "--user", "daemon",
        ])
        .json();
    assert_eq!(dotted["path"], "/etc/sudoers.d/agentcron-daemon-as-a_gent");
    // The rule's arguments are the supervisor's: no executor to name.
    env.run(&["sudoers", "--run-as", "nobody", "--executor", "/bin/true"])
        .fails(2);

    if let Some(why) = visudo_missing() {
        crate::support::skipped(&format!("the printed rule is not checked by visudo: {why}"));
        return;
    }
    write_sudoers(&env.path("agentcron-daemon-as-nobody"), &out.stdout);
}

#[test]
fn sudoers_refuses_root_unless_allowed_and_then_says_the_wall_is_gone() {
    let env = TestEnv::new();
    let out = env.run(&["sudoers", "--run-as", "root"]).fails(2);
    assert_eq!(out.stdout, "");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].starts_with("agentcron: error: --run-as root: runs as root"),
        "{}",
        out.stderr
    );
    assert!(lines[1].contains("--allow-root"), "{}", out.stderr);

    let out = env
        .run(&[
            "sudoers",
            "--run-as",
            "root",
            "--user",
            "daemon",
            "--allow-root",
        ])
        .ok();
    assert!(
        out.stdout
            .contains("# --allow-root: every run of this tick runs as root, uid 0")
            && out
                .stdout
                .contains("The wall between runs and the store is gone."),
        "{}",
        out.stdout
    );
    assert_eq!(
        rule_lines(&out.stdout)[1],
        format!("daemon ALL=(root) NOPASSWD: {} \"\"", supervisor())
    );
}

/// Installed, the rule lets the tick's user start the supervisor as the
/// run's user, and nothing else: not the executor (or a gate, a notifier)
/// directly, not the supervisor with other arguments, not as root. So a
/// gate or a notifier needs no rule of its own: every run starts as
/// `agentcron supervise`. Needs root (to install a drop-in and ask sudo
/// about another user); the users are the system's `daemon` and `nobody`.
#[test]
fn the_installed_rule_allows_the_supervisor_and_nothing_else() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || visudo_missing().is_some() {
        crate::support::skipped("the installed sudo rule: needs root and sudo");
        return;
    }
    let env = TestEnv::new();
    let out = env
        .run(&["sudoers", "--run-as", "nobody", "--user", "daemon"])
        .ok();
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let installed = std::path::PathBuf::from(format!("/etc/sudoers.d/agentcron-test-{suffix}"));
    struct Removed(std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _removed = Removed(installed.clone());
    std::fs::write(&installed, &out.stdout).unwrap();
    std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o440)).unwrap();
    let allowed = |run_as: &str, command: &[&str]| {
        Command::new("sudo")
            .args(["-n", "-l", "-U", "daemon", "-u", run_as])
            .args(command)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    let (bin, sup) = (binary(), supervisor());
    assert!(allowed("nobody", &[&sup]));
    assert!(!allowed("nobody", &[&sup, "--other"]));
    assert!(!allowed("nobody", &[&bin, "supervise"]));
    assert!(!allowed("nobody", &[&bin, "tick"]));
    assert!(!allowed("nobody", &["/bin/true"]));
    assert!(!allowed("nobody", &["/bin/sh", "-c", "true"]));
    assert!(!allowed("root", &[&sup]));
    let listed = Command::new("sudo")
        .args(["-n", "-l", "-U", "daemon"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_contains(&listed, &format!("(nobody) NOPASSWD: {sup} \"\""));
    assert!(!listed.contains("SETENV"), "{listed}");
}
