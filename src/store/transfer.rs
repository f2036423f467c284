//! Moving a store's contents between backends (`export` / `import`): every
//! table as JSON Lines, one object per row keyed by column name. The column
//! lists are fixed here, so a key in an imported line can never become SQL.
//! The operations and their one implementation over `Connection`.

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use super::connection::{Arg, Connection};
use crate::store::connection::args;
use crate::store::schema::task_memory_from_runs;
use crate::store::tasks::RawTask;

/// What a column holds, as a JSON line writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Text,
    /// A real number (a budget's spending, docs/CONTRACT.md §6).
    Real,
}

/// A column and what it holds.
pub type Column = (&'static str, Kind);

/// One table's name and columns, in the order rows must be imported
/// (parents before children).
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
}

const I: Kind = Kind::Int;
const T: Kind = Kind::Text;
const R: Kind = Kind::Real;

/// Columns an older export has no key for, and what they hold then (a NOT
/// NULL column a later schema added).
const DEFAULTS: &[(&str, &str, i64)] = &[("runs", "catch_up", 0)];

pub const TABLES: &[Table] = &[
    Table {
        name: "meta",
        columns: &[("key", T), ("value", T)],
    },
    // The owners' current zones (docs/CONTRACT.md §18): a following task's
    // zone in force came from here, and later `zone set`s go on from here.
    Table {
        name: "zones",
        columns: &[
            ("tenant_key", T),
            ("identity_key", T),
            ("zone", T),
            ("set_at", I),
            ("set_by", T),
        ],
    },
    // The operator's profiles (docs/CONTRACT.md §22): a task bound to one
    // runs only while the profile hashes to what its owner confirmed, so a
    // copy without them would hold every such task.
    Table {
        name: "profiles",
        columns: &[
            ("tenant_key", T),
            ("name", T),
            ("definition", T),
            ("sha256", T),
            ("description", T),
            ("revision", I),
            ("created_at", I),
            ("updated_at", I),
            ("updated_by", T),
        ],
    },
    Table {
        name: "tasks",
        columns: &[
            ("task_id", T),
            ("tenant_key", T),
            ("name", T),
            ("owner_keys", T),
            ("target", T),
            ("instruction", T),
            ("schedule", T),
            ("timezone", T),
            ("policy", T),
            ("grace_seconds", I),
            ("max_retries", I),
            ("retry_backoff_seconds", I),
            ("payload", T),
            ("payload_hash", T),
            ("state", T),
            ("state_reason", T),
            ("state_changed_at", I),
            ("next_run_at", I),
            ("revision", I),
            ("created_at", I),
            ("updated_at", I),
            ("consecutive_failures", I),
            ("next_retry_at", I),
            ("retry_run_id", T),
            ("queued_for", I),
            ("queued_since", I),
            ("queued_next", I),
            ("trigger_at", I),
            ("trigger_reason", T),
            ("trigger_actor", T),
            ("managed_by", T),
            ("declared_hash", T),
            ("follow_key", T),
            ("zone_in_force", T),
            // The success clock of `expect_success` (tick/overdue.rs).
            ("success_due_at", I),
            ("overdue_since", I),
            // The profile its payload binds (docs/CONTRACT.md §22).
            ("profile", T),
        ],
    },
    Table {
        name: "runs",
        columns: &[
            ("run_id", T),
            ("task_id", T),
            ("tenant_key", T),
            ("scheduled_for", I),
            ("scheduled_local", T),
            ("attempt", I),
            ("due_at", I),
            ("status", T),
            ("payload_hash", T),
            ("created_at", I),
            ("started_at", I),
            ("finished_at", I),
            ("lease_token", T),
            ("lease_until", I),
            ("summary", T),
            ("reason", T),
            ("skipped_occurrences", I),
            ("blocked_by", T),
            ("wait_kind", T),
            ("wait_id", T),
            ("wait_deadline", I),
            ("queued_seconds", I),
            ("stderr_tail", T),
            ("trigger", T),
            ("approved_at", I),
            ("approved_by", T),
            // What a run may spend (docs/CONTRACT.md §6).
            ("catch_up", I),
            ("usage", T),
            // The profile it ran under (docs/CONTRACT.md §22).
            ("profile", T),
        ],
    },
    // Each budget's current window: without them a copy would let a task
    // spend its day's budget again.
    Table {
        name: "budget_windows",
        columns: &[
            ("task_id", T),
            ("budget_key", T),
            ("period", T),
            ("window_start", I),
            ("spent", R),
            ("told_at", I),
        ],
    },
    // The counters of `agentcron_usage_total`, kept like the runs' totals
    // are not: a copy of them is what they counted.
    Table {
        name: "usage_totals",
        columns: &[("tenant_key", T), ("usage_key", T), ("total", R)],
    },
    // What the notice policy and the executor's `previous` remember of each
    // task (docs/CONTRACT.md §16); without it a copy would start every
    // streak, window and held-back count over.
    Table {
        name: "task_memory",
        columns: &[
            ("task_id", T),
            ("last_failure_reason", T),
            ("last_failure_sent_at", I),
            ("last_success_fingerprint", T),
            ("suppressed_count", I),
            ("suppressed_failures", I),
            ("suppressed_since", I),
            ("last_settled_run_id", T),
            ("last_success_at", I),
        ],
    },
    Table {
        name: "deliveries",
        columns: &[
            ("delivery_id", T),
            ("run_id", T),
            ("tenant_key", T),
            ("seq", I),
            ("state", T),
            ("target", T),
            ("message", T),
            ("created_at", I),
            ("updated_at", I),
            ("claim_token", T),
            ("deadline", I),
            ("attempts", I),
            ("last_error", T),
            ("announced", I),
            ("next_attempt_at", I),
        ],
    },
    Table {
        name: "reconciliations",
        columns: &[
            ("run_id", T),
            ("tenant_key", T),
            ("actor", T),
            ("decision", T),
            ("reason", T),
            ("prior_reason", T),
            ("decided_at", I),
        ],
    },
    // event_id is left out: the importing store numbers events in file order.
    Table {
        name: "events",
        columns: &[
            ("at", I),
            ("tenant_key", T),
            ("actor", T),
            ("action", T),
            ("task_id", T),
            ("run_id", T),
            ("detail", T),
        ],
    },
];

pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

impl Table {
    /// `SELECT a, b, … FROM t ORDER BY <first column>` (events in id order,
    /// zones by their key).
    pub fn select_sql(&self) -> String {
        let columns: Vec<&str> = self.columns.iter().map(|c| c.0).collect();
        let order = match self.name {
            "events" => "event_id",
            // Keys of more than one column: one file for one store, byte
            // for byte.
            "zones" => "tenant_key, identity_key",
            "profiles" => "tenant_key, name",
            "budget_windows" => "task_id, budget_key, period",
            "usage_totals" => "tenant_key, usage_key",
            _ => columns[0],
        };
        format!(
            "SELECT {} FROM {} ORDER BY {order}",
            columns.join(", "),
            self.name
        )
    }

    /// `INSERT INTO t (a, b, …) VALUES ($1, $2, …)`: each parameter takes
    /// its column's type.
    pub fn insert_sql(&self) -> String {
        let columns: Vec<&str> = self.columns.iter().map(|c| c.0).collect();
        let values: Vec<String> = (1..=self.columns.len()).map(|i| format!("${i}")).collect();
        format!(
            "INSERT INTO {} ({}) VALUES ({})",
            self.name,
            columns.join(", "),
            values.join(", ")
        )
    }

    /// The row's values in column order, checked against the column types.
    pub fn values(&self, row: &Map<String, Value>) -> Result<Vec<Value>> {
        if let Some(extra) = row
            .keys()
            .find(|k| *k != "table" && !self.columns.iter().any(|c| c.0 == k.as_str()))
        {
            anyhow::bail!("unknown column '{extra}' for table {}", self.name);
        }
        self.columns
            .iter()
            .map(|(name, kind)| match (row.get(*name), kind) {
                (None, _) => Ok(self.default_of(name)),
                (Some(Value::Null), _) => Ok(Value::Null),
                (Some(Value::Number(n)), Kind::Int) if n.is_i64() => Ok(Value::Number(n.clone())),
                (Some(Value::Number(n)), Kind::Real) if n.as_f64().is_some_and(f64::is_finite) => {
                    Ok(Value::Number(n.clone()))
                }
                (Some(Value::String(s)), Kind::Text) => Ok(Value::String(s.clone())),
                (Some(other), _) => {
                    anyhow::bail!("column {}.{name} cannot hold {other}", self.name)
                }
            })
            .collect()
    }

    /// What a column an older export lacks holds: its default, else null.
    fn default_of(&self, column: &str) -> Value {
        DEFAULTS
            .iter()
            .find(|(table, name, _)| *table == self.name && *name == column)
            .map_or(Value::Null, |(_, _, value)| Value::from(*value))
    }
}

/// A tasks line as the row it would become, so `import` checks it exactly
/// as every read does (`RawTask::decode`); a missing or mistyped value
/// reads as empty, which that check reports.
pub fn raw_task(row: &Map<String, Value>) -> RawTask {
    let text = |k: &str| row.get(k).and_then(Value::as_str).map(str::to_string);
    let int = |k: &str| row.get(k).and_then(Value::as_i64);
    RawTask {
        task_id: text("task_id").unwrap_or_default(),
        tenant_key: text("tenant_key").unwrap_or_default(),
        name: text("name"),
        owner_keys: text("owner_keys").unwrap_or_default(),
        target: text("target").unwrap_or_default(),
        instruction: text("instruction").unwrap_or_default(),
        schedule: text("schedule").unwrap_or_default(),
        timezone: text("timezone").unwrap_or_default(),
        policy: text("policy").unwrap_or_default(),
        grace_seconds: int("grace_seconds").unwrap_or_default(),
        max_retries: int("max_retries").unwrap_or_default(),
        retry_backoff_seconds: int("retry_backoff_seconds").unwrap_or_default(),
        payload_hash: text("payload_hash").unwrap_or_default(),
        state: text("state").unwrap_or_default(),
        state_reason: text("state_reason"),
        state_changed_at: int("state_changed_at").unwrap_or_default(),
        next_run_at: int("next_run_at"),
        revision: int("revision").unwrap_or_default(),
        created_at: int("created_at").unwrap_or_default(),
        updated_at: int("updated_at").unwrap_or_default(),
        consecutive_failures: int("consecutive_failures").unwrap_or_default(),
        next_retry_at: int("next_retry_at"),
        retry_run_id: text("retry_run_id"),
        payload: text("payload").unwrap_or_default(),
        follow_key: text("follow_key"),
        zone_in_force: text("zone_in_force"),
    }
}

/// The memory of each task an export from before memory was exported
/// brings (none of its lines is `task_memory`), rebuilt from its runs as
/// the migration that added the table did: the last settled run and the
/// last success; the notice policy's streak starts over.
pub const REBUILD_MEMORY_SQL: &str = concat!(
    "\n",
    task_memory_from_runs!(),
    "
    WHERE EXISTS (SELECT 1 FROM runs r WHERE r.task_id = t.task_id AND r.finished_at IS NOT NULL)"
);

pub trait TransferTx {
    /// Every row of the table as a JSON object keyed by column.
    fn dump_table(&mut self, table: &Table) -> Result<Vec<Map<String, Value>>>;
    /// Inserts one row (values in column order, from `Table::values`).
    fn load_row(&mut self, table: &Table, values: &[Value]) -> Result<()>;
    /// Runs `REBUILD_MEMORY_SQL`.
    fn rebuild_task_memory(&mut self) -> Result<()>;
    /// Whether the store holds no tasks, runs or events yet.
    fn is_empty(&mut self) -> Result<bool>;
}

impl<C: Connection> TransferTx for C {
    fn dump_table(&mut self, table: &Table) -> Result<Vec<Map<String, Value>>> {
        let rows = self
            .query(&table.select_sql(), args![])
            .with_context(|| format!("exporting {}", table.name))?;
        rows.iter()
            .map(|row| {
                let mut object = Map::new();
                for (i, (name, kind)) in table.columns.iter().enumerate() {
                    let value = match kind {
                        Kind::Int => row.get::<Option<i64>>(i)?.map(Value::from),
                        Kind::Real => row.get::<Option<f64>>(i)?.map(Value::from),
                        Kind::Text => row.get::<Option<String>>(i)?.map(Value::String),
                    }
                    .unwrap_or(Value::Null);
                    object.insert(name.to_string(), value);
                }
                Ok(object)
            })
            .collect::<Result<_>>()
            .with_context(|| format!("exporting {}", table.name))
    }

    fn load_row(&mut self, table: &Table, values: &[Value]) -> Result<()> {
        let args: Vec<Arg<'_>> = table
            .columns
            .iter()
            .zip(values)
            .map(|((_, kind), v)| match kind {
                Kind::Int => Arg::from(v.as_i64()),
                Kind::Real => Arg::from(v.as_f64()),
                Kind::Text => Arg::from(v.as_str()),
            })
            .collect();
        self.execute(&table.insert_sql(), &args)
            .with_context(|| format!("importing a row into {}", table.name))?;
        Ok(())
    }

    fn rebuild_task_memory(&mut self) -> Result<()> {
        self.execute(REBUILD_MEMORY_SQL, args![])
            .context("rebuilding the tasks' memory")?;
        Ok(())
    }

    fn is_empty(&mut self) -> Result<bool> {
        let n: i64 = self.value(
            "SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM runs)
                 + (SELECT count(*) FROM events)",
            args![],
        )?;
        Ok(n == 0)
    }
}
