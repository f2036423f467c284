//! The delivery ledger: pending → sending (claimed with a token and a
//! deadline, committed before the notifier starts) → delivered or unknown.
//! An `unknown` notice is never sent again. The operations, and their one
//! implementation over `Connection`.

use anyhow::{Context, Result};

use super::connection::{Connection, LaterInsert, Only, Row};
use super::memory::{TaskMemory, MEMORY_COLUMNS};
use super::rows;
use super::tasks::{decode_task, CorruptRow, TASK_COLUMNS};
use crate::model::{DeliveryState, Notice, Task};
use crate::store::connection::args;

/// The columns of a notice row, in the order both stores' decoders read them.
pub const NOTICE_COLUMNS: &str = "delivery_id, run_id, tenant_key, seq, state, target, message,
    created_at, updated_at, claim_token, deadline, attempts, last_error, kind,
    suppressed_since_last, suppressed_reason";

/// A new notice: read back only through statements naming `deliveries`
/// (its number, whether one is sending, the sender's claim), so it may
/// wait for the commit with the rest of its transaction's rows.
static NOTICE_ROW: LaterInsert = LaterInsert {
    table: "deliveries",
    read_by: Some(1),
    column_names: NOTICE_COLUMNS,
    then: "",
    key_columns: 0,
};

/// A pending notice claimed for sending, with the claim's token and
/// deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoticeClaim<'a> {
    pub delivery_id: &'a str,
    pub token: &'a str,
    pub deadline: i64,
    pub now: i64,
}

/// How a claimed notice ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeFinish<'a> {
    pub delivery_id: &'a str,
    pub token: &'a str,
    pub to: DeliveryState,
    pub error: Option<&'a str>,
    /// For `pending` (the notifier said "try later"): not before this.
    pub retry_at: Option<i64>,
    pub now: i64,
}

/// The last skip notice of a task that was not held back, among its runs
/// due since $2 ($1 the task): the run's status, reason and summary (its
/// dedup key) and when the notice was made. Read along `runs_by_task`, so
/// it reads no further back than the re-alert window.
pub const LAST_SKIP_SENT: &str = "SELECT r.status, r.reason, r.summary, d.created_at
    FROM runs r JOIN deliveries d ON d.run_id = r.run_id
    WHERE r.task_id = $1 AND r.scheduled_for >= $2
      AND r.status IN ('skipped_overlap', 'skipped_gate')
      AND d.kind = 'skipped' AND d.state <> 'suppressed'
    ORDER BY d.created_at DESC LIMIT 1";

/// What a run's next notice starts from (`notice_start`), read at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeStart {
    /// The task's memory, if it settled a run before.
    pub memory: Option<TaskMemory>,
    /// One of the run's notices is being sent now (`notice_sending`).
    pub sending: bool,
    /// The number the notice takes (`next_notice_seq`).
    pub seq: i64,
}

/// `notice_start_and_task`'s answer: the notice's start, and the task
/// (None when it is gone; a row that does not decode is a `CorruptRow`).
pub type StartAndTask = (NoticeStart, Option<Result<Task, CorruptRow>>);

/// The run's ($1) next notice number and whether one of its notices is
/// being sent, from one pass over its few notices along `(run_id, seq)`.
/// `state = 'sending'` stays out of the WHERE: PostgreSQL would then AND in
/// the `deliveries_sending` index, whose entries for notices sent since the
/// last vacuum it reads every time (a burst's worth: each read grew with
/// the burst).
const RUN_NOTICES: &str = "SELECT coalesce(max(seq), 0) + 1 AS next_seq,
         coalesce(max(CASE WHEN state = 'sending' THEN 1 ELSE 0 END), 0) = 1 AS sending
     FROM deliveries WHERE run_id = $1";

/// `notice_start`'s statement: `next_notice_seq`, `notice_sending` and the
/// task's memory (its columns, null when it has none) in one read.
static NOTICE_START: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT own.next_seq, own.sending, {}
         FROM ({RUN_NOTICES}) AS own LEFT JOIN task_memory m ON m.task_id = $2",
        rows::qualified("m", MEMORY_COLUMNS)
    )
});

/// `notice_start_and_task`'s statement: the run's notice numbers, its
/// task's columns (null when it is gone), then the task's memory, last
/// because it is decoded to the row's end.
static NOTICE_START_AND_TASK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT own.next_seq, own.sending, {}, {}
         FROM ({RUN_NOTICES}) AS own LEFT JOIN tasks t ON t.task_id = $2
         LEFT JOIN task_memory m ON m.task_id = $2",
        rows::qualified("t", TASK_COLUMNS),
        rows::qualified("m", MEMORY_COLUMNS)
    )
});

/// What a notice's start reads: the run's own notices and its task's
/// memory. Notices and memories the transaction holds for other runs and
/// tasks (outcomes and claims settled before this one) may wait.
fn only<'a>(run_id: &'a str, task_id: &'a str) -> [Only<'a>; 2] {
    [
        Only {
            table: "deliveries",
            key: run_id,
        },
        Only {
            table: "task_memory",
            key: task_id,
        },
    ]
}

/// A notice's start from a row of `NOTICE_START`'s shape: the next number,
/// whether one is sending, and the task's memory from column `memory_at`
/// to the row's end (null when the task has none).
fn notice_start_of(row: &Row, memory_at: usize) -> Result<NoticeStart> {
    let memory = match row.get::<Option<String>>(memory_at)? {
        Some(_) => Some(row.decode_from::<TaskMemory>(memory_at)?),
        None => None,
    };
    Ok(NoticeStart {
        memory,
        sending: row.get(1)?,
        seq: row.get(0)?,
    })
}

/// What `last_skip_sent` reads: the skipped run's words and the notice's time.
pub struct SkipSent {
    pub status: String,
    pub reason: Option<String>,
    pub summary: Option<String>,
    pub at: i64,
}

pub trait DeliveryTx {
    fn insert_notice(&mut self, notice: &Notice) -> Result<()>;
    /// `LAST_SKIP_SENT`: the task's last skip notice sent (not held back)
    /// for a run due at or after `since`.
    fn last_skip_sent(&mut self, task_id: &str, since: i64) -> Result<Option<SkipSent>>;
    /// The next number for a run's notice (a run parked on a continuation
    /// has more than one).
    fn next_notice_seq(&mut self, run_id: &str) -> Result<i64>;
    /// Whether one of the run's notices is being sent now. A run's notices
    /// go out one at a time, in order: a later one waits while an earlier
    /// one is `sending`.
    fn notice_sending(&mut self, run_id: &str) -> Result<bool>;
    /// `next_notice_seq`, `notice_sending` and the task's memory, in one
    /// read: what a run's notice is decided from.
    fn notice_start(&mut self, run_id: &str, task_id: &str) -> Result<NoticeStart>;
    /// `notice_start` and `TaskTx::task` of the run's task, in one read:
    /// what recording an outcome reads once the run's row is changed.
    fn notice_start_and_task(&mut self, run_id: &str, task_id: &str) -> Result<StartAndTask>;
    /// Pending notices, oldest first.
    fn pending_notices(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Notice>>;
    /// Pending notices whose next attempt is due, oldest first.
    fn notices_to_send(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notice>>;
    /// pending notices created before `created_before` → undeliverable
    /// (never sent); returns them.
    fn give_up_notices(
        &mut self,
        created_before: i64,
        now: i64,
        tenant: Option<&str>,
    ) -> Result<Vec<Notice>>;
    /// pending → sending; Conflict when another tick claimed it first, or
    /// while another notice of the same run is sending.
    fn claim_notice(&mut self, claim: &NoticeClaim<'_>) -> Result<()>;
    /// sending → delivered | pending | unknown, guarded by the claim token.
    fn finish_notice(&mut self, finish: &NoticeFinish<'_>) -> Result<()>;
    /// sending past its deadline → unknown; returns the notices it changed.
    fn expire_notices(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Notice>>;
    /// Marks pending notices as announced ("no notifier"), returning how many
    /// had not been announced before.
    fn announce_pending(&mut self, tenant: Option<&str>) -> Result<u64>;
}

/// The notices of rows selecting `NOTICE_COLUMNS`.
fn notices(found: &[Row]) -> Result<Vec<Notice>> {
    found.iter().map(rows::notice).collect()
}

impl<C: Connection> DeliveryTx for C {
    fn insert_notice(&mut self, n: &Notice) -> Result<()> {
        self.insert_later(
            &NOTICE_ROW,
            args![
                &n.delivery_id,
                &n.run_id,
                &n.tenant_key,
                n.seq,
                n.state.as_str(),
                &n.target,
                &n.message,
                n.created_at,
                n.updated_at,
                &n.claim_token,
                &n.deadline,
                n.attempts,
                &n.last_error,
                n.kind.map(|k| k.as_str()),
                n.suppressed_since_last,
                &n.suppressed_reason
            ],
        )
        .context("recording the notice")?;
        Ok(())
    }

    fn last_skip_sent(&mut self, task_id: &str, since: i64) -> Result<Option<SkipSent>> {
        let row = self
            .query_opt(LAST_SKIP_SENT, args![task_id, since])
            .context("reading the task's last skip notice")?;
        row.map(|r| {
            Ok(SkipSent {
                status: r.get(0)?,
                reason: r.get(1)?,
                summary: r.get(2)?,
                at: r.get(3)?,
            })
        })
        .transpose()
    }

    fn next_notice_seq(&mut self, run_id: &str) -> Result<i64> {
        self.value(
            &format!("SELECT next_seq FROM ({RUN_NOTICES}) AS own"),
            args![run_id],
        )
        .context("numbering the notice")
    }

    fn notice_sending(&mut self, run_id: &str) -> Result<bool> {
        self.value(
            &format!("SELECT sending FROM ({RUN_NOTICES}) AS own"),
            args![run_id],
        )
        .context("looking for a notice being sent")
    }

    fn notice_start(&mut self, run_id: &str, task_id: &str) -> Result<NoticeStart> {
        let row = self
            .query_only(
                &NOTICE_START,
                args![run_id, task_id],
                &only(run_id, task_id),
            )
            .and_then(|rows| rows.into_iter().next().context("no row"))
            .context("reading what the run's notice starts from")?;
        // The memory's columns follow the two values.
        notice_start_of(&row, 2)
    }

    fn notice_start_and_task(&mut self, run_id: &str, task_id: &str) -> Result<StartAndTask> {
        let row = self
            .query_only(
                &NOTICE_START_AND_TASK,
                args![run_id, task_id],
                &only(run_id, task_id),
            )
            .and_then(|rows| rows.into_iter().next().context("no row"))
            .context("reading the run's task and what its notice starts from")?;
        let task = match row.get::<Option<String>>(2)? {
            Some(_) => Some(decode_task(&rows::Shifted { row: &row, by: 2 })?),
            None => None,
        };
        let start = notice_start_of(&row, 2 + rows::count(TASK_COLUMNS))?;
        Ok((start, task))
    }

    fn pending_notices(&mut self, tenant: Option<&str>, limit: u32) -> Result<Vec<Notice>> {
        let rows = self
            .query(
                &format!(
                    "SELECT {NOTICE_COLUMNS} FROM deliveries
                     WHERE state = 'pending' AND (CAST($1 AS TEXT) IS NULL OR tenant_key = $1)
                     ORDER BY created_at, delivery_id LIMIT $2"
                ),
                args![tenant, limit],
            )
            .context("reading pending notices")?;
        notices(&rows)
    }

    fn notices_to_send(
        &mut self,
        now: i64,
        tenant: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Notice>> {
        let rows = self
            .query(
                &format!(
                    "SELECT {NOTICE_COLUMNS} FROM deliveries
                     WHERE state = 'pending' AND coalesce(next_attempt_at, 0) <= $1
                       AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                     ORDER BY created_at, delivery_id LIMIT $3"
                ),
                args![now, tenant, limit],
            )
            .context("reading notices to send")?;
        notices(&rows)
    }

    fn give_up_notices(
        &mut self,
        created_before: i64,
        now: i64,
        tenant: Option<&str>,
    ) -> Result<Vec<Notice>> {
        let rows = self
            .query(
                &format!(
                    "UPDATE deliveries
                     SET state = 'undeliverable', updated_at = $1, next_attempt_at = NULL
                     WHERE state = 'pending' AND created_at < $2
                       AND (CAST($3 AS TEXT) IS NULL OR tenant_key = $3)
                     RETURNING {NOTICE_COLUMNS}"
                ),
                args![now, created_before, tenant],
            )
            .context("giving up on undelivered notices")?;
        notices(&rows)
    }

    fn claim_notice(&mut self, c: &NoticeClaim<'_>) -> Result<()> {
        // The run's other notices are counted along `(run_id, seq)`, not
        // found through `deliveries_sending` (see `RUN_NOTICES`).
        self.guarded(
            "UPDATE deliveries
                 SET state = 'sending', claim_token = $1, deadline = $2, updated_at = $3,
                     attempts = attempts + 1
                 WHERE delivery_id = $4 AND state = 'pending'
                   AND 0 = (SELECT count(CASE WHEN earlier.state = 'sending' THEN 1 END)
                            FROM deliveries AS earlier
                            WHERE earlier.run_id = deliveries.run_id)",
            args![c.token, c.deadline, c.now, c.delivery_id],
            "claiming the notice",
            || {
                format!(
                    "notice {} was claimed by another tick, \
                 or another notice of its run is being sent",
                    c.delivery_id
                )
            },
        )
    }

    fn finish_notice(&mut self, f: &NoticeFinish<'_>) -> Result<()> {
        self.guarded(
            "UPDATE deliveries
                 SET state = $1, last_error = $2, updated_at = $3,
                     claim_token = CASE WHEN $1 = 'pending' THEN NULL ELSE claim_token END,
                     deadline = CASE WHEN $1 = 'pending' THEN NULL ELSE deadline END,
                     next_attempt_at = CASE WHEN $1 = 'pending' THEN CAST($6 AS BIGINT) END
                 WHERE delivery_id = $4 AND state = 'sending' AND claim_token = $5",
            args![
                f.to.as_str(),
                f.error,
                f.now,
                f.delivery_id,
                f.token,
                f.retry_at
            ],
            "recording the delivery",
            || format!("notice {} is no longer ours to record", f.delivery_id),
        )
    }

    fn expire_notices(&mut self, now: i64, tenant: Option<&str>) -> Result<Vec<Notice>> {
        let rows = self
            .query(
                &format!(
                    "UPDATE deliveries
                     SET state = 'unknown', updated_at = $1,
                         last_error = 'delivery deadline passed; the notifier may or may not have sent it'
                     WHERE state = 'sending' AND deadline < $1
                       AND (CAST($2 AS TEXT) IS NULL OR tenant_key = $2)
                     RETURNING {NOTICE_COLUMNS}"
                ),
                args![now, tenant],
            )
            .context("expiring delivery attempts")?;
        notices(&rows)
    }

    fn announce_pending(&mut self, tenant: Option<&str>) -> Result<u64> {
        self.execute(
            "UPDATE deliveries SET announced = 1
             WHERE state = 'pending' AND announced = 0
               AND (CAST($1 AS TEXT) IS NULL OR tenant_key = $1)",
            args![tenant],
        )
        .context("noting undelivered notices")
    }
}
