//! What every operation's tests start from: a fresh store opened as the
//! binary opens one (`store::open` with a writing command's options) in a
//! temporary folder, or, with `AGENTCRON_TEST_STORE=postgres`, in a schema
//! of its own on the test server (`AGENTCRON_TEST_PG`, as the end-to-end
//! suite), dropped afterwards; a pinned `now`; people in a tenant; and
//! tasks drafted and confirmed through the real operations.
//!
//! Runs in states only a tick or its executor reach (running, unknown,
//! parked, settled) are written as the tick writes them (`insert_run`), so
//! that an operation meets them without a process being started.

use std::time::Duration;

use anyhow::Result;

use crate::audit::{AuditAction, Event};
use crate::error::{classify, CmdError, ErrorKind};
use crate::model::{Run, RunStatus, Task};
use crate::ops::access::Caller;
use crate::ops::confirm::{self, Outcome};
use crate::ops::confirm_code::Proof;
use crate::ops::draft::{self, DraftSpec, Made};
use crate::store::schema::Upgrade;
use crate::store::{self, Location, OpenOptions, Store, TaskFilter};

/// 2026-12-02T08:00:00Z, a Wednesday: the suite's pinned "now".
pub const T0: i64 = 1_796_198_400;

/// The tenant the fixture's people act in.
pub const TENANT: &str = "acme";

/// Someone who acts: a tenant and identity keys, as `--tenant` and `--as`
/// give them.
pub struct Person {
    pub tenant: String,
    pub keys: Vec<String>,
}

impl Person {
    pub fn new(tenant: &str, keys: &[&str]) -> Person {
        Person {
            tenant: tenant.to_string(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
        }
    }

    /// The fixture's owner of everything.
    pub fn alice() -> Person {
        Person::new(TENANT, &["unix:alice"])
    }

    /// Another person of the same tenant.
    pub fn bob() -> Person {
        Person::new(TENANT, &["unix:bob"])
    }

    /// Alice's key in another tenant.
    pub fn alice_elsewhere() -> Person {
        Person::new("other", &["unix:alice"])
    }

    pub fn caller(&self) -> Caller<'_> {
        Caller {
            tenant: &self.tenant,
            identity: &self.keys,
        }
    }

    /// The actor an operation records: the first key.
    pub fn actor(&self) -> &str {
        &self.keys[0]
    }
}

/// What drafting and confirming a task gave back.
pub struct Confirmed {
    pub task_id: String,
    pub draft_id: String,
    pub hash: String,
}

/// A store of its own at a pinned now. Fields drop in order: the
/// connection before its PostgreSQL schema, the folder last.
pub struct Fixture {
    pub store: Box<dyn Store>,
    pub now: i64,
    location: Location,
    _schema: Option<PgSchema>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    /// A fresh, empty store at `T0`.
    pub fn new() -> Fixture {
        Fixture::build(copy_new_store, writing())
    }

    /// A store as the previous release left it (the upgrade fixtures of the
    /// end-to-end suite: two tasks, two ticks' runs), opened as `migrate`
    /// opens one: at its schema.
    pub fn at_previous_release() -> Fixture {
        let explicit = OpenOptions {
            create: false,
            upgrade: Upgrade::Explicit,
            ..writing()
        };
        Fixture::build(load_previous_release, explicit)
    }

    /// A store at `T0` that `prepare` may fill before it is opened.
    fn build(prepare: impl FnOnce(&Location), options: OpenOptions) -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let schema = on_postgres().then(PgSchema::create);
        let location = match &schema {
            Some(schema) => Location::Postgres(schema.url()),
            None => Location::Sqlite(dir.path().join("agentcron.db")),
        };
        prepare(&location);
        let store = store::open(&location, &options).expect("open the test store");
        Fixture {
            store,
            now: T0,
            location,
            _schema: schema,
            _dir: dir,
        }
    }

    /// The store shared between threads, as `approve` takes it: a second
    /// connection, as another process would open.
    pub fn shared(&self) -> store::shared::SharedStore {
        let store = store::open(&self.location, &writing()).expect("reopen the test store");
        store::shared::SharedStore::new(store, self.location.clone(), writing())
    }

    /// Drafts `spec` as `who`, now.
    pub fn draft(&mut self, who: &Person, spec: &DraftSpec) -> Result<Made> {
        self.draft_over(who, None, spec)
    }

    /// Drafts `spec` as a replacement of the task `task` names.
    pub fn draft_replacing(&mut self, who: &Person, task: &str, spec: &DraftSpec) -> Result<Made> {
        self.draft_over(who, Some(task), spec)
    }

    fn draft_over(
        &mut self,
        who: &Person,
        replace: Option<&str>,
        spec: &DraftSpec,
    ) -> Result<Made> {
        let request = draft::Request {
            caller: who.caller(),
            now: self.now,
            default_zone: chrono_tz::UTC,
            replace,
            ttl: "30m",
            agent: None,
        };
        draft::make(self.store.as_mut(), request, spec)
    }

    /// Confirms draft `draft_id` with `hash` as `who`, now.
    pub fn confirm(&mut self, who: &Person, draft_id: &str, hash: &str) -> Result<Outcome> {
        let caller = who.caller();
        let actor = who.actor();
        confirm::confirm_in(
            self.store.as_mut(),
            &caller,
            draft_id,
            hash,
            Proof::None,
            actor,
            self.now,
        )
    }

    /// Drafts and confirms `spec` as `who`: the task's ids and hash.
    pub fn task(&mut self, who: &Person, spec: &DraftSpec) -> Confirmed {
        let made = self.draft(who, spec).expect("draft");
        let outcome = self
            .confirm(who, &made.draft.draft_id, &made.draft.payload_hash)
            .expect("confirm");
        let Outcome::Confirmed(confirmed) = outcome else {
            panic!("a person's own draft was refused");
        };
        Confirmed {
            task_id: confirmed.task.task_id,
            draft_id: made.draft.draft_id,
            hash: made.draft.payload_hash,
        }
    }

    /// The task as the store holds it now.
    pub fn read_task(&mut self, task_id: &str) -> Task {
        self.store
            .read(|tx| tx.task(task_id))
            .expect("read the task")
            .expect("the task exists")
            .expect("the task reads")
    }

    /// Every task of `who`'s tenant, deleted ones included.
    pub fn tasks(&mut self, who: &Person) -> Vec<Task> {
        let filter = TaskFilter {
            tenant_key: &who.tenant,
            owner_keys: &who.keys,
            include_deleted: true,
            state: None,
        };
        let rows = self.store.read(|tx| tx.list_tasks(&filter)).expect("list");
        rows.into_iter().map(|r| r.expect("a task reads")).collect()
    }

    /// The run as the store holds it now.
    pub fn read_run(&mut self, run_id: &str) -> Option<Run> {
        self.store.read(|tx| tx.run(run_id)).expect("read the run")
    }

    /// `who`'s tenant's audit events of `action` that `who` may see, newest first.
    pub fn events(&mut self, who: &Person, action: AuditAction) -> Vec<Event> {
        let all = self
            .store
            .read(|tx| tx.events(&who.tenant, &who.keys, None, 10_000))
            .expect("read the audit trail");
        all.into_iter()
            .map(|stored| stored.event)
            .filter(|event| event.action == action)
            .collect()
    }

    /// A run of `task` for its occurrence `at`, in `status`, recorded as the
    /// tick records one; `fill` sets what that status carries.
    fn insert_run(
        &mut self,
        task: &Task,
        status: RunStatus,
        at: i64,
        fill: impl FnOnce(&mut Run),
    ) -> Run {
        let run = Run::new(task, at, at, 1, status, at, fill);
        self.store
            .write(|tx| tx.insert_run(&run))
            .expect("record the run");
        run
    }

    /// A run that ran at `at` and settled as `status`.
    pub fn settled_run(&mut self, task: &Task, status: RunStatus, at: i64) -> Run {
        self.insert_run(task, status, at, |r| {
            r.started_at = Some(at);
            r.finished_at = Some(at + 30);
            r.queued_seconds = Some(0);
        })
    }

    /// A run a tick claimed at `at` and runs under a lease until
    /// `lease_until`, in the process `runner` (`process::runner_identity`).
    pub fn running_run(
        &mut self,
        task: &Task,
        at: i64,
        lease_until: i64,
        runner: Option<&str>,
    ) -> Run {
        self.insert_run(task, RunStatus::Running, at, |r| {
            r.started_at = Some(at);
            r.lease_token = Some(uuid::Uuid::new_v4().to_string());
            r.lease_until = Some(lease_until);
            r.queued_seconds = Some(0);
            r.runner = runner.map(str::to_string);
        })
    }

    /// A run whose tick died: its lease ran out at `at + 60`, and
    /// `reconcile`'s freeze (as a tick's first step) made it unknown.
    pub fn unknown_run(&mut self, task: &Task, at: i64) -> Run {
        let run = self.running_run(task, at, at + 60, None);
        let (tenant, now) = (task.payload.tenant_key.clone(), at + 61);
        crate::ops::reconcile::freeze_expired(self.store.as_mut(), now, &tenant)
            .expect("freeze the expired lease");
        self.read_run(&run.run_id).expect("the frozen run")
    }

    /// A run its executor parked on the continuation `wait_id`, waiting
    /// until `deadline`.
    pub fn parked_run(&mut self, task: &Task, at: i64, wait_id: &str, deadline: i64) -> Run {
        self.insert_run(task, RunStatus::AwaitingConfirmation, at, |r| {
            r.started_at = Some(at);
            r.queued_seconds = Some(0);
            r.summary = Some("about to send the weekly mail".into());
            r.wait_kind = Some("confirmation".into());
            r.wait_id = Some(wait_id.into());
            r.wait_deadline = Some(deadline);
        })
    }

    /// The store as `export` writes it: one JSON line per row.
    pub fn export(&mut self) -> Vec<String> {
        use crate::store::transfer::TABLES;
        let dumps = self
            .store
            .read(|tx| {
                TABLES
                    .iter()
                    .map(|t| Ok((t.name, tx.dump_table(t)?)))
                    .collect::<Result<Vec<_>>>()
            })
            .expect("dump the store");
        let mut lines = Vec::new();
        for (name, rows) in dumps {
            for mut row in rows {
                row.insert("table".into(), serde_json::Value::String(name.into()));
                lines.push(serde_json::Value::Object(row).to_string());
            }
        }
        lines
    }
}

/// A spec of a task that runs every day at `hh_mm` UTC.
pub fn daily(hh_mm: &str) -> DraftSpec {
    DraftSpec {
        instruction: Some("summarise the inbox".into()),
        daily: Some(hh_mm.into()),
        tz: Some("UTC".into()),
        ..DraftSpec::default()
    }
}

/// A spec of a task named `name` that runs every day at `hh_mm` UTC.
pub fn named(name: &str, hh_mm: &str) -> DraftSpec {
    DraftSpec {
        name: Some(name.into()),
        ..daily(hh_mm)
    }
}

/// The refusal an operation answered with: its kind and its error.
#[track_caller]
pub fn refusal<T>(result: Result<T>) -> (ErrorKind, CmdError) {
    let Err(err) = result else {
        panic!("expected a refusal, the operation succeeded");
    };
    match classify(&err) {
        (kind, Some(e)) => (kind, e.clone()),
        (kind, None) => panic!("expected a typed refusal, got {kind:?}: {err:#}"),
    }
}

/// The options of a command that writes and may create the store.
fn writing() -> OpenOptions {
    OpenOptions {
        busy_timeout: Duration::from_secs(5),
        create: true,
        upgrade: Upgrade::Writer,
        ..OpenOptions::default()
    }
}

/// Puts a new SQLite store at `location`: a copy of one `store::open`
/// created (`new_store`). On PostgreSQL the schema is created by opening.
fn copy_new_store(location: &Location) {
    if let Location::Sqlite(path) = location {
        std::fs::write(path, new_store()).expect("write the new store");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .expect("the store's mode");
    }
}

/// The bytes of a new SQLite store, created once per test process by
/// `store::open` as the binary creates one. Creating the schema takes a
/// tenth of a second, copying its file nothing: every fixture opens a
/// copy, which keeps the operations' tests to a few seconds together.
fn new_store() -> &'static [u8] {
    static NEW_STORE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    NEW_STORE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let made = Location::Sqlite(dir.path().join("agentcron.db"));
        let mut store = store::open(&made, &writing()).expect("create a store");
        // One self-contained file, as `agentcron backup` writes it.
        let path = dir.path().join("new.db");
        store.backup_to(&path).expect("copy the new store");
        std::fs::read(&path).expect("read the new store")
    })
}

/// Loads the previous release's store into `location` (see
/// `Fixture::at_previous_release`).
fn load_previous_release(location: &Location) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    match location {
        Location::Postgres(url) => {
            let sql = std::fs::read_to_string(fixtures.join("postgres-schema-15.sql"))
                .expect("the PostgreSQL upgrade fixture");
            let schema = url.rsplit("%3D").next().expect("the schema in the URL");
            let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
            client
                .batch_execute(&sql.replace("__SCHEMA__", schema))
                .expect("load the previous release");
        }
        Location::Sqlite(path) => {
            let sql = std::fs::read_to_string(fixtures.join("sqlite-schema-13.sql"))
                .expect("the SQLite upgrade fixture");
            let conn = rusqlite::Connection::open(path).expect("create the file");
            conn.execute_batch(&sql).expect("load the previous release");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .expect("the store's mode");
        }
    }
}

/// Whether the tests target PostgreSQL (`AGENTCRON_TEST_STORE=postgres`).
pub fn on_postgres() -> bool {
    std::env::var("AGENTCRON_TEST_STORE").is_ok_and(|v| v == "postgres")
}

/// A schema of its own on the test server, dropped with the fixture.
struct PgSchema {
    server: String,
    name: String,
}

impl PgSchema {
    fn create() -> PgSchema {
        let server = std::env::var("AGENTCRON_TEST_PG")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_string());
        let name = format!("u_{}", uuid::Uuid::new_v4().simple());
        let mut client = postgres::Client::connect(&server, postgres::NoTls).unwrap_or_else(|e| {
            panic!("AGENTCRON_TEST_STORE=postgres but {server} is unreachable: {e}")
        });
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .expect("create the test schema");
        PgSchema { server, name }
    }

    fn url(&self) -> String {
        let sep = if self.server.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-csearch_path%3D{}", self.server, self.name)
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.server, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name));
        }
    }
}
