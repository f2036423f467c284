//! The password of a PostgreSQL URL without one, the way libpq finds it:
//! `PGPASSWORD`, else the first matching line of the password file
//! (`PGPASSFILE`, else `~/.pgpass`), which is ignored when others may read
//! it. So a password need never be in `--db`, where `ps` shows it to every
//! local user (a crontab line puts `--db` in every tick's argv). The
//! environment is read by `context`; this only matches.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tokio_postgres::Config;

/// Where to look, as `context` read it from the environment.
#[derive(Debug, Clone, Default)]
pub struct PasswordSources {
    /// `PGPASSWORD`.
    pub password: Option<String>,
    /// `PGPASSFILE`, else `$HOME/.pgpass`.
    pub file: Option<std::path::PathBuf>,
}

/// The password for `config` when its URL has none.
pub fn fallback(config: &Config, sources: &PasswordSources) -> Option<String> {
    if config.get_password().is_some() {
        return None;
    }
    if let Some(password) = &sources.password {
        return Some(password.clone());
    }
    let file = sources.file.as_deref()?;
    let text = private_file(file)?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(name)) => name.clone(),
        Some(tokio_postgres::config::Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or("").to_string();
    let db = config
        .get_dbname()
        .map_or_else(|| user.clone(), str::to_string);
    lookup(&text, [&host, &port, &db, &user])
}

/// The file's text, unless others may read it (libpq ignores it then too).
fn private_file(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The password of the first `host:port:database:username:password` line
/// whose fields match (`*` matches anything; `\:` and `\\` escape).
fn lookup(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let fields = split(line);
            (fields.len() == 5).then_some(fields)
        })
        .find(|fields| {
            fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, want)| field == "*" || field == want)
        })
        .map(|fields| fields[4].clone())
}

fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("one field").push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

/// `url` without its password, for every line agentcron prints: the
/// userinfo's `:secret` and any `password=` parameter go.
pub fn without_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let (head, rest) = url.split_at(scheme_end);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = authority.split_at(at);
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{user}{host}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| !p.to_ascii_lowercase().starts_with("password="))
                .collect();
            match kept.is_empty() {
                true => path.to_string(),
                false => format!("{path}?{}", kept.join("&")),
            }
        }
        None => tail.to_string(),
    };
    format!("{head}{authority}{tail}")
}

/// Whether `url` carries a password.
pub fn has_password(url: &str) -> bool {
    without_password(url) != url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_url_has_no_password() {
        assert_eq!(
            without_password("postgresql://app:s3cr%40t@db.example:5433/sched?sslmode=require"),
            "postgresql://app@db.example:5433/sched?sslmode=require"
        );
        assert_eq!(
            without_password("postgres://app@h/d?password=x&sslmode=require"),
            "postgres://app@h/d?sslmode=require"
        );
        assert_eq!(
            without_password("postgres://h/d?password=x"),
            "postgres://h/d"
        );
        assert_eq!(without_password("postgres://app@h/d"), "postgres://app@h/d");
        assert!(has_password("postgres://a:b@h/d"));
        assert!(!has_password("postgres://a@h/d"));
    }

    #[test]
    fn the_password_file_is_matched_as_libpq_does() {
        let text =
            "# comment\nother:5432:*:app:wrong\ndb.example:*:sched:app:pa\\:ss\n*:*:*:*:any\n";
        assert_eq!(
            lookup(text, ["db.example", "5433", "sched", "app"]).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(lookup(text, ["x", "1", "y", "z"]).as_deref(), Some("any"));
        assert_eq!(lookup("h:1:d:u\n", ["h", "1", "d", "u"]), None);
    }
}
