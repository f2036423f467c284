//! Issue 28: what a newcomer under real cron was misled by. `status` says
//! when cron stopped (a warning, `"stale": true`, the last gap for a day).

use crate::support::Rig;
use crate::support::{besides_authority, TestEnv, T0};

const MINUTE: i64 = 60;

#[test]
fn status_says_when_cron_stopped_and_names_the_last_gap() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    rig.tick(&[]).ok();
    // A minute later all is well: quiet, not stale.
    env.advance(MINUTE);
    let out = env.run(&["status"]).ok();
    assert_eq!(besides_authority(&out.stderr), "", "{}", out.stderr);
    assert_eq!(env.json(&["status"])["stale"], false);
    // Five minutes without a tick while a task is active: cron stopped.
    env.advance(5 * MINUTE);
    let out = env.run(&["status"]).ok();
    assert!(
        out.stderr
            .contains("no tick for 6 min while 1 task(s) are active"),
        "{}",
        out.stderr
    );
    let status = env.run(&["--json", "status"]).ok().json();
    assert_eq!(status["stale"], true);
    // The exit code changes only with --max-tick-age.
    env.run(&["status", "--max-tick-age", "10m"]).ok();
    assert_eq!(env.run(&["status", "--max-tick-age", "2m"]).code, 1);
    // Cron comes back after 8 minutes in all: the gap is named for a day.
    env.advance(2 * MINUTE);
    rig.tick(&[]).ok();
    let out = env.run(&["status"]).ok();
    assert!(
        out.stdout
            .contains("last gap   no tick for 8 min until 2026-12-02 08:08"),
        "{}",
        out.stdout
    );
    let gap = &env.json(&["status"])["last_gap"];
    assert_eq!(gap["seconds"], 8 * MINUTE, "{gap}");
    assert_eq!(gap["until"], "2026-12-02T08:08:00Z");
    // A day later the gap is history (`log` keeps it).
    env.set_now(T0 + 8 * MINUTE + 86400 + 1);
    let status = env.run(&["--json", "status"]).ok().json();
    assert!(status["last_gap"].is_null(), "{status}");
}

#[test]
fn status_of_a_store_with_no_active_task_is_never_stale_by_default() {
    let env = TestEnv::new();
    env.draft(&["--instruction", "x", "--every", "1h"]);
    let out = env.run(&["status"]).ok();
    assert_eq!(out.stderr, "");
    assert_eq!(env.json(&["status"])["stale"], false);
}

/// Item 2: `status` counts every unknown run of the store, and `reconcile`
/// lists only the caller's in one tenant. They must agree: `status` names
/// where the runs are with the command that reaches them, and `reconcile`
/// with nothing of the caller's says how many wait elsewhere.
#[test]
fn status_and_reconcile_agree_on_where_unknown_runs_are() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "a",
        "--tenant",
        "ops",
        "--as",
        "unix:alice",
    ]);
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "5");
    env.advance(3600);
    rig.tick(&["--timeout", "1s", "--kill-grace", "1s"]).ok();
    let out = env.run(&["status"]).ok();
    let line = format!(
        "1 unknown run(s) in tenant 'ops' owned by unix:alice: `agentcron --db {} \
         --tenant ops --as unix:alice reconcile`",
        shell_words::quote(&env.db_arg())
    );
    assert!(out.stderr.contains(&line), "{}", out.stderr);
    let status = env.json(&["status"]);
    assert_eq!(status["runs"]["unknown"], 1);
    assert_eq!(status["unknown_runs_by"][0]["tenant"], "ops");
    assert_eq!(status["unknown_runs_by"][0]["owner"], "unix:alice");
    // The caller of the default tenant has none, and is told where they are.
    let out = env.run(&["reconcile"]).ok();
    assert!(
        out.stdout.starts_with(
            "No unknown runs of yours (unix:tester) in tenant 'default'; 1 elsewhere:"
        ),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&line), "{}", out.stdout);
    // The command it names lists the run.
    let out = env
        .run(&["--tenant", "ops", "--as", "unix:alice", "reconcile"])
        .ok();
    assert!(
        out.stdout.contains("Find out what happened"),
        "{}",
        out.stdout
    );
}

/// Item 4: a PostgreSQL password never leaves the process. The confirm line
/// `draft` prints carries `--db` without it; `crontab` and `systemd`, whose
/// lines put `--db` in every tick's argv, refuse it unless told.
#[test]
fn a_postgres_password_is_never_printed() {
    if !crate::support::on_postgres() {
        return; // needs the server (trust auth ignores the password)
    }
    let env = TestEnv::new();
    let url = env.db_arg().replacen("postgres@", "postgres:s3cret@", 1);
    assert!(url.contains(":s3cret@"), "{url}");
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    for args in [
        vec!["--db", &url, "draft", "--instruction", "x", "--every", "1h"],
        vec![
            "--db",
            &url,
            "--json",
            "draft",
            "--instruction",
            "y",
            "--every",
            "1h",
        ],
        vec!["--db", &url, "status"],
    ] {
        let out = env.run(&args).ok();
        assert!(!out.stdout.contains("s3cret"), "{args:?}: {}", out.stdout);
        assert!(!out.stderr.contains("s3cret"), "{args:?}: {}", out.stderr);
    }
    let out = env
        .run(&["--db", &url, "draft", "--instruction", "z", "--every", "1h"])
        .ok();
    assert!(out.stdout.contains("--db "), "{}", out.stdout);
    for cmd in ["crontab", "systemd"] {
        let out = env.run(&["--db", &url, cmd]).fails(2);
        assert!(out.stderr.contains("carries a password"), "{}", out.stderr);
        assert!(out.stderr.contains(".pgpass"), "{}", out.stderr);
        assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
    }
    let out = env
        .run(&["--db", &url, "crontab", "--allow-password-in-argv"])
        .ok();
    assert!(out.stdout.contains("s3cret"), "asked for: {}", out.stdout);
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
    let actions: Vec<&str> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["create"], "{plan}");
    let names: Vec<String> = env
        .json(&["list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
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
    assert!(
        out.stdout.contains("- delete from-deploy"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("created by source:deploy"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("from-examples"), "{}", out.stdout);
    // Without a source, --prune is refused.
    let nameless = file("other", None, "x");
    let out = env.run(&["plan", &nameless, "--prune"]).fails(2);
    assert!(
        out.stderr.contains("--prune needs a `source"),
        "{}",
        out.stderr
    );
}

/// Item 5: an `--every` task drafted at :11 keeps cron's phase (its runs
/// fall on whole minutes), and its default grace covers a per-minute tick.
#[test]
fn an_interval_task_runs_in_phase_with_a_per_minute_cron() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_now(T0 + 11);
    let task = env.task(&["--instruction", "x", "--every", "1m", "--name", "m"]);
    assert_eq!(task["next_run_at"], "2026-12-02T08:01:00Z", "{task}");
    assert_eq!(task["grace_seconds"], 90);
    // Cron's ticks at the top of each minute, each a few seconds in.
    for minute in 1..=3 {
        env.set_now(T0 + minute * MINUTE + 2);
        rig.tick(&[]).ok();
    }
    let statuses: Vec<String> = rig
        .runs("m")
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["succeeded"; 3], "none missed, none late");
    let late: Vec<i64> = env
        .sql("SELECT started_at - scheduled_for FROM runs")
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert!(
        late.iter().all(|s| *s <= 2),
        "started within the tick's 2 s: {late:?}"
    );
}
