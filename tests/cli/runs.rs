//! `runs`: the run history, filtered by task and status, newest first.
use crate::support::{assert_starts_with, Rig, Task, TestEnv, T0};

const HOUR: i64 = 3600;

#[test]
fn runs_filters_by_task_and_status_newest_first() {
    let rig = Rig::new();
    Task::named("a").max_retries("0").confirm(&rig.env);
    Task::named("b").instruction("y").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.set_now(T0 + 2 * HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.env.json(&["runs"]).as_array().unwrap().len(), 4);
    let a = rig.env.json(&["runs", "a"]);
    assert_eq!(a.as_array().unwrap().len(), 2);
    assert_eq!(
        a[0]["scheduled_for"], "2026-12-02T10:00:00Z",
        "newest first"
    );
    assert_eq!(
        rig.env
            .json(&["runs", "--status", "failed"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        rig.env
            .json(&["runs", "--limit", "1"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        rig.env
            .json(&["runs", "--as", "mallory"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    rig.env.run(&["runs", "--status", "weird"]).fails(2);
    let out = rig.env.run(&["runs", "a"]).ok();
    assert_starts_with(&out.stdout, "RUN");
}

#[test]
fn runs_before_the_first_run_says_no_runs_yet_on_stderr() {
    let env = TestEnv::new();
    Task::named("t").confirm(&env);
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
