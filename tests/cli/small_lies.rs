//! Issue 36 item 3, "the small lies": messages that told a person something
//! untrue or sent them the wrong way. A second confirm says what became of
//! the draft (tests/cli/confirm.rs); here: a store the caller may not reach
//! names whose it is, a quoted `~` is refused, and no hint suggests
//! declaring someone else's key.

use std::process::Command;

use crate::support::TestEnv;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `args` against `env`'s store as the unprivileged `nobody`.
fn as_nobody(env: &TestEnv, args: &[&str]) -> (i32, String) {
    let probe = env.command(args);
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(probe.get_program())
        .args(probe.get_args())
        .env_clear();
    for (key, value) in probe.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    let out = cmd.output().expect("setpriv runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_store_the_caller_cannot_reach_names_its_owner_and_mode() {
    if !is_root() {
        crate::support::skipped("needs root to run a command as another user");
        return;
    }
    let env = TestEnv::new();
    if env.pg_schema().is_some() {
        return;
    }
    env.draft(&["--instruction", "x", "--in", "1h"]);
    // The store's folder is 0700 root: nobody cannot even look inside.
    let (code, stderr) = as_nobody(&env, &["list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("permission denied by the folder")
            && stderr.contains("(owner root (uid 0), mode 0700)"),
        "{stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        2,
        "one error line and a hint: {stderr}"
    );
    // A folder anyone may enter, a file of root's: its owner and mode.
    let folder = env.db.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&folder, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, stderr) = as_nobody(&env, &["list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("it belongs to root (uid 0), mode 0600, not to you (uid 65534)"),
        "{stderr}"
    );
}

#[test]
fn a_quoted_tilde_in_db_is_refused_with_the_reason() {
    let env = TestEnv::new();
    for db in ["~/x.db", "~"] {
        let out = env.run(&["--db", db, "draft", "--instruction", "x", "--in", "1h"]);
        let out = out.fails(2);
        assert!(
            out.stderr.contains("starts with a literal '~'"),
            "{}",
            out.stderr
        );
    }
    assert!(!env.path("~").exists());
    assert!(
        !std::path::Path::new("~").exists(),
        "nothing made in the working folder"
    );
}

#[test]
fn no_hint_tells_a_caller_to_declare_an_owners_key() {
    let env = TestEnv::new();
    env.task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    let out = env.run(&["--as", "unix:mallory", "pause", "h", "--reason", "r"]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(!text.contains("--as KEY"), "{text}");
    let readme = include_str!("../../README.md");
    assert!(readme.contains("`--as` is a declared label, not authentication"));
}

/// Issue 36 item 4: `status` says what to do about notices that may not
/// have reached anyone, not only how many there are.
#[test]
fn status_says_what_to_do_about_unknown_and_undeliverable_notices() {
    let rig = crate::support::Rig::new();
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    rig.env.advance(3600);
    rig.tick(&[]).ok();
    rig.env
        .sql("UPDATE deliveries SET state = 'unknown', claim_token = NULL");
    let out = rig.env.run(&["status"]).ok();
    assert!(
        out.stderr.contains("1 notice(s) unknown")
            && out.stderr.contains("never resent")
            && out.stderr.contains("`agentcron runs`"),
        "{}",
        out.stderr
    );
}
