//! Dynamic shell completion (docs/CONTRACT.md §15), through the real shells:
//! each sources the script `agentcron completions SHELL` prints, and the
//! `agentcron` it calls back is the binary under test (first on PATH).
//! bash: COMP_WORDS/COMP_CWORD and the function `complete -p` names; fish:
//! `complete -C`; zsh: a pseudo-terminal (zsh/zpty) pressing TAB.
//!
//! A missing shell skips with a note, unless AGENTCRON_REQUIRE_SHELLS is set
//! (CI installs them with scripts/ensure-shells).
use crate::support::{assert_contains, on_postgres, unknown_run, Rig, Task, TestEnv, BIN, T0};

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sh {
    Bash,
    Zsh,
    Fish,
}

const SHELLS: [Sh; 3] = [Sh::Bash, Sh::Zsh, Sh::Fish];

impl Sh {
    fn name(self) -> &'static str {
        match self {
            Sh::Bash => "bash",
            Sh::Zsh => "zsh",
            Sh::Fish => "fish",
        }
    }
}

/// What the shells see: the binary's folder first on PATH, the test's HOME
/// and database, nothing else from the caller's environment.
struct Shells<'a> {
    env: &'a TestEnv,
    available: Vec<Sh>,
}

impl<'a> Shells<'a> {
    fn new(env: &'a TestEnv) -> Shells<'a> {
        let mut available = Vec::new();
        for sh in SHELLS {
            let found = Command::new(sh.name())
                .args(["-c", "exit 0"])
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .status()
                .is_ok_and(|s| s.success());
            if found {
                available.push(sh);
            } else if std::env::var_os("AGENTCRON_REQUIRE_SHELLS").is_some() {
                panic!("{} is not installed: run scripts/ensure-shells", sh.name());
            } else {
                crate::support::skipped(&format!(
                    "{} is not installed, its completion is not tested: run scripts/ensure-shells",
                    sh.name()
                ));
            }
        }
        for sh in &available {
            let script = env.run(&["completions", sh.name()]).ok().stdout;
            std::fs::write(script_path(env, *sh), script).unwrap();
        }
        Shells { env, available }
    }

    fn command(&self, program: &str) -> Command {
        let bin_dir = Path::new(BIN).parent().unwrap();
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display()),
            )
            .env("HOME", self.env.dir.path())
            .env("TMPDIR", self.env.dir.path())
            .env("TERM", "xterm")
            .env("LOGNAME", "tester")
            .env("AGENTCRON_DB", self.env.db_arg());
        cmd
    }

    /// The values `sh` offers for `line` (the cursor at its end).
    fn complete(&self, sh: Sh, line: &str) -> Vec<String> {
        let script = script_path(self.env, sh);
        let out = match sh {
            Sh::Bash => self
                .command("bash")
                .args(["--norc", "--noprofile", "-c", BASH_HARNESS, "_"])
                .arg(&script)
                .arg(line)
                .args(bash_words(line))
                .output(),
            Sh::Fish => self
                .command("fish")
                .args(["--no-config", "-c"])
                .arg(format!(
                    "source {}; complete -C {}",
                    fish_quote(&script.display().to_string()),
                    fish_quote(line)
                ))
                .output(),
            Sh::Zsh => self
                .command("timeout")
                .args(["30", "zsh", "-f"])
                .arg(fixture("zsh-complete.zsh"))
                .arg(&script)
                .arg(line)
                .output(),
        }
        .unwrap_or_else(|e| panic!("{}: {e}", sh.name()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{} on {line:?}: {}\n{stderr}",
            sh.name(),
            out.status
        );
        assert!(
            stderr.is_empty(),
            "{} printed errors completing {line:?}: {stderr}",
            sh.name()
        );
        stdout
            .lines()
            .map(|l| {
                // fish: "value<TAB>help"; our zsh harness: "value -- help".
                let value = l.split('\t').next().unwrap_or_default();
                value.split(" -- ").next().unwrap_or_default().trim_end()
            })
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Asserts that every available shell offers exactly `expected` (in
    /// any order) for `line`.
    fn expect(&self, line: &str, expected: &[&str]) {
        for sh in &self.available {
            let mut got = self.complete(*sh, line);
            got.sort();
            let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{} completing {line:?}", sh.name());
        }
    }

    /// Every available shell's candidates for `line`.
    fn each(&self, line: &str) -> Vec<(Sh, Vec<String>)> {
        self.available
            .iter()
            .map(|sh| (*sh, self.complete(*sh, line)))
            .collect()
    }
}

/// Sources the script, sets COMP_WORDS (the words after the line),
/// COMP_CWORD, COMP_LINE and COMP_POINT as bash does for the line, calls the
/// function `complete -p agentcron` names, prints COMPREPLY.
const BASH_HARNESS: &str = r#"
source "$1" || exit 1
COMP_LINE=$2
COMP_POINT=${#COMP_LINE}
shift 2
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_TYPE=9
spec=$(complete -p agentcron) || exit 1
fn=${spec##*-F }
fn=${fn%% *}
"$fn" agentcron "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
(( ${#COMPREPLY[@]} )) && printf '%s\n' "${COMPREPLY[@]}"
exit 0
"#;

/// COMP_WORDS as bash makes them: words split at blanks and at the
/// COMP_WORDBREAKS characters `=` and `:` (each a word of its own) outside
/// quotes, quotes kept as typed; a trailing blank starts an empty word.
fn bash_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                word.push(c);
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.push(c);
            }
            (None, ' ') => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, '=' | ':') => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                words.push(c.to_string());
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() || line.ends_with([' ', '=', ':']) {
        words.push(word);
    }
    words
}

fn script_path(env: &TestEnv, sh: Sh) -> PathBuf {
    env.path(&format!("completion.{}", sh.name()))
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn fish_quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `--db` on the line, quoted as a person would type it.
fn db_flag(env: &TestEnv) -> String {
    format!("--db '{}'", env.db_arg())
}

#[test]
fn task_names_and_ids_complete_from_the_database() {
    let env = TestEnv::new();
    for name in ["daily-report", "data-sync", "weekly"] {
        Task::named(name).daily("09:00").confirm(&env);
    }
    let unnamed = Task::new().instruction("y").confirm(&env);
    let unnamed_id = unnamed.task_id.as_str().to_string();
    let gone = Task::named("dropped").instruction("z").confirm(&env);
    env.run(&["delete", gone.task_id.as_str()]).ok();
    Task::named("dark-ops")
        .instruction("w")
        .by("unix:other")
        .confirm(&env);
    let shells = Shells::new(&env);

    // A task id is random hex: one of the caller's may begin with "da" too,
    // and is offered then (the word may start an id).
    let mut da = vec!["daily-report".to_string(), "data-sync".to_string()];
    for task in env.json(&["list"]).as_array().unwrap() {
        let (id, name) = (task["task_id"].as_str().unwrap(), task["name"].as_str());
        if id.starts_with("da") && !name.is_some_and(|n| n.starts_with("da")) {
            da.push(id.to_string());
        }
    }
    let da: Vec<&str> = da.iter().map(String::as_str).collect();
    shells.expect("agentcron show da", &da);
    shells.expect("agentcron pause dai", &["daily-report"]);
    shells.expect("agentcron resume we", &["weekly"]);
    shells.expect("agentcron runs data", &["data-sync"]);
    shells.expect("agentcron draft --replace wee", &["weekly"]);
    // A deleted task is not offered.
    shells.expect("agentcron delete dro", &[]);
    // An id prefix completes to the whole id.
    let prefix = &unnamed_id[..4];
    shells.expect(&format!("agentcron explain {prefix}"), &[&unnamed_id]);
    shells.expect(&format!("agentcron next {prefix}"), &[&unnamed_id]);
    // With nothing typed: every live task, the unnamed one by its id.
    for (sh, got) in shells.each("agentcron show ") {
        for want in ["daily-report", "data-sync", "weekly", unnamed_id.as_str()] {
            assert!(got.iter().any(|g| g == want), "{sh:?}: {want} in {got:?}");
        }
        assert!(!got.iter().any(|g| g == "dropped"), "{sh:?}: {got:?}");
    }

    // Only the caller's own tasks (another owner's cannot be named), the
    // caller being `--as` when the line has it.
    shells.expect("agentcron show dar", &[]);
    shells.expect("agentcron --as unix:other show d", &["dark-ops"]);
    shells.expect(
        "agentcron show --as unix:tester,unix:other dar",
        &["dark-ops"],
    );

    // The database the line names, not the environment's.
    let elsewhere = TestEnv::new();
    let other = Shells::new(&elsewhere);
    other.expect("agentcron show da", &[]);
    // The same candidates as from `env` itself: a task id that begins with
    // "da" too (1 in 256 of them), as above.
    other.expect(&format!("agentcron {} show da", db_flag(&env)), &da);
    other.expect(&format!("agentcron show {} da", db_flag(&env)), &da);
    // `--db=PATH`, which bash splits into three words.
    other.expect(&format!("agentcron --db='{}' show da", env.db_arg()), &da);
    // And the tenant it names.
    other.expect(
        &format!("agentcron {} --tenant acme show da", db_flag(&env)),
        &[],
    );
}

#[test]
fn run_ids_complete_for_the_commands_that_take_them() {
    let rig = Rig::new();
    // A run parked on a person's answer (until long after this test)…
    rig.env.set_env("FIXTURE_MODE", "awaiting");
    rig.env.set_env("FIXTURE_DEADLINE", "2026-12-10T00:00:00Z");
    Task::named("parked").every("1d").confirm(&rig.env);
    rig.env.set_now(T0 + 86400);
    rig.tick(&[]).ok();
    let parked = rig.runs("parked")[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // …and one whose outcome is unknown (its executor timed out).
    let unknown = unknown_run(&rig, "frozen");
    let shells = Shells::new(&rig.env);

    // reconcile lists the unknown run only; approve and deny the parked one.
    for (sh, got) in shells.each("agentcron reconcile ") {
        assert!(got.contains(&unknown), "{sh:?}: {got:?}");
        assert!(!got.contains(&parked), "{sh:?}: {got:?}");
    }
    shells.expect(
        &format!("agentcron reconcile {}", &unknown[..2]),
        &[&unknown],
    );
    shells.expect(&format!("agentcron approve {}", &parked[..3]), &[&parked]);
    shells.expect(&format!("agentcron deny {}", &parked[..3]), &[&parked]);
    // Long enough not to begin the parked run's id too (1 in 4,096 do at 3).
    let apart = (3..unknown.len())
        .find(|&n| unknown[..n] != parked[..n])
        .unwrap();
    shells.expect(&format!("agentcron approve {}", &unknown[..apart]), &[]);
    // No run holds a lease now.
    shells.expect(&format!("agentcron lease check {}", &unknown[..3]), &[]);
    // explain takes a task or any run, once the word has begun.
    shells.expect(&format!("agentcron explain {}", &unknown[..5]), &[&unknown]);
    shells.expect("agentcron explain fro", &["frozen"]);
}

#[test]
fn zones_and_enumerated_values_complete() {
    let env = TestEnv::new();
    let shells = Shells::new(&env);
    shells.expect("agentcron draft --tz Asia/Sh", &["Asia/Shanghai"]);
    shells.expect("agentcron draft --tz Europe/Lon", &["Europe/London"]);
    shells.expect(
        "agentcron runs --status ",
        crate::reliability::LEGAL_STATUSES,
    );
    shells.expect("agentcron list --state pa", &["paused"]);
    shells.expect(
        "agentcron list --state ",
        &["active", "paused", "completed", "deleted", "error"],
    );
    shells.expect(
        "agentcron draft --daily 09:00 --days week",
        &["weekdays", "weekends"],
    );
    shells.expect(
        "agentcron draft --daily 09:00 --days mon,t",
        &["mon,tue", "mon,thu"],
    );
    shells.expect(
        "agentcron draft --policy ",
        &["read_only", "confirm_writes"],
    );
    shells.expect(
        "agentcron reconcile abcd --decision confirmed_",
        &["confirmed_succeeded", "confirmed_failed"],
    );
    shells.expect("agentcron completions fi", &["fish"]);
}

#[test]
fn the_hidden_now_is_never_offered() {
    let env = TestEnv::new();
    let shells = Shells::new(&env);
    for line in [
        "agentcron --n",
        "agentcron --no",
        "agentcron show --n",
        "agentcron list --",
        "agentcron tick --",
    ] {
        for (sh, got) in shells.each(line) {
            for hidden in ["--now", "--kill-grace", "--notify-timeout"] {
                assert!(!got.iter().any(|g| g == hidden), "{sh:?} {line:?}: {got:?}");
            }
            if line.ends_with("--") {
                assert!(got.iter().any(|g| g == "--db"), "{sh:?} {line:?}: {got:?}");
            }
        }
    }
    shells.expect("agentcron list --st", &["--state"]);
}

#[test]
fn no_database_means_no_candidates_and_nothing_created() {
    let env = TestEnv::new();
    let missing = env.path("nowhere/agentcron.db");
    let shells = Shells::new(&env);
    for line in [
        "agentcron show da".to_string(),
        format!("agentcron --db {} show da", missing.display()),
        format!("agentcron reconcile --db={} ab", missing.display()),
        "agentcron approve 12".to_string(),
    ] {
        shells.expect(&line, &[]);
    }
    assert!(!env.db.exists(), "completion created {}", env.db.display());
    assert!(!env.db.parent().unwrap().exists());
    assert!(!env.path("nowhere").exists());
    // A PostgreSQL schema with no tables yet is a store not made: it stays
    // without tables (completion never migrates).
    if let Some(schema) = env.pg_schema() {
        let tables = env.count(&format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = '{schema}'"
        ));
        assert_eq!(tables, 0, "completion created tables in {schema}");
    }
}

/// The schema version the store reports: `user_version` on SQLite, the
/// newest row of `agentcron_schema` on PostgreSQL.
fn schema_version(env: &TestEnv) -> i64 {
    if on_postgres() {
        env.count("SELECT max(version) FROM agentcron_schema")
    } else {
        env.count("PRAGMA user_version")
    }
}

/// Makes the store say it is at schema `version` (its tables unchanged).
fn set_schema_version(env: &TestEnv, version: i64) {
    if on_postgres() {
        env.sql(&format!(
            "DELETE FROM agentcron_schema; INSERT INTO agentcron_schema (version) VALUES ({version})"
        ));
    } else {
        env.sql(&format!("PRAGMA user_version = {version}"));
    }
}

#[test]
fn a_store_at_another_schema_offers_nothing_and_is_left_as_it_was() {
    let env = TestEnv::new();
    Task::named("daily-report").daily("09:00").confirm(&env);
    let shells = Shells::new(&env);
    shells.expect("agentcron show dai", &["daily-report"]);
    let latest = if on_postgres() {
        agentcron::store::postgres::schema::LATEST
    } else {
        agentcron::store::sqlite::schema::LATEST
    };
    // An older schema is not migrated (completion never writes), a newer
    // one not guessed at: both offer nothing rather than an error.
    for version in [latest - 1, latest + 1] {
        set_schema_version(&env, version);
        let before = env.db_bytes();
        shells.expect("agentcron show dai", &[]);
        shells.expect("agentcron explain dai", &[]);
        assert_eq!(
            schema_version(&env),
            version,
            "completion migrated the store"
        );
        assert!(
            env.db_bytes() == before,
            "completion changed the store at schema {version}"
        );
    }
    // The tables were whole all along: at this agentcron's schema again,
    // the task is offered.
    set_schema_version(&env, latest);
    shells.expect("agentcron show dai", &["daily-report"]);
}

#[test]
fn the_registration_script_is_what_complete_prints() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let printed = env.run(&["completions", shell]).ok().stdout;
        let out = env
            .command(&[])
            .env("COMPLETE", shell)
            .output()
            .expect("run agentcron");
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim_end(),
            printed.trim_end(),
            "{shell}"
        );
        assert!(printed.contains("COMPLETE"), "{shell}: {printed}");
    }
    // A shell agentcron does not know is a usage error, said once.
    let out = env.command(&[]).env("COMPLETE", "tcsh").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("agentcron: error: "), "{stderr}");
    assert_contains(&stderr, "tcsh");
}

#[test]
fn zsh_completes_on_the_first_tab_when_installed_in_fpath() {
    let env = TestEnv::new();
    Task::named("daily-report").daily("09:00").confirm(&env);
    let shells = Shells::new(&env);
    if !shells.available.contains(&Sh::Zsh) {
        return;
    }
    // As the README installs it: the file `_agentcron` in a $fpath folder.
    let folder = env.path("zfunc");
    std::fs::create_dir_all(&folder).unwrap();
    let script = folder.join("_agentcron");
    std::fs::copy(script_path(&env, Sh::Zsh), &script).unwrap();
    let out = shells
        .command("timeout")
        .args(["30", "zsh", "-f"])
        .arg(fixture("zsh-complete.zsh"))
        .arg(&script)
        .arg("agentcron show dai")
        .arg("fpath")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout
            .lines()
            .map(|l| l.split(" -- ").next().unwrap())
            .collect::<Vec<_>>(),
        ["daily-report"],
        "{stdout}"
    );
}
