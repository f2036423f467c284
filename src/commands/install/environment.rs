//! The variables a printed tick line carries (`--env KEY=VALUE`), and the
//! PATH it always holds. A line is never the place for a secret: cron runs
//! it as `/bin/sh -c LINE`, whose argv every local user can read while the
//! tick runs, and a unit file is world-readable. So names that hold a secret
//! are refused, pointing to `~/.pgpass` or `--env-file` (docs/CONTRACT.md §13).

use anyhow::Result;

use crate::error::CmdError;

/// Parts of a variable's name that say it holds a secret.
const SECRET_WORDS: [&str; 4] = ["PASSWORD", "SECRET", "TOKEN", "KEY"];

/// `KEY=VALUE` with a shell variable name and a value of one line.
///
/// A secret's name is accepted here and refused by `refuse_secrets`, so
/// that the refusal does not echo the value as clap's error would.
pub fn parse_env(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not KEY=VALUE"))?;
    let valid_key = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_key {
        return Err(format!(
            "'{key}' is not a variable name (letters, digits, _)"
        ));
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(format!("the value of {key} must be one line"));
    }
    Ok((key.to_string(), value.to_string()))
}

/// Whether a variable of this name holds a secret (`PGPASSWORD`, `API_KEY`,
/// `GITHUB_TOKEN`, …), case-insensitively.
pub fn holds_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// Refuses `--env` of a secret's name (exit 2), naming it, never its value.
pub fn refuse_secrets(given: &[(String, String)]) -> Result<()> {
    let Some((name, _)) = given.iter().find(|(name, _)| holds_secret(name)) else {
        return Ok(());
    };
    Err(CmdError::usage(format!(
        "--env {name}: a secret in the printed line is readable by every local user \
         (cron's shell shows it in its argv; a unit file is world-readable)"
    ))
    .with_hint(
        "keep the store's password in ~/.pgpass (0600) of the tick's user, or write \
         PGPASSWORD=… in a file only that user can read (0600) and pass --env-file FILE; \
         an executor reads its own keys from a file of its user",
    )
    .into())
}

/// The environment the tick runs with: the given variables, PATH first,
/// with the binary's folder in PATH (ahead of a given PATH's entries when
/// missing; else with the usual system folders, since cron's is minimal),
/// each folder once.
pub fn environment(given: &[(String, String)]) -> Result<Vec<(String, String)>> {
    let binary = super::binary()?;
    let folder = binary
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/".into());
    let given_path = given.iter().rev().find(|(k, _)| k == "PATH");
    let path = line_path(&folder, given_path.map(|(_, path)| path.as_str()));
    let mut vars = vec![("PATH".to_string(), path)];
    for (key, value) in given.iter().filter(|(k, _)| k != "PATH") {
        // The last of a repeated key wins, as in the shell.
        vars.retain(|(k, _)| k != key);
        vars.push((key.clone(), value.clone()));
    }
    Ok(vars)
}

/// The line's PATH: the binary's folder first unless the given PATH holds
/// it, cron's usual folders when none is given, and no folder twice (the
/// first stays, where the shell would find a program).
fn line_path(folder: &str, given: Option<&str>) -> String {
    let path = match given {
        Some(path) if path.split(':').any(|p| p == folder) => path.to_string(),
        Some(path) => format!("{folder}:{path}"),
        None => format!("{folder}:/usr/local/bin:/usr/bin:/bin"),
    };
    let mut seen = Vec::new();
    for entry in path.split(':') {
        if !seen.contains(&entry) {
            seen.push(entry);
        }
    }
    seen.join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_holds_each_folder_once() {
        assert_eq!(line_path("/usr/bin", None), "/usr/bin:/usr/local/bin:/bin");
        assert_eq!(
            line_path("/opt/ac", Some("/usr/bin:/bin:/usr/bin")),
            "/opt/ac:/usr/bin:/bin"
        );
        assert_eq!(
            line_path("/bin", Some("/usr/bin:/bin:/usr/bin:/bin")),
            "/usr/bin:/bin"
        );
        assert_eq!(
            line_path("/opt/ac", None),
            "/opt/ac:/usr/local/bin:/usr/bin:/bin"
        );
    }

    #[test]
    fn secrets_are_named_by_their_words_in_any_case() {
        for name in [
            "PGPASSWORD",
            "db_password",
            "API_KEY",
            "GithubToken",
            "MY_SECRET",
        ] {
            assert!(holds_secret(name), "{name}");
        }
        for name in ["PATH", "AGENT_HOME", "AGENTCRON_NOW", "TASK_SCRIPTS"] {
            assert!(!holds_secret(name), "{name}");
        }
    }
}
