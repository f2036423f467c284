//! Issue 42 items 2 and 4, issue 43 item 5: what `sudoers`, `crontab` and
//! `systemd` print, and the tick's `--env-file`. The sudo rule names only
//! the supervisor; no printed line carries a secret; the store's password
//! reaches the tick through a private file and never a run.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::support::{journal, write_script, TestEnv, BIN};

/// Where sudo and visudo are, or why this host cannot check a rule.
fn visudo_missing() -> Option<&'static str> {
    let found = Command::new("sh")
        .args(["-c", "command -v sudo && command -v visudo"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match found {
        true => None,
        false if std::env::var_os("AGENTCRON_REQUIRE_SUDO").is_some() => {
            panic!("sudo or visudo is missing (scripts/ensure-sudo)")
        }
        false => Some("sudo or visudo is missing"),
    }
}

/// The binary as the rule names it: absolute, as installed.
fn binary() -> String {
    std::fs::canonicalize(BIN).unwrap().display().to_string()
}

/// The lines of a printed rule that are not comments.
fn rule_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

#[test]
fn sudoers_prints_one_rule_for_the_supervisor_alone_and_visudo_accepts_it() {
    let env = TestEnv::new();
    // Whatever executor or notifier is configured, the rule is the same.
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    env.set_env("AGENTCRON_NOTIFIER", "/bin/false");
    let out = env
        .run(&["sudoers", "--run-as", "nobody", "--user", "daemon"])
        .ok();
    assert_eq!(out.stderr, "");
    assert_eq!(
        rule_lines(&out.stdout),
        [
            "Defaults:daemon !use_pty".to_string(),
            format!("daemon ALL=(nobody) NOPASSWD: {} supervise", binary()),
        ],
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("SETENV:"), "{}", out.stdout);
    assert!(!out.stdout.contains('*'), "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("# /etc/sudoers.d/agentcron-daemon-as-nobody\n"),
        "{}",
        out.stdout
    );
    let json = env
        .run(&[
            "--json", "sudoers", "--run-as", "nobody", "--user", "daemon",
        ])
        .json();
    assert_eq!(json["path"], "/etc/sudoers.d/agentcron-daemon-as-nobody");
    assert_eq!(
        json["text"].as_str().unwrap().trim_end(),
        out.stdout.trim_end()
    );
    // A user name's `.` would make sudo skip the file.
    let dotted = env
        .run(&[
            "--json", "sudoers", "--run-as", "a.gent", "--user", "daemon",
        ])
        .json();
    assert_eq!(dotted["path"], "/etc/sudoers.d/agentcron-daemon-as-a_gent");
    // The rule's arguments are the supervisor's: no executor to name.
    env.run(&["sudoers", "--run-as", "nobody", "--executor", "/bin/true"])
        .fails(2);

    if let Some(why) = visudo_missing() {
        crate::support::skipped(&format!("the printed rule is not checked by visudo: {why}"));
        return;
    }
    let file = env.path("agentcron-daemon-as-nobody");
    std::fs::write(&file, &out.stdout).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o440)).unwrap();
    let checked = Command::new("visudo")
        .arg("-cf")
        .arg(&file)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{checked:?}\n{}", out.stdout);
}

#[test]
fn sudoers_refuses_root_unless_allowed_and_then_says_the_wall_is_gone() {
    let env = TestEnv::new();
    let out = env.run(&["sudoers", "--run-as", "root"]).fails(2);
    assert_eq!(out.stdout, "");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].starts_with("agentcron: error: --run-as root: runs as root"),
        "{}",
        out.stderr
    );
    assert!(lines[1].contains("--allow-root"), "{}", out.stderr);

    let out = env
        .run(&[
            "sudoers",
            "--run-as",
            "root",
            "--user",
            "daemon",
            "--allow-root",
        ])
        .ok();
    assert!(
        out.stdout
            .contains("# --allow-root: every run of this tick runs as root, uid 0")
            && out
                .stdout
                .contains("The wall between runs and the store is gone."),
        "{}",
        out.stdout
    );
    assert_eq!(
        rule_lines(&out.stdout)[1],
        format!("daemon ALL=(root) NOPASSWD: {} supervise", binary())
    );
}

/// Installed, the rule lets the tick's user start the supervisor as the
/// run's user, and nothing else: not the executor (or a gate, a notifier)
/// directly, not the supervisor with other arguments, not as root. So a
/// gate or a notifier needs no rule of its own: every run starts as
/// `agentcron supervise`. Needs root (to install a drop-in and ask sudo
/// about another user); the users are the system's `daemon` and `nobody`.
#[test]
fn the_installed_rule_allows_the_supervisor_and_nothing_else() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || visudo_missing().is_some() {
        crate::support::skipped("the installed sudo rule: needs root and sudo");
        return;
    }
    let env = TestEnv::new();
    let out = env
        .run(&["sudoers", "--run-as", "nobody", "--user", "daemon"])
        .ok();
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let installed = std::path::PathBuf::from(format!("/etc/sudoers.d/agentcron-test-{suffix}"));
    struct Removed(std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _removed = Removed(installed.clone());
    std::fs::write(&installed, &out.stdout).unwrap();
    std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o440)).unwrap();
    let allowed = |run_as: &str, command: &[&str]| {
        Command::new("sudo")
            .args(["-n", "-l", "-U", "daemon", "-u", run_as])
            .args(command)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    let bin = binary();
    assert!(allowed("nobody", &[&bin, "supervise"]));
    assert!(!allowed("nobody", &[&bin, "supervise", "--other"]));
    assert!(!allowed("nobody", &[&bin, "tick"]));
    assert!(!allowed("nobody", &["/bin/true"]));
    assert!(!allowed("nobody", &["/bin/sh", "-c", "true"]));
    assert!(!allowed("root", &[&bin, "supervise"]));
    let listed = Command::new("sudo")
        .args(["-n", "-l", "-U", "daemon"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(&format!("(nobody) NOPASSWD: {bin} supervise")),
        "{listed}"
    );
    assert!(!listed.contains("SETENV"), "{listed}");
}

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

/// A private file of this user holding `lines`.
fn env_file(env: &TestEnv, name: &str, lines: &str) -> std::path::PathBuf {
    let file = env.path(name);
    std::fs::write(&file, lines).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

#[test]
fn crontab_and_systemd_carry_the_env_files_path_never_its_values() {
    let env = TestEnv::new();
    let file = env_file(&env, "store.env", "PGPASSWORD=hunter2-in-file\n");
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
        line.ends_with(&format!(" tick --executor /bin/true --env-file {path}")),
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
        exec.ends_with(&format!(" tick --executor /bin/true --env-file {path}")),
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
fn tick_refuses_an_env_file_others_may_read_a_link_or_another_name() {
    let env = TestEnv::new();
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    env.task(&["--instruction", "x", "--every", "1h", "--name", "t"]);
    env.advance(3600);
    let refused = |file: &Path, says: &str| {
        let out = env
            .run(&["tick", "--env-file", file.to_str().unwrap()])
            .fails(2);
        assert!(
            out.stderr.starts_with(&format!(
                "agentcron: error: --env-file {}: {says}",
                file.display()
            )),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
        assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    };
    let file = env_file(&env, "store.env", "PGPASSWORD=hunter2\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    refused(&file, "mode 0640 lets others read or write it");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = env.path("link.env");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    refused(&link, "is a symbolic link");
    let other = env_file(&env, "other.env", "# for the agent\nAPI_KEY=hunter2\n");
    refused(
        &other,
        "line 2 sets API_KEY, which the tick does not read from it",
    );
    refused(&env.path("missing.env"), "No such file or directory");
    refused(&env.path(""), "is not a regular file");
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
        refused(&file, "belongs to ");
    }
    // Nothing was claimed; with a private file of its own the tick runs.
    assert_eq!(env.count("SELECT count(*) FROM runs"), 0);
    let good = env_file(&env, "good.env", "PGPASSWORD=hunter2\n");
    env.run(&["tick", "--env-file", good.to_str().unwrap()])
        .ok();
    assert_eq!(env.count("SELECT count(*) FROM runs"), 1);
}

/// A PostgreSQL server of one question: it asks each client for its
/// password in clear text, notes it, and refuses it. So a test can see
/// which password a tick sends, which the suite's server (trust for
/// 127.0.0.1) never asks for.
fn password_catcher() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let noted = heard.clone();
    std::thread::spawn(move || {
        for mut client in listener.incoming().map_while(Result::ok) {
            let read_message = |client: &mut std::net::TcpStream| -> Option<Vec<u8>> {
                let mut len = [0u8; 4];
                client.read_exact(&mut len).ok()?;
                let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).checked_sub(4)?];
                client.read_exact(&mut body).ok()?;
                Some(body)
            };
            // The startup message (after an SSL request, answered "no").
            let Some(mut startup) = read_message(&mut client) else {
                continue;
            };
            if startup == [4, 210, 22, 47] {
                let _ = client.write_all(b"N");
                let Some(next) = read_message(&mut client) else {
                    continue;
                };
                startup = next;
            }
            let _ = startup;
            // AuthenticationCleartextPassword.
            let _ = client.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]);
            let mut kind = [0u8; 1];
            if client.read_exact(&mut kind).is_err() || kind[0] != b'p' {
                continue;
            }
            let Some(password) = read_message(&mut client) else {
                continue;
            };
            let password = String::from_utf8_lossy(&password)
                .trim_end_matches('\0')
                .to_string();
            noted.lock().unwrap().push(password);
            let fields = b"SFATAL\0C28P01\0Mpassword authentication failed\0\0";
            let mut error = vec![b'E'];
            error.extend_from_slice(&((fields.len() + 4) as u32).to_be_bytes());
            error.extend_from_slice(fields);
            let _ = client.write_all(&error);
        }
    });
    (port, heard)
}

/// The file's password is the one the tick's store connection sends,
/// ahead of PGPASSWORD in its environment; without the file, the
/// environment's (so the catcher itself is shown to hear what is sent).
#[test]
fn the_env_files_password_reaches_the_store_connection() {
    let env = TestEnv::new();
    let (port, heard) = password_catcher();
    let db = format!("postgresql://agentcron@127.0.0.1:{port}/agentcron");
    env.set_env("PGPASSWORD", "from-the-environment");
    let file = env_file(
        &env,
        "store.env",
        "# the store's role\nPGPASSWORD=from-the-file\n",
    );
    let out = env
        .run(&["--db", &db, "tick", "--env-file", file.to_str().unwrap()])
        .fails(1);
    assert!(
        out.stderr.contains("password authentication failed"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("from-the-file"), "{}", out.stderr);
    assert_eq!(*heard.lock().unwrap(), ["from-the-file"]);
    env.run(&["--db", &db, "tick"]).fails(1);
    assert_eq!(
        *heard.lock().unwrap(),
        ["from-the-file", "from-the-environment"]
    );
}

/// On PostgreSQL, a role with a password: the tick given its password in
/// an env file connects and runs. (The suite's server trusts 127.0.0.1, so
/// a wrong password would connect too: which password is sent is shown
/// by `the_env_files_password_reaches_the_store_connection`.)
#[test]
fn a_tick_with_an_env_file_runs_as_a_role_with_a_password() {
    let env = TestEnv::new();
    let Some(schema) = env.pg_schema().map(str::to_string) else {
        return;
    };
    // The tables exist once the task is confirmed: then the role may use them.
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    env.task(&["--instruction", "x", "--every", "1h", "--name", "t"]);
    env.advance(3600);
    let role = format!("ac_pw_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    env.sql(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'role-secret'; \
         GRANT ALL ON SCHEMA {schema} TO {role}; \
         GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}; \
         GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"
    ));
    struct Dropped<'e>(&'e TestEnv, String);
    impl Drop for Dropped<'_> {
        fn drop(&mut self) {
            let role = &self.1;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.0
                    .sql(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
            }));
        }
    }
    let _dropped = Dropped(&env, role.clone());
    let db = env.db_arg().replacen("postgres@", &format!("{role}@"), 1);
    assert!(db.contains(&role), "{db}");
    let file = env_file(&env, "store.env", "PGPASSWORD=role-secret\n");
    env.run(&["--db", &db, "tick", "--env-file", file.to_str().unwrap()])
        .ok();
    assert_eq!(
        env.count("SELECT count(*) FROM runs WHERE status = 'succeeded'"),
        1
    );
}

/// A system user for the runs and a folder it may write, removed on drop;
/// None (with a note) where users cannot be added (not root).
struct RunUser {
    name: String,
    dir: std::path::PathBuf,
}

impl RunUser {
    fn add() -> Option<RunUser> {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let useradd = Command::new("sh")
            .args(["-c", "command -v useradd && command -v userdel"])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !root || !useradd {
            if std::env::var_os("AGENTCRON_REQUIRE_SUDO").is_some() {
                panic!("--run-as cannot be tested here: needs root and useradd");
            }
            crate::support::skipped("a run as another user: needs root and useradd");
            return None;
        }
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let user = RunUser {
            name: format!("acpw{suffix}"),
            dir: std::path::PathBuf::from(format!("/tmp/agentcron-pw-{suffix}")),
        };
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(&user.name)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        std::fs::create_dir(&user.dir).unwrap();
        std::fs::set_permissions(&user.dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        Some(user)
    }
}

impl Drop for RunUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel")
            .arg(&self.name)
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
    env.task(&["--instruction", "x", "--every", "1h", "--name", "scan"]);
    env.advance(3600);
    // The env file is the tick's, where the run's user cannot read it.
    let file = env_file(env, "store.env", &format!("PGPASSWORD={secret}\n"));
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
