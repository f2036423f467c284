//! Runs addressed by a prefix of their id: `approve`, `deny` and
//! `lease check` take one; an ambiguous prefix lists the candidates; a
//! prefix never reaches into another tenant.
use crate::support::{
    assert_contains, assert_starts_with, parked_run, run_status, unknown_run, Rig, TestEnv,
};

#[test]
fn approve_deny_and_lease_check_take_a_run_id_prefix() {
    let rig = Rig::new();
    let first = parked_run(&rig, "a");
    let second = parked_run(&rig, "b");
    // runs and show name the wait id a parked run needs.
    let out = rig.env.run(&["runs"]).ok();
    assert_eq!(
        out.stdout.matches("wait id w1; may I?").count(),
        2,
        "{}",
        out.stdout
    );
    let out = rig.env.run(&["show", "a"]).ok();
    assert_contains(&out.stdout, "wait id w1; may I?");
    // Three characters are not enough, even when they match.
    let out = rig
        .env
        .run(&["approve", &first[..3], "--wait-id", "w1"])
        .fails(3);
    assert_contains(&out.stderr, "at least 4 characters");
    let out = rig
        .env
        .run(&["approve", &first[..8], "--wait-id", "w1", "--here"])
        .ok();
    assert_contains(&out.stdout, "succeeded");
    assert_eq!(run_status(&rig, "a", &first), "succeeded");
    let out = rig.env.run(&["deny", &second[..6], "--wait-id", "w1"]).ok();
    assert_eq!(
        out.stdout,
        format!("Denied; run {} failed.\n", &second[..8])
    );
    assert_eq!(run_status(&rig, "b", &second), "failed");
    // lease check resolves the prefix too (and the settled run holds no lease).
    let out = rig
        .env
        .run(&["--json", "lease", "check", &first[..5], "--token", "t"]);
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert_eq!(
        out.json(),
        serde_json::json!({"run_id": first, "lease_holds": false})
    );
}

#[test]
fn a_run_prefix_never_reaches_into_another_tenant() {
    let rig = Rig::new();
    let run = parked_run(&rig, "secret-task");
    for args in [
        vec!["approve", &run[..8], "--wait-id", "w1"],
        vec!["deny", &run[..8], "--wait-id", "w1"],
        vec![
            "reconcile",
            &run[..8],
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ],
        vec!["explain", &run[..8]],
    ] {
        let mut all = vec!["--tenant", "other"];
        all.extend_from_slice(&args);
        let out = rig.env.run(&all).fails(3);
        assert_eq!(
            out.stderr.lines().next().unwrap(),
            format!(
                "agentcron: error: no {} '{}' in tenant 'other'",
                if args[0] == "explain" { "task" } else { "run" },
                &run[..8]
            ),
            "{args:?}"
        );
    }
    // The full id is denied without a word about the task it belongs to.
    let mut all = vec!["--tenant", "other"];
    all.extend_from_slice(&["approve", &run, "--wait-id", "w1"]);
    let out = rig.env.run(&all).fails(4);
    assert!(!out.stderr.contains("secret-task"), "{}", out.stderr);
    let task_id = rig.env.json(&["show", "secret-task"])["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!out.stderr.contains(&task_id), "{}", out.stderr);
    assert_eq!(
        rig.runs("secret-task")[0]["status"],
        "awaiting_confirmation"
    );
}

#[test]
fn an_ambiguous_run_prefix_lists_the_candidates() {
    let rig = Rig::new();
    let first = unknown_run(&rig, "u");
    let second = parked_run(&rig, "p");
    // Give both runs one prefix, everywhere their ids are kept.
    let mut renames = String::new();
    for (old, new) in [(&first, "abcd1111"), (&second, "abcd2222")] {
        let renamed = format!("{new}{}", &old[8..]);
        for (table, column) in [
            ("runs", "run_id"),
            ("runs", "blocked_by"),
            ("deliveries", "run_id"),
            ("events", "run_id"),
        ] {
            renames.push_str(&format!(
                "UPDATE {table} SET {column} = '{renamed}' WHERE {column} = '{old}';\n"
            ));
        }
    }
    rename_runs(&rig.env, &renames);
    let out = rig
        .env
        .run(&[
            "reconcile",
            "abcd",
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ])
        .fails(2);
    assert_starts_with(
        &out.stderr,
        &format!(
            "agentcron: error: 'abcd' matches several runs: abcd1111{}, abcd2222{}\n",
            &first[8..],
            &second[8..]
        ),
    );
    rig.env
        .run(&[
            "reconcile",
            "abcd1",
            "--decision",
            "abandoned",
            "--reason",
            "x",
        ])
        .ok();
    let renamed = format!("abcd1111{}", &first[8..]);
    assert_eq!(run_status(&rig, "u", &renamed), "failed");
}

/// Runs `updates` with foreign keys unchecked, for renaming a run's id in
/// every table at once.
fn rename_runs(env: &TestEnv, updates: &str) {
    if crate::support::on_postgres() {
        env.sql(&format!(
            "SET session_replication_role = replica;\n{updates}"
        ));
        return;
    }
    let conn = rusqlite::Connection::open(&env.db).unwrap();
    conn.execute_batch(&format!("PRAGMA foreign_keys = OFF;\n{updates}"))
        .unwrap();
}
