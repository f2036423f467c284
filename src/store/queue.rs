//! The claim queue (docs/CONTRACT.md §6): which tenant's due work comes next,
//! what a tick saw due but could not start, and the host-wide limit on
//! running runs.
//!
//! "Capacity is not lateness": a tick that sees due work it cannot start
//! (its slots are busy, `--max-runs` or `--max-running` is reached) marks
//! each such task with the due instant it saw within grace. A later claim
//! runs a marked instant whatever the wait; an instant no tick saw within
//! grace is missed.

use std::sync::LazyLock;

use anyhow::{Context, Result};

use super::connection::{values_rows, Arg, Connection, Dialect, Read, Row};
use super::idle::NoticeRules;
use super::memory::LastSettled;
use super::rows;
use super::runs::{continuations_sql, RunTx, RUN_COLUMNS};
use super::tasks::{decode_task, due_task, CorruptRow, TASK_COLUMNS};
use super::DueTask;
use crate::model::{Run, Task};
use crate::store::connection::args;

/// The tenants with active tasks. A skip scan: one index seek per tenant,
/// however many tasks each has.
pub(crate) const ACTIVE_TENANTS: &str = "WITH RECURSIVE tenant(k) AS (
         SELECT (SELECT min(tenant_key) FROM tasks WHERE state = 'active')
         UNION ALL
         SELECT (SELECT min(tenant_key) FROM tasks
                 WHERE state = 'active' AND tenant_key > tenant.k)
         FROM tenant WHERE tenant.k IS NOT NULL)
     SELECT k FROM tenant WHERE k IS NOT NULL";

/// A due instant a tick saw within grace but could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueMark {
    /// The occurrence (or retry time) that was seen due.
    pub due_at: i64,
    /// When a tick first saw it due.
    pub seen_at: i64,
    /// The task's next due instant after `due_at`: once that is due as
    /// well, the queued one is superseded ("superseded while queued").
    pub superseded_at: Option<i64>,
}

/// A due task as a claim reads it (`due_in`): its row, and whether each
/// thing a claim would otherwise look up one statement at a time exists.
/// A flag that is false holds while the claim holds the row: a blocking
/// run, a trigger or a mark on the row is only ever written under its
/// lock; a sighting another host notes beside it meanwhile (`note_seen`,
/// which takes no lock) is of an instant seen due now, which this claim,
/// deciding at now, judges the same way. A flag that is true is looked up.
#[derive(Debug)]
pub struct DueRow {
    pub due: DueTask,
    pub task: Result<Task, CorruptRow>,
    /// The mark on the task's row (`queue_mark` adds one noted beside it).
    pub mark: Option<QueueMark>,
    /// A sighting is noted beside the row (`note_seen`).
    pub noted: bool,
    /// A manual trigger is pending.
    pub triggered: bool,
    /// The task has a run in a state that blocks a new one.
    pub blocked: bool,
    /// What `MemoryTx::last_settled` says of the task, read with its row;
    /// None when not read (it is looked up when needed).
    pub last_settled: Option<Option<LastSettled>>,
}

/// What one `due_in` read.
#[derive(Debug)]
pub struct DueRead {
    pub rows: Vec<DueRow>,
    /// The read stopped at its limit: more may be due. Otherwise every due
    /// row not passed over and not held by another session was read, and
    /// reading again in the same transaction finds none.
    pub more: bool,
}

/// What `status` and `metrics` say about the queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Tasks with a queued (seen, not yet started) due instant.
    pub queued: i64,
    /// The due instant of the longest-waiting queued task.
    pub oldest_queued_due: Option<i64>,
    /// Runs `running` in the whole store (every tenant: the limit is the host's).
    pub running_all: i64,
}

/// What a tick has to do besides recording itself, from one read: an idle
/// tick (nothing due, nothing expired, the common case) then takes no write
/// transaction for steps 1-4. A flag may say yes when the step will find
/// nothing (then it finds nothing), never no when it would find something.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agenda {
    /// Steps 1-3: an expired lease, delivery attempt or continuation, or a
    /// notice past its give-up age.
    pub expiries: bool,
    /// Step 4: a due occurrence, retry or trigger of an active task, or an
    /// approved continuation.
    pub claims: bool,
    /// A task's success came due (`expect_success`): the tick decides
    /// whether it is overdue.
    pub overdue: bool,
}

pub trait QueueTx {
    /// Whether steps 1-3 and 4 have anything to do at `now` (notices
    /// created before `give_up_before` and never sent are given up).
    fn agenda(&mut self, now: i64, give_up_before: i64, tenant: Option<&str>) -> Result<Agenda>;
    /// The first instant after `now` at which `agenda` could find anything
    /// for any tenant with no write in between (each of its conditions
    /// becomes true by the clock alone at that instant; `i64::MAX` when
    /// none ever does), or None when something may be due at `now` already:
    /// anything due, an approved continuation, a waiting notice to send or
    /// announce under `notices`. For the idle tick's note (`store::idle`).
    fn next_work_at(&mut self, now: i64, notices: NoticeRules) -> Result<Option<i64>>;
    /// The tenants that have active tasks, in order (only `tenant` when given).
    fn active_tenants(&mut self, tenant: Option<&str>) -> Result<Vec<String>>;
    /// `active_tenants` and `approved_continuations`, read together: one
    /// round trip on PostgreSQL for a tick's first claim.
    fn tenants_and_continuations(
        &mut self,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<String>, Vec<Run>)>;
    /// The tenant's due tasks at `now`, earliest first, at most `limit`,
    /// passing over those `except` names: each with its row and what a
    /// claim needs besides (`DueRow`), in one statement. PostgreSQL locks
    /// the rows to the end of the transaction, skipping rows another
    /// session holds (another host's claim).
    fn due_in(
        &mut self,
        tenant_key: &str,
        now: i64,
        limit: u32,
        except: &[String],
    ) -> Result<DueRead>;
    /// Due tasks not yet marked for their latest due instant (never marked,
    /// or marked for an instant that a newer one has superseded), earliest first.
    fn unmarked_due(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>>;
    /// The task's mark: the one on its row or the one noted beside it
    /// (`note_seen`), the newer due instant first.
    fn queue_mark(&mut self, task_id: &str) -> Result<Option<QueueMark>>;
    /// The active tasks (of `tenant`, or all) with due work no tick marked
    /// on their rows, as `unmarked_due` finds them (at most `limit`), each
    /// with the due instant noted beside its row (`note_seen`), if any.
    /// Locks nothing and waits for no lock: the rows a claim skipped as
    /// locked are the ones to read.
    fn tasks_to_note(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<TaskToNote>>;
    /// Notes beside each task's row that a tick saw `mark.due_at` due, when
    /// the row itself is locked by another session and cannot be marked
    /// (PostgreSQL), set-wise (one statement per `NOTES_PER_STATEMENT`).
    /// Keeps the first sighting of the same instant. Returns how many
    /// sightings it wrote.
    fn note_seen(&mut self, notes: &[(&str, QueueMark)]) -> Result<usize>;
    /// The active tasks (of `tenant`, or all) with due work no tick marked
    /// yet, earliest first, at most `limit`, as `unmarked_due` finds them.
    /// PostgreSQL locks them to the end of the transaction, skipping rows
    /// another session holds (a claim: those are its to decide).
    fn tasks_to_mark(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Result<Task, CorruptRow>>>;
    /// Marks the tasks set-wise (one statement per `MARKS_PER_STATEMENT`),
    /// each guarded by the due instants it was read with: a task a claim
    /// moved on meanwhile is left as it is. Returns how many it marked.
    fn set_queue_marks(&mut self, marks: &[TaskMark]) -> Result<usize>;
    /// Runs `running` in the whole store. On PostgreSQL this serializes the
    /// claim transactions that call it, so a limit checked with it is exact
    /// across hosts.
    fn running_count(&mut self) -> Result<i64>;
    /// Runs `running` that a tick of this boot (`boot_id`) started. On
    /// PostgreSQL this serializes the claims of this host that call it.
    fn running_on_host(&mut self, boot_id: &str) -> Result<i64>;
    fn queue_stats(&mut self, tenant: Option<&str>) -> Result<QueueStats>;
}

/// A task's mark, with the due instants it was read with (the guard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskMark<'a> {
    pub task_id: &'a str,
    pub next_run_at: Option<i64>,
    pub next_retry_at: Option<i64>,
    pub mark: QueueMark,
}

/// A due task that `tasks_to_note` read, with what is noted beside it.
pub struct TaskToNote {
    pub task: Result<Task, CorruptRow>,
    /// The due instant a sighting beside the row is for (`note_seen`).
    pub noted_due_at: Option<i64>,
}

/// Sightings one `INSERT … VALUES` notes: 3 arguments each.
pub const NOTES_PER_STATEMENT: usize = 1000;

/// Marks one `UPDATE … FROM (VALUES …)` writes: 6 arguments a mark, well
/// under both servers' limits on a statement's arguments.
pub const MARKS_PER_STATEMENT: usize = 500;

/// The advisory lock that serializes the claims counting running runs
/// against `--max-running`, across every host of the database.
const RUNNING_LIMIT_LOCK: i64 = 0x6167_6e74_6372_6e01;

/// Runs `running` in the whole store, without the running-limit lock.
fn count_running(tx: &mut impl Connection) -> Result<i64> {
    tx.value(
        "SELECT count(*) FROM runs WHERE status = 'running'",
        args![],
    )
    .context("counting running runs")
}

/// A mark from `queue_mark`'s columns (due, seen, superseded).
fn decode_mark(row: &Row) -> Result<QueueMark> {
    Ok(QueueMark {
        due_at: row.get(0)?,
        seen_at: row.get::<Option<i64>>(1)?.unwrap_or_default(),
        superseded_at: row.get(2)?,
    })
}

/// The three ways a tenant's task falls due: its schedule, a retry, a
/// manual trigger (docs/CONTRACT.md §13): the column, whether it is a retry,
/// and SQLite's per-tenant partial index on it.
const DUE_BY: [(&str, bool, &str); 3] = [
    ("next_run_at", false, "tasks_due_by_tenant"),
    ("next_retry_at", true, "tasks_retry_due_by_tenant"),
    ("trigger_at", false, "tasks_trigger_due"),
];

/// The due work no tick marked yet ($1 now, $2 the tenant or null, $3 the
/// cap), as (task_id, due instant, is a retry), earliest first: for each way
/// of falling due in `DUE_BY`'s order, the tasks due so and not by an
/// earlier one (an occurrence, else a retry, else a manual trigger).
static UNMARKED_DUE: LazyLock<String> = LazyLock::new(|| {
    let halves: Vec<String> = DUE_BY
        .iter()
        .enumerate()
        .map(|(i, (column, retry, _))| {
            let earlier: String = DUE_BY[..i]
                .iter()
                .map(|(earlier, _, _)| format!(" AND NOT coalesce({earlier} <= $1, false)"))
                .collect();
            format!(
                "SELECT task_id, {column}, {retry} FROM tasks
                 WHERE state = 'active' AND {column} IS NOT NULL AND {column} <= $1{earlier}
                   AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                   AND (queued_for IS NULL OR queued_next <= $1)"
            )
        })
        .collect();
    format!("{} ORDER BY 2 LIMIT $3", halves.join(" UNION ALL "))
});

/// `tasks_to_note`'s read: the rows `UNMARKED_DUE` names, each with the due
/// instant noted beside it, in one statement and without a lock.
static TASKS_TO_NOTE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {columns}, s.due_at FROM tasks t
         LEFT JOIN seen_due s ON s.task_id = t.task_id
         WHERE t.task_id IN (SELECT task_id FROM ({unmarked}) AS due)",
        columns = rows::qualified("t", TASK_COLUMNS),
        unmarked = *UNMARKED_DUE
    )
});

/// The tenant's ($1) first `limit` tasks due by `column` at $2: one seek;
/// no tie-break on task_id, which would sort every task due at that
/// instant. `except`: a condition on task_id added to the seek (tasks to
/// pass over), or empty.
fn first_by(
    column: &str,
    retry: bool,
    index: &str,
    lock: &str,
    except: &str,
    limit: &str,
) -> String {
    format!(
        "SELECT task_id, {column} AS at, {retry} AS retry FROM tasks{index}
         WHERE state = 'active' AND tenant_key = $1 AND {column} IS NOT NULL
           AND {column} <= $2{except}
         ORDER BY {column} LIMIT {limit}{lock}"
    )
}

/// `due_in`'s statement: the first $3 tasks due by each way (`first_by`,
/// rows locked on PostgreSQL), read once with what a claim asks of them.
/// The row's mark, `noted`, `triggered` and `blocked` follow the task's
/// columns, the due instant and whether it is a retry; then what
/// `last_settled` reads (the memory's task id, the last success's time,
/// the last settled run's columns), for the executor's `previous`.
fn due_rows(dialect: Dialect, except: &str) -> String {
    // PostgreSQL rules out FOR UPDATE under a UNION, but not in CTEs read
    // by one.
    let (ctes, seeks): (Vec<String>, Vec<String>) = DUE_BY
        .iter()
        .enumerate()
        .map(|(i, (column, retry, index))| match dialect {
            Dialect::Sqlite => {
                let index = format!(" INDEXED BY {index}");
                let seek = first_by(column, *retry, &index, "", except, "$3");
                (String::new(), format!("SELECT * FROM ({seek})"))
            }
            Dialect::Postgres => {
                let lock = " FOR UPDATE SKIP LOCKED";
                let seek = first_by(column, *retry, "", lock, except, "$3");
                (
                    format!("due{i} AS ({seek}), "),
                    format!("SELECT * FROM due{i}"),
                )
            }
        })
        .unzip();
    let with = match dialect {
        Dialect::Sqlite => String::new(),
        Dialect::Postgres => format!("WITH {}", ctes.concat().trim_end_matches(", ")),
    };
    let blocking = dialect.pick(" INDEXED BY runs_blocking", "");
    // The due task's memory, last settled run, note and blocking runs, each
    // by its key. On PostgreSQL, a tick keeps one generic plan for the
    // burst (store::Plans::Kept), made when these tables may be empty: free
    // to reorder plain joins, it joined memory and runs whole first and
    // walked both at every claim, and it read every note and blocking run
    // into a hash at every claim. OFFSET 0 fences a subquery: a lateral one
    // cannot be pulled up and an EXISTS cannot become a join or a hash, so
    // each can only be a lookup by the outer row's key.
    let fence = dialect.pick("", " OFFSET 0");
    let remembered = match dialect {
        Dialect::Sqlite => {
            "LEFT JOIN task_memory m ON m.task_id = tasks.task_id
         LEFT JOIN runs r ON r.run_id = m.last_settled_run_id"
        }
        Dialect::Postgres => {
            "LEFT JOIN LATERAL (SELECT * FROM task_memory
                             WHERE task_memory.task_id = tasks.task_id OFFSET 0) m ON true
         LEFT JOIN LATERAL (SELECT * FROM runs
                             WHERE runs.run_id = m.last_settled_run_id OFFSET 0) r ON true"
        }
    };
    format!(
        "{with}
         SELECT {}, due.at, due.retry, tasks.queued_for, tasks.queued_since,
             tasks.queued_next,
             EXISTS (SELECT 1 FROM seen_due s WHERE s.task_id = tasks.task_id{fence}),
             tasks.trigger_at IS NOT NULL,
             EXISTS (SELECT 1 FROM runs b{blocking} WHERE b.task_id = tasks.task_id
                       AND b.status IN ('running', 'awaiting_confirmation',
                                        'awaiting_authorization', 'unknown'){fence}),
             m.task_id, m.last_success_at, {RUN_COLUMNS}
         FROM ({}) AS due JOIN tasks ON tasks.task_id = due.task_id
         {remembered}
         ORDER BY due.at LIMIT $3",
        rows::qualified("tasks", TASK_COLUMNS),
        seeks.join(" UNION ALL ")
    )
}

/// A `due_rows` row.
fn due_row(row: &Row) -> Result<DueRow> {
    let n = super::rows::count(TASK_COLUMNS);
    let due = DueTask {
        task_id: row.get(0)?,
        due_at: row.get(n)?,
        is_retry: row.get(n + 1)?,
    };
    let mark = match row.get::<Option<i64>>(n + 2)? {
        Some(due_at) => Some(QueueMark {
            due_at,
            seen_at: row.get::<Option<i64>>(n + 3)?.unwrap_or_default(),
            superseded_at: row.get(n + 4)?,
        }),
        None => None,
    };
    let memory = n + 8;
    let last_settled = match row.get::<Option<String>>(memory)? {
        None => None,
        Some(_) => Some(LastSettled {
            run: match row.get::<Option<String>>(memory + 2)? {
                Some(_) => Some(rows::run(&rows::Shifted {
                    row,
                    by: memory + 2,
                })?),
                None => None,
            },
            last_success_at: row.get(memory + 1)?,
        }),
    };
    Ok(DueRow {
        due,
        task: decode_task(row)?,
        mark,
        noted: row.get(n + 5)?,
        triggered: row.get(n + 6)?,
        blocked: row.get(n + 7)?,
        last_settled: Some(last_settled),
    })
}

static DUE_ROWS_SQLITE: LazyLock<String> = LazyLock::new(|| due_rows(Dialect::Sqlite, ""));
static DUE_ROWS_POSTGRES: LazyLock<String> = LazyLock::new(|| due_rows(Dialect::Postgres, ""));

impl<C: Connection> QueueTx for C {
    fn agenda(&mut self, now: i64, give_up_before: i64, tenant: Option<&str>) -> Result<Agenda> {
        // Each EXISTS is one seek on a partial index of rows in a rare state
        // (or of due tasks), so an idle tick's read costs the same at any
        // size; the tenant is only a filter on what the seek finds. The
        // conditions are those of the steps' own statements, or looser. SQLite
        // is told which index; PostgreSQL's planner finds them. No row locks:
        // a claim takes its own.
        let d = self.dialect();
        let by = |index: &'static str| d.pick(index, "");
        let row = self
            .query_one(
                &format!(
                    "SELECT
                   EXISTS (SELECT 1 FROM runs WHERE status = 'running' AND lease_until < $1
                             AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'sending' AND deadline < $1
                                AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM deliveries WHERE state = 'pending' AND created_at < $3
                                AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM runs {runs_parked}
                                WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                                  AND wait_deadline < $1 AND approved_at IS NULL
                                  AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)),
                   EXISTS (SELECT 1 FROM tasks {tasks_due}
                             WHERE state = 'active' AND next_run_at <= $1
                               AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM tasks {tasks_retry_due}
                                WHERE state = 'active' AND next_retry_at IS NOT NULL
                                  AND next_retry_at <= $1
                                  AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM tasks {tasks_trigger_due}
                                WHERE state = 'active' AND trigger_at IS NOT NULL
                                  AND trigger_at <= $1
                                  AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))
                   OR EXISTS (SELECT 1 FROM runs {runs_parked}
                                WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                                  AND approved_at IS NOT NULL
                                  AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)),
                   EXISTS (SELECT 1 FROM tasks {tasks_success_due}
                             WHERE success_due_at IS NOT NULL AND success_due_at <= $1
                               AND state <> 'paused'
                               AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2))",
                    runs_parked = by("INDEXED BY runs_parked"),
                    tasks_due = by("INDEXED BY tasks_due"),
                    tasks_retry_due = by("INDEXED BY tasks_retry_due"),
                    tasks_trigger_due = by("INDEXED BY tasks_trigger_due"),
                    tasks_success_due = by("INDEXED BY tasks_success_due"),
                ),
                args![now, tenant, give_up_before],
            )
            .context("looking for due work")?;
        Ok(Agenda {
            expiries: row.get(0)?,
            claims: row.get(1)?,
            overdue: row.get(2)?,
        })
    }

    fn next_work_at(&mut self, now: i64, notices: NoticeRules) -> Result<Option<i64>> {
        // `agenda`'s conditions and the waiting notices', each as the
        // instant it turns true: a `< $1` on a column c at c + 1, a `<= $1`
        // at c. An approved continuation is due now. Columns 0-7 turn due
        // by the clock; 8 is a notice's backoff (with a notifier); 9 and 10
        // are due at once. Each is read along the agenda's partial index;
        // the rows in rare states (parked, triggered, waiting notices) are
        // few, so a MIN that is not the index's first entry costs little.
        let d = self.dialect();
        let by = |index: &'static str| d.pick(index, "");
        let row = self
            .query_one(
                &format!(
                    "SELECT
                   (SELECT MIN(lease_until) + 1 FROM runs {runs_leased} WHERE status = 'running'),
                   (SELECT MIN(deadline) + 1 FROM deliveries {deliveries_sending}
                      WHERE state = 'sending'),
                   (SELECT MIN(wait_deadline) + 1 FROM runs {runs_parked}
                      WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                        AND approved_at IS NULL),
                   (SELECT MIN(next_run_at) FROM tasks {tasks_due} WHERE state = 'active'),
                   (SELECT MIN(next_retry_at) FROM tasks {tasks_retry_due}
                      WHERE state = 'active' AND next_retry_at IS NOT NULL),
                   (SELECT MIN(trigger_at) FROM tasks {tasks_trigger_due}
                      WHERE state = 'active' AND trigger_at IS NOT NULL),
                   (SELECT MIN(success_due_at) FROM tasks {tasks_success_due}
                      WHERE success_due_at IS NOT NULL AND state <> 'paused'),
                   (SELECT MIN(created_at) + 1 + $1 FROM deliveries {deliveries_pending}
                      WHERE state = 'pending'),
                   (SELECT MIN(coalesce(next_attempt_at, 0)) FROM deliveries {deliveries_pending}
                      WHERE state = 'pending'),
                   EXISTS (SELECT 1 FROM deliveries {deliveries_pending}
                             WHERE state = 'pending' AND announced = 0),
                   EXISTS (SELECT 1 FROM runs {runs_parked}
                             WHERE status IN ('awaiting_confirmation', 'awaiting_authorization')
                               AND approved_at IS NOT NULL)",
                    runs_leased = by("INDEXED BY runs_leased"),
                    deliveries_sending = by("INDEXED BY deliveries_sending"),
                    deliveries_pending = by("INDEXED BY deliveries_pending"),
                    runs_parked = by("INDEXED BY runs_parked"),
                    tasks_due = by("INDEXED BY tasks_due"),
                    tasks_retry_due = by("INDEXED BY tasks_retry_due"),
                    tasks_trigger_due = by("INDEXED BY tasks_trigger_due"),
                    tasks_success_due = by("INDEXED BY tasks_success_due"),
                ),
                args![notices.give_up_seconds],
            )
            .context("looking for the next due work")?;
        // A notice to send (with a notifier, once its backoff ends) or to
        // announce (without one, at once).
        let (unannounced, approved): (bool, bool) = (row.get(9)?, row.get(10)?);
        let notice_column = if notices.notifier { Some(8) } else { None };
        if approved || (!notices.notifier && unannounced) {
            return Ok(None);
        }
        let mut next: Option<i64> = None;
        for column in (0..=7).chain(notice_column) {
            let at: Option<i64> = row.get(column)?;
            next = match (next, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(match next {
            // Nothing turns due by the clock alone: only a write can.
            None => Some(i64::MAX),
            Some(at) if at > now => Some(at),
            Some(_) => None,
        })
    }

    fn tenants_and_continuations(
        &mut self,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<String>, Vec<Run>)> {
        if let Some(tenant) = tenant {
            let continuations = self.approved_continuations(Some(tenant), limit)?;
            return Ok((vec![tenant.to_string()], continuations));
        }
        let continuations = continuations_sql(self.dialect());
        let [tenants, continuations] = self.query_two(
            Read {
                sql: ACTIVE_TENANTS,
                args: args![],
                doing: "listing tenants",
            },
            Read {
                sql: &continuations,
                args: args![tenant, limit],
                doing: "finding approved continuations",
            },
        )?;
        let tenants = tenants.iter().map(|r| r.get(0)).collect::<Result<_>>()?;
        let continuations = continuations.iter().map(rows::run).collect::<Result<_>>()?;
        Ok((tenants, continuations))
    }

    fn active_tenants(&mut self, tenant: Option<&str>) -> Result<Vec<String>> {
        if let Some(tenant) = tenant {
            return Ok(vec![tenant.to_string()]);
        }
        let rows = self
            .query(ACTIVE_TENANTS, args![])
            .context("listing tenants")?;
        rows.iter().map(|r| r.get(0)).collect()
    }

    fn due_in(
        &mut self,
        tenant_key: &str,
        now: i64,
        limit: u32,
        except: &[String],
    ) -> Result<DueRead> {
        let built;
        let sql = match (self.dialect(), except.is_empty()) {
            (Dialect::Sqlite, true) => &*DUE_ROWS_SQLITE,
            (Dialect::Postgres, true) => &*DUE_ROWS_POSTGRES,
            (dialect, false) => {
                let list: Vec<String> = (0..except.len()).map(|i| format!("${}", i + 4)).collect();
                built = due_rows(
                    dialect,
                    &format!(" AND task_id NOT IN ({})", list.join(", ")),
                );
                &built
            }
        };
        let mut all = args![tenant_key, now, limit].to_vec();
        all.extend(except.iter().map(Arg::from));
        let rows = self
            .query(sql, &all)
            .context("reading the tenant's due tasks")?;
        // A task due two ways (an occurrence and a retry) comes once, at
        // its earliest.
        let mut seen = std::collections::HashSet::new();
        let mut due = Vec::with_capacity(rows.len());
        for row in &rows {
            let read = due_row(row)?;
            if seen.insert(read.due.task_id.clone()) {
                due.push(read);
            }
        }
        Ok(DueRead {
            more: rows.len() >= limit as usize,
            rows: due,
        })
    }

    fn unmarked_due(&mut self, now: i64, tenant: Option<&str>, limit: u32) -> Result<Vec<DueTask>> {
        let rows = self
            .query(&UNMARKED_DUE, args![now, tenant, limit])
            .context("finding due tasks not yet queued")?;
        rows.iter().map(due_task).collect()
    }

    fn queue_mark(&mut self, task_id: &str) -> Result<Option<QueueMark>> {
        // The task is read by its key, then tested: with `queued_for IS NOT
        // NULL` beside the key, a plan made while few tasks were queued
        // walks the partial index of queued tasks instead (PostgreSQL's
        // generic plan, `Plans::Kept`), ~1,500 entries a call by the middle
        // of a burst. OFFSET 0 keeps the test out of the read by key
        // (SQLite, which plans at each prepare, takes no OFFSET alone).
        let fence = self.dialect().pick("", " OFFSET 0");
        let row = self
            .query_opt(
                &format!(
                    "SELECT queued_for, queued_since, queued_next
                     FROM (SELECT queued_for, queued_since, queued_next FROM tasks
                           WHERE task_id = $1{fence}) own
                     WHERE queued_for IS NOT NULL
                     UNION ALL
                     SELECT due_at, seen_at, CAST(NULL AS BIGINT) FROM seen_due WHERE task_id = $1
                     ORDER BY 1 DESC, 2 LIMIT 1"
                ),
                args![task_id],
            )
            .context("reading the task's queue mark")?;
        row.as_ref().map(decode_mark).transpose()
    }

    fn tasks_to_note(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<TaskToNote>> {
        let rows = self
            .query(&TASKS_TO_NOTE, args![now, tenant, limit])
            .context("reading the due tasks to note")?;
        let noted_at = rows::count(TASK_COLUMNS);
        rows.iter()
            .map(|row| {
                Ok(TaskToNote {
                    task: decode_task(row)?,
                    noted_due_at: row.get(noted_at)?,
                })
            })
            .collect()
    }

    fn note_seen(&mut self, notes: &[(&str, QueueMark)]) -> Result<usize> {
        let mut noted = 0;
        for chunk in notes.chunks(NOTES_PER_STATEMENT) {
            let values = values_rows(chunk.len(), 3, |_, arg| arg);
            let args: Vec<Arg> = chunk
                .iter()
                .flat_map(|(task_id, mark)| {
                    [
                        Arg::from(*task_id),
                        Arg::from(mark.due_at),
                        Arg::from(mark.seen_at),
                    ]
                })
                .collect();
            let changed = self
                .execute(
                    &format!(
                        "INSERT INTO seen_due (task_id, due_at, seen_at) VALUES {}
                         ON CONFLICT (task_id) DO UPDATE SET due_at = excluded.due_at,
                             seen_at = excluded.seen_at
                         WHERE seen_due.due_at <> excluded.due_at",
                        values
                    ),
                    &args,
                )
                .context("noting due tasks seen")?;
            noted += changed as usize;
        }
        Ok(noted)
    }

    fn tasks_to_mark(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Result<Task, CorruptRow>>> {
        // SQLite: the three seeks of `unmarked_due`, each along its index;
        // its write transaction holds the file. PostgreSQL: one locking
        // read (FOR UPDATE cannot follow a UNION), skipping locked rows.
        let sql = match self.dialect() {
            Dialect::Sqlite => format!(
                "SELECT {TASK_COLUMNS} FROM tasks WHERE task_id IN (
                     SELECT task_id FROM ({unmarked}))",
                unmarked = *UNMARKED_DUE
            ),
            Dialect::Postgres => format!(
                "SELECT {TASK_COLUMNS} FROM tasks
                 WHERE state = 'active' AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                   AND (queued_for IS NULL OR queued_next <= $1)
                   AND (next_run_at <= $1 OR next_retry_at <= $1 OR trigger_at <= $1)
                 ORDER BY least(next_run_at, next_retry_at, trigger_at) LIMIT $3
                 FOR UPDATE SKIP LOCKED"
            ),
        };
        let rows = self
            .query(&sql, args![now, tenant, limit])
            .context("reading the due tasks to queue")?;
        rows.iter().map(decode_task).collect()
    }

    fn set_queue_marks(&mut self, marks: &[TaskMark]) -> Result<usize> {
        let mut marked = 0;
        for chunk in marks.chunks(MARKS_PER_STATEMENT) {
            // A row a mark: its task id, then its five instants.
            let values = values_rows(chunk.len(), 6, |column, arg| match column {
                1 => arg,
                _ => format!("CAST({arg} AS BIGINT)"),
            });
            let args: Vec<Arg> = chunk
                .iter()
                .flat_map(|m| {
                    [
                        Arg::from(m.task_id),
                        Arg::from(m.mark.due_at),
                        Arg::from(m.mark.seen_at),
                        Arg::from(m.mark.superseded_at),
                        Arg::from(m.next_run_at),
                        Arg::from(m.next_retry_at),
                    ]
                })
                .collect();
            // VALUES' columns are column1… on both servers.
            let changed = self
                .execute(
                    &format!(
                        "UPDATE tasks SET queued_for = v.column2, queued_since = v.column3,
                             queued_next = v.column4
                         FROM (VALUES {}) AS v
                         WHERE tasks.task_id = v.column1 AND tasks.state = 'active'
                           AND tasks.next_run_at IS NOT DISTINCT FROM v.column5
                           AND tasks.next_retry_at IS NOT DISTINCT FROM v.column6",
                        values
                    ),
                    &args,
                )
                .context("queueing the due tasks")?;
            marked += changed as usize;
        }
        Ok(marked)
    }

    fn running_count(&mut self) -> Result<i64> {
        if self.dialect() == Dialect::Postgres {
            // Held to the end of the transaction: the next claim that counts
            // waits for this one's commit, and (READ COMMITTED) then sees it.
            // A SQLite write transaction holds the whole file already.
            self.execute(
                "SELECT pg_advisory_xact_lock($1)",
                args![RUNNING_LIMIT_LOCK],
            )
            .context("taking the running-limit lock")?;
        }
        count_running(self)
    }

    fn running_on_host(&mut self, boot_id: &str) -> Result<i64> {
        // A boot id is a UUID: no LIKE wildcard in it.
        self.hold_until_end(&format!("agentcron host\n{boot_id}"))
            .context("taking the host's running-limit lock")?;
        self.value(
            "SELECT count(*) FROM runs WHERE status = 'running' AND runner LIKE $1 || ' %'",
            args![boot_id],
        )
        .context("counting this host's running runs")
    }

    fn queue_stats(&mut self, tenant: Option<&str>) -> Result<QueueStats> {
        let by = self.dialect().pick("INDEXED BY tasks_queued", "");
        let row = self
            .query_one(
                &format!(
                    "SELECT count(*), min(queued_for) FROM tasks {by}
                     WHERE queued_for IS NOT NULL AND state = 'active'
                       AND (CAST($1 AS TEXT) IS NULL OR tenant_key = $1)"
                ),
                args![tenant],
            )
            .context("counting queued tasks")?;
        Ok(QueueStats {
            queued: row.get(0)?,
            oldest_queued_due: row.get(1)?,
            // A report, not a claim: no need to wait for the limit's lock.
            running_all: count_running(self)?,
        })
    }
}
