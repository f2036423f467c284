//! The test harness: `TestEnv` (a hermetic place to run the binary, here),
//! `Rig` and the shared builders (`rig`), background processes (`procs`).

pub mod procs;
pub mod rig;
pub mod tasks;
pub mod terminal;

pub use procs::{alive, fed, finished, gone, kill, spawn_tick, wait_for, wait_for_within};
pub use rig::{fixture, journal, orphaned_lease, parked_run, run_status, unknown_run, Rig};
pub use tasks::{
    daily, draft_ids, replace_draft, rfc3339, standup_following_shanghai, Task, SHANGHAI_0930,
};

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_agentcron");

pub const HOUR: i64 = 3600;

/// 2026-12-02T08:00:00Z, a Wednesday.
pub const T0: i64 = 1_796_198_400;

/// setpriv's flags that run a command as `nobody` (uid and gid 65534), with
/// no other groups: a user other than the store's owner.
pub const AS_NOBODY: [&str; 3] = ["--reuid=65534", "--regid=65534", "--clear-groups"];

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    /// The SQLite file (also when the suite runs against PostgreSQL: tests
    /// that pass their own `--db PATH` still get SQLite).
    pub db: PathBuf,
    /// Set when `AGENTCRON_TEST_STORE=postgres`: this test's own schema.
    pg: Option<PgSchema>,
    now: Cell<i64>,
    env: RefCell<Vec<(String, String)>>,
}

/// A schema of its own per test on the PostgreSQL server, dropped at the end.
pub struct PgSchema {
    base: String,
    schema: String,
}

impl PgSchema {
    fn create() -> PgSchema {
        let base = std::env::var("AGENTCRON_TEST_PG")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_string());
        let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
        let mut client = postgres::Client::connect(&base, postgres::NoTls).unwrap_or_else(|e| {
            panic!("AGENTCRON_TEST_STORE=postgres but {base} is unreachable: {e}")
        });
        client
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .expect("create test schema");
        PgSchema { base, schema }
    }

    pub fn url(&self) -> String {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-csearch_path%3D{}", self.base, self.schema)
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url(), postgres::NoTls).expect("connect to the test schema")
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
        }
    }
}

/// Whether this run of the suite targets PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var("AGENTCRON_TEST_STORE").is_ok_and(|v| v == "postgres")
}

/// What one invocation did.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// What a finished agentcron process did; a panic fails the test.
    #[track_caller]
    fn of(out: std::process::Output) -> Outcome {
        let outcome = Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert_ne!(outcome.code, 101, "agentcron panicked: {}", outcome.stderr);
        outcome
    }

    /// Asserts success and nothing on stderr.
    #[track_caller]
    pub fn ok(self) -> Outcome {
        assert_eq!(
            self.code, 0,
            "expected success; stderr: {}\nstdout: {}",
            self.stderr, self.stdout
        );
        self
    }

    /// Asserts the exit code and exactly one error line (plus optional
    /// indented cause/hint lines), and nothing on stdout.
    #[track_caller]
    pub fn fails(self, code: i32) -> Outcome {
        assert_eq!(
            self.code, code,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert!(
            self.stdout.is_empty(),
            "stdout should be empty, got {}",
            self.stdout
        );
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert!(!lines.is_empty(), "stderr should explain the failure");
        if code != 2 || lines[0].starts_with("agentcron: error:") {
            assert!(
                lines[0].starts_with("agentcron: error: "),
                "stderr: {}",
                self.stderr
            );
            assert_eq!(
                lines
                    .iter()
                    .filter(|l| l.starts_with("agentcron: error:"))
                    .count(),
                1,
                "one error line: {}",
                self.stderr
            );
        }
        assert!(!self.stderr.contains("panicked"), "panic: {}", self.stderr);
        self
    }

    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    /// stderr as JSON: what a `--json` caller reads of a failure.
    #[track_caller]
    pub fn stderr_json(&self) -> Value {
        serde_json::from_str(&self.stderr)
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {}", self.stderr))
    }

    #[track_caller]
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line ({e}): {l}")))
            .collect()
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("state").join("agentcron.db");
        TestEnv {
            dir,
            db,
            pg: on_postgres().then(PgSchema::create),
            now: Cell::new(T0),
            env: RefCell::new(Vec::new()),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn now(&self) -> i64 {
        self.now.get()
    }

    pub fn set_now(&self, at: i64) {
        self.now.set(at);
    }

    pub fn advance(&self, seconds: i64) {
        self.now.set(self.now.get() + seconds);
    }

    /// Writes `text` to the file `name` in this test's folder; returns
    /// its path.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write the test's file");
        path.display().to_string()
    }

    /// The executor fixture sleeps `seconds` (a `sleep` argument) before
    /// it answers.
    pub fn executors_sleep(&self, seconds: &str) {
        self.set_env("FIXTURE_MODE", "sleep");
        self.set_env("FIXTURE_SLEEP", seconds);
    }

    /// Sets an environment variable for every later invocation.
    pub fn set_env(&self, key: &str, value: &str) {
        let mut env = self.env.borrow_mut();
        env.retain(|(k, _)| k != key);
        env.push((key.to_string(), value.to_string()));
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("LOGNAME", "tester")
            .env("USER", "tester")
            .env("AGENTCRON_TZ", "UTC")
            .env("AGENTCRON_DB", self.db_arg())
            .env("AGENTCRON_NOW", self.now.get().to_string());
        let env = self.env.borrow();
        for (k, v) in env.iter() {
            cmd.env(k, v);
        }
        // A run receives only the allowlist and what the tick passes
        // (docs/CONTRACT.md §19): the variables a test sets for its
        // fixtures are passed, unless the test says what to pass itself.
        if !env.iter().any(|(k, _)| k == "AGENTCRON_PASS_ENV") {
            let pass: Vec<&str> = env
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| !k.starts_with("AGENTCRON_") && !k.starts_with("PG"))
                .collect();
            if !pass.is_empty() {
                cmd.env("AGENTCRON_PASS_ENV", pass.join(","));
            }
        }
        cmd
    }

    /// `agentcron args` in this test's environment alone, run through
    /// another program (setpriv, unshare, a pseudo-terminal): `wrapper`
    /// and `wrapper_args`, then the binary and `args`.
    pub fn command_through(&self, wrapper: &str, wrapper_args: &[&str], args: &[&str]) -> Command {
        let template = self.command(args);
        let mut cmd = Command::new(wrapper);
        cmd.args(wrapper_args)
            .arg(BIN)
            .args(args)
            .env_clear()
            .envs(template.get_envs().filter_map(|(k, v)| Some((k, v?))));
        cmd
    }

    #[track_caller]
    pub fn run(&self, args: &[&str]) -> Outcome {
        self.run_with_stdin(args, b"")
    }

    /// Runs `args` with the environment variable `var` unset, as on a host
    /// (an operator's shell) that does not set it.
    #[track_caller]
    pub fn run_without(&self, var: &str, args: &[&str]) -> Outcome {
        let out = self
            .command(args)
            .env_remove(var)
            .output()
            .expect("run agentcron");
        Outcome::of(out)
    }

    #[track_caller]
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Outcome {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agentcron");
        child.stdin.take().expect("stdin").write_all(stdin).ok();
        Outcome::of(child.wait_with_output().expect("wait agentcron"))
    }

    /// Runs with `--json`, asserts success and parses stdout.
    #[track_caller]
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        self.run(&all).ok().json()
    }

    /// Drafts with the given schedule flags and returns the draft JSON.
    #[track_caller]
    pub fn draft(&self, args: &[&str]) -> Value {
        let mut all = vec!["draft"];
        all.extend_from_slice(args);
        self.json(&all)
    }

    /// Drafts and confirms; returns the task JSON. The task is told of
    /// every settled run (`--notify always`) unless `args` say otherwise:
    /// the suites that count notices test delivery, not the notice policy,
    /// whose default (`attention`) tests/cli/notices/ covers.
    #[track_caller]
    pub fn task(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        if !args.iter().any(|a| *a == "--notify" || *a == "--replace") {
            args.extend(["--notify", "always"]);
        }
        let args = args.as_slice();
        let draft = self.draft(args);
        let id = draft["draft_id"].as_str().unwrap().to_string();
        let hash = draft["payload_hash"].as_str().unwrap().to_string();
        let mut confirm = vec!["confirm", id.as_str(), "--hash", hash.as_str()];
        // Confirm as the same caller in the same tenant.
        for pair in args
            .windows(2)
            .filter(|w| w[0] == "--as" || w[0] == "--tenant")
        {
            confirm.extend_from_slice(pair);
        }
        self.json(&confirm)
    }

    /// This test's PostgreSQL schema, when it runs on PostgreSQL.
    pub fn pg_schema(&self) -> Option<&str> {
        self.pg.as_ref().map(|pg| pg.schema.as_str())
    }

    /// What AGENTCRON_DB is for this test: the file, or the schema's URL.
    pub fn db_arg(&self) -> String {
        match &self.pg {
            Some(pg) => pg.url(),
            None => self.db.display().to_string(),
        }
    }

    /// A byte-exact snapshot of the database, to prove nothing was written:
    /// the files on SQLite, every row of every table on PostgreSQL.
    pub fn db_bytes(&self) -> Vec<(String, Vec<u8>)> {
        if let Some(pg) = &self.pg {
            let mut client = pg.client();
            let tables = [
                "meta",
                "drafts",
                "tasks",
                "runs",
                "deliveries",
                "reconciliations",
                "events",
            ];
            return tables
                .iter()
                .map(|t| {
                    let dump = client
                        .query_one(&format!("SELECT coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '') FROM {t} x"), &[])
                        .map(|row| row.get::<_, String>(0))
                        .unwrap_or_default();
                    (t.to_string(), dump.into_bytes())
                })
                .collect();
        }
        let Some(dir) = self.db.parent() else {
            return Vec::new();
        };
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| !e.file_name().to_string_lossy().ends_with("-shm"))
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            std::fs::read(e.path()).unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    }

    /// Runs SQL against the database directly, for inspecting or damaging
    /// it; every value comes back as text ("NULL" for null).
    pub fn sql(&self, sql: &str) -> Vec<Vec<String>> {
        if let Some(pg) = &self.pg {
            let mut client = pg.client();
            return client
                .simple_query(sql)
                .expect("run test SQL")
                .into_iter()
                .filter_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(row) => Some(
                        (0..row.len())
                            .map(|i| row.get(i).unwrap_or("NULL").to_string())
                            .collect(),
                    ),
                    _ => None,
                })
                .collect();
        }
        let conn = rusqlite::Connection::open(&self.db).expect("open db for inspection");
        conn.busy_timeout(std::time::Duration::from_secs(10)).ok();
        let mut stmt = conn.prepare(sql).expect("prepare test SQL");
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |row| {
                (0..columns)
                    .map(|i| {
                        let v: rusqlite::types::Value = row.get(i)?;
                        Ok(match v {
                            rusqlite::types::Value::Null => "NULL".to_string(),
                            rusqlite::types::Value::Integer(i) => i.to_string(),
                            rusqlite::types::Value::Real(f) => f.to_string(),
                            rusqlite::types::Value::Text(t) => t,
                            rusqlite::types::Value::Blob(b) => format!("{b:?}"),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .expect("run test SQL")
            .collect::<Result<Vec<_>, _>>()
            .expect("read test SQL rows");
        rows
    }

    /// One integer from SQL.
    pub fn count(&self, sql: &str) -> i64 {
        self.sql(sql)[0][0].parse().expect("an integer")
    }
}

/// What SQL says, one cell (empty when there is no row).
pub fn cell(env: &TestEnv, sql: &str) -> String {
    env.sql(sql)
        .first()
        .and_then(|row| row.first().cloned())
        .unwrap_or_default()
}

/// The text under `key` in each element of the JSON array `list`.
#[track_caller]
pub fn texts<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|item| item[key].as_str().unwrap())
        .collect()
}

/// The audit-log events `log LOG_ARGS` lists (a task's, or the tenant's
/// with `--limit`) whose action is `action`, in the order it lists them.
#[track_caller]
pub fn events(env: &TestEnv, log_args: &[&str], action: &str) -> Vec<Value> {
    let mut args = vec!["log"];
    args.extend_from_slice(log_args);
    let log = env.json(&args);
    log.as_array()
        .unwrap_or_else(|| panic!("not an array: {log}"))
        .iter()
        .filter(|e| e["action"] == action)
        .cloned()
        .collect()
}

/// Asserts that `text` holds `needle`, and shows `text` when it does not.
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
}

/// Asserts that `text` begins with `prefix`, and shows `text` when it does
/// not.
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "does not begin with {prefix:?}:\n{text}"
    );
}

/// `stderr` without the one-line warning `status` and `check` give once a
/// tick ran its runs as the store's user (docs/CONTRACT.md §19): every
/// test's store, whose runs run as the test's own user.
pub fn besides_authority(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.contains("runs hold the store's authority"))
        .map(|l| format!("{l}\n"))
        .collect()
}

pub fn write_script(path: &Path, body: &str) {
    std::fs::write(path, body).expect("write script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod script");
}

/// Writes the sudoers `rule` to `path` as sudo reads its files (mode 0440)
/// and asserts that visudo accepts it.
#[track_caller]
pub fn write_sudoers(path: &Path, rule: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, rule).expect("write the sudoers file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o440))
        .expect("chmod the sudoers file");
    let checked = Command::new("visudo")
        .arg("-cf")
        .arg(path)
        .output()
        .expect("visudo runs");
    assert!(checked.status.success(), "{checked:?}\n{rule}");
}

/// Says that a scenario was skipped where a person running `cargo test`
/// sees it: straight to the process's stderr, past the harness's capture
/// (which hides what a passing test prints), so a skip never reads as `ok`
/// alone. CI sets the AGENTCRON_REQUIRE_* variables, which turn a missing
/// tool into a failure instead.
pub fn skipped(what: &str) {
    use std::io::Write;
    let line = format!("\nagentcron test SKIPPED: {what}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
