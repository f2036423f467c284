//! `completions/` and `man/` are generated from the clap definitions and
//! committed. This test fails when they are stale; run it with
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
        ],
        "systemd" => &["agentcron systemd --executor /usr/local/bin/run-agent --env AGENT_HOME=/srv/agent"],
        "sudoers" => &[
            "agentcron sudoers --run-as agent --executor /usr/local/bin/run-agent --notifier /usr/local/bin/notify > agentcron-agent",
            "visudo -cf agentcron-agent && install -m 0440 agentcron-agent /etc/sudoers.d/agentcron-agent",
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
        "zone unset" => &["agentcron zone unset unix:alice"],
        _ => &[],
    }
}

/// The executor and notifier protocols, agentcron-executor(7).
const EXECUTOR_PAGE: &str = r#".TH agentcron-executor 7 "agentcron 0.1.0"
.SH NAME
agentcron\-executor \- the executor and notifier protocols of agentcron
.SH EXECUTOR
\fBagentcron tick\fR splits \fB\-\-executor\fR (or \fBAGENTCRON_EXECUTOR\fR) into argv by shell word
rules and runs it without a shell, in its own process group. Task data arrives only on stdin, as
one JSON object:
.TP
\fBtask\fR, \fBrun\fR
the task and the run, as \fBagentcron show \-\-json\fR and \fBagentcron runs \-\-json\fR print them.
.TP
\fBinstruction\fR, \fBpolicy\fR, \fBtimezone\fR
what the person confirmed, from the task's canonical payload (checked against its hash at the claim).
.TP
\fBlease_token\fR, \fBpayload_hash\fR
the run's lease and the confirmed payload's SHA\-256.
.TP
\fBcontinuation\fR
null, or for a parked run that a person approved:
\fB{"kind":"confirmation"|"authorization","wait_id":W,"decision":"approved"}\fR.
.TP
\fBprevious\fR
null when the task has no settled run, else the task's last settled run (any outcome but running
or parked) and when it last succeeded, so "what changed since the last run" needs no memory of its
own: \fBrun_id\fR, \fBscheduled_for\fR (the occurrence), \fBstatus\fR, \fBfinished_at\fR,
\fBsummary\fR, and \fBlast_success_at\fR (null when it never succeeded). Times are RFC 3339 in
UTC; when the last run was pruned, only \fBlast_success_at\fR is left.
.PP
The environment is exactly this, nothing else of the tick's: \fBPATH\fR, \fBHOME\fR, \fBUSER\fR,
\fBLOGNAME\fR, \fBLANG\fR, \fBLC_*\fR, \fBTZ\fR and \fBTMPDIR\fR as the tick has them (under
\fB\-\-run\-as USER\fR, \fBHOME\fR, \fBUSER\fR and \fBLOGNAME\fR are USER's); the names the operator
passes with \fBtick \-\-pass\-env NAME\fR (or \fBAGENTCRON_PASS_ENV\fR); and the run's own
\fBAGENTCRON_TENANT\fR, \fBAGENTCRON_TASK_ID\fR, \fBAGENTCRON_RUN_ID\fR, \fBAGENTCRON_LEASE_TOKEN\fR and
\fBAGENTCRON_LEASE_ENDPOINT\fR (the socket through which the tick answers \fBlease check\fR). A run
never receives the store's location or credentials: no \fBAGENTCRON_DB\fR, \fBAGENTCRON_AS\fR,
\fBPGPASSWORD\fR, \fBPGPASSFILE\fR, \fBPGSERVICEFILE\fR, nor any other \fBAGENTCRON_*\fR or \fBPG*\fR
name (\fB\-\-pass\-env\fR refuses them). Under \fB\-\-run\-as\fR the run starts in \fB/\fR.
.PP
The result is the last non\-empty stdout line when it is a JSON object with \fBstatus\fR
(\fBsucceeded\fR, \fBfailed\fR, \fBdelivery_failed\fR, \fBawaiting_confirmation\fR,
\fBawaiting_authorization\fR) and an optional \fBsummary\fR; otherwise exit 0 is \fBsucceeded\fR and
anything else \fBfailed\fR, with the tail of stdout as summary. The two awaiting statuses need
\fBwait_id\fR (a non\-empty string) and \fBwait_deadline\fR, an RFC 3339 time with its offset
(\fB2026\-12\-04T10:00:00Z\fR, \fB2026\-12\-04T18:00:00+08:00\fR); anything else is refused: the run
is \fBfailed\fR with a summary naming the malformed field. A reply may say \fB"notify":false\fR to
silence the notice of a success whose news is not worth telling, or \fB"notify":true\fR to send it
whatever the task's notice policy; it is ignored for anything but a success.
.PP
Of stdout and of stderr the last 1 MiB is kept (the rest is read and dropped). A last line longer
than that lost its beginning: when what is left ends with \fB}\fR (it may have been a reply, a
failure too) the run is \fBfailed\fR as a malformed reply, whatever the exit code; keep replies
short and put long output before them.
.PP
Killed by a signal, past \fB\-\-timeout\fR (the whole process group is killed: TERM, then KILL) or
after losing its lease, the run is \fBunknown\fR and waits for \fBagentcron reconcile\fR.
.PP
Nothing a run starts outlives it: the tick is the child subreaper, so a process that leaves the
group (\fBsetsid\fR, a double fork) comes back to the tick when its parent exits, and is killed
(TERM, then KILL) and reaped when its run ends, or when the tick exits. Inside a run, \fBconfirm\fR,
\fBapply\fR, \fBresume\fR, \fBtrigger\fR, \fBapprove\fR, \fBdeny\fR, \fBzone set\fR, \fBimport\fR
and \fBreconcile\fR \fIRUN\fR refuse with exit 4 (the run's \fBAGENTCRON_RUN_ID\fR, or descent from
the tick that runs it, tells). At the same unix user this is a speed bump: the wall is running the
runs as another user.
.PP
An executor fences its side effects with
.PP
.nf
agentcron lease check "$AGENTCRON_RUN_ID" \-\-token "$AGENTCRON_LEASE_TOKEN"
.fi
.PP
which exits 0 while the lease holds and 5 when it does not (lost, or the run settled). Inside a
run it asks the tick that holds the lease, through \fBAGENTCRON_LEASE_ENDPOINT\fR, and needs no
access to the store; the answer comes within milliseconds.
.SH NOTIFIER
Every settled run (also \fBmissed\fR and \fBskipped_overlap\fR runs, which never ran) has a notice,
which the task's notice policy (\fBdraft \-\-notify\fR: always, attention, failures, never) sends or
holds back as \fBsuppressed\fR with its reason. The notifier (\fB\-\-notifier\fR or
\fBAGENTCRON_NOTIFIER\fR) gets on stdin one JSON object:
.TP
\fBtask\fR, \fBrun\fR
as for the executor.
.TP
\fBtarget\fR
where to deliver, as the task's payload says (\fBdraft \-\-target\fR).
.TP
\fBmessage\fR
one line of human text about the outcome.
.TP
\fBkind\fR
\fBfailure\fR, \fBrecovery\fR (the first success after failures), \fBsuccess\fR, \fBunknown\fR,
\fBmissed\fR, \fBskipped\fR, \fBparked\fR (waiting for \fBagentcron approve\fR), \fBpaused\fR (the
task paused itself after \fB\-\-pause\-after\fR failures); null for notices written before the policy.
.TP
\fBsuppressed_since_last\fR
how many notices of the task the policy held back since the last one sent; \fBmessage\fR then says
so ("3 similar failures since 09:00 were not sent").
.PP
The notifier's environment is the executor's allowlist and passed names, with the run's
\fBAGENTCRON_TENANT\fR, \fBAGENTCRON_RUN_ID\fR and \fBAGENTCRON_DELIVERY_ID\fR (for a confirmation code
sent by \fBagentcron mcp\fR: \fBAGENTCRON_TENANT\fR, \fBAGENTCRON_DRAFT_ID\fR and
\fBAGENTCRON_NOTICE_KIND\fR).
.PP
Exit 0: delivered. Exit 75 (EX_TEMPFAIL, "nothing was sent"): pending again, for a later tick.
Anything else, a crash, or the deadline passing: \fBunknown\fR, never resent.
.SH "SEE ALSO"
agentcron(1), agentcron\-tick(1), agentcron\-draft(1), agentcron\-lease\-check(1),
agentcron\-reconcile(1)
"#;

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
        EXECUTOR_PAGE.as_bytes().to_vec(),
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
