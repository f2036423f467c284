//! A run, of the tick's user or another, reads every /proc/*/cmdline and
//! /proc/*/environ it may, under a tick set up from the printed crontab
//! line with an env file: it finds no password.
use crate::support::{journal, write_script, Task, TestEnv};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use super::private_file;
use crate::run_environment::RunUser;

/// How many /proc files the scan read, and in how many it found the
/// password and the canary.
#[derive(Debug)]
struct Scan {
    read: u32,
    secret: u32,
    canary: u32,
    where_found: String,
}

/// The deployment from the printed line: `crontab --env-file` (and
/// `--run-as`, given) run as cron runs it (`sh -c`, an empty environment),
/// a tick whose env file holds the store's password, and a run that reads
/// every /proc/*/cmdline and /proc/*/environ it may. `dir` holds the
/// run's scripts and answers (the run's user must reach it). A canary in
/// the line's environment shows that the scan finds what is there.
fn scan_from_a_run(env: &TestEnv, dir: &Path, run_as: Option<&str>) -> Scan {
    let secret = format!("pw-{}", uuid::Uuid::new_v4().simple());
    let canary = format!("canary-{}", uuid::Uuid::new_v4().simple());
    // The patterns are read from files, so that no grep's argv holds them.
    let (secret_pattern, canary_pattern) = (dir.join("secret.pat"), dir.join("canary.pat"));
    std::fs::write(&secret_pattern, &secret).unwrap();
    std::fs::write(&canary_pattern, &canary).unwrap();
    for pattern in [&secret_pattern, &canary_pattern] {
        std::fs::set_permissions(pattern, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let found = dir.join("found");
    let scanner = dir.join("scan.sh");
    write_script(
        &scanner,
        &format!(
            r#"#!/bin/sh
cat >/dev/null
read=0; secret=0; canary=0
for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do
  cat "$f" >/dev/null 2>&1 || continue
  read=$((read+1))
  grep -qaF -f '{secret}' "$f" 2>/dev/null && secret=$((secret+1)) && echo "$f" >> '{found}.where'
  grep -qaF -f '{canary}' "$f" 2>/dev/null && canary=$((canary+1))
done
echo "read $read secret $secret canary $canary" >> '{found}'
"#,
            secret = secret_pattern.display(),
            canary = canary_pattern.display(),
            found = found.display(),
        ),
    );
    Task::named("scan").confirm(env);
    env.advance(3600);
    // The env file is the tick's, where the run's user cannot read it.
    let file = private_file(env, "store.env", &format!("PGPASSWORD={secret}\n"));
    let now = format!("AGENTCRON_NOW={}", env.now());
    let canary_var = format!("CANARY={canary}");
    let mut args = vec![
        "--json",
        "crontab",
        "--executor",
        scanner.to_str().unwrap(),
        "--env-file",
        file.to_str().unwrap(),
        "--env",
        &now,
        "--env",
        &canary_var,
        "--env",
        "AGENTCRON_TZ=UTC",
        "--pass-env",
        "CANARY",
    ];
    if let Some(user) = run_as {
        args.extend(["--run-as", user]);
    }
    let line = env.run(&args).json()["line"].as_str().unwrap().to_string();
    assert!(!line.contains(&secret), "{line}");
    let command = line.strip_prefix("* * * * * ").unwrap().replace("\\%", "%");
    let ran = Command::new("/usr/bin/env")
        .args(["-i", "/bin/sh", "-c", &command])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let said = journal(&found);
    assert_eq!(said.len(), 1, "{said:?}");
    let words: Vec<&str> = said[0].split(' ').collect();
    let count = |name: &str| -> u32 {
        let at = words.iter().position(|w| *w == name).unwrap();
        words[at + 1].parse().unwrap()
    };
    Scan {
        read: count("read"),
        secret: count("secret"),
        canary: count("canary"),
        where_found: std::fs::read_to_string(dir.join("found.where")).unwrap_or_default(),
    }
}

/// Same user: the run may read its tick's environ too, and finds no
/// password there (the file's values never enter an environment).
#[test]
fn a_run_reading_every_process_it_may_finds_no_password_from_the_env_file() {
    let env = TestEnv::new();
    let dir = env.path("run");
    std::fs::create_dir(&dir).unwrap();
    let scan = scan_from_a_run(&env, &dir, None);
    assert_eq!(scan.secret, 0, "found in {}", scan.where_found);
    // Its own and its tick's: cron's shell (argv) and the run hold the canary.
    assert!(scan.read >= 4, "{scan:?}");
    assert!(scan.canary >= 2, "{scan:?}");
}

/// A root tick with `--run-as`: the run, another user, finds no password
/// in any process it may read, nor may it read the env file.
#[test]
fn a_run_as_another_user_finds_no_password_from_the_env_file() {
    let Some(user) = RunUser::add() else { return };
    let env = TestEnv::new();
    let scan = scan_from_a_run(&env, &user.dir, Some(&user.name));
    assert_eq!(scan.secret, 0, "found in {}", scan.where_found);
    // Cron's shell shows its line (the canary) to every user: the reason
    // no secret may be in it.
    assert!(scan.canary >= 2, "{scan:?}");
    assert!(scan.read >= 4, "{scan:?}");
    let mode = std::fs::metadata(env.path("store.env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}
