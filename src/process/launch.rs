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

    /// Refuses (one line) when sudo would not run `program` as the run-as
    /// user without a password; nothing to check as root or without one.
    pub fn preflight(&self, program: &str) -> Result<(), String> {
        let Some(user) = self.run_as.as_ref().filter(|u| u.switch == Switch::Sudo) else {
            return Ok(());
        };
        let path = self.path();
        let absolute = resolve(program, &path)
            .ok_or_else(|| format!("`{program}` was not found in PATH ({path})"))?;
        let out = Command::new("sudo")
            .args(["-n", "-l", "-u", &user.name, "--"])
            .arg(&absolute)
            .env_clear()
            .env("PATH", &path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("--run-as {}: cannot run sudo: {e}", user.name))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "--run-as {}: sudo would ask for a password (or refuses) to run {} as {}; \
             install the rule `agentcron sudoers --run-as {}` prints, or run the tick as root",
            user.name,
            absolute.display(),
            user.name,
            user.name
        ))
    }

    /// Where endpoints are made: the caller's TMPDIR, else /tmp (always
    /// /tmp under `--run-as`: the caller's may be closed to the user).
    pub fn temp_dir(&self) -> std::path::PathBuf {
        let tmpdir = self
            .env
            .iter()
            .find(|(k, v)| k == "TMPDIR" && v.starts_with('/'))
            .filter(|_| self.run_as.is_none());
        match tmpdir {
            Some((_, dir)) => dir.into(),
            None => "/tmp".into(),
        }
    }

    /// The command that starts `program` as this launch says: directly,
    /// with the ids switched (as root), or through sudo. Its arguments,
    /// environment and stdio are the caller's to add.
    pub(super) fn command(
        &self,
        program: &str,
        env: &[(String, String)],
    ) -> Result<Command, SpawnError> {
        let mut command = match &self.run_as {
            None => self.direct(program),
            Some(user) if user.switch == Switch::Ids => {
                let mut command = self.direct(program);
                user.set_ids(&mut command);
                command
            }
            Some(user) => {
                // sudo resets the environment: it keeps exactly the names
                // listed (its SETENV rule allows that) and sets HOME, USER and
                // LOGNAME to the user's; the program is found here, in the
                // run's PATH, as it would be without sudo.
                let path = self.path();
                let absolute =
                    resolve(program, &path).ok_or_else(|| SpawnError::NotFound(program.into()))?;
                let keep: Vec<&str> = env
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .filter(|k| !matches!(*k, "HOME" | "USER" | "LOGNAME"))
                    .collect();
                let mut command = self.direct("sudo");
                command.args(["-n", "-u", &user.name]);
                if !keep.is_empty() {
                    command.arg(format!("--preserve-env={}", keep.join(",")));
                }
                command.arg("--").arg(absolute);
                command
            }
        };
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
