//! Runs of different profiles are isolated (docs/CONTRACT.md §22, §19):
//! with a `--run-as` user per profile, one profile's run can neither read
//! the other's environment (its secret, its lease token), nor use its lease
//! channel with a leaked token, nor signal its processes; and it is not
//! given the other profile's passed names. Needs root and useradd (CI has
//! both); elsewhere it skips with a note, unless AGENTCRON_REQUIRE_SUDO is
//! set. SQLite only: what a run's processes may reach does not depend on
//! the store.
use crate::run_environment::RunUser;
use crate::support::{on_postgres, wait_for, write_script, Task, TestEnv};

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

/// Profile `holder`'s command: records its pid, keeps its environment to
/// itself (umask 077: only its user and root read it), and stays a while.
const HOLDER: &str = r#"#!/bin/sh
cat > /dev/null
umask 077
env > "$DIR/holder.env"
echo $$ > "$DIR/holder.pid.tmp" && chmod 644 "$DIR/holder.pid.tmp" && mv "$DIR/holder.pid.tmp" "$DIR/holder.pid"
i=0; while [ ! -f "$DIR/probed" ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done
echo "held"
"#;

/// Profile `prober`'s command: once the holder runs and its endpoint and
/// token have leaked (the test writes them), tries each way in.
const PROBER: &str = r#"#!/bin/sh
cat > /dev/null
i=0; while [ ! -f "$DIR/leaked" ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done
pid=$(cat "$DIR/holder.pid")
{
  if cat "/proc/$pid/environ" > /dev/null 2>&1; then echo "environ=read"; else echo "environ=denied"; fi
  if kill -0 "$pid" 2> /dev/null; then echo "signal=sent"; else echo "signal=denied"; fi
  echo "own_secret_a=${SECRET_A:-none}"
  echo "own_secret_b=${SECRET_B:-none}"
  . "$DIR/leaked"
  AGENTCRON_LEASE_ENDPOINT="$ENDPOINT" "$PROBE_BIN" lease check "$RUN" --token "$TOKEN" > /dev/null 2>&1
  echo "lease=$?"
} > "$DIR/probe.tmp"
mv "$DIR/probe.tmp" "$DIR/probe"
touch "$DIR/probed"
echo "probed"
"#;

#[test]
fn runs_of_two_profiles_with_users_of_their_own_cannot_reach_each_other() {
    if on_postgres() {
        return;
    }
    let Some(holder_user) = RunUser::add() else {
        return;
    };
    let Some(prober_user) = RunUser::add() else {
        return;
    };
    // The binary where both users may execute it (its supervisor beside it).
    let bin = holder_user.bin();
    let dir = holder_user.dir.clone();
    let env = TestEnv::new();
    let holder = dir.join("holder.sh");
    let prober = dir.join("prober.sh");
    write_script(&holder, HOLDER);
    write_script(&prober, PROBER);
    for script in [&holder, &prober] {
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    env.set_env("DIR", dir.to_str().unwrap());
    env.set_env("SECRET_A", "alpha");
    env.set_env("SECRET_B", "beta");
    env.set_env("PROBE_BIN", &bin);
    let run = |args: &[&str]| {
        let built = env.command(args);
        let mut command = Command::new(&bin);
        command.args(built.get_args()).env_clear();
        for (key, value) in built.get_envs() {
            if let Some(value) = value {
                command.env(key, value);
            }
        }
        command
    };
    let set = |name: &str, script: &std::path::Path, user: &str, pass: &str| {
        let out = run(&[
            "profile",
            "set",
            name,
            "--command",
            script.to_str().unwrap(),
            "--run-as",
            user,
            "--cwd",
            dir.to_str().unwrap(),
            "--pass-env",
            pass,
            "--create-store",
        ])
        .output()
        .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    set("holder", &holder, &holder_user.name, "DIR,SECRET_A");
    set(
        "prober",
        &prober,
        &prober_user.name,
        "DIR,SECRET_B,PROBE_BIN",
    );
    for (task, profile) in [("h", "holder"), ("p", "prober")] {
        Task::named(task)
            .flags(&["--profile", profile])
            .confirm(&env);
    }
    env.advance(3600);
    let tick = run(&["tick", "--jobs", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The holder's endpoint and token leak (here, by root reading its
    // private environment): the prober gets them.
    let holder_env = dir.join("holder.env");
    wait_for("the holder's run", || {
        holder_env.exists() && dir.join("holder.pid").exists()
    });
    let said = std::fs::read_to_string(&holder_env).unwrap();
    let value = |key: &str| {
        said.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(value("SECRET_A"), "alpha");
    assert_eq!(value("USER"), holder_user.name);
    assert_eq!(
        value("SECRET_B"),
        "",
        "the holder got the prober's name: {said}"
    );
    std::fs::write(
        dir.join("leaked"),
        format!(
            "ENDPOINT='{}'\nTOKEN='{}'\nRUN='{}'\n",
            value("AGENTCRON_LEASE_ENDPOINT"),
            value("AGENTCRON_LEASE_TOKEN"),
            value("AGENTCRON_RUN_ID")
        ),
    )
    .unwrap();
    std::fs::set_permissions(dir.join("leaked"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = tick.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let probe = std::fs::read_to_string(dir.join("probe")).expect("the prober ran");
    let lines: Vec<&str> = probe.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "environ=denied",
            "signal=denied",
            "own_secret_a=none",
            "own_secret_b=beta",
        ],
        "{probe}"
    );
    // The leaked token does not hold through another run's channel.
    assert!(
        lines[4].starts_with("lease=") && lines[4] != "lease=0",
        "{probe}"
    );
    for task in ["h", "p"] {
        let shown = env.json(&["show", task]);
        assert_eq!(shown["runs"][0]["status"], "succeeded", "{shown}");
    }
}
