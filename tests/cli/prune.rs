//! `prune`: what it removes, what it keeps (unknown and parked runs, how a
//! live task came to be), and the file shrinking.
use crate::support::{assert_contains, texts, unknown_run, Rig, Task, TestEnv, T0};

const HOUR: i64 = 3600;

#[test]
fn prune_keeps_unknown_and_parked_runs_and_shrinks_the_file() {
    let rig = Rig::new();
    let stuck = unknown_run(&rig, "stuck");
    rig.with_notifier(0);
    rig.tick(&[]).ok(); // deliver the unknown run's notice
    for i in 0..30 {
        Task::named(&format!("t{i}"))
            .instruction(&"pad ".repeat(2000))
            .confirm(&rig.env);
    }
    for hour in 2..=4 {
        rig.env.set_now(T0 + hour * HOUR);
        rig.tick(&["--max-runs", "100"]).ok();
    }
    let total = rig.env.count("SELECT count(*) FROM runs");
    rig.env.set_now(T0 + 100 * 86400);
    let dry = rig.env.json(&["prune", "--older-than", "30d", "--dry-run"]);
    assert_eq!(dry["runs"].as_i64().unwrap(), total - 1);
    assert_eq!(
        rig.env.count("SELECT count(*) FROM runs"),
        total,
        "dry run deletes nothing"
    );
    let done = rig.env.json(&["prune", "--older-than", "30d"]);
    assert_eq!(done["runs"].as_i64().unwrap(), total - 1);
    // --vacuum gives the space back: SQLite's VACUUM rewrites the file
    // smaller; PostgreSQL's plain VACUUM only makes the space reusable
    // (VACUUM FULL would lock every table).
    let vacuumed = rig.env.json(&["prune", "--older-than", "30d", "--vacuum"]);
    assert_eq!(vacuumed["runs"], 0);
    if !crate::support::on_postgres() {
        assert!(
            vacuumed["size_after"].as_u64().unwrap() < vacuumed["size_before"].as_u64().unwrap(),
            "{vacuumed}"
        );
    }
    let left = rig.env.sql("SELECT run_id, status FROM runs");
    assert_eq!(left, vec![vec![stuck, "unknown".to_string()]]);
    assert_eq!(rig.env.json(&["check"])["ok"], true);
}

/// Item 3: two files of the same base name in two folders are two sources:
/// `--prune` of one never deletes what the other created. It needs the
/// file's `source` key, shows "created by" on each delete, and an applied
/// plan applied again is "already applied".
#[test]
fn prune_goes_by_the_files_source_not_its_base_name() {
    let env = TestEnv::new();
    let file = |folder: &str, source: Option<&str>, task: &str| {
        let dir = env.path(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tasks.toml");
        let head = source
            .map(|s| format!("source = \"{s}\"\n"))
            .unwrap_or_default();
        std::fs::write(
            &path,
            format!("{head}[{task}]\ninstruction = \"x\"\ndaily = \"09:00\"\n"),
        )
        .unwrap();
        path.display().to_string()
    };
    let apply = |path: &str, prune: bool| {
        let mut args = vec!["--json", "plan", path];
        if prune {
            args.push("--prune");
        }
        let plan = env.run(&args).ok().json();
        let hash = plan["plan_hash"].as_str().unwrap().to_string();
        let mut args = vec!["apply", path, "--hash", hash.as_str()];
        if prune {
            args.push("--prune");
        }
        env.run(&args).ok();
        (plan, hash)
    };
    let examples = file("examples", Some("examples"), "from-examples");
    apply(&examples, true);
    let deploy = file("deploy", Some("deploy"), "from-deploy");
    let (plan, hash) = apply(&deploy, true);
    let actions: Vec<&str> = texts(&plan["actions"], "action");
    assert_eq!(actions, ["create"], "{plan}");
    let list = env.json(&["list"]);
    let names = texts(&list, "name");
    assert_eq!(names.len(), 2, "{names:?}");
    // Applied again: nothing to do, exit 0.
    let out = env
        .run(&["apply", &deploy, "--hash", &hash, "--prune"])
        .ok();
    assert_eq!(out.stdout.trim(), "already applied: nothing to do");
    // The deploy file drops its task: the plan deletes it, and says whose.
    let emptied = env.path("deploy/tasks.toml");
    std::fs::write(&emptied, "source = \"deploy\"\n").unwrap();
    let out = env.run(&["plan", &deploy, "--prune"]).ok();
    assert_contains(&out.stdout, "- delete from-deploy");
    assert_contains(&out.stdout, "created by source:deploy");
    assert!(!out.stdout.contains("from-examples"), "{}", out.stdout);
    // Without a source, --prune is refused.
    let nameless = file("other", None, "x");
    let out = env.run(&["plan", &nameless, "--prune"]).fails(2);
    assert_contains(&out.stderr, "--prune needs a `source");
}

#[test]
fn prune_keeps_how_a_live_task_came_to_be() {
    let env = TestEnv::new();
    let kept = Task::named("kept").confirm(&env);
    let kept = kept.task_id.as_str().to_string();
    let gone = Task::named("gone").confirm(&env);
    let gone = gone.task_id.as_str().to_string();
    Task::new()
        .instruction("never confirmed")
        .after("1h")
        .default_notify()
        .draft(&env);
    env.json(&["pause", "kept"]);
    env.json(&["delete", &gone]);
    let actions =
        |sql: &str| -> Vec<String> { env.sql(sql).into_iter().map(|r| r[0].clone()).collect() };
    assert_eq!(env.count("SELECT count(*) FROM events"), 7);
    env.advance(100 * 86400);
    let dry = env.json(&["prune", "--older-than", "30d", "--dry-run"]);
    assert_eq!(dry["events"], 5, "{dry}");
    let done = env.json(&["prune", "--older-than", "30d"]);
    assert_eq!(done["events"], 5, "{done}");
    // The live task keeps its draft and confirm events; the deleted task's
    // trail, the unconfirmed draft and the pause age out.
    let left = actions("SELECT action FROM events ORDER BY event_id");
    assert_eq!(left, ["draft", "confirm"]);
    let confirm = env.sql("SELECT task_id FROM events WHERE action = 'confirm'");
    assert_eq!(confirm[0][0], kept);
    let log = env.json(&["log", "kept"]);
    assert_eq!(log[0]["action"], "confirm");
    // Nothing changes on a second prune; once the task is deleted, its
    // record ages out like the rest.
    assert_eq!(env.json(&["prune", "--older-than", "30d"])["events"], 0);
    env.json(&["delete", "kept"]);
    env.advance(100 * 86400);
    assert_eq!(env.json(&["prune", "--older-than", "30d"])["events"], 3);
    assert_eq!(env.count("SELECT count(*) FROM events"), 0);
}
