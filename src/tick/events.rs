//! What the tick reports as it works (`TickEvent`, rendered by
//! src/output/tick_report.rs) and the audit events its own steps write,
//! all under one actor.

use crate::audit::{AuditAction, Event};

use super::{deliver, execute, TaskRef};

pub use super::ACTOR;

/// Something the tick did, reported to the person (or script) as it happens.
#[derive(Debug, Clone)]
pub enum TickEvent {
    SchedulerGap {
        previous: i64,
        now: i64,
        due_tasks: i64,
    },
    LeaseExpired {
        run: crate::model::Run,
        task: Option<Box<crate::model::Task>>,
    },
    NoticeExpired {
        notice: crate::model::Notice,
        task: Option<TaskRef>,
    },
    NoticeUndeliverable {
        notice: crate::model::Notice,
        task: Option<TaskRef>,
    },
    Delivered(deliver::Delivery),
    NoticesUndelivered {
        count: u64,
    },
    ContinuationExpired {
        run: crate::model::Run,
        task: Option<TaskRef>,
    },
    Decided {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    /// An approved continuation claimed back to `running`.
    Continued {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    /// Due work this tick could not start now, marked as seen in time.
    Queued {
        count: usize,
        reason: super::queue::HeldBack,
    },
    Quarantined {
        task_id: String,
        problem: String,
    },
    /// No run of the task succeeded within its `expect_success` (since
    /// `since`): its notice, when it has a run to carry one.
    Overdue {
        task: TaskRef,
        tenant_key: String,
        since: i64,
        message: String,
        notice: Option<crate::model::Notice>,
    },
    Finished(Box<execute::Finished>),
    /// Dry run only: a run whose lease expired, which step 1 would freeze.
    WouldExpireLease {
        run: crate::model::Run,
        task: Option<Box<crate::model::Task>>,
    },
    /// Dry run only: an approved continuation step 4 would run.
    WouldContinue {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
    /// Dry run only: what step 4 would decide.
    WouldDecide {
        task: Box<crate::model::Task>,
        run: crate::model::Run,
    },
}

/// The audit event of what became of a notice.
pub fn delivery_event(now: i64, n: &crate::model::Notice, detail: serde_json::Value) -> Event {
    Event {
        run_id: Some(n.run_id.clone()),
        ..Event::of_tenant(AuditAction::Delivery, &n.tenant_key, ACTOR, now, detail)
    }
}
