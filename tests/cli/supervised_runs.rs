//! Every executor, gate and notifier runs under a supervisor as the run's
//! user (docs/CONTRACT.md §19.4): nothing a run starts outlives it, in each
//! deployment — the tick's own user, root `--run-as`, and `--run-as`
//! through sudo by a tick that is not root — whether the run settles, times
//! out with an executor that ignores TERM, or the tick is stopped with
//! SIGTERM or killed with -9. The lease channel answers only its own run
//! (§19.2), and what runs cannot change schedules without the marker
//! (§19.5). Real processes throughout: `nohup`, `setsid`, `setsid -f`,
//! double forks and SIGSTOPped leftovers.
//!
//! The root and sudo deployments add system users and need root (CI has
//! it); elsewhere they skip with a note, unless AGENTCRON_REQUIRE_SUDO is
//! set. They run on SQLite only: what a run's processes come to does not
//! depend on the store, and the same-user cases run on both.
use crate::support::{
    alive, draft_ids, kill, on_postgres, wait_for, write_script, Task, TestEnv, BIN, T0,
};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::run_environment::{sudo_available, RunUser};

const HOUR: i64 = 3600;
/// The grace every tick here is given between TERM and KILL.
const GRACE: &str = "1s";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deploy {
    SameUser,
    RootRunAs,
    SudoRunAs,
}

/// One deployment: where the store is, who runs the tick and who the runs.
struct Site {
    env: TestEnv,
    agent: Option<RunUser>,
    service: Option<RunUser>,
    /// The agentcron binary the tick runs (and so the supervisor's).
    bin: String,
    /// Scripts and journals, writable by the runs.
    dir: PathBuf,
    rule: Option<PathBuf>,
}

impl Drop for Site {
    fn drop(&mut self) {
        if let Some(rule) = &self.rule {
            let _ = std::fs::remove_file(rule);
        }
    }
}

impl Site {
    /// None (with a note) when this host cannot have the deployment.
    fn new(deploy: Deploy) -> Option<Site> {
        let env = TestEnv::new();
        if deploy == Deploy::SameUser {
            let dir = env.path("site");
            std::fs::create_dir(&dir).unwrap();
            return Some(Site {
                env,
                agent: None,
                service: None,
                bin: BIN.to_string(),
                dir,
                rule: None,
            });
        }
        if on_postgres() {
            return None;
        }
        if deploy == Deploy::SudoRunAs && !sudo_available() {
            return None;
        }
        let agent = RunUser::add()?;
        let bin = agent.bin();
        let dir = agent.dir.clone();
        let mut site = Site {
            env,
            agent: Some(agent),
            service: None,
            bin,
            dir,
            rule: None,
        };
        if deploy == Deploy::SudoRunAs {
            let service = RunUser::add()?;
            let agent = site.agent.as_ref().unwrap();
            // The one rule a tick that is not root needs, as `agentcron
            // sudoers` prints it: the supervisor.
            let printed = Command::new(&site.bin)
                .args(["sudoers", "--run-as", &agent.name, "--user", &service.name])
                .env_clear()
                .output()
                .unwrap();
            assert!(printed.status.success(), "{printed:?}");
            let rule = PathBuf::from(format!("/etc/sudoers.d/agentcron-test-{}", agent.name));
            std::fs::write(&rule, &printed.stdout).unwrap();
            site.rule = Some(rule);
            // The store is the service user's.
            let owned = Command::new("chown")
                .args(["-R", &service.name])
                .arg(site.env.path(""))
                .status()
                .unwrap();
            assert!(owned.success());
            site.service = Some(service);
        }
        Some(site)
    }

    /// `agentcron ARGS` as the tick's user would run it.
    fn command(&self, args: &[&str]) -> Command {
        let built = self.env.command(args);
        let mut command = match &self.service {
            None => Command::new(&self.bin),
            Some(service) => {
                let mut command = Command::new("runuser");
                command.args(["-u", &service.name, "--", &self.bin]);
                command.current_dir("/");
                command
            }
        };
        command.args(built.get_args()).env_clear();
        for (key, value) in built.get_envs() {
            if let Some(value) = value {
                command.env(key, value);
            }
        }
        command
    }

    #[track_caller]
    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        out
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_slice(&self.run(&all).stdout).unwrap()
    }

    /// Drafts and confirms a task as its person.
    fn task(&self, args: &[&str]) {
        let mut all = vec!["draft"];
        all.extend_from_slice(args);
        let draft = self.json(&all);
        self.run(&[
            "confirm",
            draft["draft_id"].as_str().unwrap(),
            "--hash",
            draft["payload_hash"].as_str().unwrap(),
        ]);
    }

    fn tick_args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["tick", "--kill-grace", GRACE]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let Some(agent) = &self.agent {
            args.extend(["--run-as".to_string(), agent.name.clone()]);
        }
        args
    }

    fn spawn_tick(&self) -> Child {
        let args = self.tick_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.command(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The tick's own pid (runuser forks it).
    fn tick_pid(&self, child: &Child) -> i32 {
        let pid = child.id() as i32;
        if self.service.is_none() {
            return pid;
        }
        let mut found = None;
        wait_for("the tick under runuser", || {
            found = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .ok()
                .and_then(|c| c.split_whitespace().next()?.parse().ok());
            found.is_some()
        });
        found.unwrap()
    }

    fn script(&self, name: &str, body: &str) -> String {
        let path = self.dir.join(name);
        write_script(&path, body);
        path.display().to_string()
    }

    fn runs(&self, task: &str) -> Vec<serde_json::Value> {
        self.json(&["runs", task])
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// The processes a test's runs started ("PID TAG" lines in `pids`); each
/// is killed at the end of the test whatever happened.
struct Leftovers(PathBuf);

impl Leftovers {
    fn listed(&self) -> Vec<(i32, String)> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (pid, tag) = line.split_once(' ')?;
                Some((pid.parse().ok()?, tag.to_string()))
            })
            .collect()
    }

    #[track_caller]
    fn assert_gone(&self, within: Duration, when: &str, expected: usize) {
        let listed = self.listed();
        assert!(
            listed.len() >= expected,
            "{when}: {} of {expected} processes were started: {listed:?}",
            listed.len()
        );
        let deadline = Instant::now() + within;
        for (pid, tag) in &listed {
            while alive(*pid, tag) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(
                !alive(*pid, tag),
                "{when}: `{tag}` (pid {pid}) outlived its run"
            );
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for (pid, tag) in self.listed() {
            if alive(pid, &tag) {
                kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Shell that leaves six processes behind, tagged `sleep {role}0N`: one
/// with `nohup`, one `setsid`, one `setsid -f` (forked into a new session),
/// one double-forked, one SIGSTOPped, and one that keeps the run's stdout
/// open (so the grace applies, not the at-once kill).
fn leave(role: u32, pids: &Path) -> String {
    let p = pids.display();
    format!(
        r#"nohup sleep {role}01 >/dev/null 2>&1 & echo "$! sleep {role}01" >> '{p}'
setsid sleep {role}02 >/dev/null 2>&1 & echo "$! sleep {role}02" >> '{p}'
setsid -f sh -c "echo \"\$\$ sleep {role}03\" >> '{p}'; exec sleep {role}03" >/dev/null 2>&1
( (sleep {role}04 >/dev/null 2>&1 & echo "$! sleep {role}04" >> '{p}') & )
sleep {role}05 >/dev/null 2>&1 & s=$!; kill -STOP $s; echo "$s sleep {role}05" >> '{p}'
sleep {role}06 & echo "$! sleep {role}06" >> '{p}'
while [ "$(grep -c 'sleep {role}0' '{p}')" -lt 6 ]; do sleep 0.01; done
"#
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Settles,
    TimesOut,
    TickTerminated,
    TickKilled,
}

/// For `deploy`, each way a run can end: the executor, its gate and the
/// notifier each leave six processes behind; none is left once the run
/// ended (after the grace), and an executor that ignores TERM is gone when
/// its tick is, so its retry can never run beside it.
fn nothing_outlives_a_run(deploy: Deploy) {
    for end in [
        End::Settles,
        End::TimesOut,
        End::TickTerminated,
        End::TickKilled,
    ] {
        let Some(site) = Site::new(deploy) else {
            return;
        };
        let pids = site.dir.join("pids");
        let leftovers = Leftovers(pids.clone());
        let started = site.dir.join("started");
        let hang = end != End::Settles;
        let executor = site.script(
            "executor.sh",
            &format!(
                "#!/bin/sh\ncat >/dev/null\n{}echo \"$$ executor.sh\" >> '{p}'\n\
                 echo \"$AGENTCRON_LEASE_ENDPOINT\" > '{s}.endpoint'\ntouch '{s}'\n{}",
                leave(71, &pids),
                if hang {
                    // TERM is ignored by the shell and by the sleep it starts.
                    "trap '' TERM\nsleep 30\n"
                } else {
                    "echo done\n"
                },
                p = pids.display(),
                s = started.display(),
            ),
        );
        let gate = site.script(
            "gate.sh",
            &format!("#!/bin/sh\ncat >/dev/null\n{}exit 0\n", leave(72, &pids)),
        );
        let notifier = site.script(
            "notifier.sh",
            &format!("#!/bin/sh\ncat >/dev/null\n{}exit 0\n", leave(73, &pids)),
        );
        site.env.set_env("AGENTCRON_EXECUTOR", &executor);
        site.env.set_env("AGENTCRON_NOTIFIER", &notifier);
        site.task(&[
            "--instruction",
            "x",
            "--every",
            "1h",
            "--name",
            "t",
            "--notify",
            "always",
            "--gate",
            &gate,
            "--timeout",
            "2s",
        ]);
        site.env.set_now(T0 + HOUR);
        let case = format!("{deploy:?}, {end:?}");
        let tick = site.spawn_tick();
        let tick_pid = site.tick_pid(&tick);
        wait_for(&format!("{case}: the executor to start"), || {
            started.exists()
        });
        match end {
            End::TickTerminated => kill(tick_pid, libc::SIGTERM),
            End::TickKilled => kill(tick_pid, libc::SIGKILL),
            _ => {}
        }
        let out = tick.wait_with_output().unwrap();
        let (expected, status) = match end {
            End::Settles => (19, Some("succeeded")),
            End::TimesOut => (19, Some("failed")),
            End::TickTerminated => (13, Some("unknown")),
            End::TickKilled => (13, None),
        };
        if end != End::TickKilled {
            assert!(
                out.status.code().is_some(),
                "{case}: the tick ended by a signal: {out:?}"
            );
        }
        // Settled or stopped runs wait for nothing: their leftovers are
        // gone once the tick is. A tick killed with -9 leaves them to the
        // supervisor, which reads the end of its channel and kills them
        // within the grace.
        let within = match end {
            End::TickKilled => Duration::from_secs(4),
            _ => Duration::from_millis(500),
        };
        leftovers.assert_gone(within, &case, expected);
        // Nor is its lease endpoint left behind, whatever the end.
        let endpoint = std::fs::read_to_string(site.dir.join("started.endpoint")).unwrap();
        let endpoint = endpoint.trim();
        assert!(
            endpoint.starts_with("@agentcron-lease-"),
            "{case}: {endpoint}"
        );
        let sockets = std::fs::read_to_string("/proc/net/unix").unwrap();
        assert!(
            !sockets.contains(endpoint),
            "{case}: {endpoint} is still bound"
        );
        if let Some(status) = status {
            assert_eq!(site.runs("t")[0]["status"], status, "{case}: {out:?}");
        }
    }
}

#[test]
fn nothing_a_run_starts_outlives_it_at_the_ticks_own_user() {
    nothing_outlives_a_run(Deploy::SameUser);
}

#[test]
fn nothing_a_run_starts_outlives_it_as_another_user_from_root() {
    nothing_outlives_a_run(Deploy::RootRunAs);
}

/// Through sudo the tick cannot signal the run's user: the supervisor
/// does it all. The gate runs too (its exit 0 opens the run).
#[test]
fn nothing_a_run_starts_outlives_it_as_another_user_through_sudo() {
    nothing_outlives_a_run(Deploy::SudoRunAs);
}

/// Another run of the same user reads the victim's endpoint and token from
/// its environment, then asks with them, tries to take the endpoint's name,
/// and trickles bytes at it over many connections while the victim checks
/// its lease: it is never answered, cannot replace the endpoint, and the
/// victim's checks all answer 0 without waiting on it.
fn another_run_cannot_reach_a_runs_lease_channel(deploy: Deploy) {
    let Some(site) = Site::new(deploy) else {
        return;
    };
    let d = site.dir.display().to_string();
    let bin = &site.bin;
    let victim = site.script(
        "victim.sh",
        &format!(
            r#"#!/bin/sh
cat >/dev/null
echo "$AGENTCRON_LEASE_ENDPOINT" > '{d}/endpoint.tmp'; mv '{d}/endpoint.tmp' '{d}/endpoint'
echo $$ > '{d}/victim.tmp'; mv '{d}/victim.tmp' '{d}/victim'
i=0; while [ ! -e '{d}/attacking' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
i=0
while [ $i -lt 20 ]; do
  s=$(date +%s%N)
  '{bin}' lease check "$AGENTCRON_RUN_ID" --token "$AGENTCRON_LEASE_TOKEN" >/dev/null 2>&1
  c=$?
  e=$(date +%s%N)
  echo "$c $(( (e - s) / 1000000 ))" >> '{d}/checks'
  i=$((i+1)); sleep 0.02
done
touch '{d}/victim.done'
echo done
"#
        ),
    );
    let attacker = site.script(
        "attacker.sh",
        &format!(
            r#"#!/bin/sh
cat >/dev/null
i=0; while [ ! -s '{d}/victim' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
ep=$(cat '{d}/endpoint'); vp=$(cat '{d}/victim')
tok=$(tr '\0' '\n' < /proc/$vp/environ | sed -n 's/^AGENTCRON_LEASE_TOKEN=//p')
rid=$(tr '\0' '\n' < /proc/$vp/environ | sed -n 's/^AGENTCRON_RUN_ID=//p')
echo "stole ${{#tok}}" >> '{d}/attacker'
AGENTCRON_LEASE_ENDPOINT="$ep" '{bin}' lease check "$rid" --token "$tok" >/dev/null 2>&1
echo "ask $?" >> '{d}/attacker'
python3 - "$ep" "$rid" "$tok" '{d}' <<'PY' >> '{d}/attacker'
import os, socket, sys, time
name, rid, tok, d = sys.argv[1][1:], sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX)
try:
    s.bind('\0' + name)
    print('replace ok')
except OSError:
    print('replace refused')
try:
    c = socket.socket(socket.AF_UNIX)
    c.connect('\0' + name)
    c.settimeout(2)
    c.sendall(('%s %s\n' % (rid, tok)).encode())
    data = c.recv(100)
except OSError:
    data = b''
print('raw ' + (data.decode().strip() or 'nothing'))
conns = []
for _ in range(20):
    try:
        t = socket.socket(socket.AF_UNIX)
        t.connect('\0' + name)
        conns.append(t)
    except OSError:
        pass
open(os.path.join(d, 'attacking'), 'w').close()
end = time.time() + 10
while time.time() < end and not os.path.exists(os.path.join(d, 'victim.done')):
    for t in conns:
        try:
            t.send(b'x')
        except OSError:
            pass
    time.sleep(0.015)
PY
echo done
"#
        ),
    );
    // One executor for both tasks: the instruction says which it is.
    let executor = site.script(
        "executor.sh",
        &format!(
            "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n*'\"instruction\":\"victim'*) echo \"$input\" | '{victim}' ;;\n*) echo \"$input\" | '{attacker}' ;;\nesac\n"
        ),
    );
    site.env.set_env("AGENTCRON_EXECUTOR", &executor);
    site.task(&["--instruction", "victim", "--every", "1h", "--name", "v"]);
    site.task(&["--instruction", "attacker", "--every", "1h", "--name", "a"]);
    site.env.set_now(T0 + HOUR);
    let mut args = site.tick_args();
    args.extend(["--jobs".into(), "2".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = site.command(&args).output().unwrap();
    assert!(out.status.success(), "{deploy:?}: {out:?}");
    let attacker = std::fs::read_to_string(site.dir.join("attacker")).unwrap();
    assert_eq!(
        attacker, "stole 36\nask 5\nreplace refused\nraw nothing\n",
        "{deploy:?}"
    );
    let checks = std::fs::read_to_string(site.dir.join("checks")).unwrap();
    let checks: Vec<(i32, u64)> = checks
        .lines()
        .map(|l| {
            let (code, ms) = l.split_once(' ').unwrap();
            (code.parse().unwrap(), ms.parse().unwrap())
        })
        .collect();
    assert_eq!(checks.len(), 20, "{deploy:?}");
    assert!(checks.iter().all(|(code, _)| *code == 0), "{checks:?}");
    // Each check is a process start plus one request; the trickle did not
    // hold any of them up (it held the old endpoint's one thread for
    // seconds).
    let slowest = checks.iter().map(|(_, ms)| *ms).max().unwrap();
    assert!(
        slowest < 1500,
        "{deploy:?}: slowest check {slowest} ms: {checks:?}"
    );
}

#[test]
fn another_run_of_the_same_user_cannot_reach_a_runs_lease_channel() {
    another_run_cannot_reach_a_runs_lease_channel(Deploy::SameUser);
}

#[test]
fn another_run_as_the_same_run_user_cannot_reach_a_runs_lease_channel() {
    another_run_cannot_reach_a_runs_lease_channel(Deploy::RootRunAs);
}

/// The notifier runs after its run settled, and a gate before the
/// executor: neither can confirm a draft or resume a task, even with the
/// run's marker dropped from its environment, nor can what the notifier
/// leaves running.
#[test]
fn a_notifier_or_gate_without_the_marker_cannot_change_schedules() {
    let Some(site) = Site::new(Deploy::SameUser) else {
        return;
    };
    let d = site.dir.display().to_string();
    let db = site.env.db_arg();
    site.env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    // A draft waiting for its person, which the run tries to confirm.
    let draft = site.json(&[
        "draft",
        "--instruction",
        "forward all mail",
        "--every",
        "1h",
    ]);
    let (id, hash) = draft_ids(&draft);
    let attempts = |who: &str| {
        format!(
            "for cmd in 'confirm {id} --hash {hash}' 'resume t'; do\n\
             env -u AGENTCRON_RUN_ID -u AGENTCRON_LEASE_TOKEN -u AGENTCRON_TASK_ID \
             AGENTCRON_DB='{db}' '{BIN}' $cmd >/dev/null 2>&1\n\
             echo \"{who} $? $cmd\" >> '{d}/attempts'\n\
             done\n"
        )
    };
    let gate = site.script(
        "gate.sh",
        &format!("#!/bin/sh\ncat >/dev/null\n{}exit 0\n", attempts("gate")),
    );
    let notifier = site.script(
        "notifier.sh",
        &format!(
            "#!/bin/sh\ncat >/dev/null\n{}\
             setsid sh -c \"sleep 0.2; env -u AGENTCRON_RUN_ID AGENTCRON_DB='{db}' '{BIN}' \
             confirm {id} --hash {hash} >/dev/null 2>&1; echo \\\"late \\$?\\\" >> '{d}/attempts'\" \
             >/dev/null 2>&1 &\nexit 0\n",
            attempts("notifier")
        ),
    );
    site.task(&[
        "--instruction",
        "x",
        "--every",
        "1h",
        "--name",
        "t",
        "--gate",
        &gate,
        "--notify",
        "always",
    ]);
    site.env.set_env("AGENTCRON_NOTIFIER", &notifier);
    site.env.set_now(T0 + HOUR);
    let args = site.tick_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    site.run(&args);
    std::thread::sleep(Duration::from_millis(500));
    let attempts = std::fs::read_to_string(site.dir.join("attempts")).unwrap_or_default();
    let lines: Vec<&str> = attempts.lines().collect();
    assert!(lines.len() >= 4, "{attempts}");
    for line in &lines {
        let code = line.split(' ').nth(1).unwrap();
        assert_eq!(code, "4", "refused inside the run: {line}");
    }
    let drafts = site.json(&["show", id]);
    assert_ne!(drafts["status"], "confirmed", "{drafts}");
}

/// Each child's parent is the small `agentcron-supervise` beside the
/// binary; where only `agentcron` is installed, it is `agentcron supervise`,
/// and runs are supervised all the same.
#[test]
fn a_run_is_supervised_by_the_small_binary_or_by_agentcron_itself() {
    let env = TestEnv::new();
    let said = env.path("parent");
    let executor = env.path("executor.sh");
    write_script(
        &executor,
        &format!(
            "#!/bin/sh\ncat >/dev/null\ntr '\\0' ' ' < /proc/$PPID/cmdline > '{}'\n",
            said.display()
        ),
    );
    env.set_env("AGENTCRON_EXECUTOR", executor.to_str().unwrap());
    Task::named("t").confirm(&env);
    env.set_now(T0 + HOUR);
    env.run(&["tick"]).ok();
    let small = std::fs::canonicalize(env!("CARGO_BIN_EXE_agentcron-supervise")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&said).unwrap().trim_end(),
        small.display().to_string()
    );
    // Only `agentcron` where this tick's binary is.
    let alone = env.path("alone");
    std::fs::create_dir(&alone).unwrap();
    let bin = alone.join("agentcron");
    if std::fs::hard_link(BIN, &bin).is_err() {
        std::fs::copy(BIN, &bin).unwrap();
    }
    env.set_now(T0 + 2 * HOUR);
    let out = Command::new(&bin)
        .args(env.command(&["tick"]).get_args())
        .envs(
            env.command(&[])
                .get_envs()
                .filter_map(|(k, v)| Some((k, v?))),
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&said).unwrap().trim_end(),
        format!("{} supervise", bin.display())
    );
    assert_eq!(
        env.json(&["runs", "t"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] == "succeeded")
            .count(),
        2
    );
}
