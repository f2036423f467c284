//! `crontab` and `systemd`: no secret in `--env`, the env file's path
//! (never its values) in the line, each PATH folder once.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::private_file;
use crate::support::{TestEnv, BIN};

#[test]
fn crontab_and_systemd_refuse_a_secret_in_env_naming_it_never_its_value() {
    let env = TestEnv::new();
    for name in [
        "PGPASSWORD",
        "db_password",
        "API_KEY",
        "GitHub_Token",
        "MY_SECRET",
    ] {
        for command in ["crontab", "systemd"] {
            let given = format!("{name}=hunter2-value");
            let out = env
                .run(&[command, "--executor", "/bin/true", "--env", &given])
                .fails(2);
            assert_eq!(out.stdout, "", "{command} {name}");
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 2, "{}", out.stderr);
            assert!(
                lines[0].starts_with(&format!(
                    "agentcron: error: --env {name}: a secret in the printed line"
                )),
                "{}",
                out.stderr
            );
            assert!(
                lines[1].contains("~/.pgpass") && lines[1].contains("--env-file FILE"),
                "{}",
                out.stderr
            );
            assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
        }
    }
    // Names that hold no secret still pass.
    env.run(&[
        "crontab",
        "--executor",
        "/bin/true",
        "--env",
        "AGENT_HOME=/srv",
    ])
    .ok();
}

#[test]
fn crontab_and_systemd_carry_the_env_files_path_never_its_values() {
    let env = TestEnv::new();
    let file = private_file(&env, "store.env", "PGPASSWORD=hunter2-in-file\n");
    let path = file.to_str().unwrap();
    let line = env
        .run(&[
            "--json",
            "crontab",
            "--executor",
            "/bin/true",
            "--env-file",
            path,
        ])
        .json()["line"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        line.ends_with(&format!(
            " tick --jobs 8 --host-jobs 8 --executor /bin/true --env-file {path}"
        )),
        "{line}"
    );
    let out = env
        .run(&["systemd", "--executor", "/bin/true", "--env-file", path])
        .ok();
    let exec = out
        .stdout
        .lines()
        .find(|l| l.starts_with("ExecStart="))
        .unwrap();
    assert!(
        exec.ends_with(&format!(
            " tick --jobs 8 --host-jobs 8 --executor /bin/true --env-file {path}"
        )),
        "{exec}"
    );
    for printed in [&line, &out.stdout] {
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(!printed.contains("PGPASSWORD"), "{printed}");
    }
    assert!(!out.stderr.contains("env-file"), "{}", out.stderr);
    // A file the tick would refuse is said at once (a warning: it may be
    // meant for another host, or fixed before the line is installed).
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    for command in ["crontab", "systemd"] {
        let out = env
            .run(&[command, "--executor", "/bin/true", "--env-file", path])
            .ok();
        assert!(
            out.stderr.contains(&format!(
                "agentcron: warning: every tick would refuse it: --env-file {path}: mode 0644"
            )),
            "{command}: {}",
            out.stderr
        );
    }
}

#[test]
fn crontab_prints_each_folder_of_its_path_once() {
    let env = TestEnv::new();
    let folder = Path::new(BIN).parent().unwrap().display().to_string();
    let line = |path: &str| {
        let given = format!("PATH={path}");
        env.run(&[
            "--json",
            "crontab",
            "--executor",
            "/bin/true",
            "--env",
            &given,
        ])
        .json()["line"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let printed = line("/usr/bin:/bin:/usr/bin");
    assert!(
        printed.starts_with(&format!("* * * * * PATH={folder}:/usr/bin:/bin ")),
        "{printed}"
    );
    let printed = line(&format!("/bin:{folder}:/bin:{folder}"));
    assert!(
        printed.starts_with(&format!("* * * * * PATH=/bin:{folder} ")),
        "{printed}"
    );
}

#[test]
fn the_printed_tick_runs_its_jobs_and_shares_them_with_the_hosts_overlapping_ticks() {
    let env = TestEnv::new();
    for (args, expected) in [
        (vec![], " tick --jobs 8 --host-jobs 8 --executor /bin/true"),
        (
            vec!["--jobs", "3"],
            " tick --jobs 3 --host-jobs 3 --executor /bin/true",
        ),
    ] {
        for command in ["crontab", "systemd"] {
            let mut argv = vec![command, "--executor", "/bin/true"];
            argv.extend(&args);
            let out = env.run(&argv).ok().stdout;
            assert!(out.contains(expected), "{command} {args:?}: {out}");
        }
    }
}
