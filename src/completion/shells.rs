//! The shell adapters: clap_complete's registration scripts as they are,
//! and our own answer to a completion request (see the module above for
//! why we do not use clap_complete's answer as is).

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{EnvCompleter, Shells};

use super::{Line, LINE};

/// How a shell wants its candidates back, as clap_complete writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Values only, separated by `_CLAP_IFS`; the word is at
    /// `_CLAP_COMPLETE_INDEX` (bash, elvish).
    Values,
    /// `value:help` with `:` and `\` escaped, separated by `_CLAP_IFS`; the
    /// word is at `_CLAP_COMPLETE_INDEX`, possibly past the last word.
    Zsh,
    /// `value<TAB>help` lines; the word is the last one (fish, PowerShell).
    Tabbed,
}

pub struct Dynamic {
    inner: &'static dyn EnvCompleter,
    format: Format,
}

const BASH: Dynamic = Dynamic {
    inner: &clap_complete::env::Bash,
    format: Format::Values,
};
const ELVISH: Dynamic = Dynamic {
    inner: &clap_complete::env::Elvish,
    format: Format::Values,
};
const FISH: Dynamic = Dynamic {
    inner: &clap_complete::env::Fish,
    format: Format::Tabbed,
};
const POWERSHELL: Dynamic = Dynamic {
    inner: &clap_complete::env::Powershell,
    format: Format::Tabbed,
};
const ZSH: Dynamic = Dynamic {
    inner: &clap_complete::env::Zsh,
    format: Format::Zsh,
};

pub const SHELLS: Shells<'static> = Shells(&[&BASH, &ELVISH, &FISH, &POWERSHELL, &ZSH]);

impl EnvCompleter for Dynamic {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn is(&self, name: &str) -> bool {
        self.inner.is(name)
    }

    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> Result<(), std::io::Error> {
        self.inner
            .write_registration(var, name, bin, completer, buf)?;
        if self.format == Format::Zsh {
            // Installed in $fpath as `_agentcron`, the file is the body of an
            // autoloaded function that the first TAB calls: it must complete
            // then too, not only define the completer for the next TAB.
            let function = format!("_clap_dynamic_completer_{}", name.replace('-', "_"));
            writeln!(
                buf,
                "if [[ \"${{funcstack[1]}}\" == \"_{bin}\" ]]; then\n    {function} \"$@\"\nfi"
            )?;
        }
        Ok(())
    }

    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        mut args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn Write,
    ) -> Result<(), std::io::Error> {
        let env_index = || {
            std::env::var("_CLAP_COMPLETE_INDEX")
                .ok()
                .and_then(|i| i.parse::<usize>().ok())
                .unwrap_or_default()
        };
        let index = match self.format {
            Format::Values => {
                // The words before the cursor glued back (see `rejoin`),
                // for the engine's parse; the word under the cursor stays
                // as bash has it, since bash replaces only that one.
                let index = env_index().min(args.len());
                let rest = args.split_off(index);
                args = rejoin(args.into_iter().map(|w| w.to_string_lossy().into_owned()))
                    .into_iter()
                    .map(OsString::from)
                    .collect();
                let index = args.len();
                args.extend(rest);
                index
            }
            Format::Zsh => {
                let index = env_index();
                // zsh leaves out an empty word under the cursor.
                if args.len() == index {
                    args.push(OsString::new());
                }
                index
            }
            Format::Tabbed => args.len().saturating_sub(1),
        };
        if index == 0 || index >= args.len() {
            return Ok(());
        }
        let _ = LINE.set(line_options(&args[..index]));
        let candidates = complete_quietly(cmd, args, index, current_dir);
        let ifs = std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".to_string());
        let mut first = true;
        for candidate in candidates.iter().filter(|c| !c.is_hide_set()) {
            let value = candidate.get_value().to_string_lossy();
            let help = candidate
                .get_help()
                .map(|h| h.to_string().lines().next().unwrap_or_default().to_string());
            match self.format {
                Format::Values => {
                    if !first {
                        buf.write_all(ifs.as_bytes())?;
                    }
                    buf.write_all(value.as_bytes())?;
                }
                Format::Zsh => {
                    if !first {
                        buf.write_all(ifs.as_bytes())?;
                    }
                    let escaped = value.replace('\\', "\\\\").replace(':', "\\:");
                    buf.write_all(escaped.as_bytes())?;
                    if let Some(help) = help {
                        write!(buf, ":{}", help.replace('\\', "\\\\"))?;
                    }
                }
                Format::Tabbed => {
                    buf.write_all(value.as_bytes())?;
                    if let Some(help) = help {
                        write!(buf, "\t{help}")?;
                    }
                    writeln!(buf)?;
                }
            }
            first = false;
        }
        Ok(())
    }
}

/// The engine's candidates, or none: an error or a panic while completing
/// must not print into the person's shell.
fn complete_quietly(
    cmd: &mut clap::Command,
    args: Vec<OsString>,
    index: usize,
    current_dir: Option<&Path>,
) -> Vec<CompletionCandidate> {
    std::panic::set_hook(Box::new(|_| {}));
    let cmd = std::panic::AssertUnwindSafe(cmd);
    std::panic::catch_unwind(move || {
        let cmd = cmd;
        clap_complete::engine::complete(cmd.0, args, index, current_dir).unwrap_or_default()
    })
    .unwrap_or_default()
}

/// `--db`, `--tenant` and `--as` from the words before the cursor (the
/// global options may stand anywhere after the program name); else
/// AGENTCRON_DB, AGENTCRON_TENANT and AGENTCRON_AS, as clap's `env` would,
/// and the login name for the caller.
fn line_options(words: &[OsString]) -> Line {
    let mut line = Line::default();
    let words = rejoin(
        words
            .iter()
            .skip(1)
            .map(|w| w.to_string_lossy().into_owned()),
    );
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (word.to_string(), None),
        };
        if !matches!(flag.as_str(), "--db" | "--tenant" | "--as") {
            continue;
        }
        let value = match inline {
            Some(value) => Some(value),
            // bash splits `--db=PATH` into `--db`, `=`, `PATH`.
            None => match words.next() {
                Some(eq) if eq == "=" => words.next(),
                value => value,
            },
        };
        let Some(value) = value.map(|v| unquote(&v)) else {
            break;
        };
        match flag.as_str() {
            "--db" => line.db = Some(value),
            "--tenant" => line.tenant = Some(value),
            _ => line.as_keys.extend(value.split(',').map(str::to_string)),
        }
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    line.db = line.db.or_else(|| env("AGENTCRON_DB"));
    line.tenant = line.tenant.or_else(|| env("AGENTCRON_TENANT"));
    if line.as_keys.is_empty() {
        if let Some(keys) = env("AGENTCRON_AS") {
            line.as_keys = keys.split(',').map(str::to_string).collect();
        }
    }
    if line.as_keys.is_empty() {
        line.as_keys = vec![format!("unix:{}", crate::context::login_name())];
    }
    line
}

/// bash breaks words at `:` and `=` (COMP_WORDBREAKS), so `--as unix:me`
/// and `--db=PATH` reach us as `unix`, `:`, `me` and `--db`, `=`, `PATH`:
/// glue them back.
fn rejoin(words: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut glue = false;
    for word in words {
        if (word == ":" || word == "=") && !out.is_empty() {
            out.last_mut().expect("not empty").push_str(&word);
            glue = true;
        } else if glue {
            out.last_mut().expect("glued to a word").push_str(&word);
            glue = false;
        } else {
            out.push(word);
        }
    }
    out
}

/// A word as the shell will pass it: bash and zsh hand us the word as typed,
/// quotes, backslashes and a leading `~/` included (fish already unquoted).
fn unquote(word: &str) -> String {
    let word = match shell_words::split(word) {
        Ok(parts) if parts.len() == 1 => parts.into_iter().next().unwrap_or_default(),
        _ => word.to_string(),
    };
    match (word.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).display().to_string(),
        _ => word,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn the_line_names_the_database_and_the_tenant() {
        let line = line_options(&words("agentcron --db /a.db show --tenant=acme"));
        assert_eq!(line.db.as_deref(), Some("/a.db"));
        assert_eq!(line.tenant.as_deref(), Some("acme"));
        // bash hands the word over as typed, quotes included.
        let typed = [
            OsString::from("agentcron"),
            OsString::from("show"),
            OsString::from("--db='/my dir/x.db'"),
        ];
        let line = line_options(&typed);
        assert_eq!(line.db.as_deref(), Some("/my dir/x.db"));
        let line = line_options(&words("agentcron --as a --db = /b.db show --as=b,c"));
        assert_eq!(line.as_keys, ["a", "b", "c"]);
        assert_eq!(line.db.as_deref(), Some("/b.db"));
        // bash's words, split at ':' too.
        let line = line_options(&words(
            "agentcron --as unix : me --db postgres : //h/db show",
        ));
        assert_eq!(line.as_keys, ["unix:me"]);
        assert_eq!(line.db.as_deref(), Some("postgres://h/db"));
        let line = line_options(&words("agentcron -- --db /a.db"));
        assert_eq!(line.db, std::env::var("AGENTCRON_DB").ok());
    }
}
