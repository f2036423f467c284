//! Scenario 4: malformed command lines. Each exits with 2 (or the docs/CONTRACT.md
//! §10 code of what it names: 3 for a task that is not there, 1 for a
//! path the file system refuses), never 0 and never 101; stderr explains
//! it without raw control characters; the database is byte-identical.
use crate::support::{assert_contains, draft_ids, Task, TestEnv};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use super::{raw_controls, seeded};
use crate::mcp::{text, RawSession};
use serde_json::json;
use std::os::unix::process::CommandExt;

pub struct Case {
    pub args: Vec<OsString>,
    pub env: Vec<(&'static str, OsString)>,
    pub codes: &'static [i32],
}

fn case(args: &[&str], codes: &'static [i32]) -> Case {
    Case {
        args: args.iter().map(OsString::from).collect(),
        env: Vec::new(),
        codes,
    }
}

fn bytes_case(args: &[&[u8]], codes: &'static [i32]) -> Case {
    Case {
        args: args
            .iter()
            .map(|a| OsStr::from_bytes(a).to_os_string())
            .collect(),
        env: Vec::new(),
        codes,
    }
}

fn env_case(key: &'static str, value: &[u8], args: &[&str], codes: &'static [i32]) -> Case {
    let mut c = case(args, codes);
    c.env.push((key, OsStr::from_bytes(value).to_os_string()));
    c
}

pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs with a deadline; a process still alive after it is killed and
/// reported as `code: None`.
pub fn run_bounded(mut cmd: std::process::Command, deadline: Duration) -> Ran {
    use std::io::Read;
    let began = Instant::now();
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentcron");
    // Drain the pipes on threads so a chatty child cannot block on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).ok();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).ok();
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if began.elapsed() > deadline {
            child.kill().ok();
            child.wait().ok();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    Ran {
        code: status.and_then(|s| s.code()).or(signal.map(|s| -s)),
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        elapsed: began.elapsed(),
    }
}

fn cases(env: &TestEnv) -> Vec<Case> {
    let big = "x".repeat(100 * 1024);
    let mut all = Vec::new();
    // Every subcommand with its required arguments missing.
    for args in [
        &["confirm"][..],
        &["confirm", "0000"],
        &["show"],
        &["pause"],
        &["resume"],
        &["delete"],
        &["next"],
        &["explain"],
        &["lease"],
        &["lease", "check"],
        &["lease", "check", "run"],
        &["approve"],
        &["approve", "run"],
        &["deny"],
        &["deny", "run"],
        &["reconcile", "run"],
        &["reconcile", "run", "--decision", "abandoned"],
        &["prune"],
        &["completions"],
        &["draft"],
        &["draft", "--instruction", "x"],
        &["draft", "--every", "1h"],
        &[],
        &["status", "--max-tick-age"],
        &["runs", "--status"],
        &["log", "--limit"],
    ] {
        all.push(case(args, &[2]));
    }
    // Unknown flags and subcommands.
    for args in [
        &["--bogus", "list"][..],
        &["list", "--bogus"],
        &["-Z", "list"],
        &["lisst"],
        &["tick", "--max-runs"],
        &["tick", "--lease", "forever"],
        &["tick", "--timeout", "-1s"],
        &["tick", "--lease", "0s"],
        &["list", "--state", "sleeping"],
        &["runs", "--status", "exploded"],
        &["reconcile", "run", "--decision", "maybe", "--reason", "r"],
        &["completions", "powershell-7"],
        &["status", "--max-tick-age", "soon"],
        &["prune", "--older-than", "yesterday"],
        &["", "list"],
        &["list", ""],
    ] {
        all.push(case(args, &[2]));
    }
    // NaN, infinities, negative, fractional and huge numbers.
    let numbers = [
        "NaN",
        "nan",
        "inf",
        "-inf",
        "-1",
        "1e3",
        "1.5",
        "0x10",
        "18446744073709551616",
        "99999999999999999999999999",
        "",
        " 1",
        "\u{0661}",
    ];
    let numeric_flags: [&[&str]; 6] = [
        &["next", "t1", "--count"],
        &["tick", "--max-runs"],
        &["tick", "--jobs"],
        &["runs", "--limit"],
        &["log", "--limit"],
        &draft_x(&["--in", "1h", "--max-retries"]),
    ];
    for flag in numeric_flags {
        for n in numbers {
            let mut args = flag.to_vec();
            args.push(n);
            all.push(case(&args, &[2]));
        }
    }
    // Times, dates and durations that do not exist.
    for schedule in [
        &["--at", "2026-02-30 09:00"][..],
        &["--at", "2027-02-29T09:00:00Z"],
        &["--at", "2026-13-01T00:00:00Z"],
        &["--at", "2026-12-31T24:00:00Z"],
        &["--at", "2026-12-31 24:00"],
        &["--at", "NaN"],
        &["--at", ""],
        &["--in", "inf"],
        &["--in", "-1h"],
        &["--in", "0s"],
        &["--in", "1.5h"],
        &["--every", "0s"],
        &["--every", "inf"],
        &["--every", "99999999999999w"],
        &["--every", "1h", "--start", "2027-02-29T00:00:00Z"],
        &["--daily", "24:00"],
        &["--daily", "23:60"],
        &["--daily", "-1:00"],
        &["--daily", "9:5:3"],
        &["--daily", ""],
        &["--daily", "09:00", "--days", ""],
        &["--cron", ""],
        &["--cron", "* * * * * *"],
        &["--cron", "*/0 * * * *"],
        &["--cron", "0 0 31 2 *"],
        &["--cron", "0 24 * * *"],
        &["--cron", "0 0 0 * *"],
        &["--cron", "0 0 * 13 *"],
        &["--cron", "0 0 * * 8"],
        &["--cron", "5-1 * * * *"],
        &["--in", "1h", "--grace", "NaN"],
        &["--in", "1h", "--retry-backoff", "-5m"],
        &["--in", "1h", "--ttl", "0s"],
    ] {
        all.push(case(&draft_x(schedule), &[2]));
    }
    // Zones that are paths, or not zones.
    for zone in [
        "../../../etc/passwd",
        "/etc/localtime",
        "UTC/../UTC",
        "",
        "America/New York",
        "\u{1b}[2J",
        "Europe/\u{202e}nilreB",
    ] {
        all.push(case(&draft_x(&["--daily", "09:00", "--tz", zone]), &[2]));
    }
    all.push(env_case(
        "AGENTCRON_TZ",
        b"../../etc/shadow",
        &draft_x(&["--daily", "09:00"]),
        &[2],
    ));
    // Control and bidi characters in every kind of argument. (Values that
    // clap itself echoes are tried with ESC and BEL only, which clap strips
    // when stderr is not a terminal; C1 and bidi ones are pinned as a defect
    // by `clap_usage_errors_escape_what_the_user_typed`.)
    for evil in [
        "a\u{1b}[31mred",
        "\u{9b}31m",
        "x\u{202e}y",
        "\u{2066}z",
        "bell\u{7}",
    ] {
        all.push(case(&["show", evil], &[3]));
        all.push(case(&["pause", evil], &[3]));
        all.push(case(&["explain", evil], &[3]));
        all.push(case(&["runs", evil], &[3]));
        all.push(case(&draft_x(&["--in", "1h", "--name", evil]), &[2]));
        all.push(case(&draft_x(&["--daily", "09:00", "--days", evil]), &[2]));
        all.push(case(&draft_x(&["--cron", evil]), &[2]));
    }
    for evil in ["a\u{1b}[31mred", "bell\u{7}"] {
        all.push(case(&["list", "--state", evil], &[2]));
        all.push(case(&["tick", "--max-runs", evil], &[2]));
        all.push(case(&[evil], &[2]));
        all.push(case(&["list", &format!("--{evil}")], &[2]));
        all.push(case(&draft_x(&["--in", "1h", "--policy", evil]), &[2]));
    }
    for evil in ["a\u{1b}[31mred", "\u{9b}31m", "bell\u{7}"] {
        all.push(case(&["--tenant", evil, "list"], &[2]));
        all.push(case(&["--as", evil, "list"], &[2]));
    }
    // 100 kB arguments.
    all.push(case(&["draft", "--instruction", &big, "--in", "1h"], &[2]));
    all.push(case(&["show", &big], &[3]));
    all.push(case(&draft_x(&["--in", "1h", "--name", &big]), &[2]));
    all.push(case(&["--tenant", &big, "list"], &[2]));
    all.push(case(&["--as", &big, "list"], &[2]));
    all.push(case(&draft_x(&["--daily", "09:00", "--tz", &big]), &[2]));
    all.push(case(&draft_x(&["--cron", &big]), &[2]));
    all.push(case(&draft_x(&["--at", &big]), &[2]));
    all.push(case(&["confirm", &big, "--hash", &big], &[2, 3]));
    all.push(case(&["--db", &big, "list"], &[1, 2]));
    // Invalid UTF-8 in argv.
    let bad: &[u8] = b"a\xff\xfeb";
    for args in [
        &[&b"draft"[..], b"--instruction", bad, b"--in", b"1h"][..],
        &[b"show", bad],
        &[b"--tenant", bad, b"list"],
        &[b"--as", bad, b"list"],
        &[bad],
        &[b"list", b"--state", bad],
        &[
            b"draft",
            b"--instruction",
            b"x",
            b"--daily",
            b"09:00",
            b"--tz",
            bad,
        ],
        &[b"draft", b"--instruction", b"x", b"--cron", bad],
        &[b"confirm", bad, b"--hash", bad],
        &[b"next", b"t1", b"--count", bad],
    ] {
        all.push(bytes_case(args, &[2, 3]));
    }
    // The environment is input too.
    for now in [
        &b"NaN"[..],
        b"inf",
        b"-1e999",
        b"2026-02-30T00:00:00Z",
        b"tomorrow",
        b"\xff",
    ] {
        all.push(env_case("AGENTCRON_NOW", now, &["list"], &[2]));
    }
    for timeout in [&b"-1"[..], b"NaN", b"0s", b"1x"] {
        all.push(env_case("AGENTCRON_BUSY_TIMEOUT", timeout, &["list"], &[2]));
    }
    all.push(env_case("AGENTCRON_TENANT", b"a\x1bb", &["list"], &[2]));
    all.push(env_case(
        "AGENTCRON_EXECUTOR",
        b"'unbalanced",
        &["tick"],
        &[2],
    ));
    all.push(env_case("AGENTCRON_AS", b"ok,\x1b[31m", &["list"], &[2]));
    // Database paths that cannot hold the state.
    let dir = env.path("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = env.path("a-fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let real = env.path("real.db");
    // A real SQLite database to link to (on PostgreSQL runs, make one).
    if !env.db.exists() {
        let real = real.to_str().unwrap();
        env.run(&["--db", real, "draft", "--instruction", "x", "--in", "1h"])
            .ok();
    } else {
        std::fs::copy(&env.db, &real).unwrap();
    }
    let link = env.path("link.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let under_file = env.path("real.db/inside/agentcron.db");
    for db in [
        dir.as_os_str(),
        fifo.as_os_str(),
        link.as_os_str(),
        OsStr::new("/dev/null"),
        OsStr::new(":memory:"),
        OsStr::new(""),
        under_file.as_os_str(),
    ] {
        let mut c = case(&["list"], &[1, 2]);
        c.args.insert(0, db.to_os_string());
        c.args.insert(0, "--db".into());
        all.push(c);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Root writes through file modes, so a read-only file only means
        // something to an ordinary user (as root,
        // a_database_on_a_read_only_file_system_is_refused_cleanly uses a
        // read-only mount instead).
        let ro = env.path("read-only.db");
        std::fs::copy(&env.db, &ro).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o400)).unwrap();
        let mut c = case(&["pause", "t1"], &[1]);
        c.args.insert(0, ro.into_os_string());
        c.args.insert(0, "--db".into());
        all.push(c);
    }
    all
}

/// Runs every case; returns a line per case that misbehaved, and how many
/// cases ended with each exit code.
fn misbehaving(
    env: &TestEnv,
    cases: &[Case],
) -> (Vec<String>, std::collections::BTreeMap<Option<i32>, usize>) {
    let mut failures = Vec::new();
    let mut by_code = std::collections::BTreeMap::new();
    for c in cases {
        let mut cmd = env.command(&[]);
        cmd.args(&c.args);
        for (k, v) in &c.env {
            cmd.env(k, v);
        }
        let ran = run_bounded(cmd, Duration::from_secs(10));
        let shown = format!("{:?} {:?}", c.env, c.args)
            .chars()
            .take(200)
            .collect::<String>();
        *by_code.entry(ran.code).or_insert(0) += 1;
        let mut problems = Vec::new();
        match ran.code {
            None => problems.push(format!("still running after {:?}", ran.elapsed)),
            Some(code) if !c.codes.contains(&code) => {
                problems.push(format!("exit {code}, expected one of {:?}", c.codes))
            }
            _ => {}
        }
        if ran.stderr.trim().is_empty() {
            problems.push("stderr is empty".into());
        }
        let raw = raw_controls(&ran.stderr);
        if !raw.is_empty() {
            problems.push(format!("raw control characters on stderr: {raw:?}"));
        }
        if ran.stderr.contains("panicked") {
            problems.push("panic".into());
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{shown}: {}\n    stderr: {:?}",
                problems.join("; "),
                ran.stderr.chars().take(300).collect::<String>()
            ));
        }
    }
    (failures, by_code)
}

#[test]
fn malformed_command_lines_are_refused_cleanly_and_write_nothing() {
    let (_rng, _guard) = seeded("malformed_command_lines", 0);
    let env = TestEnv::new();
    Task::named("t1").instruction("seed").confirm(&env);
    let cases = cases(&env);
    assert!(cases.len() >= 120, "only {} cases", cases.len());
    let before = env.db_bytes();
    let others: Vec<_> = ["real.db"]
        .iter()
        .map(|n| std::fs::read(env.path(n)).unwrap())
        .collect();
    let (failures, by_code) = misbehaving(&env, &cases);
    assert_eq!(env.db_bytes(), before, "the database changed");
    let after: Vec<_> = ["real.db"]
        .iter()
        .map(|n| std::fs::read(env.path(n)).unwrap())
        .collect();
    assert_eq!(after, others, "a refused --db file changed");
    eprintln!("bad input: {} cases, exit codes {by_code:?}", cases.len());
    assert!(
        failures.is_empty(),
        "{} of {} cases misbehaved:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn assert_all_behave(env: &TestEnv, cases: &[Case]) {
    let before = env.db_bytes();
    let (failures, _) = misbehaving(env, cases);
    assert_eq!(env.db_bytes(), before, "the database changed");
    assert!(
        failures.is_empty(),
        "{} of {} cases misbehaved:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn clap_usage_errors_escape_what_the_user_typed() {
    let env = TestEnv::new();
    Task::named("t1").instruction("seed").confirm(&env);
    let mut cases = Vec::new();
    for evil in ["\u{9b}31m", "x\u{202e}y", "\u{2066}z"] {
        cases.push(case(&["list", "--state", evil], &[2]));
        cases.push(case(&["tick", "--max-runs", evil], &[2]));
        cases.push(case(&[evil], &[2]));
        cases.push(case(&["list", &format!("--{evil}")], &[2]));
        cases.push(case(&draft_x(&["--in", "1h", "--policy", evil]), &[2]));
    }
    assert_all_behave(&env, &cases);
    // On a terminal clap keeps ESC too: run under a pseudo-terminal.
    let out = std::process::Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "{} list --state \"$(printf 'a\\033[31mred')\"",
            crate::support::BIN
        ))
        .arg("/dev/null")
        .env("AGENTCRON_DB", &env.db)
        .output()
        .expect("script(1) runs the binary under a pty");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("\u{1b}[31mred"),
        "raw ESC from argv reached the terminal: {text:?}"
    );
}

#[test]
fn keys_with_bidi_overrides_are_refused() {
    let env = TestEnv::new();
    Task::named("t1").instruction("seed").confirm(&env);
    let mut cases = Vec::new();
    for evil in ["x\u{202e}y", "\u{2066}z"] {
        cases.push(case(&["--tenant", evil, "list"], &[2]));
        cases.push(case(&["--as", evil, "list"], &[2]));
    }
    assert_all_behave(&env, &cases);
}

#[test]
fn non_utf8_environment_values_are_refused() {
    let env = TestEnv::new();
    Task::named("t1").instruction("seed").confirm(&env);
    let cases: Vec<Case> = ["AGENTCRON_BUSY_TIMEOUT", "AGENTCRON_TZ", "AGENTCRON_NOW"]
        .into_iter()
        .map(|key| env_case(key, b"\xff", &["list"], &[2]))
        .collect();
    assert_all_behave(&env, &cases);
}

#[test]
fn usage_errors_in_json_mode_are_one_json_object() {
    let env = TestEnv::new();
    for args in [
        &["--json", "list", "--bogus"][..],
        &["--json", "tick", "--max-runs", "NaN"],
        &["--json", "show"],
    ] {
        let out = env.run(args);
        assert_eq!(out.code, 2, "{args:?}");
        let err: serde_json::Value = serde_json::from_str(out.stderr.trim())
            .unwrap_or_else(|e| panic!("{args:?}: stderr is not JSON ({e}): {}", out.stderr));
        assert_eq!(err["error"]["exit_code"], 2);
    }
}

/// A database the process may not write: on a read-only bind mount when
/// the suite runs as root (root writes through file modes), else a file
/// and folder without write permission. Writes exit 1 with one error line,
/// reads still work, nothing changes.
#[test]
fn a_database_on_a_read_only_file_system_is_refused_cleanly() {
    if crate::support::on_postgres() {
        return; // about the SQLite file itself
    }
    let env = TestEnv::new();
    Task::named("t1").instruction("seed").confirm(&env);
    let source = env.db.parent().unwrap().to_path_buf();
    let read_only = env.path("read-only");
    std::fs::create_dir_all(&read_only).unwrap();
    let _mount = ReadOnlyView::new(&source, &read_only);
    let before = env.db_bytes();
    let db = read_only.join("agentcron.db");
    let db = db.to_str().unwrap();
    let writes: Vec<Case> = [
        &["pause", "t1"][..],
        &["delete", "t1"],
        &["tick"],
        &["draft", "--instruction", "y", "--every", "1h"],
        &["prune", "--older-than", "1d"],
    ]
    .iter()
    .map(|args| {
        let mut all = vec!["--db", db];
        all.extend_from_slice(args);
        case(&all, &[1])
    })
    .collect();
    let (failures, _) = misbehaving(&env, &writes);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let list = env.run(&["--db", db, "list"]).ok();
    assert_contains(&list.stdout, "t1");
    assert_eq!(env.db_bytes(), before, "the read-only database changed");
}

/// `source` seen read-only at `view` until dropped.
struct ReadOnlyView {
    view: std::path::PathBuf,
    mounted: bool,
}

impl ReadOnlyView {
    fn new(source: &std::path::Path, view: &std::path::Path) -> ReadOnlyView {
        use std::os::unix::fs::PermissionsExt;
        use std::process::Command;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let bind = Command::new("mount")
                .arg("--bind")
                .arg(source)
                .arg(view)
                .status();
            assert!(bind.is_ok_and(|s| s.success()), "mount --bind failed");
            let ro = Command::new("mount")
                .args(["-o", "remount,bind,ro"])
                .arg(view)
                .status();
            assert!(ro.is_ok_and(|s| s.success()), "remount read-only failed");
            return ReadOnlyView {
                view: view.to_path_buf(),
                mounted: true,
            };
        }
        for entry in std::fs::read_dir(source).unwrap().flatten() {
            std::fs::copy(entry.path(), view.join(entry.file_name())).unwrap();
            std::fs::set_permissions(
                view.join(entry.file_name()),
                std::fs::Permissions::from_mode(0o400),
            )
            .unwrap();
        }
        std::fs::set_permissions(view, std::fs::Permissions::from_mode(0o500)).unwrap();
        ReadOnlyView {
            view: view.to_path_buf(),
            mounted: false,
        }
    }
}

impl Drop for ReadOnlyView {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg(&self.view)
                .status();
        }
    }
}

/// A 1 MiB tmpfs at `path` until dropped (root only).
pub struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    pub fn mount(path: &std::path::Path) -> SmallDisk {
        std::fs::create_dir_all(path).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs"])
            .arg(path)
            .status();
        assert!(status.is_ok_and(|s| s.success()), "mount tmpfs failed");
        SmallDisk(path.to_path_buf())
    }

    /// A small disk in `env`'s folder and the path of a store on it, where
    /// one can be mounted: None unless root, and on PostgreSQL (whose disk
    /// is the server's).
    pub fn holding_the_store(env: &TestEnv) -> Option<(SmallDisk, String)> {
        // SAFETY: geteuid has no preconditions.
        if crate::support::on_postgres() || unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let disk = SmallDisk::mount(&env.path("small"));
        let db = env.path("small/state/agentcron.db").display().to_string();
        Some((disk, db))
    }

    /// Writes a filler file until the disk is full.
    pub fn fill(&self) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.0.join("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_one_error_line_and_the_store_survives_it() {
    let env = TestEnv::new();
    let Some((disk, db)) = SmallDisk::holding_the_store(&env) else {
        return;
    };
    let db = db.as_str();
    let task = |name: &str| {
        let draft = env.json(&[
            "--db",
            db,
            "draft",
            "--instruction",
            "x",
            "--every",
            "1h",
            "--name",
            name,
        ]);
        let (id, hash) = draft_ids(&draft);
        env.run(&["--db", db, "confirm", id, "--hash", hash])
    };
    task("before").ok();
    disk.fill();
    let mut refused = 0;
    for args in [
        &["draft", "--instruction", "y", "--every", "1h"][..],
        &["pause", "before"],
    ] {
        let mut all = vec!["--db", db];
        all.extend_from_slice(args);
        let out = env.run(&all);
        if out.code == 0 {
            continue; // fitted in space SQLite had kept
        }
        refused += 1;
        let out = out.fails(1);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr
                .starts_with("agentcron: error: the disk holding the database is full (")
                && out.stderr.ends_with("); free some space, then retry\n"),
            "{}",
            out.stderr
        );
    }
    assert!(refused > 0, "a full disk refused nothing");
    std::fs::remove_file(env.path("small/filler")).unwrap();
    task("after").ok();
    let check = env.run(&["--db", db, "check"]).ok();
    assert_eq!(check.stdout, "ok: every invariant holds\n");
}

/// Long enough for a loaded machine, short enough that a hang fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `args` under the deadline with its address space capped at 2 GiB,
/// so a regression that buffers an endless input aborts on allocation
/// instead of taking the machine's memory with it.
/// `draft --instruction x` and `flags`.
fn draft_x<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["draft", "--instruction", "x"];
    args.extend_from_slice(flags);
    args
}

pub(crate) fn bounded(env: &TestEnv, args: &[&str]) -> Ran {
    let mut cmd = env.command(args);
    // SAFETY: setrlimit is async-signal-safe and touches no Rust state.
    unsafe {
        cmd.pre_exec(|| {
            let cap = 2 << 30;
            let limit = libc::rlimit {
                rlim_cur: cap,
                rlim_max: cap,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    run_bounded(cmd, DEADLINE)
}

/// Exit `code`, nothing on stdout, one error line (plus at most a hint)
/// that contains every one of `parts`.
pub(crate) fn one_error_line(ran: &Ran, code: i32, parts: &[&str]) {
    assert_eq!(
        ran.code,
        Some(code),
        "after {:?}; stderr: {}",
        ran.elapsed,
        ran.stderr
    );
    assert_eq!(ran.stdout, "");
    assert_one_line(&ran.stderr, parts);
}

pub(crate) fn assert_one_line(stderr: &str, parts: &[&str]) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("  hint: ")),
        "one error line and at most a hint: {stderr}"
    );
    assert!(lines[0].starts_with("agentcron: error: "), "{stderr}");
    for part in parts {
        assert!(lines[0].contains(part), "{part:?} missing from: {stderr}");
    }
}

/// (b) A full disk under `agentcron mcp` is said in the CLI's words (one
/// sentence and its hint), not SQLite's, and the session goes on.
#[test]
fn a_full_disk_under_mcp_is_said_as_the_cli_says_it() {
    let env = TestEnv::new();
    let Some((disk, db)) = SmallDisk::holding_the_store(&env) else {
        return;
    };
    let db = db.as_str();
    env.run(&["--db", db, "draft", "--instruction", "x", "--every", "1h"])
        .ok();
    let mut session = RawSession::start(&env, &["--db", db, "mcp"], "host");
    disk.fill();
    let mut refused = 0;
    for i in 0..20 {
        let instruction = format!("task {i} {}", "y".repeat(2000));
        let result = session.call("draft", json!({"instruction": instruction, "every": "1h"}));
        if result["isError"] == false {
            continue; // fitted in space SQLite had kept
        }
        refused += 1;
        let error = &result["structuredContent"]["error"];
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with("the disk holding the database is full ("),
            "{result}"
        );
        assert_eq!(error["hint"], "free some space, then retry", "{result}");
        assert_eq!(error["exit_code"], 1, "{result}");
        assert_eq!(
            text(&result),
            format!("agentcron: error: {message}\n  hint: free some space, then retry"),
        );
    }
    assert!(refused > 0, "a full disk refused nothing");
    std::fs::remove_file(env.path("small/filler")).unwrap();
    let after = session.call("draft", json!({"instruction": "z", "every": "1h"}));
    assert_eq!(after["isError"], false, "{after}");
    assert_eq!(session.finish(), 0);
}
