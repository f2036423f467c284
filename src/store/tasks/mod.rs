//! Tasks: confirmed schedules and their lifecycle; the operations' one
//! implementation over `Connection` is in `sql`.

mod listing;
mod sql;

use std::collections::HashMap;
use std::ops::ControlFlow;

use anyhow::Result;

use crate::model::{Policy, Task, TaskState};
use crate::payload::{hash_hex, Payload};
use crate::schedule::{self, Schedule};
use crate::store::connection::{Arg, Row};
use crate::store::rows::Cells;
use crate::store::Tx;

/// The columns of a task row, in the order both stores' decoders read them.
pub const TASK_COLUMNS: &str = "task_id, tenant_key, name, owner_keys, target, instruction,
    schedule, timezone, policy, grace_seconds, max_retries, retry_backoff_seconds, payload_hash,
    state, state_reason, state_changed_at, next_run_at, revision, created_at, updated_at,
    consecutive_failures, next_retry_at, retry_run_id, payload, follow_key, zone_in_force";

/// A stored row that failed validation on read: it is reported (and, by the
/// tick, quarantined) instead of crashing the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRow {
    pub id: String,
    pub tenant_key: String,
    pub problem: String,
}

impl std::fmt::Display for CorruptRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stored row {} cannot be read: {}", self.id, self.problem)
    }
}

impl std::error::Error for CorruptRow {}

impl CorruptRow {
    /// How `check` names it: a task row that is never executed.
    pub fn violation(&self) -> String {
        format!("task {} is never run: {}", self.id, self.problem)
    }
}

/// A task row's columns as stored, before validation. Each backend reads
/// one of these; `decode` is the one place that checks them.
///
/// The confirmed fields (instruction, policy, target, zone, schedule, name,
/// owners, tenant, grace, retries, backoff) are stored twice: inside the
/// canonical `payload` the person confirmed, and as columns for queries.
/// `decode` builds the task from the payload, after checking it against
/// `payload_hash` and the columns against it, so what runs is what was
/// confirmed; any disagreement is a corrupt row (docs/CONTRACT.md §6).
#[derive(Debug, Clone, Default)]
pub struct RawTask {
    pub task_id: String,
    pub tenant_key: String,
    pub name: Option<String>,
    pub owner_keys: String,
    pub target: String,
    pub instruction: String,
    pub schedule: String,
    pub timezone: String,
    pub policy: String,
    pub grace_seconds: i64,
    pub max_retries: i64,
    pub retry_backoff_seconds: i64,
    pub payload_hash: String,
    pub state: String,
    pub state_reason: Option<String>,
    pub state_changed_at: i64,
    pub next_run_at: Option<i64>,
    pub revision: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub consecutive_failures: i64,
    pub next_retry_at: Option<i64>,
    pub retry_run_id: Option<String>,
    /// The canonical payload, whose SHA-256 is `payload_hash`.
    pub payload: String,
    /// The identity key a following task follows (its payload's first owner
    /// key), for `zone set`'s lookup; NULL for a fixed zone. Checked
    /// against the payload like every confirmed column.
    pub follow_key: Option<String>,
    /// A following task's zone in force, set at confirm and by each re-time
    /// (docs/CONTRACT.md §18). Scheduler bookkeeping like `next_run_at`, not
    /// a confirmed field: the person confirmed "follow me", and this is
    /// where the owner is now. Validated as a zone, never compared with the
    /// payload. NULL for a fixed zone.
    pub zone_in_force: Option<String>,
}

impl RawTask {
    /// The columns a task is stored as (both stores; `decode` reads them back).
    pub fn encode(t: &Task) -> RawTask {
        RawTask {
            task_id: t.task_id.clone(),
            tenant_key: t.payload.tenant_key.clone(),
            name: t.payload.name.clone(),
            owner_keys: serde_json::to_string(&t.payload.owner_keys).expect("strings serialize"),
            target: t.payload.target.clone(),
            instruction: t.payload.instruction.clone(),
            schedule: t.payload.schedule.to_json().to_string(),
            timezone: match t.payload.zone.fallback() {
                Some(_) => crate::payload::FOLLOW.to_string(),
                None => t.zone_in_force.name().to_string(),
            },
            policy: t.payload.policy.as_str().to_string(),
            grace_seconds: t.payload.grace_seconds,
            max_retries: t.payload.max_retries,
            retry_backoff_seconds: t.payload.retry_backoff_seconds,
            payload_hash: t.payload_hash.clone(),
            state: t.state.as_str().to_string(),
            state_reason: t.state_reason.clone(),
            state_changed_at: t.state_changed_at,
            next_run_at: t.next_run_at,
            revision: t.revision,
            created_at: t.created_at,
            updated_at: t.updated_at,
            consecutive_failures: t.consecutive_failures,
            next_retry_at: t.next_retry_at,
            retry_run_id: t.retry_run_id.clone(),
            payload: t.payload.canonical(),
            follow_key: t.follow_key().map(str::to_string),
            zone_in_force: t
                .payload
                .zone
                .fallback()
                .map(|_| t.zone_in_force.name().to_string()),
        }
    }

    /// The columns a person confirmed, with the payload and its hash: what
    /// inserting a task and replacing its payload both write, in this order.
    pub fn confirmed_args(&self) -> [Arg<'_>; 11] {
        [
            Arg::from(&self.name),
            Arg::from(&self.target),
            Arg::from(&self.instruction),
            Arg::from(&self.schedule),
            Arg::from(&self.timezone),
            Arg::from(&self.policy),
            Arg::from(self.grace_seconds),
            Arg::from(self.max_retries),
            Arg::from(self.retry_backoff_seconds),
            Arg::from(&self.payload),
            Arg::from(&self.payload_hash),
        ]
    }

    pub fn decode(self) -> Result<Task, CorruptRow> {
        let corrupt = |problem: String| CorruptRow {
            id: self.task_id.clone(),
            tenant_key: self.tenant_key.clone(),
            problem,
        };
        let confirmed = self.confirmed().map_err(corrupt)?;
        let zone_in_force = self.zone_in_force(&confirmed).map_err(corrupt)?;
        let state = TaskState::parse(&self.state)
            .ok_or_else(|| corrupt(format!("unknown state '{}'", self.state)))?;
        for (value, what) in [
            (confirmed.grace_seconds, "grace_seconds"),
            (confirmed.max_retries, "max_retries"),
            (confirmed.retry_backoff_seconds, "retry_backoff_seconds"),
            (self.consecutive_failures, "consecutive_failures"),
        ] {
            if value < 0 {
                return Err(corrupt(format!("{what} is negative")));
            }
        }
        Ok(Task {
            task_id: self.task_id,
            payload: confirmed,
            zone_in_force,
            payload_hash: self.payload_hash,
            state,
            state_reason: self.state_reason,
            state_changed_at: self.state_changed_at,
            next_run_at: self.next_run_at,
            revision: self.revision,
            created_at: self.created_at,
            updated_at: self.updated_at,
            consecutive_failures: self.consecutive_failures,
            next_retry_at: self.next_retry_at,
            retry_run_id: self.retry_run_id,
        })
    }

    /// The zone the row's schedule is read in: the confirmed zone, or for a
    /// following task the valid zone its last re-time recorded.
    fn zone_in_force(&self, confirmed: &Payload) -> Result<schedule::Tz, String> {
        match (&self.zone_in_force, confirmed.zone.follows()) {
            (None, false) => Ok(confirmed.zone.named()),
            (Some(zone), true) => {
                schedule::parse_zone(zone).map_err(|e| format!("zone_in_force: {e}"))
            }
            (None, true) => Err("zone_in_force is missing on a task that follows its owner".into()),
            (Some(_), false) => Err("zone_in_force is set on a task with a fixed zone".into()),
        }
    }

    /// The payload the row was confirmed with, once its hash and every
    /// column that repeats one of its fields agree with it; else what
    /// disagrees, naming the column.
    fn confirmed(&self) -> Result<Payload, String> {
        if hash_hex(self.payload.as_bytes()) != self.payload_hash {
            return Err("the stored payload does not match payload_hash".into());
        }
        let payload = Payload::from_canonical(&self.payload)
            .map_err(|e| format!("the stored payload cannot be read: {e:#}"))?;
        let owner_keys: Vec<String> = serde_json::from_str(&self.owner_keys)
            .map_err(|e| format!("owner_keys is not a JSON list of strings: {e}"))?;
        if owner_keys.is_empty() {
            return Err("owner_keys is empty".into());
        }
        let schedule_json: serde_json::Value = serde_json::from_str(&self.schedule)
            .map_err(|e| format!("schedule is not JSON: {e}"))?;
        let schedule = Schedule::from_json(&schedule_json).map_err(|e| format!("schedule: {e}"))?;
        // A following task stores the payload's word for it; a fixed one its zone.
        let same_zone = if payload.zone.follows() {
            self.timezone == crate::payload::FOLLOW
        } else {
            schedule::parse_zone(&self.timezone).map_err(|e| format!("timezone: {e}"))?
                == payload.zone.named()
        };
        let policy = Policy::parse(&self.policy)
            .ok_or_else(|| format!("unknown policy '{}'", self.policy))?;
        let agree = [
            ("tenant_key", self.tenant_key == payload.tenant_key),
            ("name", self.name == payload.name),
            ("owner_keys", owner_keys == payload.owner_keys),
            ("target", self.target == payload.target),
            ("instruction", self.instruction == payload.instruction),
            ("schedule", schedule == payload.schedule),
            ("timezone", same_zone),
            (
                "follow_key",
                self.follow_key.as_deref() == payload.follow_key(),
            ),
            ("policy", policy == payload.policy),
            ("grace_seconds", self.grace_seconds == payload.grace_seconds),
            ("max_retries", self.max_retries == payload.max_retries),
            (
                "retry_backoff_seconds",
                self.retry_backoff_seconds == payload.retry_backoff_seconds,
            ),
        ];
        match agree.iter().find(|(_, same)| !same) {
            Some((column, _)) => Err(format!(
                "column {column} differs from the confirmed payload"
            )),
            None => Ok(payload),
        }
    }
}

/// What `each_listed_task` calls per row: the transaction (for the task's
/// own reads) and the row, readable or not; `Break` ends the listing there.
pub type EachTask<'e> =
    dyn FnMut(&mut dyn Tx, Result<Task, CorruptRow>) -> Result<ControlFlow<()>> + 'e;

/// Which tasks `list` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFilter<'a> {
    pub tenant_key: &'a str,
    /// Only tasks owned by one of these keys.
    pub owner_keys: &'a [String],
    pub include_deleted: bool,
    pub state: Option<TaskState>,
}

/// A compare-and-set change of a task's state. Applies only when the task is
/// still in `from` at `revision`; otherwise the store reports a Conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTransition<'a> {
    pub task_id: &'a str,
    pub from: TaskState,
    pub revision: i64,
    pub to: TaskState,
    pub reason: Option<&'a str>,
    pub next_run_at: Option<i64>,
    pub now: i64,
}

/// A person's request for one extra run of a task, due at `at` (docs/CONTRACT.md
/// §13, `trigger`); a task holds at most one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    pub at: i64,
    pub actor: String,
    pub reason: Option<String>,
}

/// A task with an occurrence, a retry or a manual trigger due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueTask {
    pub task_id: String,
    pub due_at: i64,
    pub is_retry: bool,
}

/// A (task_id, due instant, is_retry) row as a `DueTask`.
pub(super) fn due_task(row: &Row) -> Result<DueTask> {
    Ok(DueTask {
        task_id: row.get(0)?,
        due_at: row.get(1)?,
        is_retry: row.get(2)?,
    })
}

/// The scheduler's bookkeeping on a task: its next occurrence, pending
/// retry, failure streak and completion. Guarded by the values read in the
/// same transaction, so a concurrent change is a Conflict, never overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAdvance<'a> {
    pub task_id: &'a str,
    pub expected_state: TaskState,
    pub expected_next_run_at: Option<i64>,
    pub expected_next_retry_at: Option<i64>,
    pub state: TaskState,
    pub next_run_at: Option<i64>,
    pub next_retry_at: Option<i64>,
    pub retry_run_id: Option<&'a str>,
    pub consecutive_failures: i64,
    pub now: i64,
}

pub trait TaskTx {
    fn insert_task(&mut self, task: &Task) -> Result<()>;
    /// One task by exact id, in any tenant (callers check the tenant).
    fn task(&mut self, task_id: &str) -> Result<Option<Result<Task, CorruptRow>>>;
    /// The id of the tenant's non-deleted task with this name.
    fn task_id_named(&mut self, tenant_key: &str, name: &str) -> Result<Option<String>>;
    fn list_tasks(&mut self, filter: &TaskFilter<'_>) -> Result<Vec<Result<Task, CorruptRow>>>;
    /// The tasks `list` shows, in its order: the next to run first, those
    /// that will not run again last, oldest first among equals. Each row is
    /// handed to `each` as the query yields it, with the transaction for the
    /// row's own reads, so memory stays flat however many tasks match.
    fn each_listed_task(&mut self, filter: &TaskFilter<'_>, each: &mut EachTask<'_>) -> Result<()>;
    /// Applies the transition and bumps the revision; Conflict if the guard fails.
    fn transition_task(&mut self, change: &TaskTransition<'_>) -> Result<i64>;
    /// Due occurrences and retries at `now`, earliest first.
    fn due_tasks(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>>;
    /// How many active tasks have something due at `now` (for status and gaps).
    fn due_count(&mut self, now: i64, tenant: Option<&str>) -> Result<i64>;
    /// Scheduler bookkeeping; does not bump the revision (that tracks what
    /// people changed, so `--expect-revision` stays usable on busy tasks).
    fn advance_task(&mut self, advance: &TaskAdvance<'_>) -> Result<()>;
    /// `advance_task` whose Conflict may come with the transaction's next
    /// statement or its commit (`Connection::guarded_later`): for
    /// bookkeeping nothing later in the transaction waits on.
    fn advance_task_later(&mut self, advance: &TaskAdvance<'_>) -> Result<()>;
    /// Swaps a confirmed task's payload for `task`'s (same id, tenant and
    /// owners; `draft --replace`), setting `next_run_at` and bumping the
    /// revision. Guarded by `expected_revision` and an active or paused
    /// state: Conflict when the task moved on. A pending retry and the
    /// failure streak belong to the old payload and are dropped.
    fn replace_task(&mut self, task: &Task, expected_revision: i64, now: i64) -> Result<()>;
    /// Records a pending manual trigger on an active task at `revision`;
    /// Conflict when the task moved on, is not active, or already has one.
    fn set_trigger(&mut self, task_id: &str, revision: i64, trigger: &Trigger) -> Result<()>;
    fn pending_trigger(&mut self, task_id: &str) -> Result<Option<Trigger>>;
    /// Consumes the pending trigger at `at`; Conflict when another tick did.
    fn clear_trigger(&mut self, task_id: &str, at: i64) -> Result<()>;
    /// Records what an `apply` declared for the task (`plan`'s stable
    /// comparison, see `commands::plan::declared_hash`) and, when `file` is
    /// given, that this tasks file manages it now (docs/CONTRACT.md §14).
    fn set_declared(&mut self, task_id: &str, file: Option<&str>, declared: &str) -> Result<()>;
    /// What the last `apply` declared for each of the tenant's non-deleted
    /// tasks that has a record, by task id (one query for a whole plan).
    fn declared(&mut self, tenant_key: &str) -> Result<HashMap<String, String>>;
    /// Ids of the tenant's non-deleted tasks an `apply` of `file` created.
    fn managed_tasks(&mut self, tenant_key: &str, file: &str) -> Result<Vec<String>>;
    /// The source (`apply`'s file identity) that created each of the
    /// tenant's tasks a file created, by task id.
    fn managers(&mut self, tenant_key: &str) -> Result<HashMap<String, String>>;
    /// The tenants in which the caller owns tasks (not deleted), with how
    /// many: what an empty listing in a misspelled tenant points to.
    fn tenants_owned(&mut self, owner_keys: &[String]) -> Result<Vec<(String, i64)>>;
    /// The caller's active tasks in the tenant with a retry pending at or
    /// before `end`, soonest first, at most `limit`.
    fn pending_retries(
        &mut self,
        f: &TaskFilter<'_>,
        end: i64,
        limit: i64,
    ) -> Result<Vec<Result<Task, CorruptRow>>>;
    /// A row that cannot be read becomes `error` and leaves the schedule.
    fn quarantine_task(&mut self, task_id: &str, problem: &str, now: i64) -> Result<()>;
}

/// A task, from `TASK_COLUMNS`: the columns as stored, then validated by
/// `RawTask::decode`. A column of the wrong type (which SQLite's STRICT
/// tables make unlikely) is reported like any other damage; only the id and
/// tenant must be readable for that report.
pub fn decode_task<R: Cells>(row: &R) -> Result<Result<Task, CorruptRow>, R::Error>
where
    R::Error: std::fmt::Display,
{
    let task_id = row.text(0)?;
    let tenant_key = row.text(1)?;
    let raw = (|| -> Result<RawTask, R::Error> {
        Ok(RawTask {
            task_id: task_id.clone(),
            tenant_key: tenant_key.clone(),
            name: row.opt_text(2)?,
            owner_keys: row.text(3)?,
            target: row.text(4)?,
            instruction: row.text(5)?,
            schedule: row.text(6)?,
            timezone: row.text(7)?,
            policy: row.text(8)?,
            grace_seconds: row.int(9)?,
            max_retries: row.int(10)?,
            retry_backoff_seconds: row.int(11)?,
            payload_hash: row.text(12)?,
            state: row.text(13)?,
            state_reason: row.opt_text(14)?,
            state_changed_at: row.int(15)?,
            next_run_at: row.opt_int(16)?,
            revision: row.int(17)?,
            created_at: row.int(18)?,
            updated_at: row.int(19)?,
            consecutive_failures: row.int(20)?,
            next_retry_at: row.opt_int(21)?,
            retry_run_id: row.opt_text(22)?,
            payload: row.text(23)?,
            follow_key: row.opt_text(24)?,
            zone_in_force: row.opt_text(25)?,
        })
    })();
    Ok(match raw {
        Ok(raw) => raw.decode(),
        Err(e) => Err(CorruptRow {
            id: task_id,
            tenant_key,
            problem: e.to_string(),
        }),
    })
}
