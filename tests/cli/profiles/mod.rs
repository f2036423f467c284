//! Profiles (docs/CONTRACT.md §22): an operator's named way to run an
//! agent, bound into the payload a person confirms. Real ticks and real
//! processes on both stores: the profile's command runs in its folder with
//! its names and nothing of the tick's `--pass-env`; a changed or deleted
//! profile holds its task (`skipped_profile`, told once) until its owner
//! confirms again; `--max-concurrent` holds across ticks; tasks files,
//! export/import and the MCP server carry profiles. Runs of two profiles
//! with users of their own are isolated in `isolation.rs`.
use crate::support::{assert_contains, draft_ids, journal, spawn_tick, Rig, Task};

use serde_json::Value;

mod isolation;

const HOUR: i64 = 3600;

/// A profile command that journals where it ran and what it was given,
/// then answers as the executor fixture does (`PROFILE_DIR` is passed).
const PROFILE_SCRIPT: &str = r#"#!/bin/sh
cat > /dev/null
echo "begin $AGENTCRON_RUN_ID $(date +%s%N)" >> "$PROFILE_DIR/begins"
echo "run $AGENTCRON_RUN_ID $(pwd) secret=${SECRET:-none} other=${OTHER:-none} args=$*" >> "$PROFILE_DIR/runs"
[ -n "$PROFILE_SLEEP" ] && sleep "$PROFILE_SLEEP"
echo "end $AGENTCRON_RUN_ID $(date +%s%N)" >> "$PROFILE_DIR/ends"
echo "done by the profile"
"#;

/// A rig with the profile script, its folder `work`, and the variables a
/// profile may pass (SECRET) and the tick's own --pass-env (OTHER).
fn rig() -> Rig {
    let rig = Rig::new();
    let dir = rig.env.path("profile");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(rig.env.path("work")).unwrap();
    crate::support::write_script(&rig.env.path("profile.sh"), PROFILE_SCRIPT);
    rig.env.set_env("PROFILE_DIR", dir.to_str().unwrap());
    rig.env.set_env("SECRET", "s3cret");
    rig.env.set_env("OTHER", "tick-only");
    // The tick passes OTHER (and the fixtures' names) to its own executor.
    rig.env.set_env(
        "AGENTCRON_PASS_ENV",
        "OTHER,FIXTURE_JOURNAL,FIXTURE_STDIN,PROFILE_DIR,NOTIFIER_JOURNAL,NOTIFIER_CALLS,NOTIFIER_EXIT",
    );
    rig
}

/// `profile set coder` running the script in `work`, passing SECRET and
/// PROFILE_DIR; `extra` flags after.
fn set_coder(rig: &Rig, extra: &[&str]) -> Value {
    let script = rig.env.path("profile.sh").display().to_string();
    let work = rig.env.path("work").display().to_string();
    let mut args = vec![
        "profile",
        "set",
        "coder",
        "--command",
        &script,
        "--cwd",
        &work,
        "--pass-env",
        "SECRET,PROFILE_DIR",
        "--description",
        "reviews code",
        "--create-store",
    ];
    args.extend_from_slice(extra);
    rig.env.json(&args)
}

fn profile_runs(rig: &Rig) -> Vec<String> {
    journal(&rig.env.path("profile/runs"))
}

fn statuses(rig: &Rig, task: &str) -> Vec<String> {
    rig.runs(task)
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_profile_runs_its_task_with_its_command_in_its_folder_with_its_names_only() {
    let rig = rig();
    set_coder(&rig, &[]);
    Task::named("t")
        .flags(&["--profile", "coder"])
        .confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(statuses(&rig, "t"), ["succeeded"]);
    assert_eq!(rig.runs("t")[0]["summary"], "done by the profile");
    // The profile's command ran, not the tick's executor.
    assert!(rig.starts().is_empty(), "{:?}", rig.starts());
    let runs = profile_runs(&rig);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let work = rig.env.path("work").display().to_string();
    // Its folder, its passed name, and nothing of the tick's --pass-env.
    assert_contains(&runs[0], &format!(" {work} secret=s3cret other=none"));
    // A task without a profile still runs the tick's executor, which is
    // given the tick's names.
    Task::named("plain").confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.starts().len(), 1);
    assert_eq!(profile_runs(&rig).len(), 2, "t ran again with its profile");
}

#[test]
fn the_person_sees_the_profile_in_the_draft_the_task_and_the_listing() {
    let rig = rig();
    let profile = set_coder(&rig, &["--max-concurrent", "2", "--timeout", "10m"]);
    let sha = profile["sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    let draft = Task::named("t")
        .flags(&["--profile", "coder"])
        .draft(&rig.env);
    // The payload holds the definition and its hash: the person's hash covers it.
    let payload: Value = serde_json::from_str(draft["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["profile"]["name"], "coder");
    assert_eq!(payload["profile"]["sha256"], sha);
    assert_eq!(payload["profile"]["max_concurrent"], 2);
    let (id, _) = draft_ids(&draft);
    let shown = rig.env.run(&["show", id]).ok().stdout;
    let work = rig.env.path("work").display().to_string();
    assert_contains(&shown, &format!("coder ({})", &sha[..8]));
    assert_contains(&shown, &format!("in {work}"));
    assert_contains(&shown, "as the tick's --run-as user");
    assert_contains(&shown, "passes PROFILE_DIR, SECRET");
    let t = Task::named("t2")
        .flags(&["--profile", "coder"])
        .confirm(&rig.env);
    let task = rig.env.json(&["show", &t.task_id]);
    assert_eq!(task["profile"]["sha256"], sha, "{task}");
    let listed = rig.env.run(&["list"]).ok().stdout;
    assert_contains(listed.lines().next().unwrap(), "PROFILE");
    assert_contains(&listed, "coder");
    let shown = rig.env.run(&["profile", "show", "coder"]).ok().stdout;
    assert_contains(&shown, "t2");
    // Without a profile anywhere, the listing has no such column.
    let other = Rig::new();
    Task::named("p").confirm(&other.env);
    let listed = other.env.run(&["list"]).ok().stdout;
    assert!(!listed.contains("PROFILE"), "{listed}");
}

#[test]
fn a_changed_profile_holds_its_task_told_once_until_its_owner_confirms_again() {
    let rig = rig();
    rig.with_notifier(0);
    set_coder(&rig, &[]);
    with_coder("t").confirm(&rig.env);
    // The operator changes the command: the task is held.
    let changed = set_coder(&rig, &["--timeout", "1h"]);
    assert_eq!(changed["changed"], true);
    let script = rig.env.path("profile.sh").display().to_string();
    let work = rig.env.path("work").display().to_string();
    let out = rig
        .env
        .run(&[
            "profile",
            "set",
            "coder",
            "--command",
            &format!("{script} --write"),
            "--cwd",
            &work,
            "--pass-env",
            "SECRET,PROFILE_DIR",
        ])
        .ok()
        .stdout;
    assert_contains(&out, "step-up: command");
    assert_contains(&out, "1 task(s) bound to it are held");
    for _ in 0..2 {
        rig.env.advance(HOUR);
        rig.tick(&[]).ok();
    }
    assert_eq!(statuses(&rig, "t"), ["skipped_profile", "skipped_profile"]);
    let reason = rig.runs("t")[0]["reason"].as_str().unwrap().to_string();
    assert_contains(
        &reason,
        "profile coder changed since you confirmed it: command",
    );
    assert!(profile_runs(&rig).is_empty());
    // Told once, not at every occurrence.
    let told = rig
        .notices()
        .iter()
        .filter(|n| n["kind"] == "profile")
        .count();
    assert_eq!(told, 1, "{:?}", rig.notices());
    let status = rig.env.run(&["status"]).ok().stdout;
    assert_contains(&status, "coder changed since 1 task(s) were confirmed");
    // `draft --replace t` alone binds the profile's current version, the
    // widening shown as a step-up; confirmed, the task runs again.
    let draft = rig.env.json(&["draft", "--replace", "t"]);
    let (id, hash) = draft_ids(&draft);
    let text = rig.env.run(&["show", id]).ok().stdout;
    assert_contains(&text, "step-up: its profile runs another command");
    rig.env.run(&["confirm", id, "--hash", hash]).ok();
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(statuses(&rig, "t")[0], "succeeded");
    assert_contains(&profile_runs(&rig)[0], "args=--write");
    // Held again after another change: told again (a new confirmation).
    set_coder(&rig, &["--max-concurrent", "3"]);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let told = rig
        .notices()
        .iter()
        .filter(|n| n["kind"] == "profile")
        .count();
    assert_eq!(told, 2);
}

#[test]
fn a_deleted_profile_holds_its_task_until_it_is_confirmed_with_another_or_none() {
    let rig = rig();
    set_coder(&rig, &[]);
    with_coder("t").confirm(&rig.env);
    let out = rig.env.run(&["profile", "delete", "coder"]).ok().stdout;
    assert_contains(&out, "1 task(s) bound to it are held");
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(statuses(&rig, "t"), ["skipped_profile"]);
    assert_contains(rig.runs("t")[0]["reason"].as_str().unwrap(), "was deleted");
    // A replacement that keeps it cannot bind what is gone.
    let refused = rig.env.run(&["draft", "--replace", "t"]).fails(2);
    assert_contains(
        &refused.stderr,
        "the task's profile 'coder' no longer exists",
    );
    rig.env.run(&["profile", "show", "coder"]).fails(3);
    // `--profile none`: the tick's executor runs it.
    let draft = rig
        .env
        .json(&["draft", "--replace", "t", "--profile", "none"]);
    let (id, hash) = draft_ids(&draft);
    rig.env.run(&["confirm", id, "--hash", hash]).ok();
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(statuses(&rig, "t")[0], "succeeded");
    assert_eq!(rig.starts().len(), 1);
}

#[test]
fn max_concurrent_holds_across_overlapping_ticks_and_waits_are_not_lateness() {
    let rig = rig();
    rig.env.set_env("PROFILE_SLEEP", "1");
    set_coder(
        &rig,
        &[
            "--max-concurrent",
            "1",
            "--pass-env",
            "SECRET,PROFILE_DIR,PROFILE_SLEEP",
        ],
    );
    for name in ["a", "b", "c"] {
        with_coder(name).confirm(&rig.env);
    }
    rig.env.advance(HOUR);
    // Each tick claims for one second: what it leaves waiting for the
    // profile is marked seen, and runs later however long the wait.
    let ticks: Vec<_> = (0..2)
        .map(|_| spawn_tick(&rig, &["--jobs", "4", "--claim-for", "1s"]))
        .collect();
    for tick in ticks {
        let out = tick.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    // What the two ticks left waiting runs at the next ones, as capacity:
    // never missed however long the wait (past the 90 s grace here).
    for _ in 0..3 {
        rig.env.advance(600);
        rig.tick(&[]).ok();
    }
    for name in ["a", "b", "c"] {
        assert_eq!(statuses(&rig, name), ["succeeded"], "task {name}");
    }
    // Never two at once: each run began after the one before it ended.
    let runs = profile_runs(&rig);
    let ends = journal(&rig.env.path("profile/ends"));
    assert_eq!((runs.len(), ends.len()), (3, 3));
    let mut intervals = overlap_journal(&rig);
    intervals.sort();
    for pair in intervals.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "two runs of the profile overlapped: {intervals:?}"
        );
    }
}

/// (start, end) of each profile run in nanoseconds, from the journals the
/// script and `begins` keep.
fn overlap_journal(rig: &Rig) -> Vec<(i64, i64)> {
    let begins = journal(&rig.env.path("profile/begins"));
    let ends = journal(&rig.env.path("profile/ends"));
    begins
        .iter()
        .map(|b| {
            let mut words = b.split(' ');
            let id = words.nth(1).unwrap();
            let start: i64 = words.next().unwrap().parse().unwrap();
            let end = ends
                .iter()
                .find(|e| e.split(' ').nth(1) == Some(id))
                .and_then(|e| e.split(' ').nth(2))
                .unwrap()
                .parse()
                .unwrap();
            (start, end)
        })
        .collect()
}

#[test]
fn profile_set_is_audited_checked_and_refused_inside_a_run() {
    let rig = rig();
    set_coder(&rig, &[]);
    let log = rig.env.run(&["log"]).ok().stdout;
    assert_contains(&log, "added profile coder");
    for (flags, says) in [
        (vec!["--command", ""], "--command"),
        (vec!["--command", "x", "--cwd", "relative"], "--cwd"),
        (
            vec!["--command", "x", "--pass-env", "AGENTCRON_DB"],
            "AGENTCRON_DB",
        ),
        (vec!["--command", "x", "--timeout", "2d"], "--timeout"),
    ] {
        let mut args = vec!["profile", "set", "p"];
        args.extend_from_slice(&flags);
        assert_contains(&rig.env.run(&args).fails(2).stderr, says);
    }
    rig.env
        .run(&["profile", "set", "bad name", "--command", "x"])
        .fails(2);
    // Inside a run (its marker set): refused, as every change of what runs.
    rig.env.set_env("AGENTCRON_RUN_ID", "0123456789abcdef");
    let refused = rig
        .env
        .run(&["profile", "set", "coder", "--command", "evil"])
        .fails(4);
    assert_contains(&refused.stderr, "refused inside run");
    rig.env.run(&["profile", "delete", "coder"]).fails(4);
    // Reading is allowed, each listing as JSON too.
    rig.env.run(&["profile", "list"]).ok();
    let shown = rig.env.json(&["profile", "show", "coder"]);
    assert_eq!(shown["name"], "coder");
    assert_eq!(
        shown["pass_env"],
        serde_json::json!(["PROFILE_DIR", "SECRET"])
    );
    assert_eq!(shown["revision"], 1);
    let listed = rig.env.json(&["profile", "list"]);
    assert_eq!(listed[0]["sha256"], shown["sha256"]);
    rig.env
        .run_without("AGENTCRON_RUN_ID", &["profile", "delete", "nope"])
        .fails(3);
    let deleted = rig
        .env
        .run_without(
            "AGENTCRON_RUN_ID",
            &["--json", "profile", "delete", "coder"],
        )
        .ok()
        .json();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(deleted["sha256"], shown["sha256"]);
    assert_eq!(deleted["tasks_held"], 0);
    let log = rig
        .env
        .run_without("AGENTCRON_RUN_ID", &["log"])
        .ok()
        .stdout;
    assert_contains(&log, "deleted profile coder");
}

#[test]
fn a_tasks_file_binds_profiles_through_plan_and_apply() {
    let rig = rig();
    set_coder(&rig, &[]);
    let file = rig.env.write(
        "tasks.toml",
        "[review]\ninstruction = \"review\"\ndaily = \"09:00\"\nprofile = \"coder\"\n\
         [plain]\ninstruction = \"plain\"\ndaily = \"10:00\"\n",
    );
    let plan = rig.env.json(&["plan", &file]);
    let review = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "review")
        .unwrap()
        .clone();
    assert_contains(review["profile"].as_str().unwrap(), "coder (");
    let hash = plan["plan_hash"].as_str().unwrap();
    rig.env.run(&["apply", &file, "--hash", hash]).ok();
    let task = rig.env.json(&["show", "review"]);
    assert_eq!(task["profile"]["name"], "coder", "{task}");
    // The profile changes: the file's plan shows the rebinding as a change.
    set_coder(&rig, &["--pass-env", "OTHER"]);
    let plan = rig.env.run(&["plan", &file]).ok().stdout;
    assert_contains(&plan, "~ replace review");
    assert_contains(
        &plan,
        "[step-up: its profile passes more variables to the run]",
    );
    assert!(!plan.contains("replace plain"), "{plan}");
    let unknown = rig.env.write(
        "bad.toml",
        "[x]\ninstruction = \"x\"\ndaily = \"09:00\"\nprofile = \"nope\"\n",
    );
    assert_contains(&rig.env.run(&["plan", &unknown]).fails(2).stderr, "nope");
}

#[test]
fn export_and_import_keep_profiles_and_the_binding() {
    let rig = rig();
    set_coder(&rig, &[]);
    with_coder("t").confirm(&rig.env);
    let exported = rig.env.run(&["export"]).ok().stdout;
    assert_contains(&exported, r#""table":"profiles""#);
    let copy = rig_sharing_env(&rig);
    let file = copy.env.write("export.jsonl", &exported);
    copy.env.run(&["import", &file]).ok();
    let listed = copy.env.json(&["profile", "list"]);
    assert_eq!(listed[0]["name"], "coder");
    copy.env.advance(HOUR);
    copy.tick(&[]).ok();
    assert_eq!(
        statuses(&copy, "t"),
        ["succeeded"],
        "the binding held in the copy"
    );
    // A forged definition is refused whole.
    let forged = exported.replace("profile.sh", "evil.sh");
    let file = rig.env.write("forged.jsonl", &forged);
    let other = Rig::new();
    let refused = other.env.run(&["import", &file]).fails(2);
    assert_contains(&refused.stderr, "profiles");
}

/// A fresh rig (another store) whose variables name the same profile
/// folder and script as `rig`'s.
fn rig_sharing_env(rig: &Rig) -> Rig {
    let copy = Rig::new();
    for key in ["PROFILE_DIR", "SECRET", "OTHER"] {
        let value = match key {
            "PROFILE_DIR" => rig.env.path("profile").display().to_string(),
            "SECRET" => "s3cret".into(),
            _ => "tick-only".into(),
        };
        copy.env.set_env(key, &value);
    }
    copy.env.set_now(rig.env.now());
    copy
}

#[test]
fn a_store_with_profiles_ticks_without_an_executor() {
    let rig = rig();
    set_coder(&rig, &[]);
    with_coder("t").confirm(&rig.env);
    Task::named("plain").confirm(&rig.env);
    rig.env.advance(HOUR);
    // Exit 1: a run failed (the task without a profile).
    let ticked = rig.env.run_without("AGENTCRON_EXECUTOR", &["tick"]);
    assert_eq!(ticked.code, 1, "{}", ticked.stderr);
    assert_eq!(statuses(&rig, "t"), ["succeeded"]);
    // The task without one fails, saying what is missing.
    let plain = &rig.runs("plain")[0];
    assert_eq!(plain["status"], "failed");
    assert_contains(
        plain["reason"].as_str().unwrap(),
        "no executor is configured",
    );
}

/// `profile set NAME` running the executor fixture, given the fixture's
/// variables; `extra` flags after.
fn fixture_profile(rig: &Rig, name: &str, extra: &[&str]) {
    let executor = crate::support::fixture("executor.sh");
    let mut args = vec![
        "profile",
        "set",
        name,
        "--command",
        &executor,
        "--create-store",
    ];
    args.extend_from_slice(&[
        "--pass-env",
        "FIXTURE_JOURNAL,FIXTURE_STDIN,FIXTURE_MODE,FIXTURE_SLEEP,FIXTURE_DEADLINE",
    ]);
    args.extend_from_slice(extra);
    rig.env.run(&args).ok();
}

/// A task `name` (hourly) drafted with `--profile coder`.
fn with_coder(name: &str) -> Task {
    Task::named(name).flags(&["--profile", "coder"])
}

#[test]
fn an_approved_continuation_waits_for_its_profiles_capacity() {
    let rig = rig();
    fixture_profile(&rig, "one", &["--max-concurrent", "1"]);
    rig.env.set_env("FIXTURE_MODE", "awaiting");
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-04T00:00:00Z");
    Task::named("parked")
        .flags(&["--profile", "one"])
        .confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let parked = rig.runs("parked")[0].clone();
    assert_eq!(parked["status"], "awaiting_confirmation", "{parked}");
    let run_id = parked["run_id"].as_str().unwrap().to_string();
    Task::named("long")
        .flags(&["--profile", "one"])
        .confirm(&rig.env);
    rig.env.advance(HOUR);
    // One run of the profile holds its one slot...
    rig.env.executors_sleep("3");
    let long = spawn_tick(&rig, &["--claim-for", "1s"]);
    crate::support::wait_for("the long run to start", || rig.starts().len() == 2);
    rig.env.run(&["approve", &run_id, "--wait-id", "w1"]).ok();
    // ...so a tick meanwhile leaves the approved continuation waiting.
    rig.tick(&[]).ok();
    let of_parked = |rig: &Rig| {
        let runs = rig.runs("parked");
        runs.into_iter()
            .find(|r| r["run_id"] == run_id.as_str())
            .unwrap()
    };
    let still = of_parked(&rig);
    assert_eq!(still["status"], "awaiting_confirmation", "{still}");
    assert_eq!(rig.starts().len(), 2);
    assert!(long.wait_with_output().unwrap().status.success());
    rig.env.set_env("FIXTURE_MODE", "awaiting");
    rig.tick(&[]).ok();
    let done = of_parked(&rig);
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["summary"], "approved and done");
}

#[test]
fn a_profiles_time_limit_bounds_the_tasks_own() {
    let rig = rig();
    fixture_profile(&rig, "quick", &["--timeout", "1s"]);
    rig.env.executors_sleep("10");
    // The task's own limit is longer: the profile's, shorter, holds.
    Task::named("t")
        .timeout("1h")
        .flags(&["--profile", "quick"])
        .confirm(&rig.env);
    rig.env.advance(HOUR);
    let started = std::time::Instant::now();
    rig.tick(&["--kill-grace", "1s"]).ok();
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    let run = &rig.runs("t")[0];
    // A read_only run past its own confirmed limit failed (and is retried).
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["summary"], "timed out after 1 s", "{run}");
}

#[test]
fn the_dry_run_asks_profiles_as_the_tick_does() {
    let rig = rig();
    fixture_profile(&rig, "one", &["--max-concurrent", "1"]);
    set_coder(&rig, &[]);
    with_coder("held").confirm(&rig.env);
    set_coder(&rig, &["--timeout", "5m"]);
    rig.env.advance(HOUR);
    let said = rig.env.run(&["tick", "--dry-run"]).ok().stdout;
    assert_contains(&said, "would record held for");
    assert_contains(&said, "skipped_profile");
    rig.tick(&[]).ok();
    // A run of `one` running: a task of `one` due meanwhile would wait.
    rig.env.executors_sleep("5");
    Task::named("busy")
        .flags(&["--profile", "one"])
        .confirm(&rig.env);
    Task::named("full")
        .flags(&["--profile", "one"])
        .confirm(&rig.env);
    rig.env.advance(HOUR);
    let busy = spawn_tick(&rig, &["--claim-for", "1s"]);
    crate::support::wait_for("a run of profile one", || {
        rig.env
            .count("SELECT count(*) FROM runs WHERE status = 'running' AND profile = 'one'")
            == 1
    });
    rig.env.set_env("FIXTURE_MODE", "succeed");
    let said = rig.env.run(&["tick", "--dry-run", "-v"]).ok();
    let text = format!("{}{}", said.stdout, said.stderr);
    assert_contains(&text, "their profile's --max-concurrent runs are running");
    assert!(busy.wait_with_output().unwrap().status.success());
}
