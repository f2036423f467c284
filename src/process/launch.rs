//! How the children of one invocation start (docs/CONTRACT.md §19): the
//! environment they start from (the caller's allowlisted variables,
//! `environment::select`) and as whom they run (`user::RunAs`): directly,
//! with the ids switched before exec as root, or through `sudo -n -u USER`.

use std::process::{Command, Stdio};

use super::user::{RunAs, Switch};
use super::SpawnError;

/// How every child of one invocation starts (docs/CONTRACT.md §19).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Launch {
    /// The whole environment a child starts from: the caller's allowlisted
    /// variables (`environment::select`).
    pub env: Vec<(String, String)>,
    /// Run the child as this user.
    pub run_as: Option<RunAs>,
    /// The folder the child starts in (a profile's, docs/CONTRACT.md §22);
    /// None: the caller's, or `/` with a user of its own. The supervisor
    /// changes to it as the run's user, so a folder closed to that user is
    /// a run that did not start, never one that started elsewhere.
    pub cwd: Option<String>,
}

impl Launch {
    /// The environment of a child: `env`, with the run-as user's HOME, USER
    /// and LOGNAME, then the run's own `extra`.
    pub fn environment(&self, extra: &[(String, String)]) -> Vec<(String, String)> {
        let mut vars = self.env.clone();
        if let Some(user) = &self.run_as {
            vars.retain(|(k, _)| !matches!(k.as_str(), "HOME" | "USER" | "LOGNAME"));
            vars.push(("HOME".into(), user.home.display().to_string()));
            vars.push(("USER".into(), user.name.clone()));
            vars.push(("LOGNAME".into(), user.name.clone()));
        }
        for (key, value) in extra {
            vars.retain(|(k, _)| k != key);
            vars.push((key.clone(), value.clone()));
        }
        vars
    }

    /// Refuses (one line) when sudo would not run the supervisor as the
    /// run-as user without a password; nothing to check as root or
    /// without one. One rule covers every command a task may configure:
    /// sudo only ever runs `agentcron supervise`.
    pub fn preflight(&self) -> Result<(), String> {
        let Some(user) = self.run_as.as_ref().filter(|u| u.switch == Switch::Sudo) else {
            return Ok(());
        };
        let supervisor = supervisor_words()?;
        let out = Command::new("sudo")
            .args(["-n", "-l", "-u", &user.name, "--"])
            .args(&supervisor)
            .env_clear()
            .env("PATH", self.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("--run-as {}: cannot run sudo: {e}", user.name))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "--run-as {}: sudo would ask for a password (or refuses) to run `{}` as {}; \
             install the rule `agentcron sudoers --run-as {}` prints, or run the tick as root",
            user.name,
            supervisor.join(" "),
            user.name,
            user.name
        ))
    }

    /// The command that starts a child's supervisor as this launch says:
    /// directly, with the ids switched (as root), or through sudo (in a
    /// session of its own). It starts from an empty environment but PATH:
    /// the child's own travels over the supervisor's channel, so sudo needs
    /// no SETENV. Its stdio is the caller's to add.
    pub(super) fn supervisor(&self) -> Result<Command, SpawnError> {
        let words = supervisor_words().map_err(SpawnError::Other)?;
        let mut command = match &self.run_as {
            Some(user) if user.switch == Switch::Sudo => {
                let mut command = self.direct("sudo");
                command.args(["-n", "-u", &user.name, "--"]).args(&words);
                super::user::new_session(&mut command);
                command
            }
            Some(user) => {
                let mut command = Command::new(&words[0]);
                command.args(&words[1..]);
                user.set_ids(&mut command);
                command
            }
            None => {
                let mut command = Command::new(&words[0]);
                command.args(&words[1..]);
                command
            }
        };
        command.env_clear().env("PATH", self.path());
        if self.run_as.is_some() {
            // The tick's folder may be closed to the user: every run starts at /.
            command.current_dir("/");
        }
        Ok(command)
    }

    /// A command for `program`, found in the child's PATH here: given a
    /// PATH of its own and a bare name, std would fork (copying the tick's
    /// page tables for every run) instead of using posix_spawn. Its argv[0]
    /// stays the name given. A name not found is left to the spawn, which
    /// says why.
    fn direct(&self, program: &str) -> Command {
        use std::os::unix::process::CommandExt;
        match program.contains('/') {
            true => Command::new(program),
            false => match resolve(program, &self.path()) {
                Some(absolute) => {
                    let mut command = Command::new(absolute);
                    command.arg0(program);
                    command
                }
                None => Command::new(program),
            },
        }
    }

    fn path(&self) -> String {
        self.env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
    }
}

/// `program` as an absolute path: as given when it holds a `/`, else the
/// first executable file of that name in `path`.
pub fn resolve(program: &str, path: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return std::path::absolute(program).ok();
    }
    path.split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| std::path::Path::new(dir).join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The argument that makes `agentcron` a supervisor (main.rs looks for it
/// before anything else).
pub const SUPERVISE: &str = "supervise";

/// The small binary beside `agentcron` that is the supervisor alone.
const SUPERVISOR_BINARY: &str = "agentcron-supervise";

/// The supervisor's words, found once per process.
static SUPERVISOR_WORDS: std::sync::OnceLock<Result<Vec<String>, String>> =
    std::sync::OnceLock::new();

/// For a program that runs agentcron's commands in its own process (the
/// plan tests, which record the statements a tick makes): the supervisor
/// binary to start, since this process is not `agentcron`. Call it before
/// any child starts; later calls change nothing.
pub fn use_supervisor(program: &std::path::Path) {
    let _ = SUPERVISOR_WORDS.set(Ok(vec![program.display().to_string()]));
}

/// The words that start a supervisor: `agentcron-supervise` beside this
/// binary, or, where it is not installed, this binary with `supervise`.
/// (A unit test runs inside the test harness, so there the binaries are
/// the ones cargo built beside it.) What `agentcron sudoers` names too.
pub fn supervisor_words() -> Result<Vec<String>, String> {
    SUPERVISOR_WORDS
        .get_or_init(|| {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find this program to supervise a run: {e}"))?;
            #[cfg(test)]
            let exe = exe
                .parent()
                .and_then(|deps| deps.parent())
                .map(|dir| dir.join("agentcron"))
                .unwrap_or(exe);
            let small = exe.with_file_name(SUPERVISOR_BINARY);
            let executable = |p: &std::path::Path| {
                use std::os::unix::fs::PermissionsExt;
                p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            };
            Ok(match executable(&small) {
                true => vec![small.display().to_string()],
                false => vec![exe.display().to_string(), SUPERVISE.to_string()],
            })
        })
        .clone()
}
