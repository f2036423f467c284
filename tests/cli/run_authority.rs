//! Issue 32, items 4-6: what a run can reach once it runs. No process of a
//! run outlives it (the tick is the child subreaper), the commands that
//! confirm or change schedules refuse inside a run (the speed bump at the
//! same user), and `status` says whether runs hold the store's authority.
//! Real processes throughout: executors that `setsid` away, double-fork,
//! and call agentcron from inside their run; both stores where one is
//! involved (the suite's PostgreSQL pass).
use crate::reliability::spawn;
use crate::support::{
    alive, assert_contains, kill, wait_for_within, write_script, Rig, Task, TestEnv, BIN, T0,
};

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

const HOUR: i64 = 3600;

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The orphans a test's executor started, killed at the end of the test
/// whatever happened (a failing assertion must not leave them behind).
struct Orphans(Vec<(PathBuf, &'static str)>);

impl Orphans {
    fn pids(&self) -> Vec<(i32, &'static str)> {
        self.0
            .iter()
            .map(|(path, tag)| {
                let pid = read_pid(path)
                    .unwrap_or_else(|| panic!("the executor wrote no pid to {}", path.display()));
                (pid, *tag)
            })
            .collect()
    }

    fn written(&self) -> bool {
        self.0.iter().all(|(path, _)| read_pid(path).is_some())
    }

    #[track_caller]
    fn assert_gone(&self, when: &str) {
        // Killed with TERM then reaped by the tick; allow the kernel a
        // moment to take the last one down.
        let deadline = Instant::now() + Duration::from_secs(2);
        for (pid, tag) in self.pids() {
            while alive(pid, tag) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(
                !alive(pid, tag),
                "{when}: the process `sleep {tag}` (pid {pid}) outlived its run"
            );
        }
    }
}

impl Drop for Orphans {
    fn drop(&mut self) {
        for (path, tag) in &self.0 {
            if let Some(pid) = read_pid(path) {
                if alive(pid, tag) {
                    kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// An executor that leaves two processes behind: `sleep TAG1`, which
/// `setsid`s away, and `sleep TAG2`, double-forked out of a `setsid` shell
/// that exits at once. Both write their pid to a file. An instruction
/// starting with "long" then sleeps 30 s.
fn orphaning_executor(env: &TestEnv, tags: [&'static str; 2]) -> (String, Orphans) {
    let (one, two) = (
        env.path(&format!("orphan-{}.pid", tags[0])),
        env.path(&format!("orphan-{}.pid", tags[1])),
    );
    let path = env.path("orphaning-executor");
    write_script(
        &path,
        &format!(
            "#!/bin/sh\ninput=$(cat)\n\
             setsid sleep {t1} &\n\
             echo $! > '{one}'\n\
             setsid sh -c 'sleep {t2} & echo $! > \"{two}\"' &\n\
             while [ ! -s '{two}' ]; do sleep 0.01; done\n\
             case \"$input\" in *'\"instruction\":\"long'*) sleep 30 ;; esac\n\
             echo done\n",
            t1 = tags[0],
            t2 = tags[1],
            one = one.display(),
            two = two.display(),
        ),
    );
    (
        path.display().to_string(),
        Orphans(vec![(one, tags[0]), (two, tags[1])]),
    )
}

fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> (i32, String) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            use std::io::Read;
            use std::os::unix::process::ExitStatusExt;
            let mut err = String::new();
            child.stderr.take().map(|mut s| s.read_to_string(&mut err));
            let code = status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
            return (code, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Item 4: an executor that `setsid`s a process away, and one that
/// double-forks one, leave nothing running once the tick exits; the run
/// itself is recorded as usual.
#[test]
fn a_run_leaves_no_process_behind_when_the_tick_exits() {
    let rig = Rig::new();
    let env = &rig.env;
    let (executor, orphans) = orphaning_executor(env, ["6371", "6372"]);
    env.set_env("AGENTCRON_EXECUTOR", &executor);
    Task::named("quick").instruction("quick").confirm(env);
    env.set_now(T0 + HOUR);
    let started = Instant::now();
    rig.tick(&["--kill-grace", "1s"]).ok();
    let took = started.elapsed();
    orphans.assert_gone("after the tick exited");
    let run = &rig.runs("quick")[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(took < Duration::from_secs(10), "the tick took {took:?}");
}

/// Item 4: SIGTERM to the tick mid-run kills the run's escaped processes
/// too (the one still a child of the executor and the one already
/// reparented to the tick), as does a run's timeout.
#[test]
fn a_signalled_or_timed_out_tick_leaves_no_process_behind() {
    for case in ["sigterm", "timeout"] {
        let rig = Rig::new();
        let env = &rig.env;
        let (executor, orphans) = orphaning_executor(env, ["6373", "6374"]);
        env.set_env("AGENTCRON_EXECUTOR", &executor);
        Task::named("long").instruction("long").confirm(env);
        env.set_now(T0 + HOUR);
        let mut args = vec!["tick", "--kill-grace", "1s"];
        if case == "timeout" {
            args.extend(["--timeout", "2s"]);
        }
        let tick = spawn(env, &args);
        wait_for_within("the orphans", Duration::from_secs(20), || orphans.written());
        // A pid is written as soon as it is forked: wait for its exec.
        wait_for_within("the orphans to run", Duration::from_secs(20), || {
            orphans.pids().iter().all(|(pid, tag)| alive(*pid, tag))
        });
        if case == "sigterm" {
            kill(tick.id() as i32, libc::SIGTERM);
        }
        let (code, stderr) = wait_bounded(tick, Duration::from_secs(20), "the tick");
        let expected = if case == "sigterm" {
            128 + libc::SIGTERM
        } else {
            0
        };
        assert_eq!(code, expected, "{case}: {stderr}");
        orphans.assert_gone(case);
        // Both stopped mid-run: the outcome is unknown.
        let run = &rig.runs("long")[0];
        assert_eq!(run["status"], "unknown", "{case}: {run}");
    }
}

/// Two runs in flight: every process a quick run left behind is killed
/// when that run settles, while the other run still runs — also one that
/// dropped the run id from its environment: each run's supervisor is the
/// subreaper of its own processes, so whose they are is never a guess.
#[test]
fn orphans_die_with_their_own_run_while_another_run_goes_on() {
    let rig = Rig::new();
    let env = &rig.env;
    let marked = env.path("marked.pid");
    let unmarked = env.path("unmarked.pid");
    let seen = env.path("seen-by-long");
    let path = env.path("executor");
    write_script(
        &path,
        &format!(
            "#!/bin/sh\ninput=$(cat)\n\
             case \"$input\" in\n\
             *'\"instruction\":\"quick'*)\n\
               setsid sleep 6375 &\n  echo $! > '{marked}'\n\
               env -u AGENTCRON_RUN_ID setsid sleep 6376 &\n  echo $! > '{unmarked}' ;;\n\
             *)\n\
               state() {{ s=$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null)\n\
                 if [ -n \"$s\" ] && [ \"$s\" != Z ] && grep -q 637 /proc/$1/cmdline 2>/dev/null; then echo alive; else echo gone; fi; }}\n\
               while [ ! -s '{unmarked}' ]; do sleep 0.01; done\n\
               m=$(cat '{marked}'); u=$(cat '{unmarked}')\n\
               j=0; while [ \"$(state $m)\" = gone ] && [ $j -lt 200 ]; do sleep 0.01; j=$((j+1)); done\n\
               i=0; while [ \"$(state $m)$(state $u)\" != gonegone ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done\n\
               echo \"marked $(state $m) unmarked $(state $u)\" > '{seen}' ;;\n\
             esac\n\
             echo done\n",
            marked = marked.display(),
            unmarked = unmarked.display(),
            seen = seen.display(),
        ),
    );
    let orphans = Orphans(vec![(marked, "6375"), (unmarked, "6376")]);
    env.set_env("AGENTCRON_EXECUTOR", &path.display().to_string());
    Task::named("quick").instruction("quick").confirm(env);
    Task::named("other").instruction("other").confirm(env);
    env.set_now(T0 + HOUR);
    rig.tick(&["--jobs", "2", "--kill-grace", "1s"]).ok();
    let seen = std::fs::read_to_string(&seen).expect("the other run looked");
    assert_eq!(seen.trim(), "marked gone unmarked gone");
    orphans.assert_gone("after the tick exited");
    assert_eq!(rig.runs("quick")[0]["status"], "succeeded");
    assert_eq!(rig.runs("other")[0]["status"], "succeeded");
}

/// A confirmed task's executor that tries to confirm a schedule of its own
/// from inside its run (issue 32's escape): `draft` then `confirm`, with
/// the store named explicitly (the run may not get AGENTCRON_DB). With
/// `unset`, it first drops the run's marker from its environment. It
/// journals the confirm's exit code and stderr.
fn escaping_executor(env: &TestEnv, unset: bool) -> String {
    let path = env.path("escaping-executor");
    let journal = env.path("escape.journal");
    let db = env.db_arg();
    write_script(
        &path,
        &format!(
            "#!/bin/sh\ncat > /dev/null\n{unset}\
             out=$('{bin}' --db '{db}' --json draft --instruction 'mine now' --every 1m --notify never)\n\
             flat=$(printf '%s' \"$out\" | tr -d '\\n')\n\
             id=$(printf '%s' \"$flat\" | sed -n 's/.*\"draft_id\": *\"\\([^\"]*\\)\".*/\\1/p')\n\
             hash=$(printf '%s' \"$flat\" | sed -n 's/.*\"payload_hash\": *\"\\([^\"]*\\)\".*/\\1/p')\n\
             '{bin}' --db '{db}' confirm \"$id\" --hash \"$hash\" 2> '{journal}.err'\n\
             echo \"confirm $?\" >> '{journal}'\n\
             echo done\n",
            unset = if unset { "unset AGENTCRON_RUN_ID\n" } else { "" },
            bin = BIN,
            db = db,
            journal = journal.display(),
        ),
    );
    path.display().to_string()
}

/// Item 5: the escape of issue 32, as a test. A run cannot confirm a
/// schedule: refused (exit 4) by the run's marker in its environment, and
/// by ancestry when it drops the marker; no task is made.
#[test]
fn a_run_cannot_confirm_a_schedule_of_its_own() {
    for unset in [false, true] {
        let rig = Rig::new();
        let env = &rig.env;
        env.set_env("AGENTCRON_EXECUTOR", &escaping_executor(env, unset));
        Task::named("agent").instruction("agent").confirm(env);
        env.set_now(T0 + HOUR);
        rig.tick(&[]).ok();
        let journal = std::fs::read_to_string(env.path("escape.journal")).unwrap_or_default();
        let stderr = std::fs::read_to_string(env.path("escape.journal.err")).unwrap_or_default();
        let run = &rig.runs("agent")[0];
        let run_id = run["run_id"].as_str().unwrap();
        assert_eq!(journal.trim(), "confirm 4", "unset {unset}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "refused inside run {}: a run cannot confirm or change schedules; \
                 confirm from your own shell",
                &run_id[..8]
            )),
            "unset {unset}: {stderr}"
        );
        let tasks = env.json(&["list", "--all"]);
        let names: Vec<&str> = tasks
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(names, ["agent"], "unset {unset}: no task of the run's own");
        assert_eq!(run["status"], "succeeded");
    }
}

/// Item 5: every command that confirms or changes schedules refuses when
/// the run's marker is in the environment, before it reads or writes
/// anything; read-only commands and drafting still work.
#[test]
fn the_commands_that_change_schedules_refuse_inside_a_run() {
    let env = TestEnv::new();
    let task = Task::named("x").confirm(&env);
    let id = task.task_id.as_str().to_string();
    let draft = Task::new().instruction("y").default_notify().draft(&env);
    let (draft_id, hash) = (
        draft["draft_id"].as_str().unwrap().to_string(),
        draft["payload_hash"].as_str().unwrap().to_string(),
    );
    let file = env.write("tasks.toml", "");
    let plan_hash = "0".repeat(64);
    let export = env.path("export.jsonl");
    std::fs::write(&export, env.run(&["export"]).ok().stdout).unwrap();
    env.set_env("AGENTCRON_RUN_ID", "0123456789abcdef");
    let refused: Vec<Vec<&str>> = vec![
        vec!["confirm", &draft_id, "--hash", &hash],
        vec!["apply", &file, "--hash", &plan_hash],
        vec!["resume", &id],
        vec!["trigger", &id],
        vec!["approve", "0123456789ab", "--wait-id", "w"],
        vec!["deny", "0123456789ab", "--wait-id", "w"],
        vec!["zone", "set", "unix:tester", "Europe/Paris"],
        vec!["import", export.to_str().unwrap()],
        vec![
            "reconcile",
            "0123456789ab",
            "--decision",
            "abandoned",
            "--reason",
            "r",
        ],
    ];
    let before = env.db_bytes();
    for args in refused {
        let out = env.run(&args);
        assert_eq!(out.code, 4, "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.lines().next().unwrap_or(""),
            "agentcron: error: refused inside run 01234567: a run cannot confirm or change \
             schedules; confirm from your own shell",
            "{args:?}"
        );
        assert_eq!(out.stdout, "", "{args:?}");
    }
    assert!(env.db_bytes() == before, "a refused command wrote nothing");
    env.run(&["list"]).ok();
    Task::new()
        .instruction("z")
        .default_notify()
        .try_draft(&env)
        .ok();
}

/// The uid this test runs as: the store's owner, and what a tick's runs
/// run as.
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").expect("/proc/self").uid()
}

/// Item 6: `status` and `check` say, one line, that runs hold the store's
/// authority once a tick ran them as the user who holds it (the SQLite
/// file's owner; on PostgreSQL the tick's own user, who has the
/// credentials); `status --json` says it as a boolean, null before any
/// tick, false when the last tick ran its runs as another user.
#[test]
fn status_says_whether_runs_hold_the_store_authority() {
    let rig = Rig::new();
    let env = &rig.env;
    Task::named("x").confirm(env);
    let status = env.json(&["status"]);
    assert_eq!(
        status["runs_hold_store_authority"],
        serde_json::Value::Null,
        "no tick has recorded anything yet"
    );
    let quiet = env.run(&["status"]).ok();
    assert!(!quiet.stderr.contains("authority"), "{}", quiet.stderr);

    env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    let uid = own_uid();
    let warning = format!(
        "agentcron: warning: runs hold the store's authority: the last tick ran them as uid \
         {uid} (the user who holds the store), so a run could change its own schedules; run \
         them as another user (`tick --run-as`, README \"Deployment\")"
    );
    let status = env.json(&["status"]);
    assert_eq!(status["runs_hold_store_authority"], true, "{status}");
    let text = env.run(&["status"]).ok();
    let warned: Vec<&str> = text
        .stderr
        .lines()
        .filter(|l| l.contains("authority"))
        .collect();
    assert_eq!(warned, [warning.as_str()], "one line: {}", text.stderr);
    assert_contains(&text.stdout, "last tick");
    let check = env.run(&["check"]).ok();
    assert_eq!(check.stdout.trim(), "ok: every invariant holds");
    assert_eq!(check.stderr.trim(), warning);

    // A tick whose runs ran as another unix user (`--run-as`) records so.
    let other = uid + 4242;
    env.sql(&format!(
        "UPDATE meta SET value = '{other}' WHERE key = 'runs_uid'"
    ));
    let status = env.json(&["status"]);
    assert_eq!(status["runs_hold_store_authority"], false, "{status}");
    let text = env.run(&["status"]).ok();
    assert!(!text.stderr.contains("authority"), "{}", text.stderr);
    let check = env.run(&["check"]).ok();
    assert_eq!(check.stderr, "");
    // The next tick records what it did again.
    env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(env.json(&["status"])["runs_hold_store_authority"], true);
}

/// Item 5 for `approve --here`: the continuation it runs in the person's
/// shell is a run too; its executor, even without its marker, cannot
/// confirm (the approving process recorded itself as the run's runner).
#[test]
fn a_continuation_run_here_cannot_confirm_either() {
    let rig = Rig::new();
    let env = &rig.env;
    let run_id = crate::support::parked_run(&rig, "agent");
    let executor = escaping_executor(env, true);
    env.run(&[
        "approve",
        &run_id,
        "--wait-id",
        "w1",
        "--here",
        "--executor",
        &executor,
    ])
    .ok();
    let journal = std::fs::read_to_string(env.path("escape.journal")).unwrap_or_default();
    let stderr = std::fs::read_to_string(env.path("escape.journal.err")).unwrap_or_default();
    assert_eq!(journal.trim(), "confirm 4", "{stderr}");
    assert_contains(&stderr, &format!("refused inside run {}", &run_id[..8]));
    let tasks = env.json(&["list", "--all"]);
    assert_eq!(tasks.as_array().unwrap().len(), 1, "{tasks}");
}

/// Item 4: an orphan that ignores TERM (and its child, which inherits
/// that) is killed after the kill grace.
#[test]
fn an_orphan_that_ignores_term_is_killed_after_the_grace() {
    let rig = Rig::new();
    let env = &rig.env;
    let (shell, child) = (env.path("stubborn.pid"), env.path("stubborn-child.pid"));
    let path = env.path("executor");
    write_script(
        &path,
        &format!(
            "#!/bin/sh\ncat > /dev/null\n\
             setsid sh -c 'trap \"\" TERM; echo $$ > \"{shell}\"; sleep 6377 & echo $! > \"{child}\"; wait; sleep 6377' &\n\
             while [ ! -s '{child}' ]; do sleep 0.01; done\n\
             echo done\n",
            shell = shell.display(),
            child = child.display(),
        ),
    );
    let orphans = Orphans(vec![(shell, "sh"), (child, "6377")]);
    env.set_env("AGENTCRON_EXECUTOR", &path.display().to_string());
    Task::named("x").confirm(env);
    env.set_now(T0 + HOUR);
    let started = Instant::now();
    rig.tick(&["--kill-grace", "1s"]).ok();
    let took = started.elapsed();
    orphans.assert_gone("after the tick exited");
    assert!(took >= Duration::from_secs(1), "TERM was ignored: {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(rig.runs("x")[0]["status"], "succeeded");
}
