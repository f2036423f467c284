//! `completions/` and `man/` are generated from the clap definitions and
//! committed. This test fails when they are stale; run it with
//! `UPDATE_GENERATED=1 cargo test --test cli generated` to rewrite them.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The sections of the main page that clap does not know about.
const MAIN_PAGE_EXTRA: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
success
.TP
\fB1\fR
runtime failure: I/O, database, a child process that could not start
.TP
\fB2\fR
usage error: a bad flag or value
.TP
\fB3\fR
not found: task, draft or run
.TP
\fB4\fR
permission denied: not an owner, or another tenant
.TP
\fB5\fR
conflict: stale revision, already claimed, wrong state, lease lost
.TP
\fB6\fR
draft expired or payload hash mismatch
.TP
\fB75\fR
database busy past busy_timeout: nothing changed, safe to retry
.SH ENVIRONMENT
.TP
\fBAGENTCRON_DB\fR
the database file (as \-\-db)
.TP
\fBAGENTCRON_TENANT\fR
the tenant (as \-\-tenant)
.TP
\fBAGENTCRON_AS\fR
comma\-separated identity keys (as \-\-as)
.TP
\fBAGENTCRON_TZ\fR
the zone of drafts that name none; else the system zone, else UTC
.TP
\fBAGENTCRON_EXECUTOR\fR, \fBAGENTCRON_NOTIFIER\fR
the commands tick runs (as \-\-executor, \-\-notifier)
.TP
\fBAGENTCRON_NOW\fR
a fixed "now" for tests and simulations
.TP
\fBAGENTCRON_BUSY_TIMEOUT\fR
how long to wait for another writer (default 5s)
.SH FILES
.TP
\fI$XDG_STATE_HOME/agentcron/agentcron.db\fR, else \fI~/.local/state/agentcron/agentcron.db\fR
the SQLite database (mode 0600, folders 0700), with its \-wal and \-shm files
.SH EXAMPLES
.nf
agentcron draft \-\-instruction "summarize the on\-call channel" \-\-daily 09:30 \-\-days weekdays \-\-tz Asia/Shanghai
agentcron confirm DRAFT_ID \-\-hash HASH
* * * * * agentcron \-\-db /home/me/.local/state/agentcron/agentcron.db tick \-\-executor /usr/local/bin/run\-agent
agentcron list
agentcron next TASK \-\-count 10
.fi
"#;

fn expected_files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        let mut cmd = agentcron::cli::Cli::command();
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut cmd, "agentcron", &mut out);
        let name = match shell {
            Shell::Bash => "agentcron.bash".to_string(),
            Shell::Zsh => "_agentcron".to_string(),
            Shell::Fish => "agentcron.fish".to_string(),
            Shell::Elvish => "agentcron.elv".to_string(),
            Shell::PowerShell => "_agentcron.ps1".to_string(),
            _ => unreachable!(),
        };
        files.push((root().join("completions").join(name), out));
    }
    let cmd = agentcron::cli::Cli::command();
    let mut main_page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut main_page)
        .expect("render man page");
    main_page.extend_from_slice(MAIN_PAGE_EXTRA.as_bytes());
    files.push((root().join("man/agentcron.1"), main_page));
    for sub in cmd.get_subcommands() {
        // clap names are &'static str; a leaked string per page is fine in a test.
        let name: &'static str =
            Box::leak(format!("agentcron-{}", sub.get_name()).into_boxed_str());
        let sub = sub.clone().name(name);
        let mut page = Vec::new();
        clap_mangen::Man::new(sub)
            .render(&mut page)
            .expect("render man page");
        files.push((root().join("man").join(format!("{name}.1")), page));
    }
    files
}

#[test]
fn generated_completions_and_man_pages_are_up_to_date() {
    let update = std::env::var_os("UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for (path, content) in expected_files() {
        let current = std::fs::read(&path).ok();
        if current.as_deref() != Some(content.as_slice()) {
            if update {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &content).unwrap();
            } else {
                stale.push(
                    path.strip_prefix(root())
                        .unwrap_or(Path::new("?"))
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert!(
        stale.is_empty(),
        "generated files are stale: {stale:?}\nrun: UPDATE_GENERATED=1 cargo test --test cli generated"
    );
}
