//! `completions/` and `man/` are generated and committed: the commands'
//! pages and the scripts from the clap definitions, the protocols' page
//! (agentcron-executor(7)) from its markdown source under `man/src/`. This
//! test fails when they are stale; run it with
//! `UPDATE_GENERATED=1 cargo test --test cli generated` to rewrite them.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// EXIT STATUS and ENVIRONMENT: every page has them.
const COMMON_SECTIONS: &str = r#".SH "EXIT STATUS"
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
not found: task, draft or run (also: no store where \-\-db points, for a command that does not create one; a command that only reads, on a store at an older schema: run `agentcron migrate`)
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
.TP
\fB78\fR
PostgreSQL store at an older schema than this build writes: nothing changed; run `agentcron migrate` once every host runs this build
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
.TP
\fBAGENTCRON_CONFIRM_PREFIX\fR
the words every command handed to a person begins with (as mcp \-\-confirm\-prefix); default `sudo \-u USER` when sudo runs agentcron as USER
"#;

/// The main page's FILES section.
const MAIN_FILES: &str = r#".SH FILES
.TP
\fI$XDG_STATE_HOME/agentcron/agentcron.db\fR, else \fI~/.local/state/agentcron/agentcron.db\fR
the SQLite database (mode 0600, folders 0700), with its \-wal and \-shm files
"#;

/// Examples per page, by the words after `agentcron` (empty: the main page).
/// The cron line has the absolute form `agentcron crontab` prints.
fn examples(path: &str) -> &'static [&'static str] {
    match path {
        "" => &[
            "agentcron draft --instruction \"summarize the on-call channel\" --daily 09:30 --days weekdays --tz Asia/Shanghai",
            "agentcron confirm DRAFT_ID --hash HASH",
            "agentcron crontab --executor /usr/local/bin/run-agent",
            "* * * * * PATH=/usr/local/bin:/usr/bin:/bin /usr/local/bin/agentcron --db /home/me/.local/state/agentcron/agentcron.db tick --executor /usr/local/bin/run-agent",
            "agentcron list",
            "agentcron next TASK --count 10",
        ],
        "draft" => &[
            "agentcron draft --instruction \"summarize the on-call channel\" --daily 09:30 --days weekdays --tz Asia/Shanghai --name oncall",
            "agentcron draft --instruction - --cron \"*/15 9-17 * * 1-5\" < prompt.txt",
            "agentcron draft --replace oncall --daily 10:00",
            "agentcron draft --instruction \"summarize my stand-up\" --daily 09:30 --tz follow",
            "agentcron draft --instruction \"review the open pull requests\" --daily 08:00 --profile coder",
        ],
        "confirm" => &[
            "agentcron confirm DRAFT_ID --hash HASH",
            "agentcron confirm DRAFT_ID --hash HASH --code 123456",
        ],
        "list" => &["agentcron list", "agentcron list --state paused", "agentcron --json list --all"],
        "show" => &["agentcron show oncall"],
        "pause" => &["agentcron pause oncall --reason \"on vacation\""],
        "resume" => &["agentcron resume oncall --expect-revision 3"],
        "delete" => &["agentcron delete oncall"],
        "trigger" => &["agentcron trigger oncall --reason \"check the new prompt\""],
        "next" => &["agentcron next oncall --count 10"],
        "upcoming" => &["agentcron upcoming --within 2h", "agentcron --json upcoming --limit 50"],
        "plan" => &[
            "agentcron plan tasks.toml",
            "agentcron plan tasks.toml --prune --detailed-exitcode",
            "agentcron --json plan tasks.toml",
        ],
        "apply" => &["agentcron apply tasks.toml --hash 5e0c1f…(the 64-hex plan hash printed by plan)"],
        "runs" => &["agentcron runs oncall --limit 20", "agentcron runs --status unknown"],
        "log" => &["agentcron log oncall"],
        "explain" => &["agentcron explain oncall", "agentcron explain oncall --at \"2026-12-03 09:30\"", "agentcron explain 3f2a9c1e"],
        "tick" => &[
            "* * * * * PATH=/usr/local/bin:/usr/bin:/bin /usr/local/bin/agentcron --db /home/me/.local/state/agentcron/agentcron.db tick --executor /usr/local/bin/run-agent",
            "agentcron tick --dry-run",
        ],
        "lease" | "lease check" => &["agentcron lease check \"$AGENTCRON_RUN_ID\" --token \"$AGENTCRON_LEASE_TOKEN\" || exit 0"],
        "approve" => &["agentcron approve 3f2a9c1e --wait-id W --executor /usr/local/bin/run-agent"],
        "deny" => &["agentcron deny 3f2a9c1e --wait-id W"],
        "reconcile" => &[
            "agentcron reconcile",
            "agentcron reconcile 3f2a9c1e --decision confirmed_succeeded --reason \"the report was sent\"",
        ],
        "status" => &["agentcron status --max-tick-age 5m || echo \"agentcron: ticks are stale\""],
        "prune" => &["agentcron prune --older-than 90d --dry-run"],
        "check" => &["agentcron check"],
        "migrate" => &[
            "agentcron backup /var/backups/agentcron-before-0.2.0.db",
            "agentcron migrate --dry-run",
            "agentcron migrate",
        ],
        "backup" => &[
            "agentcron backup /var/backups/agentcron-$(date +%F).db",
            "agentcron --db /var/backups/agentcron-2026-12-04.db check",
        ],
        "metrics" => &[
            "agentcron metrics",
            "agentcron metrics --textfile /var/lib/prometheus/node-exporter/agentcron.prom",
        ],
        "crontab" => &[
            "agentcron crontab --executor /usr/local/bin/run-agent --notifier /usr/local/bin/notify",
            "agentcron crontab --executor /usr/local/bin/run-agent --env AGENT_HOME=/srv/agent --log /var/log/agentcron.log",
            "agentcron --db postgresql://agentcron@db.internal/agentcron crontab --executor /usr/local/bin/run-agent --env-file ~/.config/agentcron/store.env",
        ],
        "systemd" => &[
            "agentcron systemd --executor /usr/local/bin/run-agent --env AGENT_HOME=/srv/agent",
            "agentcron systemd --user agentcron --env-file /etc/agentcron/store.env",
        ],
        "sudoers" => &[
            "agentcron sudoers --run-as agent --user agentcron > agentcron-agentcron-as-agent",
            "visudo -cf agentcron-agentcron-as-agent && install -m 0440 agentcron-agentcron-as-agent /etc/sudoers.d/",
        ],
        "export" => &["agentcron export > agentcron.jsonl"],
        "import" => &["agentcron --db postgresql://agentcron@db.internal:5432/agentcron import agentcron.jsonl"],
        "mcp" => &[
            "agentcron mcp --as unix:alice --notifier /usr/local/bin/notify",
            "sudo -n -u agentcron agentcron mcp --as unix:alice",
        ],
        "completions" => &["agentcron completions bash > ~/.local/share/bash-completion/completions/agentcron"],
        "zone" | "zone set" => &[
            "agentcron --as host:profile-sync zone set unix:alice Europe/Berlin",
            "agentcron --json zone set unix:alice Europe/Berlin",
        ],
        "zone show" => &["agentcron zone show unix:alice", "agentcron --json zone show"],
        "profile" | "profile set" => &[
            "agentcron profile set coder --command \"claude -p\" --cwd /srv/repo --run-as coder --pass-env GH_TOKEN --timeout 30m --max-concurrent 2 --description \"reviews pull requests in /srv/repo\"",
            "agentcron draft --instruction \"review the open pull requests\" --daily 08:00 --name review --profile coder",
            "agentcron draft --replace review",
        ],
        "profile list" => &["agentcron profile list", "agentcron --json profile list"],
        "profile show" => &["agentcron profile show coder"],
        "profile delete" => &["agentcron profile delete coder"],
        "zone unset" => &["agentcron zone unset unix:alice"],
        _ => &[],
    }
}

/// The executor and notifier protocols, agentcron-executor(7): its text is
/// `man/src/agentcron-executor.7.md`, in the little markdown `roff_page` reads.
const EXECUTOR_SOURCE: &str = include_str!("../../man/src/agentcron-executor.7.md");

/// A section 7 page from its markdown source: a leading `<!-- … -->` note is
/// dropped; `## NAME` is a section; a line `- tag` followed by lines indented
/// two spaces is a tagged paragraph (`.TP`); a fenced block is kept as typed
/// (`.nf`); any block after a blank line opens a paragraph (`.PP`). In text,
/// `code` is bold and *word* italic; every dash is a roff `\-`.
fn roff_page(name: &str, source: &str) -> String {
    let mut out = format!(".TH {name} 7 \"agentcron {}\"\n", env!("CARGO_PKG_VERSION"));
    let body = match source.strip_prefix("<!--") {
        Some(rest) => rest.split_once("-->\n").map_or("", |(_, body)| body),
        None => source,
    };
    let (mut fenced, mut after_blank, mut after_heading) = (false, false, true);
    for line in body.lines() {
        if line.starts_with("```") {
            if !fenced && after_blank && !after_heading {
                out.push_str(".PP\n");
            }
            out.push_str(if fenced { ".fi\n" } else { ".nf\n" });
            fenced = !fenced;
            (after_blank, after_heading) = (false, false);
            continue;
        }
        if fenced {
            out.push_str(&roff_text(line));
            out.push('\n');
            continue;
        }
        if line.is_empty() {
            after_blank = true;
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            let heading = if heading.contains(' ') {
                format!("\"{heading}\"")
            } else {
                heading.to_string()
            };
            out.push_str(&format!(".SH {heading}\n"));
            (after_blank, after_heading) = (false, true);
            continue;
        }
        if after_blank && !after_heading {
            out.push_str(".PP\n");
        }
        if let Some(tag) = line.strip_prefix("- ") {
            out.push_str(".TP\n");
            out.push_str(&roff_inline(tag));
        } else {
            out.push_str(&roff_inline(line.strip_prefix("  ").unwrap_or(line)));
        }
        out.push('\n');
        (after_blank, after_heading) = (false, false);
    }
    out
}

/// One line of markdown text as roff: `code` bold, *word* italic (outside
/// code), dashes escaped.
fn roff_inline(text: &str) -> String {
    let (mut out, mut bold, mut italic) = (String::new(), false, false);
    for c in text.chars() {
        match c {
            '`' => {
                out.push_str(if bold { "\\fR" } else { "\\fB" });
                bold = !bold;
            }
            '*' if !bold => {
                out.push_str(if italic { "\\fR" } else { "\\fI" });
                italic = !italic;
            }
            _ => out.push_str(&roff_text(&c.to_string())),
        }
    }
    out
}

/// roff for text that may hold dashes.
fn roff_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('-', "\\-")
}

/// SYNOPSIS with a placeholder for every value: `[--reason TEXT] TASK`.
fn synopsis(cmd: &clap::Command, path: &str) -> String {
    let mut words = vec![format!(
        "\\fB{}\\fR",
        roff_text(format!("agentcron {path}").trim_end())
    )];
    let mut positionals = Vec::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_hide_set() || id == "help" || id == "version" {
            continue;
        }
        let value = arg
            .get_value_names()
            .and_then(|names| names.first())
            .map(|n| n.to_string())
            .unwrap_or_else(|| id.to_uppercase());
        let takes_value = arg.get_num_args().is_some_and(|r| r.takes_values());
        let many = arg.get_num_args().is_some_and(|r| r.max_values() > 1)
            || matches!(arg.get_action(), clap::ArgAction::Append);
        let dots = if many { " ..." } else { "" };
        let word = match arg.get_long() {
            None => format!("\\fI{}\\fR{dots}", roff_text(&value)),
            Some(long) if takes_value => {
                format!(
                    "\\fB\\-\\-{}\\fR \\fI{}\\fR{dots}",
                    roff_text(long),
                    roff_text(&value)
                )
            }
            Some(long) => format!("\\fB\\-\\-{}\\fR", roff_text(long)),
        };
        let word = if arg.is_required_set() {
            word
        } else {
            format!("[{word}]")
        };
        if arg.get_long().is_none() {
            positionals.push(word);
        } else {
            words.push(word);
        }
    }
    words.extend(positionals);
    if cmd.has_subcommands() {
        words.push("\\fICOMMAND\\fR".into());
    }
    format!(".SH SYNOPSIS\n{}\n", words.join(" "))
}

fn examples_section(path: &str) -> String {
    let lines: Vec<String> = examples(path).iter().map(|l| roff_text(l)).collect();
    assert!(!lines.is_empty(), "no EXAMPLES for agentcron {path}");
    format!(".SH EXAMPLES\n.nf\n{}\n.fi\n", lines.join("\n"))
}

/// One page: clap's title, name, description and options, our synopsis,
/// then EXIT STATUS, ENVIRONMENT, EXAMPLES and SEE ALSO.
fn page(cmd: clap::Command, path: &str) -> Vec<u8> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out).unwrap();
    man.render_name_section(&mut out).unwrap();
    out.extend_from_slice(synopsis(&cmd, path).as_bytes());
    man.render_description_section(&mut out).unwrap();
    man.render_options_section(&mut out).unwrap();
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out).unwrap();
    }
    out.extend_from_slice(COMMON_SECTIONS.as_bytes());
    if path.is_empty() {
        out.extend_from_slice(MAIN_FILES.as_bytes());
    }
    out.extend_from_slice(examples_section(path).as_bytes());
    let see_also = if path.is_empty() {
        "agentcron\\-executor(7)".to_string()
    } else {
        "agentcron(1), agentcron\\-executor(7)".to_string()
    };
    out.extend_from_slice(format!(".SH \"SEE ALSO\"\n{see_also}\n").as_bytes());
    out
}

/// Every subcommand, nested ones too (`lease check`), with its words.
fn subcommands(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let path = format!("{prefix}{}", sub.get_name());
        out.push((path.clone(), sub.clone()));
        subcommands(sub, &format!("{path} "), out);
    }
}

fn expected_files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        // The registration script of the dynamic completion, as
        // `agentcron completions SHELL` prints it.
        let out = agentcron::commands::completions::script(shell);
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
    // Built, so that every subcommand carries the global options.
    let mut cmd = agentcron::cli::Cli::command();
    cmd.build();
    files.push((root().join("man/agentcron.1"), page(cmd.clone(), "")));
    let mut subs = Vec::new();
    subcommands(&cmd, "", &mut subs);
    for (path, sub) in subs {
        // clap names are &'static str; a leaked string per page is fine in a test.
        let name: &'static str =
            Box::leak(format!("agentcron-{}", path.replace(' ', "-")).into_boxed_str());
        let sub = sub.name(name);
        files.push((
            root().join("man").join(format!("{name}.1")),
            page(sub, &path),
        ));
    }
    files.push((
        root().join("man/agentcron-executor.7"),
        roff_page("agentcron-executor", EXECUTOR_SOURCE).into_bytes(),
    ));
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

#[test]
fn every_man_page_has_the_sections_an_operator_looks_for() {
    let mut pages = 0;
    for (path, content) in expected_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".1") {
            continue;
        }
        pages += 1;
        let text = String::from_utf8(content).unwrap();
        for section in [
            ".SH SYNOPSIS",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH EXAMPLES",
            ".SH \"GLOBAL OPTIONS\"",
        ] {
            assert!(text.contains(section), "{name} lacks {section}");
        }
        let synopsis = text
            .split(".SH SYNOPSIS\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap();
        assert!(
            synopsis.contains("[\\fB\\-\\-db\\fR \\fIPATH\\fR]"),
            "{name}: {synopsis}"
        );
        assert!(!text.contains("\\-\\-now"), "{name} shows the hidden --now");
    }
    assert!(pages > 20);
    assert!(root().join("man/agentcron-lease-check.1").exists());
    let main = std::fs::read_to_string(root().join("man/agentcron.1")).unwrap();
    assert!(
        main.contains(
            "* * * * * PATH=/usr/local/bin:/usr/bin:/bin /usr/local/bin/agentcron \\-\\-db /"
        ),
        "the cron line is absolute"
    );
    assert!(main.contains("agentcron\\-executor(7)"));
    let executor = std::fs::read_to_string(root().join("man/agentcron-executor.7")).unwrap();
    for needle in [
        "AGENTCRON_LEASE_TOKEN",
        "EX_TEMPFAIL",
        "awaiting_confirmation",
    ] {
        assert!(
            executor.contains(needle),
            "agentcron-executor(7) lacks {needle}"
        );
    }
}
