//! What would make a printed tick line fail later, said now: no executor,
//! an executor or notifier program that is missing, not executable, or
//! relative (cron starts in $HOME), an env file the tick would refuse.
//! Warnings, not errors: the line may be meant for another host, or printed
//! before the executor (or the file) is installed.

use std::path::Path;

pub fn commands_warnings(
    executor: &Option<String>,
    notifier: &Option<String>,
    vars: &[(String, String)],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if executor.is_none() {
        warnings.push(
            "no executor is set: pass --executor CMD (or set AGENTCRON_EXECUTOR) before installing this line"
                .to_string(),
        );
    }
    let path = vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or_default();
    for (role, command) in [("executor", executor), ("notifier", notifier)] {
        let Some(command) = command else { continue };
        if let Some(problem) = program_problem(command, path) {
            warnings.push(format!("the {role} {problem}"));
        }
    }
    warnings
}

/// Why a tick as the uid `owner` would refuse the env file.
pub fn env_file_warning(file: Option<&Path>, owner: u32) -> Option<String> {
    crate::commands::env_file::read(file?, owner)
        .err()
        .map(|e| format!("every tick would refuse it: {}", crate::error::sentence(&e)))
}

/// Why the command's program cannot be run from the line, if it cannot.
fn program_problem(command: &str, path: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let program = match shell_words::split(command) {
        Ok(words) => words.into_iter().next()?,
        Err(e) => return Some(format!("command {command:?} cannot be split: {e}")),
    };
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if !program.contains('/') {
        let found = path
            .split(':')
            .any(|folder| executable(&Path::new(folder).join(&program)));
        return (!found).then(|| format!("{program:?} is not found in the line's PATH ({path})"));
    }
    let file = Path::new(&program);
    if file.is_relative() {
        return Some(format!(
            "{program:?} is a relative path; cron runs the line from your home folder: give an absolute path"
        ));
    }
    match file.metadata() {
        Err(_) => Some(format!("{program} does not exist")),
        Ok(m) if !m.is_file() => Some(format!("{program} is not a file")),
        Ok(_) if !executable(file) => Some(format!("{program} is not executable (chmod +x)")),
        Ok(_) => None,
    }
}
