//! The decoders of the rows several families read: a run, a notice and an
//! audit event, from the columns `RUN_COLUMNS`, `NOTICE_COLUMNS` and
//! `EVENT_COLUMNS`, in that order, through `Cells` (a `connection::Row`,
//! or the fuzz targets' rows). A family's own rows (a task, its memory, a
//! success clock) are decoded in the family's file. A value that is not
//! what the column must hold is an error, never a panic: the caller
//! quarantines or reports the row.

use crate::audit::{Event, StoredEvent};
use crate::model::{DeliveryState, Notice, NoticeKind, Run, RunStatus, RunTrigger, StateColumns};
use crate::store::connection::Row;

/// The columns of an audit event row, in the order `event` reads them.
pub const EVENT_COLUMNS: &str = "event_id, at, tenant_key, actor, action, task_id, run_id, detail";

/// A row's cells as the decoders need them.
pub trait Cells {
    type Error;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    /// Column `i` holds a value no decoder accepts.
    fn invalid(&self, i: usize, what: String) -> Self::Error;
}

/// How many columns a column list (`RUN_COLUMNS`, `TASK_COLUMNS`, …) names:
/// where the next table's columns start when a join selects it first.
pub fn count(columns: &str) -> usize {
    columns.split(',').count()
}

/// A column list with each column taken from `alias` (`t.task_id, …`).
pub fn qualified(alias: &str, columns: &str) -> String {
    let each: Vec<String> = columns
        .split(',')
        .map(|c| format!("{alias}.{}", c.trim()))
        .collect();
    each.join(", ")
}

/// A row's cells from column `by` on: a second table's columns read after
/// the first's, in one row (a join).
pub struct Shifted<'r, R> {
    pub row: &'r R,
    pub by: usize,
}

impl<R: Cells> Cells for Shifted<'_, R> {
    type Error = R::Error;
    fn text(&self, i: usize) -> Result<String, R::Error> {
        self.row.text(i + self.by)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, R::Error> {
        self.row.opt_text(i + self.by)
    }
    fn int(&self, i: usize) -> Result<i64, R::Error> {
        self.row.int(i + self.by)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, R::Error> {
        self.row.opt_int(i + self.by)
    }
    fn invalid(&self, i: usize, what: String) -> R::Error {
        self.row.invalid(i + self.by, what)
    }
}

impl Cells for Row {
    type Error = anyhow::Error;
    fn text(&self, i: usize) -> anyhow::Result<String> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> anyhow::Result<Option<String>> {
        self.get(i)
    }
    fn int(&self, i: usize) -> anyhow::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> anyhow::Result<Option<i64>> {
        self.get(i)
    }
    fn invalid(&self, i: usize, what: String) -> anyhow::Error {
        anyhow::anyhow!("column {i}: {what}")
    }
}

/// A run, from `RUN_COLUMNS`.
pub fn run<R: Cells>(row: &R) -> Result<Run, R::Error> {
    let status = row.text(7)?;
    let status = RunStatus::parse(&status)
        .ok_or_else(|| row.invalid(7, format!("unknown run status '{status}'")))?;
    let trigger = row.text(24)?;
    let trigger = RunTrigger::parse(&trigger)
        .ok_or_else(|| row.invalid(24, format!("unknown run trigger '{trigger}'")))?;
    let state = StateColumns {
        status,
        started_at: row.opt_int(10)?,
        finished_at: row.opt_int(11)?,
        lease_token: row.opt_text(12)?,
        lease_until: row.opt_int(13)?,
        blocked_by: row.opt_text(17)?,
        wait_kind: row.opt_text(18)?,
        wait_id: row.opt_text(19)?,
        wait_deadline: row.opt_int(20)?,
        queued_seconds: row.opt_int(21)?,
        approved_at: row.opt_int(25)?,
        approved_by: row.opt_text(26)?,
    }
    .state()
    .map_err(|why| row.invalid(7, why))?;
    Ok(Run {
        run_id: row.text(0)?,
        task_id: row.text(1)?,
        tenant_key: row.text(2)?,
        scheduled_for: row.int(3)?,
        scheduled_local: row.text(4)?,
        attempt: row.int(5)?,
        due_at: row.int(6)?,
        state,
        payload_hash: row.text(8)?,
        created_at: row.int(9)?,
        summary: row.opt_text(14)?,
        reason: row.opt_text(15)?,
        skipped_occurrences: row.int(16)?,
        stderr_tail: row.opt_text(22)?,
        delivery_status: row.opt_text(23)?.as_deref().and_then(DeliveryState::parse),
        trigger,
        catch_up: row.int(27)? != 0,
        usage: match row.opt_text(28)? {
            None => None,
            Some(text) => Some(
                serde_json::from_str(&text)
                    .map_err(|e| row.invalid(28, format!("a run's usage is not JSON: {e}")))?,
            ),
        },
    })
}

/// A notice, from `NOTICE_COLUMNS`.
pub fn notice<R: Cells>(row: &R) -> Result<Notice, R::Error> {
    let state = row.text(4)?;
    let state = DeliveryState::parse(&state)
        .ok_or_else(|| row.invalid(4, format!("unknown delivery state '{state}'")))?;
    let kind = match row.opt_text(13)? {
        None => None,
        Some(kind) => Some(
            NoticeKind::parse(&kind)
                .ok_or_else(|| row.invalid(13, format!("unknown notice kind '{kind}'")))?,
        ),
    };
    Ok(Notice {
        delivery_id: row.text(0)?,
        run_id: row.text(1)?,
        tenant_key: row.text(2)?,
        seq: row.int(3)?,
        state,
        target: row.text(5)?,
        message: row.text(6)?,
        created_at: row.int(7)?,
        updated_at: row.int(8)?,
        claim_token: row.opt_text(9)?,
        deadline: row.opt_int(10)?,
        attempts: row.int(11)?,
        last_error: row.opt_text(12)?,
        kind,
        suppressed_since_last: row.int(14)?,
        suppressed_reason: row.opt_text(15)?,
    })
}

/// An audit event, from `EVENT_COLUMNS`. A damaged detail is kept as text
/// rather than lost.
pub fn event<R: Cells>(row: &R) -> Result<StoredEvent, R::Error> {
    let detail = row.text(7)?;
    Ok(StoredEvent {
        event_id: row.int(0)?,
        event: Event {
            at: row.int(1)?,
            tenant_key: row.text(2)?,
            actor: row.text(3)?,
            action: row.text(4)?.into(),
            task_id: row.opt_text(5)?,
            run_id: row.opt_text(6)?,
            detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
        },
    })
}
