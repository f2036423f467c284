//! What a newcomer meets first, said truly. An empty run
//! history says so (on stderr, as `list` does); `upcoming`'s LAST names the
//! last occurrence a coalesced missed run stands for; the help says what a
//! budget cannot stop and that `--db` takes a PostgreSQL URL; the quick
//! start names the file its notifier writes. (The GUIDE's "Simulating a
//! schedule" runs in tests/cli/readme.rs.)

use crate::support::{Rig, TestEnv};

#[test]
fn runs_before_the_first_run_says_no_runs_yet_on_stderr() {
    let env = TestEnv::new();
    env.task(&["--instruction", "x", "--every", "1h", "--name", "t"]);
    for (args, said) in [
        (&["runs", "t"][..], "agentcron: No runs yet of task t\n"),
        (&["runs"], "agentcron: No runs yet\n"),
        (
            &["runs", "t", "--status", "failed"],
            "agentcron: No failed runs of task t\n",
        ),
    ] {
        let out = env.run(args).ok();
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(out.stderr, said, "{args:?}");
    }
    // Scripts still get an empty array.
    assert_eq!(env.json(&["runs", "t"]), serde_json::json!([]));
}

#[test]
fn upcoming_names_the_last_occurrence_a_coalesced_missed_run_stands_for() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "t"]);
    // Five hourly occurrences pass with no tick; the latest is past its
    // grace, so one missed run stands for all five.
    env.advance(5 * 3600 + 30 * 60);
    rig.tick(&[]).ok();
    let run = &rig.runs("t")[0];
    assert_eq!(run["status"], "missed", "{run}");
    assert_eq!(run["skipped_occurrences"], 5, "{run}");
    let first = run["scheduled_for"].as_str().unwrap().to_string();
    let out = env.run(&["upcoming", "--limit", "1"]).ok();
    let row = out.stdout.lines().nth(1).expect("one row");
    let last = chrono::DateTime::parse_from_rfc3339(&first).unwrap() + chrono::Duration::hours(4);
    let last = last.format("%Y-%m-%d %H:%M UTC").to_string();
    assert!(
        row.contains(&format!("{last}  missed")),
        "{last}: {}",
        out.stdout
    );
}

#[test]
fn the_help_says_what_a_budget_cannot_stop_and_that_db_takes_a_url() {
    let env = TestEnv::new();
    let draft = env.run(&["draft", "--help"]).ok();
    let flat = draft
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("A budget stops the next run, not the current one: a run that starts within the window may take it past its limit"),
        "{flat}"
    );
    let top = env.run(&["--help"]).ok();
    let flat = top.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("a `postgresql://` (or `postgres://`) URL"),
        "{flat}"
    );
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
