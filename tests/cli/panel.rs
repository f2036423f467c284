//! The operator's panel (issue 14): read-only commands that create nothing,
//! short run ids, help and man pages, tables in pipes, completion.

use crate::support::TestEnv;

#[test]
fn read_only_commands_on_a_missing_database_exit_3_and_create_nothing() {
    let env = TestEnv::new();
    let folder = env.path("nowhere");
    let db = folder.join("deeper").join("agentcron.db");
    let db_text = db.display().to_string();
    for args in [
        vec!["status"],
        vec!["list"],
        vec!["show", "abcd"],
        vec!["runs"],
        vec!["log"],
        vec!["explain", "abcd"],
        vec!["next", "abcd"],
        vec!["check"],
        vec!["export"],
    ] {
        let mut all = vec!["--db", db_text.as_str()];
        all.extend_from_slice(&args);
        let out = env.run(&all).fails(3);
        assert_eq!(
            out.stderr,
            format!("agentcron: error: no database at {db_text}; `agentcron draft` creates it\n"),
            "{args:?}"
        );
        assert!(!folder.exists(), "{args:?} created {}", folder.display());
    }
    // A command that writes still creates the file, 0600 in 0700 folders.
    let mut all = vec!["--db", db_text.as_str()];
    all.extend_from_slice(&["draft", "--instruction", "x", "--in", "1h"]);
    env.run(&all).ok();
    assert!(db.exists());
    let mut all = vec!["--db", db_text.as_str()];
    all.push("list");
    env.run(&all).ok();
}
