//! Profiles (docs/CONTRACT.md §22): an operator's named way to run an
//! agent — its command, folder, user, passed variables, time limit and how
//! many of its runs may run at once — and its hash, the SHA-256 of its
//! canonical form. A task drafted with `--profile NAME` carries the
//! profile's definition and hash in its payload (`Bound`), so the person's
//! consent covers who runs the words, with what and where; the tick runs
//! the task only while the profile still hashes to what was confirmed.
//!
//! The canonical form is the definition's JSON with sorted keys, compact,
//! each optional key written only when set (like the payload's): the
//! description is a note for people, not part of what runs, so it is not
//! hashed.

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::digest::hash_hex;
use crate::process::environment::refused_pass;
use crate::text::{escape, human_duration};

/// The longest a profile's own time limit may be: 24 h, as a task's.
pub const TIMEOUT_SECONDS_MAX: i64 = 86400;
/// The most runs of one profile a store may hold running at once.
pub const MAX_CONCURRENT_MAX: i64 = 10_000;
/// A profile's name: 1–64 of A-Z a-z 0-9 . _ - (a task's name's rule).
pub const NAME_MAX_BYTES: usize = 64;
/// A profile's description, for people: at most this many characters.
pub const DESCRIPTION_MAX_CHARS: usize = 256;
/// A command or folder: at most this many bytes.
const TEXT_MAX_BYTES: usize = 4096;
/// Passed variable names at most.
const PASS_ENV_MAX: usize = 64;

/// What runs: every field the hash covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    /// The executor's command line, split by shell word rules (never a shell).
    pub command: String,
    /// The folder the command starts in; absent: `/` with a user of its
    /// own, else the tick's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<i64>,
    /// Sorted, deduplicated; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// The unix user the command runs as; absent: the tick's `--run-as`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
}

impl Definition {
    /// The canonical text: sorted keys (the fields are declared sorted),
    /// compact, optional keys only when set.
    pub fn canonical(&self) -> String {
        serde_json::to_string(self).expect("a definition serializes")
    }

    /// The profile's hash: lower-case hex SHA-256 of the canonical text.
    pub fn hash(&self) -> String {
        hash_hex(self.canonical().as_bytes())
    }

    /// Checks every field as `profile set` does; the message names the flag.
    pub fn check(&self) -> Result<(), String> {
        let words =
            crate::process::split_command(&self.command).map_err(|e| format!("--command: {e}"))?;
        if words.is_empty() || self.command.len() > TEXT_MAX_BYTES {
            return Err(format!(
                "--command must be 1 to {TEXT_MAX_BYTES} bytes of a command line"
            ));
        }
        if has_control(&self.command) {
            return Err("--command holds a control character".into());
        }
        if let Some(cwd) = &self.cwd {
            if !cwd.starts_with('/') || cwd.len() > TEXT_MAX_BYTES || has_control(cwd) {
                return Err(format!(
                    "--cwd must be an absolute folder, not '{}'",
                    escape(cwd)
                ));
            }
        }
        if let Some(user) = &self.run_as {
            let valid = (1..=32).contains(&user.len())
                && !user.starts_with('-')
                && user
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !valid {
                return Err(format!("--run-as '{}' is not a user name", escape(user)));
            }
        }
        if self.pass_env.len() > PASS_ENV_MAX {
            return Err(format!("--pass-env: at most {PASS_ENV_MAX} names"));
        }
        for name in &self.pass_env {
            if let Some(why) = refused_pass(name) {
                return Err(why);
            }
        }
        if self
            .timeout_seconds
            .is_some_and(|s| !(1..=TIMEOUT_SECONDS_MAX).contains(&s))
        {
            return Err("--timeout must be from 1 s to 24 h".into());
        }
        if self
            .max_concurrent
            .is_some_and(|n| !(1..=MAX_CONCURRENT_MAX).contains(&n))
        {
            return Err(format!(
                "--max-concurrent must be from 1 to {MAX_CONCURRENT_MAX}"
            ));
        }
        Ok(())
    }

    /// The definition in words, agent-facing text escaped:
    /// "`claude -p` in /srv/repo as coder, passes GH_TOKEN, 30m, 2 at once".
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("runs `{}`", escape(&self.command))];
        parts.push(match &self.cwd {
            Some(cwd) => format!("in {}", escape(cwd)),
            None => "in the tick's folder (/ with a user of its own)".into(),
        });
        parts.push(match &self.run_as {
            Some(user) => format!("as {}", escape(user)),
            None => "as the tick's --run-as user".into(),
        });
        if !self.pass_env.is_empty() {
            parts.push(format!("passes {}", self.pass_env.join(", ")));
        }
        if let Some(s) = self.timeout_seconds {
            parts.push(format!("at most {} a run", human_duration(s)));
        }
        if let Some(n) = self.max_concurrent {
            parts.push(format!("{n} at once at most"));
        }
        parts.join(", ")
    }

    /// What changed from `old` to `self`, one phrase each, the ones that
    /// widen what runs first (another command, another user, another
    /// folder, more passed names, a longer or no time limit, more at once).
    pub fn changes_from(&self, old: &Definition) -> Vec<Change> {
        let mut out = Vec::new();
        let mut change = |widening, words| out.push(Change { widening, words });
        let shown = |v: &Option<String>| v.as_deref().map_or("-".into(), escape);
        // No limit is more than any; a limit set where there was none, less.
        let more = |a: Option<i64>, b: Option<i64>| match (a, b) {
            (Some(a), Some(b)) => b > a,
            (Some(_), None) => true,
            _ => false,
        };
        if self.command != old.command {
            let words = format!(
                "command `{}` -> `{}`",
                escape(&old.command),
                escape(&self.command)
            );
            change(Some("its profile runs another command"), words);
        }
        if self.run_as != old.run_as {
            let words = format!("user {} -> {}", shown(&old.run_as), shown(&self.run_as));
            change(Some("its profile runs as another user"), words);
        }
        if self.cwd != old.cwd {
            let words = format!("folder {} -> {}", shown(&old.cwd), shown(&self.cwd));
            change(Some("its profile runs in another folder"), words);
        }
        let only_in = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|n| !b.contains(n)).cloned().collect()
        };
        let added = only_in(&self.pass_env, &old.pass_env);
        if !added.is_empty() {
            let words = format!("passes {} more", added.join(", "));
            change(Some("its profile passes more variables to the run"), words);
        }
        let removed = only_in(&old.pass_env, &self.pass_env);
        if !removed.is_empty() {
            change(None, format!("no longer passes {}", removed.join(", ")));
        }
        if self.timeout_seconds != old.timeout_seconds {
            let limit = |s: Option<i64>| s.map_or("none".to_string(), human_duration);
            let words = format!(
                "time limit {} -> {}",
                limit(old.timeout_seconds),
                limit(self.timeout_seconds)
            );
            let longer = more(old.timeout_seconds, self.timeout_seconds);
            change(
                longer.then_some("its profile's runs may go on longer"),
                words,
            );
        }
        if self.max_concurrent != old.max_concurrent {
            let n = |v: Option<i64>| v.map_or("no limit".to_string(), |n| n.to_string());
            let words = format!(
                "at once {} -> {}",
                n(old.max_concurrent),
                n(self.max_concurrent)
            );
            let wider = more(old.max_concurrent, self.max_concurrent);
            change(
                wider.then_some("more of its profile's runs may run at once"),
                words,
            );
        }
        out.sort_by_key(|c| c.widening.is_none());
        out
    }

    /// The first way `self` widens what runs over `old`, in the words of a
    /// replacement's step-up; None when it only narrows (or is the same).
    pub fn widening(&self, old: &Definition) -> Option<&'static str> {
        self.changes_from(old).into_iter().find_map(|c| c.widening)
    }

    /// The command as argv (checked when the profile was set).
    pub fn argv(&self) -> Result<Vec<String>, String> {
        crate::process::split_command(&self.command)
    }
}

/// One change of a profile's definition, as a person reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Why it widens what runs (a replacement's step-up), if it does.
    pub widening: Option<&'static str>,
    /// "command `a` -> `b`".
    pub words: String,
}

fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// A profile's name: 1–64 of A-Z a-z 0-9 . _ -.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = (1..=NAME_MAX_BYTES).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    match valid {
        true => Ok(()),
        false => Err(format!(
            "invalid profile name '{}' (use 1–64 of the characters A-Z a-z 0-9 . _ -)",
            escape(name)
        )),
    }
}

/// What a confirmed payload holds of its profile: the name, the definition
/// as it was when the person confirmed, and its hash (`"profile"` in the
/// canonical payload, one flat object with sorted keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "BoundFields", into = "BoundFields")]
pub struct Bound {
    pub name: String,
    pub sha256: String,
    pub definition: Definition,
}

/// `Bound` as its JSON spells it: the definition's keys with `name` and
/// `sha256`, declared in sorted order so that serializing is canonical.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundFields {
    command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_concurrent: Option<i64>,
    name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pass_env: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_as: Option<String>,
    sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_seconds: Option<i64>,
}

impl From<BoundFields> for Bound {
    fn from(f: BoundFields) -> Bound {
        Bound {
            name: f.name,
            sha256: f.sha256,
            definition: Definition {
                command: f.command,
                cwd: f.cwd,
                max_concurrent: f.max_concurrent,
                pass_env: f.pass_env,
                run_as: f.run_as,
                timeout_seconds: f.timeout_seconds,
            },
        }
    }
}

impl From<Bound> for BoundFields {
    fn from(b: Bound) -> BoundFields {
        let d = b.definition;
        BoundFields {
            command: d.command,
            cwd: d.cwd,
            max_concurrent: d.max_concurrent,
            name: b.name,
            pass_env: d.pass_env,
            run_as: d.run_as,
            sha256: b.sha256,
            timeout_seconds: d.timeout_seconds,
        }
    }
}

impl Bound {
    pub fn new(name: &str, definition: Definition) -> Bound {
        Bound {
            sha256: definition.hash(),
            name: name.to_string(),
            definition,
        }
    }

    /// The canonical JSON of the binding, keys sorted: the definition's
    /// keys with `name` and `sha256` among them.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a binding serializes")
    }

    /// Reads a payload's `"profile"` back, checking the name, the
    /// definition and that the hash is the definition's.
    pub fn from_value(value: &Value) -> Result<Bound> {
        let bound: Bound =
            serde_json::from_value(value.clone()).map_err(|e| anyhow!("payload profile: {e}"))?;
        bound.check()?;
        Ok(bound)
    }

    /// The checks `from_value` makes, for a binding deserialized elsewhere
    /// (the payload's own fields).
    pub fn check(&self) -> Result<()> {
        let bound = self;
        check_name(&bound.name).map_err(|e| anyhow!("payload profile: {e}"))?;
        bound
            .definition
            .check()
            .map_err(|e| anyhow!("payload profile: {e}"))?;
        if bound.definition.hash() != bound.sha256 {
            return Err(anyhow!(
                "payload profile: sha256 is not its definition's hash"
            ));
        }
        Ok(())
    }

    /// "coder (1a2b3c4d): runs `…` in … as …".
    pub fn describe(&self) -> String {
        format!(
            "{} ({}): {}",
            escape(&self.name),
            self.sha256.get(..8).unwrap_or(&self.sha256),
            self.definition.describe()
        )
    }
}

/// A profile as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub tenant_key: String,
    pub name: String,
    pub definition: Definition,
    /// The definition's hash, as stored (checked when read).
    pub sha256: String,
    pub description: Option<String>,
    /// Bumped by each change; the guard of the next one.
    pub revision: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub updated_by: String,
}

impl Profile {
    /// What a task drafted with this profile now binds.
    pub fn bound(&self) -> Bound {
        Bound::new(&self.name, self.definition.clone())
    }
}

/// Why a task bound to `bound` may not run under `current` (the profile as
/// the store has it now), in the words its `skipped_profile` run records;
/// None when it may.
pub fn held(bound: &Bound, current: Option<&Profile>) -> Option<String> {
    let name = escape(&bound.name);
    let Some(current) = current else {
        return Some(format!(
            "profile {name} was deleted since you confirmed it; confirm the task again \
             (draft --replace TASK --profile NAME)"
        ));
    };
    if current.sha256 == bound.sha256 {
        return None;
    }
    let changes: Vec<String> = current
        .definition
        .changes_from(&bound.definition)
        .into_iter()
        .map(|c| c.words)
        .collect();
    Some(format!(
        "profile {name} changed since you confirmed it: {}; confirm again (draft --replace TASK)",
        match changes.is_empty() {
            true => "its definition".to_string(),
            false => changes.join("; "),
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coder() -> Definition {
        Definition {
            command: "claude -p".into(),
            cwd: Some("/srv/repo".into()),
            max_concurrent: Some(1),
            pass_env: vec!["GH_TOKEN".into()],
            run_as: Some("coder".into()),
            timeout_seconds: Some(1800),
        }
    }

    #[test]
    fn the_canonical_form_is_sorted_compact_and_pinned() {
        assert_eq!(
            coder().canonical(),
            r#"{"command":"claude -p","cwd":"/srv/repo","max_concurrent":1,"pass_env":["GH_TOKEN"],"run_as":"coder","timeout_seconds":1800}"#
        );
        let bare = Definition {
            command: "agent".into(),
            ..Definition::default()
        };
        assert_eq!(bare.canonical(), r#"{"command":"agent"}"#);
        assert_eq!(
            bare.hash(),
            hash_hex(br#"{"command":"agent"}"#),
            "printf %s '{{\"command\":\"agent\"}}' | sha256sum"
        );
    }

    #[test]
    fn a_binding_reads_back_and_refuses_a_hash_not_its_definition() {
        let bound = Bound::new("coder", coder());
        let value = bound.to_value();
        let text = value.to_string();
        assert!(text.starts_with(r#"{"command":"claude -p","cwd":"/srv/repo","#));
        assert!(text.contains(r#""name":"coder","pass_env""#));
        assert_eq!(Bound::from_value(&value).unwrap(), bound);
        let mut forged = value.clone();
        forged["run_as"] = json!("root");
        let err = Bound::from_value(&forged).unwrap_err().to_string();
        assert!(err.contains("not its definition's hash"), "{err}");
    }

    #[test]
    fn widening_changes_come_first() {
        let old = coder();
        let new = Definition {
            command: "claude -p --dangerously-skip-permissions".into(),
            pass_env: vec![],
            timeout_seconds: Some(3600),
            ..coder()
        };
        let changes = new.changes_from(&old);
        let widens: Vec<bool> = changes.iter().map(|c| c.widening.is_some()).collect();
        assert_eq!(widens, vec![true, true, false]);
        assert!(changes[0].words.starts_with("command `claude -p`"));
        assert!(
            changes[1].words.starts_with("time limit 30 min -> 60 min"),
            "{changes:?}"
        );
        assert_eq!(changes[2].words, "no longer passes GH_TOKEN");
        assert_eq!(new.widening(&old), Some("its profile runs another command"));
    }

    #[test]
    fn checks_name_each_flag() {
        let bad = |f: fn(&mut Definition)| {
            let mut d = coder();
            f(&mut d);
            d.check().unwrap_err()
        };
        assert!(bad(|d| d.command = "".into()).contains("--command"));
        assert!(bad(|d| d.cwd = Some("repo".into())).contains("--cwd"));
        assert!(bad(|d| d.run_as = Some("-x".into())).contains("--run-as"));
        assert!(bad(|d| d.pass_env = vec!["AGENTCRON_DB".into()]).contains("AGENTCRON_DB"));
        assert!(bad(|d| d.timeout_seconds = Some(0)).contains("--timeout"));
        assert!(bad(|d| d.max_concurrent = Some(0)).contains("--max-concurrent"));
        assert!(check_name("coder.v2").is_ok());
        assert!(check_name("no spaces").is_err());
    }

    #[test]
    fn held_says_what_changed_or_that_it_is_gone() {
        let bound = Bound::new("coder", coder());
        let profile = |definition: Definition| Profile {
            tenant_key: "default".into(),
            name: "coder".into(),
            sha256: definition.hash(),
            definition,
            description: None,
            revision: 1,
            created_at: 0,
            updated_at: 0,
            updated_by: "unix:root".into(),
        };
        assert_eq!(held(&bound, Some(&profile(coder()))), None);
        let changed = Definition {
            command: "codex".into(),
            ..coder()
        };
        let why = held(&bound, Some(&profile(changed))).unwrap();
        assert!(
            why.starts_with(
                "profile coder changed since you confirmed it: command `claude -p` -> `codex`"
            ),
            "{why}"
        );
        assert!(held(&bound, None).unwrap().contains("was deleted"));
    }
}
