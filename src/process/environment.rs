//! What a child (executor, notifier) receives of the environment it was
//! started from (docs/CONTRACT.md §19): an allowlist, never the store's path
//! or credentials.
//!
//! Invariants: a child starts from an empty environment; of the caller's it
//! gets only `PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`, `LC_*`, `TZ`,
//! `TMPDIR` and the names the operator passes (`--pass-env`), and a passed
//! name is never `AGENTCRON_*` nor `PG*` (the store's location, identity and
//! PostgreSQL credentials). The run's own variables are added by the tick.

use std::ffi::OsString;

/// The caller's variables every child gets (besides `LC_*`).
const INHERITED: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"];

/// Whether a child gets this variable of its caller without being asked.
pub fn inherited(name: &str) -> bool {
    INHERITED.contains(&name) || name.starts_with("LC_")
}

/// Why `--pass-env NAME` is refused, if it is: not a variable name, or a
/// name that would hand the run the store (its location, the caller's
/// identity, a PostgreSQL password or service file).
pub fn refused_pass(name: &str) -> Option<String> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Some(format!(
            "--pass-env: '{}' is not a variable name (letters, digits, _)",
            crate::text::escape(name)
        ));
    }
    if name.starts_with("AGENTCRON_") || name.starts_with("PG") {
        return Some(format!(
            "--pass-env {name} is refused: a run never receives AGENTCRON_* or PG* variables \
             (the store's location, the caller's identity, PostgreSQL credentials)"
        ));
    }
    None
}

/// The variables of `vars` a child gets: the allowlist and `pass`, in the
/// order found. A value that is not UTF-8 is left out.
pub fn select(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass: &[String],
) -> Vec<(String, String)> {
    vars.into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| inherited(k) || (pass.contains(k) && refused_pass(k).is_none()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names.iter().map(|n| ((*n).into(), "v".into())).collect()
    }

    #[test]
    fn only_the_allowlist_and_passed_names_get_through() {
        let all = vars(&[
            "PATH",
            "HOME",
            "LC_ALL",
            "TZ",
            "AGENTCRON_DB",
            "AGENTCRON_AS",
            "PGPASSWORD",
            "PGPASSFILE",
            "PGSERVICEFILE",
            "API_KEY",
            "SECRET",
        ]);
        let names: Vec<String> = select(all, &["API_KEY".into(), "PGPASSWORD".into()])
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, ["PATH", "HOME", "LC_ALL", "TZ", "API_KEY"]);
    }

    #[test]
    fn the_store_s_names_cannot_be_passed() {
        for name in ["AGENTCRON_DB", "AGENTCRON_SCRIPTS", "PGPASSWORD", "PGHOST"] {
            assert!(refused_pass(name).is_some(), "{name}");
        }
        for name in ["API_KEY", "OPENAI_API_KEY", "_X"] {
            assert_eq!(refused_pass(name), None, "{name}");
        }
        assert!(refused_pass("A=B").is_some());
        assert!(refused_pass("").is_some());
    }
}
