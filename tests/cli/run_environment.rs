//! Issue 32, items 1-3: a run holds no key to the store (docs/CONTRACT.md
//! §19): what the executor and notifier receive of the tick's environment,
//! the lease check the tick answers through the run's endpoint, and
//! `--run-as USER` (items 4-6 are in run_authority.rs).
//!
//! The `--run-as` tests add a system user and need root (CI has it); elsewhere
//! they skip with a note, unless AGENTCRON_REQUIRE_SUDO is set.
use crate::support::{
    assert_contains, journal, wait_for, write_script, write_sudoers, Rig, Task, TestEnv, BIN, T0,
};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Names a run must never receive, all set in the tick's environment.
const DENIED: &[(&str, &str)] = &[
    ("AGENTCRON_AS", "unix:root"),
    ("AGENTCRON_SECRET_SETTING", "x"),
    ("PGPASSWORD", "hunter2"),
    ("PGPASSFILE", "/nonexistent/pgpass"),
    ("PGSERVICEFILE", "/nonexistent/pg_service.conf"),
];

/// A script that saves its environment (`env`, sorted) to `out`.
fn env_saver(env: &TestEnv, name: &str, out: &Path) -> String {
    let script = env.path(name);
    write_script(
        &script,
        &format!(
            "#!/bin/sh\ncat >/dev/null\nenv | sort > '{}'\n",
            out.display()
        ),
    );
    script.display().to_string()
}

fn names(file: &Path) -> Vec<String> {
    journal(file)
        .iter()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn executor_and_notifier_receive_none_of_the_stores_names() {
    let env = TestEnv::new();
    let (exec_env, notify_env) = (env.path("exec.env"), env.path("notify.env"));
    env.set_env("AGENTCRON_EXECUTOR", &env_saver(&env, "exec.sh", &exec_env));
    env.set_env(
        "AGENTCRON_NOTIFIER",
        &env_saver(&env, "notify.sh", &notify_env),
    );
    for (k, v) in DENIED {
        env.set_env(k, v);
    }
    env.set_env("API_KEY", "for-the-agent");
    env.set_env("OTHER_SECRET", "not-passed");
    env.set_env("LC_TIME", "C");
    env.set_env("AGENTCRON_PASS_ENV", "API_KEY");
    Task::named("e").confirm(&env);
    env.advance(3600);
    env.run(&["tick"]).ok();
    let run = &env.json(&["runs", "e"])[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["delivery_status"], "delivered", "{run}");
    for (file, own) in [
        (
            &exec_env,
            &[
                "AGENTCRON_LEASE_ENDPOINT",
                "AGENTCRON_LEASE_TOKEN",
                "AGENTCRON_RUN_ID",
                "AGENTCRON_TASK_ID",
                "AGENTCRON_TENANT",
            ][..],
        ),
        (
            &notify_env,
            &[
                "AGENTCRON_DELIVERY_ID",
                "AGENTCRON_RUN_ID",
                "AGENTCRON_TENANT",
            ][..],
        ),
    ] {
        let got = names(file);
        let agentcron: Vec<&String> = got.iter().filter(|k| k.starts_with("AGENTCRON_")).collect();
        assert_eq!(agentcron, own, "{got:?}");
        assert!(!got.iter().any(|k| k.starts_with("PG")), "{got:?}");
        assert!(!got.contains(&"OTHER_SECRET".to_string()), "{got:?}");
        for kept in ["API_KEY", "HOME", "LC_TIME", "LOGNAME", "PATH", "USER"] {
            assert!(got.contains(&kept.to_string()), "{kept} missing: {got:?}");
        }
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            !text.contains(&env.db_arg()),
            "the store's location leaked: {text}"
        );
        assert!(!text.contains("hunter2"));
    }
}

#[test]
fn pass_env_of_the_stores_names_is_refused_before_anything_runs() {
    let rig = Rig::new();
    Task::named("r").confirm(&rig.env);
    rig.env.advance(3600);
    for name in [
        "AGENTCRON_DB",
        "PGPASSWORD",
        "AGENTCRON_AS",
        "PGSERVICEFILE",
        "A-B",
    ] {
        let out = rig.tick(&["--pass-env", name]).fails(2);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert_contains(&out.stderr, "--pass-env");
    }
    rig.env.set_env("AGENTCRON_PASS_ENV", "API_KEY,PGPASSFILE");
    rig.tick(&[]).fails(2);
    for command in [
        &[
            "approve",
            "0000",
            "--wait-id",
            "w",
            "--here",
            "--pass-env",
            "PGUSER",
        ][..],
        &[
            "crontab",
            "--executor",
            "/bin/true",
            "--pass-env",
            "AGENTCRON_DB",
        ],
        &[
            "systemd",
            "--executor",
            "/bin/true",
            "--pass-env",
            "PGPASSWORD",
        ],
    ] {
        rig.env.run(command).fails(2);
    }
    assert!(rig.starts().is_empty());
    assert_eq!(rig.env.count("SELECT count(*) FROM runs"), 0);
}

#[test]
fn crontab_and_systemd_carry_pass_env_and_run_as() {
    let env = TestEnv::new();
    let flags = [
        "--executor",
        "/bin/true",
        "--pass-env",
        "API_KEY",
        "--pass-env",
        "MODEL",
        "--run-as",
        "agent",
    ];
    let mut args = vec!["--json", "crontab"];
    args.extend(flags);
    let line = env.run(&args).json()["line"].as_str().unwrap().to_string();
    assert!(
        line.ends_with(
            " tick --jobs 8 --host-jobs 8 --executor /bin/true --pass-env API_KEY --pass-env MODEL --run-as agent"
        ),
        "{line}"
    );
    let mut args = vec!["--json", "systemd"];
    args.extend(flags);
    let unit = env.run(&args).json()["service"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        unit.contains(
            " tick --jobs 8 --host-jobs 8 --executor /bin/true --pass-env API_KEY --pass-env MODEL --run-as agent\n"
        ),
        "{unit}"
    );
}

/// An executor that asks `lease check` (no --db: through its endpoint)
/// once, saves the endpoint's path, signals `started`, then waits for
/// `go` and asks until the answer is 5 (at most 10 s), journaling each
/// answer to `answers`.
fn fencing_executor(dir: &Path, bin: &str) -> PathBuf {
    let script = dir.join("fence.sh");
    write_script(
        &script,
        &format!(
            r#"#!/bin/sh
# The tick stops a run whose lease is lost (TERM, KILL after the grace):
# outlive the TERM to report the answer.
trap '' TERM
cat >/dev/null
check() {{ '{bin}' lease check "$AGENTCRON_RUN_ID" --token "$AGENTCRON_LEASE_TOKEN" >/dev/null 2>&1; echo $?; }}
echo "$AGENTCRON_LEASE_ENDPOINT" > '{dir}/endpoint'
echo "first $(check) $(id -un)" >> '{dir}/answers'
touch '{dir}/started'
while [ ! -e '{dir}/go' ]; do sleep 0.02; done
i=0
while [ $i -lt 500 ]; do
  a=$(check)
  if [ "$a" != 0 ]; then echo "then $a" >> '{dir}/answers'; exit 0; fi
  i=$((i+1)); sleep 0.02
done
echo "then never" >> '{dir}/answers'
"#,
            dir = dir.display(),
        ),
    );
    script
}

/// Runs the fencing executor under a tick (with `extra` flags), steals the
/// lease once the run asked a first time, and returns the answers.
fn lease_answers(env: &TestEnv, dir: &Path, bin: &str, extra: &[&str]) -> Vec<String> {
    let script = fencing_executor(dir, bin);
    env.set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    Task::named("f").confirm(env);
    env.set_now(T0 + 3600);
    let mut args = vec!["tick", "--lease", "6s"];
    args.extend_from_slice(extra);
    let tick = env
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the run to ask a first time", || {
        dir.join("started").exists()
    });
    // Another writer takes the run over: the tick's next renewal fails.
    env.sql("UPDATE runs SET lease_token = 'stolen' WHERE status = 'running'");
    std::fs::write(dir.join("go"), "").unwrap();
    let out = tick.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let endpoint = std::fs::read_to_string(dir.join("endpoint")).unwrap();
    assert_endpoint_gone(endpoint.trim());
    journal(&dir.join("answers"))
}

/// The endpoint is an abstract socket name (nothing on disk to replace or
/// leave behind), and nobody serves it once the run settled.
fn assert_endpoint_gone(endpoint: &str) {
    use std::os::linux::net::SocketAddrExt;
    let name = endpoint
        .strip_prefix("@agentcron-lease-")
        .unwrap_or_else(|| panic!("not an abstract endpoint: {endpoint:?}"));
    let address =
        std::os::unix::net::SocketAddr::from_abstract_name(format!("agentcron-lease-{name}"))
            .unwrap();
    assert!(
        std::os::unix::net::UnixStream::connect_addr(&address).is_err(),
        "the endpoint is gone when the run settles"
    );
}

#[test]
fn lease_check_inside_a_run_is_answered_by_the_tick_0_then_5_once_lost() {
    let env = TestEnv::new();
    let dir = env.path("fence");
    std::fs::create_dir(&dir).unwrap();
    let answers = lease_answers(&env, &dir, BIN, &[]);
    let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    assert_eq!(answers, [format!("first 0 {}", me.trim()), "then 5".into()]);
    // Settled, the endpoint gone: a late check says the lease does not hold.
    let out = env
        .command(&["lease", "check", "anyrun", "--token", "t"])
        .env_remove("AGENTCRON_DB")
        .env("AGENTCRON_LEASE_ENDPOINT", dir.join("gone.sock"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
}

/// Whether sudo, visudo and runuser are here (a note when not; a failure
/// where AGENTCRON_REQUIRE_SUDO says they must be).
pub fn sudo_available() -> bool {
    let found = Command::new("sh")
        .args([
            "-c",
            "command -v sudo && command -v visudo && command -v runuser",
        ])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var_os("AGENTCRON_REQUIRE_SUDO").is_some() {
            panic!("sudo, visudo or runuser is missing (scripts/ensure-sudo)");
        }
        eprintln!("--run-as through sudo is not tested: sudo is missing");
    }
    found
}

/// Why `--run-as` cannot be tried here, if it cannot.
fn run_as_unavailable() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("it needs root (to add a user)".into());
    }
    let found = Command::new("sh")
        .args(["-c", "command -v useradd && command -v userdel"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!found).then(|| "useradd is not installed".into())
}

/// A system user and a folder it may use, removed on drop.
pub struct RunUser {
    pub name: String,
    pub dir: PathBuf,
}

impl RunUser {
    /// None (with a note) when this host cannot add one.
    pub fn add() -> Option<RunUser> {
        if let Some(why) = run_as_unavailable() {
            if std::env::var_os("AGENTCRON_REQUIRE_SUDO").is_some() {
                panic!("--run-as cannot be tested here: {why}");
            }
            eprintln!("--run-as is not tested: {why}");
            return None;
        }
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let user = RunUser {
            name: format!("acrun{suffix}"),
            dir: PathBuf::from(format!("/tmp/agentcron-runas-{suffix}")),
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
        // The run's user writes its answers here; the scripts are the tick's.
        std::fs::set_permissions(&user.dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        Some(user)
    }

    /// The agentcron binary (and its small supervisor beside it), where the
    /// run's user may execute it: a hard
    /// link where it can be one. A copy is written through a descriptor
    /// that a test thread forking meanwhile holds a moment longer, and
    /// executing the file then fails with "text file busy".
    pub fn bin(&self) -> String {
        let supervisor = env!("CARGO_BIN_EXE_agentcron-supervise");
        for (from, name) in [(BIN, "agentcron"), (supervisor, "agentcron-supervise")] {
            let to = self.dir.join(name);
            if !to.exists() && std::fs::hard_link(from, &to).is_err() {
                std::fs::copy(from, &to).unwrap();
            }
        }
        self.dir.join("agentcron").display().to_string()
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

#[test]
fn lease_check_from_a_run_as_another_user_answers_0_then_5_once_lost() {
    let Some(user) = RunUser::add() else { return };
    let env = TestEnv::new();
    let answers = lease_answers(&env, &user.dir, &user.bin(), &["--run-as", &user.name]);
    assert_eq!(answers, [format!("first 0 {}", user.name), "then 5".into()]);
}

/// The escape of issue 32: an executor drafting and confirming a schedule
/// of its own from inside its run. Under `--run-as` it cannot even open
/// the store, though it knows where the file is.
#[test]
fn a_run_as_another_user_cannot_confirm_its_own_schedule() {
    if crate::support::on_postgres() {
        // The boundary is the file's mode; on PostgreSQL the run never
        // sees a URL (executor_and_notifier_receive_none_of_the_stores_names).
        return;
    }
    let Some(user) = RunUser::add() else { return };
    let env = TestEnv::new();
    let bin = user.bin();
    let out = user.dir.join("escape.out");
    let script = user.dir.join("escape.sh");
    write_script(
        &script,
        &format!(
            r#"#!/bin/sh
cat >/dev/null
d=$('{bin}' --db '{db}' --json draft --instruction 'mine now' --every 1m --notify never 2>>'{out}')
echo "draft $?" >> '{out}'
id=$(printf '%s' "$d" | sed -n 's/.*"draft_id":"\([^"]*\)".*/\1/p')
hash=$(printf '%s' "$d" | sed -n 's/.*"payload_hash":"\([^"]*\)".*/\1/p')
'{bin}' --db '{db}' confirm "$id" --hash "$hash" 2>>'{out}'
echo "confirm $?" >> '{out}'
"#,
            db = env.db.display(),
            out = out.display(),
        ),
    );
    env.set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    Task::named("host").confirm(&env);
    env.advance(3600);
    let drafts = env.count("SELECT count(*) FROM drafts");
    env.run(&["tick", "--run-as", &user.name]).ok();
    let said = std::fs::read_to_string(&out).unwrap();
    // The store's folder is the store owner's alone: refused, naming it.
    assert_contains(&said, "permission denied by the folder");
    assert_contains(&said, "draft 2\n");
    assert!(!said.contains("confirm 0"), "{said}");
    assert_eq!(env.count("SELECT count(*) FROM tasks"), 1, "{said}");
    assert_eq!(env.count("SELECT count(*) FROM drafts"), drafts, "{said}");
    let mode = std::fs::metadata(&env.db).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// `status` says which deployment (item 6) with `--run-as` (item 3): a
/// tick that ran its runs as another user records that the runs do not
/// hold the store's authority, though the tick itself (root here) does.
#[test]
fn status_says_runs_do_not_hold_the_store_after_a_tick_run_as_another_user() {
    let Some(user) = RunUser::add() else { return };
    let rig = Rig::new();
    let env = &rig.env;
    let script = user.dir.join("quiet.sh");
    write_script(&script, "#!/bin/sh\ncat >/dev/null\necho done\n");
    env.set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    Task::named("x").confirm(env);
    // First as the tick's own user, who holds the store: the runs hold it.
    env.advance(3600);
    rig.tick(&[]).ok();
    assert_eq!(env.json(&["status"])["runs_hold_store_authority"], true);
    // Then as another user: they do not, and neither status nor check warns.
    env.advance(3600);
    rig.tick(&["--run-as", &user.name]).ok();
    let runs = rig.runs("x");
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "succeeded"), "{runs:?}");
    let status = env.json(&["status"]);
    assert_eq!(status["runs_hold_store_authority"], false, "{status}");
    let text = env.run(&["status"]).ok();
    assert!(!text.stderr.contains("authority"), "{}", text.stderr);
    let check = env.run(&["check"]).ok();
    assert!(!check.stderr.contains("authority"), "{}", check.stderr);
}

#[test]
fn an_unknown_run_as_user_exits_2_before_claiming() {
    let rig = Rig::new();
    Task::named("u").confirm(&rig.env);
    rig.env.advance(3600);
    let out = rig.tick(&["--run-as", "no-such-user-here"]).fails(2);
    assert_contains(&out.stderr, "there is no user 'no-such-user-here'");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(rig.starts().is_empty());
    assert_eq!(rig.env.count("SELECT count(*) FROM runs"), 0);
}

/// A tick that is not root runs its executor as another user through
/// `sudo -n`, with the rule `agentcron sudoers` prints: without the rule it
/// exits 2 before claiming; with it, the run is the other user's, gets the
/// allowlisted variables through sudo, reaches its lease endpoint, and
/// cannot read the store.
#[test]
fn a_tick_that_is_not_root_runs_as_another_user_through_sudo() {
    if crate::support::on_postgres() {
        return;
    }
    if !sudo_available() {
        return;
    }
    let Some(agent) = RunUser::add() else { return };
    let Some(service) = RunUser::add() else {
        return;
    };
    let bin = agent.bin();
    let sudoers = PathBuf::from(format!("/etc/sudoers.d/agentcron-test-{}", agent.name));
    struct Removed(PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rule = Removed(sudoers.clone());
    // The store is the service user's, in its own 0700 folder.
    let env = TestEnv::new();
    let state = service.dir.join("state");
    let db = state.join("agentcron.db");
    let out = agent.dir.join("run.out");
    let script = agent.dir.join("probe.sh");
    write_script(
        &script,
        &format!(
            r#"#!/bin/sh
cat >/dev/null
echo "user $(id -un)" >> '{out}'
echo "home $HOME" >> '{out}'
echo "pass $API_KEY" >> '{out}'
echo "db ${{AGENTCRON_DB:-none}}" >> '{out}'
'{bin}' lease check "$AGENTCRON_RUN_ID" --token "$AGENTCRON_LEASE_TOKEN" >/dev/null 2>&1
echo "lease $?" >> '{out}'
cat '{db}' >/dev/null 2>&1
echo "read $?" >> '{out}'
"#,
            out = out.display(),
            db = db.display(),
        ),
    );
    let as_service = |args: &[&str]| {
        let mut command = Command::new("runuser");
        command
            .args(["-u", &service.name, "--", &bin, "--db"])
            .arg(&db)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("AGENTCRON_TZ", "UTC")
            .env("AGENTCRON_NOW", env.now().to_string())
            .env("API_KEY", "for-the-agent")
            .current_dir("/");
        command.output().unwrap()
    };
    let draft = as_service(&["--json", "draft", "--instruction", "x", "--every", "1h"]);
    assert!(draft.status.success(), "{draft:?}");
    let draft: serde_json::Value = serde_json::from_slice(&draft.stdout).unwrap();
    let confirm = as_service(&[
        "confirm",
        draft["draft_id"].as_str().unwrap(),
        "--hash",
        draft["payload_hash"].as_str().unwrap(),
    ]);
    assert!(confirm.status.success(), "{confirm:?}");
    env.advance(3600);
    let tick_args = [
        "tick",
        "--run-as",
        &agent.name,
        "--pass-env",
        "API_KEY",
        "--executor",
        script.to_str().unwrap(),
    ];
    // No rule yet: sudo would ask for a password.
    let refused = as_service(&tick_args);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_contains(&stderr, "sudo would ask for a password");
    assert_contains(&stderr, "nothing was claimed");
    assert!(!out.exists());
    // The rule `agentcron sudoers` prints (from the binary the tick runs:
    // the rule names it), checked by visudo: the supervisor alone.
    let printed = Command::new(&bin)
        .args(["sudoers", "--run-as", &agent.name, "--user", &service.name])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(printed.status.success(), "{printed:?}");
    let rule = String::from_utf8(printed.stdout).unwrap();
    assert!(
        rule.contains(&format!(
            "{} ALL=({}) NOPASSWD: {}/agentcron-supervise \"\"\n",
            service.name,
            agent.name,
            agent.dir.display()
        )),
        "{rule}"
    );
    assert!(
        rule.lines()
            .all(|l| l.starts_with('#') || !l.contains("SETENV")),
        "{rule}"
    );
    write_sudoers(&sudoers, &rule);
    let ran = as_service(&tick_args);
    assert!(ran.status.success(), "{ran:?}");
    let said = std::fs::read_to_string(&out).unwrap();
    let home = Command::new("getent")
        .args(["passwd", &agent.name])
        .output()
        .unwrap();
    let home = String::from_utf8(home.stdout).unwrap();
    let home = home.trim().split(':').nth(5).unwrap().to_string();
    assert_eq!(
        said,
        format!(
            "user {}\nhome {home}\npass for-the-agent\ndb none\nlease 0\nread 1\n",
            agent.name
        ),
        "{ran:?}"
    );
    // The runs ran as the agent, the store is the service user's.
    let status = as_service(&["--json", "status"]);
    assert!(status.status.success(), "{status:?}");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["runs_hold_store_authority"], false, "{status}");
}

/// `agentcron mcp`'s confirmation-code notifier gets the allowlist too.
#[test]
fn the_code_notifier_of_mcp_receives_none_of_the_stores_names() {
    let env = TestEnv::new();
    let saved = env.path("code.env");
    let notifier = env_saver(&env, "code-notify.sh", &saved);
    for (k, v) in DENIED {
        env.set_env(k, v);
    }
    env.set_env("AGENTCRON_PASS_ENV", "API_KEY");
    env.set_env("API_KEY", "for-the-notifier");
    let flag = format!("--notifier={notifier}");
    let mut session = crate::mcp::RawSession::start(&env, &["mcp", &flag], "host");
    session.call("draft", serde_json::json!({"instruction": "x", "in": "2h"}));
    session.finish();
    let got = names(&saved);
    let agentcron: Vec<&String> = got.iter().filter(|k| k.starts_with("AGENTCRON_")).collect();
    assert_eq!(
        agentcron,
        [
            "AGENTCRON_DRAFT_ID",
            "AGENTCRON_NOTICE_KIND",
            "AGENTCRON_TENANT"
        ],
        "{got:?}"
    );
    assert!(!got.iter().any(|k| k.starts_with("PG")), "{got:?}");
    assert!(got.contains(&"API_KEY".to_string()), "{got:?}");
}

/// A tick told to stop settles its runs and removes their endpoints.
#[test]
fn a_signalled_tick_removes_the_endpoints_of_its_runs() {
    let env = TestEnv::new();
    let saved = env.path("endpoint");
    let script = env.path("sleeper.sh");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\ncat >/dev/null\necho \"$AGENTCRON_LEASE_ENDPOINT\" > '{}.tmp'\nmv '{0}.tmp' '{0}'\nsleep 30\n",
            saved.display()
        ),
    );
    env.set_env("AGENTCRON_EXECUTOR", script.to_str().unwrap());
    Task::named("s").confirm(&env);
    env.advance(3600);
    let tick = env
        .command(&["tick", "--kill-grace", "1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the run to start", || saved.exists());
    let endpoint = std::fs::read_to_string(&saved).unwrap();
    crate::support::kill(tick.id() as i32, libc::SIGTERM);
    let out = tick.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{out:?}");
    assert_endpoint_gone(endpoint.trim());
    assert_eq!(env.json(&["runs", "s"])[0]["status"], "unknown");
}

/// `approve --here` runs the continuation under a lease its endpoint
/// answers too.
#[test]
fn lease_check_inside_an_approve_here_run_is_answered() {
    let rig = Rig::new();
    let run = crate::support::parked_run(&rig, "p");
    let said = rig.env.path("said");
    let script = rig.env.path("continue.sh");
    write_script(
        &script,
        &format!(
            "#!/bin/sh\ncat >/dev/null\n'{BIN}' lease check \"$AGENTCRON_RUN_ID\" --token \"$AGENTCRON_LEASE_TOKEN\"\necho \"$? ${{AGENTCRON_DB:-none}}\" > '{}'\n",
            said.display()
        ),
    );
    rig.env
        .run(&[
            "approve",
            &run,
            "--wait-id",
            "w1",
            "--here",
            "--executor",
            script.to_str().unwrap(),
        ])
        .ok();
    assert_eq!(std::fs::read_to_string(&said).unwrap(), "0 none\n");
    assert_eq!(rig.runs("p")[0]["status"], "succeeded");
}
