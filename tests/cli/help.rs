//! What a newcomer meets first, said truly: the help says what a budget
//! cannot stop and that `--db` takes a PostgreSQL URL, every subcommand's
//! help puts the global options under their own heading, the quick start
//! names the file its notifier writes. (The GUIDE's "Simulating a
//! schedule" runs in tests/cli/readme.rs.)
use crate::support::{assert_contains, TestEnv};

#[test]
fn the_help_says_what_a_budget_cannot_stop_and_that_db_takes_a_url() {
    let env = TestEnv::new();
    let draft = env.run(&["draft", "--help"]).ok();
    let flat = draft
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_contains(&flat, "A budget stops the next run, not the current one: a run that starts within the window may take it past its limit");
    let top = env.run(&["--help"]).ok();
    let flat = top.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_contains(&flat, "a `postgresql://` (or `postgres://`) URL");
}

#[test]
fn the_quick_start_names_the_file_its_notifier_writes() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let notifier = std::fs::read_to_string(root.join("examples/notifier-file.sh")).unwrap();
    let file = "$HOME/agentcron-notices.log";
    assert!(notifier.contains(&file.replace("$HOME", "${NOTICE_FILE:-$HOME")));
    let quick_start = readme
        .split("## Five-minute quick start")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    assert!(
        quick_start.contains(file),
        "the quick start does not name {file}"
    );
}

/// Every subcommand path (`["lease", "check"]` included) the binary has.
fn subcommand_paths() -> Vec<Vec<String>> {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&agentcron::cli::Cli::command(), &[], &mut out);
    out
}

#[test]
fn every_subcommand_help_puts_the_global_options_under_their_own_heading() {
    let env = TestEnv::new();
    let paths = subcommand_paths();
    assert!(paths.iter().any(|p| p == &["lease", "check"]));
    for path in paths {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let out = env.run(&args).ok();
            assert_eq!(out.stderr, "");
            let (own, global) = out
                .stdout
                .split_once("\nGlobal options:\n")
                .unwrap_or_else(|| panic!("{path:?} {flag}: no heading:\n{}", out.stdout));
            for name in ["--db <PATH>", "--tenant <KEY>", "--as <KEY>", "--json"] {
                assert!(global.contains(name), "{path:?} {flag}: {name} missing");
                assert!(!own.contains(name), "{path:?} {flag}: {name} among its own");
            }
            assert!(!out.stdout.contains("--now"), "{path:?}: --now is hidden");
        }
    }
}
