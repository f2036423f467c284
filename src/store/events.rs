//! The audit trail: append-only, written in the same transaction as the
//! change it records, so a change without its event cannot exist. The
//! operations, and their one implementation over `Connection`.

use anyhow::{Context, Result};

use super::connection::{Connection, Dialect, LaterInsert, Row};
use super::owners;
use super::rows::{self, EVENT_COLUMNS};
use crate::audit::{Event, StoredEvent};
use crate::store::connection::args;

/// Which audit events `EventTx::events` reads: the tenant's that the owner
/// keys may see, optionally one task's, the newest `limit`.
#[derive(Debug, Clone, Copy)]
pub struct EventFilter<'a> {
    pub tenant_key: &'a str,
    pub owner_keys: &'a [String],
    pub task_id: Option<&'a str>,
    pub limit: u64,
}

pub trait EventTx {
    fn append_event(&mut self, event: &Event) -> Result<()>;
    /// Newest first, in the tenant: events of tasks the caller owns and
    /// events about no task (drafts shown to their author, scheduler gaps);
    /// optionally one task's.
    fn events(&mut self, filter: &EventFilter<'_>) -> Result<Vec<StoredEvent>>;
    /// The task's latest pause or resume at or before `at`.
    fn last_pause_change(&mut self, task_id: &str, at: i64) -> Result<Option<StoredEvent>>;
    /// The latest `scheduler_gap` event at or after `since` that concerns
    /// `tenant` (its own, or one of a tick serving every tenant, `*`); any
    /// tenant's when None.
    fn last_scheduler_gap(
        &mut self,
        tenant: Option<&str>,
        since: i64,
    ) -> Result<Option<StoredEvent>>;
}

/// The events of rows selecting `EVENT_COLUMNS`.
fn events(found: &[Row]) -> Result<Vec<StoredEvent>> {
    found.iter().map(rows::event).collect()
}

/// The statement `events` runs: (tenant $1, task $2, owner keys $3 as a
/// JSON list, limit $4). One text per case, each read newest first along
/// an index and stopped at the limit: `tenant_key IN ($1, '*')` with `($2
/// IS NULL OR task_id = $2)` made SQLite sort every event of the tenant.
fn events_statement(dialect: Dialect, one_task: bool) -> String {
    // Drafts are shown to their author, task events to the task's owners.
    let visible = format!(
        "(CASE WHEN e.task_id IS NULL THEN e.action <> 'draft' OR e.actor IN {keys}
               ELSE {owned} END)",
        keys = owners::keys(dialect, 3),
        owned = owners::owned(dialect, "t", 3),
    );
    let columns = "e.event_id, e.at, e.tenant_key, e.actor, e.action, e.task_id, e.run_id,
                   e.detail FROM events e LEFT JOIN tasks t ON t.task_id = e.task_id";
    if one_task {
        // Down `events_by_task`.
        return format!(
            "SELECT {columns} WHERE e.task_id = $2 AND e.tenant_key IN ($1, '*') AND {visible}
             ORDER BY e.event_id DESC LIMIT $4"
        );
    }
    // The tenant's events and those of every tenant (`*`): two walks down
    // `events_by_tenant`, merged (the second is skipped when the tenant is
    // `*` itself, which would list its events twice).
    match dialect {
        // $2 is unused: SQLite numbers the parameters up to $4 all the same.
        Dialect::Sqlite => format!(
            "SELECT {columns} WHERE e.tenant_key = $1 AND {visible}
             UNION ALL
             SELECT {columns} WHERE e.tenant_key = '*' AND $1 <> '*' AND {visible}
             ORDER BY 1 DESC LIMIT $4"
        ),
        // PostgreSQL must infer every parameter's type from the text, $2
        // included; each arm stops at the limit before the merge.
        Dialect::Postgres => format!(
            "(SELECT {columns} WHERE e.tenant_key = $1 AND CAST($2 AS TEXT) IS NULL AND {visible}
              ORDER BY e.event_id DESC LIMIT $4)
             UNION ALL
             (SELECT {columns} WHERE e.tenant_key = '*' AND $1 <> '*' AND {visible}
              ORDER BY e.event_id DESC LIMIT $4)
             ORDER BY 1 DESC LIMIT $4"
        ),
    }
}

/// An audit event's row: every write appends some, none reads them back
/// in the same transaction but through a statement naming `events`.
static EVENT_ROW: LaterInsert = LaterInsert {
    table: "events",
    read_by: None,
    column_names: "at, tenant_key, actor, action, task_id, run_id, detail",
    then: "",
    key_columns: 0,
};

impl<C: Connection> EventTx for C {
    fn append_event(&mut self, e: &Event) -> Result<()> {
        self.insert_later(
            &EVENT_ROW,
            args![
                e.at,
                &e.tenant_key,
                &e.actor,
                e.action.as_str(),
                &e.task_id,
                &e.run_id,
                &e.detail.to_string()
            ],
        )
        .context("appending the audit event")?;
        Ok(())
    }

    fn events(&mut self, f: &EventFilter<'_>) -> Result<Vec<StoredEvent>> {
        let keys = serde_json::to_string(f.owner_keys)?;
        let sql = events_statement(self.dialect(), f.task_id.is_some());
        let rows = self
            .query(&sql, args![f.tenant_key, f.task_id, &keys, f.limit as i64])
            .context("reading the audit trail")?;
        events(&rows)
    }

    fn last_pause_change(&mut self, task_id: &str, at: i64) -> Result<Option<StoredEvent>> {
        let row = self
            .query_opt(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events
                     WHERE task_id = $1 AND action IN ('pause', 'resume') AND at <= $2
                     ORDER BY event_id DESC LIMIT 1"
                ),
                args![task_id, at],
            )
            .context("reading the task's pauses")?;
        row.as_ref().map(rows::event).transpose()
    }

    fn last_scheduler_gap(
        &mut self,
        tenant: Option<&str>,
        since: i64,
    ) -> Result<Option<StoredEvent>> {
        // Along the partial index of gap events (one per cron outage).
        let hint = self.dialect().pick(" INDEXED BY events_scheduler_gaps", "");
        let row = self
            .query_opt(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events{hint}
                     WHERE action = 'scheduler_gap'
                       AND (CAST($1 AS TEXT) IS NULL OR tenant_key IN ($1, '*'))
                       AND at >= $2
                     ORDER BY at DESC, event_id DESC LIMIT 1"
                ),
                args![tenant, since],
            )
            .context("reading the last scheduler gap")?;
        row.as_ref().map(rows::event).transpose()
    }
}
