//! What an operator needs to mend a failing installation (issue 14): the
//! executor's stderr kept on its run, crontab and systemd lines that carry
//! the environment the executor needs.

use crate::support::{write_script, TestEnv, BIN};
use crate::tick::{fixture, Rig};

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
    rig.env
        .task(&["--instruction", "x", "--every", "1h", "--name", "a"]);
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
    assert!(
        out.stdout
            .contains("exit status 2; stderr: set AGENTCRON_SCRIPTS \\x1b…"),
        "{}",
        out.stdout
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
    env.task(&["--instruction", "x", "--every", "1h", "--name", "oncall"]);
    env.advance(HOUR);
    let scripts_arg = format!("AGENTCRON_SCRIPTS={}", scripts.display());
    let now_arg = format!("AGENTCRON_NOW={}", env.now());
    let out = env
        .run(&[
            "crontab",
            "--executor",
            &format!("{}/examples/executor.sh", env!("CARGO_MANIFEST_DIR")),
            "--env",
            &scripts_arg,
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
    assert!(
        out.stderr
            .contains("'1A' is not a variable name (letters, digits, _)"),
        "{}",
        out.stderr
    );
}
