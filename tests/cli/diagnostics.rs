//! What an operator needs to mend a failing installation (issue 14): the
//! executor's stderr kept on its run, crontab and systemd lines that carry
//! the environment the executor needs.
use crate::support::{
    assert_contains, fixture, parked_run, unknown_run, write_script, Rig, Task, TestEnv, BIN,
};

const HOUR: i64 = 3600;

#[test]
fn the_end_of_the_executors_stderr_is_kept_and_shown_escaped() {
    let rig = Rig::new();
    let executor = rig.env.path("complains.sh");
    write_script(
        &executor,
        "#!/bin/sh\ncat >/dev/null\necho 'starting' >&2\nprintf 'set AGENTCRON_SCRIPTS \\033[31m\\n' >&2\nexit 2\n",
    );
    rig.env
        .set_env("AGENTCRON_EXECUTOR", executor.to_str().unwrap());
    Task::named("a").confirm(&rig.env);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();

    let run = &rig.runs("a")[0];
    assert_eq!(run["status"], "failed");
    assert_eq!(run["reason"], "exit status 2");
    // JSON carries it as written; people see it escaped.
    assert_eq!(run["stderr"], "starting\nset AGENTCRON_SCRIPTS \u{1b}[31m");
    let id = run["run_id"].as_str().unwrap();
    let short = &id[..8];

    let out = rig.env.run(&["runs"]).ok();
    assert_contains(
        &out.stdout,
        "exit status 2; stderr: set AGENTCRON_SCRIPTS \\x1b…",
    );
    assert!(!out.stdout.contains('\u{1b}'));

    let out = rig.env.run(&["show", "a"]).ok();
    assert!(
        out.stdout.ends_with(&format!(
            "\nstderr of run {short} (its end):\n  starting\n  set AGENTCRON_SCRIPTS \\x1b[31m\n"
        )),
        "{}",
        out.stdout
    );

    let out = rig.env.run(&["explain", id]).ok();
    assert!(
        out.stdout.ends_with(&format!(
            "\nstderr of run {short} (its end):\n  starting\n  set AGENTCRON_SCRIPTS \\x1b[31m\n"
        )),
        "{}",
        out.stdout
    );
    let explained = rig.env.json(&["explain", id]);
    assert_eq!(explained["run"]["stderr"], run["stderr"]);

    // A flood keeps its end, at most 2000 characters, marked as cut.
    write_script(
        &executor,
        "#!/bin/sh\ncat >/dev/null\ni=0\nwhile [ $i -lt 500 ]; do echo \"line $i\" >&2; i=$((i+1)); done\nexit 1\n",
    );
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let stderr = rig.runs("a")[0]["stderr"].as_str().unwrap().to_string();
    assert_eq!(stderr.chars().count(), 2000);
    assert!(
        stderr.starts_with('…') && stderr.ends_with("\nline 499"),
        "{stderr}"
    );

    // Silent executors leave none.
    rig.env
        .set_env("AGENTCRON_EXECUTOR", &fixture("executor.sh"));
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    assert_eq!(rig.runs("a")[0]["stderr"], serde_json::Value::Null);
    assert_eq!(rig.runs("a")[0]["status"], "succeeded");
}

/// The crontab line alone (cron's bare environment) runs examples/executor.sh
/// with the folder of scripts it needs, and the script finds `agentcron` on PATH.
#[test]
fn the_crontab_line_runs_the_example_executor_in_an_empty_environment() {
    let env = TestEnv::new();
    let scripts = env.path("scripts");
    std::fs::create_dir(&scripts).unwrap();
    write_script(
        &scripts.join("oncall"),
        "#!/bin/sh\ncat >/dev/null\nagentcron lease check \"$AGENTCRON_RUN_ID\" --token \"$AGENTCRON_LEASE_TOKEN\" >/dev/null || exit 9\necho 'all quiet'\n",
    );
    Task::named("oncall").confirm(&env);
    env.advance(HOUR);
    let scripts_arg = format!("TASK_SCRIPTS={}", scripts.display());
    let now_arg = format!("AGENTCRON_NOW={}", env.now());
    let out = env
        .run(&[
            "crontab",
            "--executor",
            &format!(
                "{}/examples/executor.sh {}",
                env!("CARGO_MANIFEST_DIR"),
                scripts.display()
            ),
            "--env",
            &now_arg,
        ])
        .ok();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("* * * * * "))
        .unwrap();
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    assert!(
        line.starts_with(&format!(
            "PATH={}:/usr/local/bin:/usr/bin:/bin ",
            bin_dir.display()
        )),
        "{line}"
    );
    // What cron does: `\%` back to `%`, then /bin/sh with almost nothing set.
    let ran = std::process::Command::new("/usr/bin/env")
        .args(["-i", "/bin/sh", "-c", &line.replace("\\%", "%")])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let run = &env.json(&["show", "oncall"])["runs"][0];
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["summary"], "all quiet");

    // The same environment in the systemd unit.
    let unit = env
        .run(&["systemd", "--executor", "/bin/true", "--env", &scripts_arg])
        .ok()
        .stdout;
    assert!(
        unit.contains(&format!(
            "\nEnvironment=\"PATH={}:/usr/local/bin:/usr/bin:/bin\"\nEnvironment=\"{scripts_arg}\"\nExecStart=",
            bin_dir.display()
        )),
        "{unit}"
    );
    // A bad variable name is a usage error.
    let out = env.run(&["crontab", "--env", "1A=b"]).fails(2);
    assert_contains(
        &out.stderr,
        "'1A' is not a variable name (letters, digits, _)",
    );
}

#[test]
fn systemd_names_its_user_and_warns_when_that_is_root() {
    let env = TestEnv::new();
    let out = env
        .run(&["systemd", "--executor", "/bin/true", "--user", "root"])
        .ok();
    assert_contains(&out.stdout, "\nUser=root\n");
    assert_eq!(
        out.stderr,
        "agentcron: warning: the unit runs the tick, and so every agent, as root (User=root); \
         agents should not run as root: pass --user NAME of an unprivileged account that owns the database\n"
    );
    let out = env
        .run(&["systemd", "--executor", "/bin/true", "--user", "agent"])
        .ok();
    assert_eq!(out.stderr, "");
    assert!(out
        .stdout
        .contains("\nType=oneshot\nUser=agent\nEnvironment=\"PATH="));
    // By default, the user running the command (its effective uid).
    let me = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let me = String::from_utf8(me.stdout).unwrap();
    let out = env.run(&["systemd", "--executor", "/bin/true"]);
    assert_eq!(out.code, 0);
    assert_contains(&out.stdout, &format!("\nUser={}\n", me.trim()));

    // --json: the user and both units; the warning a JSON line on stderr.
    let out = env
        .run(&[
            "--json",
            "systemd",
            "--executor",
            "/bin/true",
            "--user",
            "root",
        ])
        .ok();
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["user"], "root");
    assert_eq!(
        doc["service"]["path"],
        "/etc/systemd/system/agentcron.service"
    );
    assert!(doc["service"]["text"]
        .as_str()
        .unwrap()
        .contains("\nUser=root\n"));
    assert_eq!(doc["timer"]["path"], "/etc/systemd/system/agentcron.timer");
    assert!(doc["timer"]["text"]
        .as_str()
        .unwrap()
        .contains("OnCalendar=*-*-* *:*:00"));
    let warning: serde_json::Value = serde_json::from_str(out.stderr.trim_end()).unwrap();
    assert!(warning["warning"]
        .as_str()
        .unwrap()
        .starts_with("the unit runs the tick"));

    let out = env.run(&["systemd", "--user", "a\nb"]).fails(2);
    assert_contains(&out.stderr, "is not a user name");
}

#[test]
fn crontab_warns_when_the_executor_cannot_run() {
    let env = TestEnv::new();
    let plain = env.write("plain.sh", "#!/bin/sh\n");
    let cases = [
        ("/nope/run --fast", "the executor /nope/run does not exist".to_string()),
        (plain.as_str(), format!("the executor {plain} is not executable (chmod +x)")),
        (
            "bin/run",
            "the executor \"bin/run\" is a relative path; cron runs the line from your home folder: give an absolute path"
                .to_string(),
        ),
        (
            "no-such-agent",
            "the executor \"no-such-agent\" is not found in the line's PATH (".to_string(),
        ),
    ];
    for (executor, warning) in cases {
        let out = env.run(&["crontab", "--executor", executor]).ok();
        assert!(
            out.stderr
                .starts_with(&format!("agentcron: warning: {warning}")),
            "{executor}: {}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert_contains(&out.stdout, "* * * * * ");
    }
    // A program found in the line's PATH, or an absolute executable: silent.
    for executor in ["sh -c true", "/bin/true"] {
        let out = env.run(&["crontab", "--executor", executor]).ok();
        assert_eq!(out.stderr, "", "{executor}");
    }

    // --json: the line as an object, each warning a JSON line on stderr.
    let out = env
        .run(&["--json", "crontab", "--executor", "/nope/run"])
        .ok();
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let line = doc["line"].as_str().unwrap();
    assert!(
        line.starts_with("* * * * * PATH=") && line.ends_with("--executor /nope/run"),
        "{line}"
    );
    let warning: serde_json::Value = serde_json::from_str(out.stderr.trim_end()).unwrap();
    assert_eq!(
        warning,
        serde_json::json!({"warning": "the executor /nope/run does not exist"})
    );
}

#[test]
fn tick_json_events_name_their_task_and_a_dry_run_shows_no_run_ids() {
    let rig = Rig::new();
    Task::named("a").confirm(&rig.env);
    rig.env.advance(HOUR);
    let out = rig.tick(&["--dry-run"]).ok();
    assert_eq!(
        out.stdout,
        "would run a for 2026-12-02 09:00 UTC (attempt 1)\n"
    );
    let events = rig.tick_json(&["--dry-run"]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "would_claim");
    assert_eq!(events[0]["task_name"], "a");
    assert_eq!(events[0]["decision"], "running");
    assert_eq!(events[0]["run"]["run_id"], serde_json::Value::Null);

    let events = rig.tick_json(&[]);
    let claimed = events.iter().find(|e| e["event"] == "claimed").unwrap();
    let finished = events.iter().find(|e| e["event"] == "finished").unwrap();
    assert_eq!(claimed["task_name"], "a");
    assert_eq!(finished["task_name"], "a");
    assert_eq!(finished["run"]["run_id"], claimed["run"]["run_id"]);
}

#[test]
fn deny_json_has_its_finished_at() {
    let rig = Rig::new();
    let run = parked_run(&rig, "a");
    rig.env.advance(60);
    let denied = rig.env.json(&["deny", &run, "--wait-id", "w1"]);
    assert_eq!(denied["status"], "failed");
    assert_eq!(denied["reason"], "denied");
    assert_eq!(denied["finished_at"], "2026-12-02T09:01:00Z");
    assert_eq!(denied["finished_at"], rig.runs("a")[0]["finished_at"]);
    assert_eq!(
        denied["delivery_status"],
        rig.runs("a")[0]["delivery_status"]
    );
}

#[test]
fn messages_say_lateness_in_human_units_keep_seconds_and_say_when_there_is_nothing() {
    let rig = Rig::new();
    // Nothing yet (a store with only a draft): one line each, not silence.
    Task::new().default_notify().draft(&rig.env);
    let out = rig.tick(&["--dry-run"]).ok();
    assert_eq!(
        out.stdout,
        "Nothing to do: no run is due, no lease or notice has expired.\n"
    );
    let out = rig.env.run(&["reconcile"]).ok();
    assert_eq!(out.stdout, "No unknown runs: nothing to reconcile.\n");

    // A coalesced missed run: its count and its first occurrence's lateness.
    Task::named("often").every("10m").confirm(&rig.env);
    rig.env.advance(62 * 60);
    rig.tick(&[]).ok();
    let missed = rig
        .runs("often")
        .into_iter()
        .find(|r| r["status"] == "missed")
        .unwrap();
    assert_eq!(
        missed["reason"],
        "late by 2 min > grace 1 min 30 s (6 occurrences coalesced, the first late by 52 min); \
         no tick saw them due within grace"
    );
    assert_eq!(missed["skipped_occurrences"], 6);

    // Seconds given are seconds kept, in draft, show and next.
    let draft = Task::named("once")
        .at("2026-12-02T12:00:30Z")
        .default_notify()
        .try_draft(&rig.env);
    assert_contains(&draft.stdout, "once at 2026-12-02 12:00:30 UTC");
    Task::named("once")
        .at("2026-12-02T12:00:30Z")
        .confirm(&rig.env);
    let out = rig.env.run(&["next", "once"]).ok();
    assert_contains(&out.stdout, "2026-12-02 12:00:30 UTC");
    let out = rig.env.run(&["show", "once"]).ok();
    assert_contains(&out.stdout, "2026-12-02 12:00:30 UTC");
    // Once it ran, `next` says there is nothing left.
    rig.env.set_now(crate::support::T0 + 4 * HOUR + 30);
    rig.tick(&[]).ok();
    let out = rig.env.run(&["next", "once"]).ok();
    assert!(
        out.stdout.starts_with("No upcoming runs: task ")
            && out
                .stdout
                .ends_with(" (once) is completed and its schedule has no occurrence left.\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_task_blocked_by_an_unknown_or_parked_run_says_so_in_list_and_show() {
    let rig = Rig::new();
    let parked = parked_run(&rig, "parked");
    let unknown = unknown_run(&rig, "stuck");

    Task::named("fine").confirm(&rig.env);
    let out = rig.env.run(&["list"]).ok();
    let row = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name} in {}", out.stdout))
            .to_string()
    };
    assert!(
        row("parked").contains(&format!(
            "blocked by run {} (awaiting_confirmation)",
            &parked[..8]
        )),
        "{}",
        out.stdout
    );
    assert!(
        row("stuck").contains(&format!("blocked by run {} (unknown)", &unknown[..8])),
        "{}",
        out.stdout
    );
    assert!(row("fine").contains(" active "), "{}", out.stdout);

    let listed = rig.env.json(&["list"]);
    let by_name = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        by_name("stuck")["blocked_by"],
        serde_json::json!({"run_id": unknown, "status": "unknown"})
    );
    assert_eq!(by_name("fine")["blocked_by"], serde_json::Value::Null);

    let out = rig.env.run(&["show", "stuck"]).ok();
    assert_contains(
        &out.stdout,
        &format!(
            "\nblocked       blocked by run {} (unknown): settle it with `agentcron reconcile`\n",
            &unknown[..8]
        ),
    );
    assert_eq!(
        rig.env.json(&["show", "parked"])["blocked_by"]["run_id"],
        parked.as_str()
    );
}

/// Issue 36 item 8: the unit as a deployment. It says that a oneshot tick
/// never overlaps the next (cron's would), its enable hint reloads systemd
/// first, and a `--user` that cannot open the store is warned about.
#[test]
fn systemd_says_ticks_never_overlap_reloads_first_and_checks_the_stores_owner() {
    let env = TestEnv::new();
    if env.pg_schema().is_some() {
        return; // the store's owner and mode are a file's
    }
    Task::new().after("1h").default_notify().draft(&env);
    let owner = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let owner = String::from_utf8(owner.stdout).unwrap().trim().to_string();
    let out = env
        .run(&["systemd", "--executor", "/bin/true", "--user", &owner])
        .ok();
    assert!(
        !out.stderr.contains("cannot open it"),
        "the owner can: {}",
        out.stderr
    );
    assert_contains(
        &out.stdout,
        "never starts a tick while the last one still runs",
    );
    assert_contains(
        &out.stdout,
        "# enable with: systemctl daemon-reload && systemctl enable --now agentcron.timer",
    );
    if owner == "root" {
        // root may open any store: check another account.
        let out = env
            .run(&["systemd", "--executor", "/bin/true", "--user", "nobody"])
            .ok();
        assert_contains(&out.stderr, "belongs to root (uid 0) (mode 0600): a tick as nobody cannot open it; pass --user root");
    }
    let out = env
        .run(&[
            "systemd",
            "--executor",
            "/bin/true",
            "--user",
            "no-such-account",
        ])
        .ok();
    assert_contains(
        &out.stderr,
        "there is no account no-such-account on this host",
    );
}

/// Runs agentcron with `args` and its stderr on a packet pipe (O_DIRECT:
/// each read returns one write whole); returns what each write held.
fn stderr_writes(env: &TestEnv, args: &[&str]) -> Vec<String> {
    const SCRIPT: &str = r#"
import json, os, subprocess, sys
read, write = os.pipe2(os.O_DIRECT)
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=write)
os.close(write)
writes = []
while chunk := os.read(read, 65536):
    writes.append(chunk.decode(errors="replace"))
child.wait()
print(json.dumps(writes))
"#;
    let out = env
        .command_through("python3", &["-c", SCRIPT], args)
        .output()
        .expect("python3 runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "the pipe script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Ticks started by cron share one log: a line written in pieces could
/// take another process's line inside it, and a terminal closing as the
/// process exits may drop its end (CI once saw `agentcron: error: ` with
/// no message after it).
#[test]
fn an_error_and_its_hint_reach_stderr_in_one_write() {
    let env = TestEnv::new();
    let missing = env.path("no/such/dir/agentcron.db");
    let missing = missing.to_str().unwrap();
    for args in [
        &["--db", missing, "list"][..],
        &["--db", missing, "--json", "list"],
        &["list", "--no-such-flag"],
        &["plan", "--detailed-exitcode", "--no-such-flag"],
    ] {
        let writes = stderr_writes(&env, args);
        assert_eq!(writes.len(), 1, "{args:?}: {writes:?}");
        assert!(writes[0].ends_with('\n'), "{args:?}: {writes:?}");
    }
    let hinted = &stderr_writes(&env, &["--db", missing, "list"])[0];
    assert!(hinted.starts_with("agentcron: error: "), "{hinted}");
    assert_contains(hinted, "\n  hint: ");
}
