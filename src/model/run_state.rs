//! What a run has in each of its states (docs/CONTRACT.md §5): a running run
//! its lease, a parked one its wait (and an owner's approval), an ended one
//! its end and when. A run's status is read from its state, so the status
//! and the fields it implies cannot disagree.
//!
//! `StateColumns` (columns.rs) is a state as the runs table spells it;
//! reading one back refuses columns that contradict their status.

use super::RunStatus;
use crate::vocabulary::string_enum;

mod columns;
pub use columns::StateColumns;

string_enum!(
    /// Whom a parked run waits for (docs/CONTRACT.md §6, Continuations).
    WaitKind {
        Confirmation = "confirmation",
        Authorization = "authorization",
    }
);

/// The lease a running run's executor holds: the token that proves it, and
/// when it lapses unless renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub token: String,
    pub until: i64,
}

/// What a parked run waits for: the wait its executor named, and how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub kind: WaitKind,
    pub id: String,
    pub deadline: i64,
}

/// An owner's approval of a parked run: when, and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub at: i64,
    pub by: String,
}

/// A parked run's wait, and its approval once an owner gave it (the next
/// tick then runs the continuation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parking {
    pub wait: Wait,
    pub approval: Option<Approval>,
}

/// When a run's executor first started, and how long the run waited for a
/// free slot after it was due (start − due instant; none on rows older
/// than that column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    pub at: i64,
    pub queued_seconds: Option<i64>,
}

/// A run's state, with what that state has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// Its executor runs under a lease. A continuation carries the parking
    /// it continues (the stored row keeps the wait; the tick's copy keeps
    /// the approval too, to say who approved what it runs).
    Running {
        start: Start,
        lease: Lease,
        continues: Option<Parking>,
    },
    /// Parked: its executor asked a person and waits (status from the kind).
    Awaiting { start: Start, parking: Parking },
    /// Decided for good (an unknown one until reconciled): `start` is none
    /// for a run that never ran.
    Ended {
        end: RunEnd,
        start: Option<Start>,
        finished_at: i64,
    },
}

/// How an ended run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    Succeeded,
    Failed,
    DeliveryFailed,
    /// Its outcome is not known. A continuation whose lease expired keeps
    /// the wait it continued.
    Unknown {
        continued: Option<Wait>,
    },
    Missed,
    /// Not started: the run it names still blocked the task.
    SkippedOverlap {
        blocked_by: String,
    },
    SkippedBudget,
    SkippedGate,
    SkippedProfile,
}

impl RunEnd {
    /// The end a status names, for a status that ends a run with nothing
    /// more to say (None for running, awaiting, and the skip that names its
    /// blocker).
    pub fn of(status: RunStatus) -> Option<RunEnd> {
        Some(match status {
            RunStatus::Succeeded => RunEnd::Succeeded,
            RunStatus::Failed => RunEnd::Failed,
            RunStatus::DeliveryFailed => RunEnd::DeliveryFailed,
            RunStatus::Unknown => RunEnd::Unknown { continued: None },
            RunStatus::Missed => RunEnd::Missed,
            RunStatus::SkippedBudget => RunEnd::SkippedBudget,
            RunStatus::SkippedGate => RunEnd::SkippedGate,
            RunStatus::SkippedProfile => RunEnd::SkippedProfile,
            RunStatus::SkippedOverlap
            | RunStatus::Running
            | RunStatus::AwaitingConfirmation
            | RunStatus::AwaitingAuthorization => return None,
        })
    }

    pub fn status(&self) -> RunStatus {
        match self {
            RunEnd::Succeeded => RunStatus::Succeeded,
            RunEnd::Failed => RunStatus::Failed,
            RunEnd::DeliveryFailed => RunStatus::DeliveryFailed,
            RunEnd::Unknown { .. } => RunStatus::Unknown,
            RunEnd::Missed => RunStatus::Missed,
            RunEnd::SkippedOverlap { .. } => RunStatus::SkippedOverlap,
            RunEnd::SkippedBudget => RunStatus::SkippedBudget,
            RunEnd::SkippedGate => RunStatus::SkippedGate,
            RunEnd::SkippedProfile => RunStatus::SkippedProfile,
        }
    }
}

impl WaitKind {
    /// The status of a run parked on a wait of this kind.
    pub fn status(self) -> RunStatus {
        match self {
            WaitKind::Confirmation => RunStatus::AwaitingConfirmation,
            WaitKind::Authorization => RunStatus::AwaitingAuthorization,
        }
    }
}

impl RunState {
    /// A run decided without running, at `now`.
    pub fn not_run(end: RunEnd, now: i64) -> RunState {
        RunState::Ended {
            end,
            start: None,
            finished_at: now,
        }
    }

    /// The state an outcome recorded at `now` leaves a run in (as
    /// `finish_run` writes it): parked on `wait`, or ended; an error for a
    /// status no outcome can have, or a park without its wait.
    pub fn after(
        &self,
        status: RunStatus,
        wait: Option<Wait>,
        now: i64,
    ) -> Result<RunState, String> {
        let start = self.start();
        if status.is_awaiting() {
            return match (start, wait) {
                (Some(start), Some(wait)) if wait.kind.status() == status => {
                    Ok(RunState::Awaiting {
                        start,
                        parking: Parking {
                            wait,
                            approval: None,
                        },
                    })
                }
                _ => Err(format!(
                    "a run cannot become {status} without a start and a wait of its kind"
                )),
            };
        }
        let end = RunEnd::of(status).ok_or_else(|| format!("no outcome makes a run {status}"))?;
        Ok(RunState::Ended {
            end,
            start,
            finished_at: now,
        })
    }

    /// A parked run claimed again under `lease`: running, continuing its
    /// parking (None when the run is not parked).
    pub fn continued(&self, start: Start, lease: Lease) -> Option<RunState> {
        match self {
            RunState::Awaiting { parking, .. } => Some(RunState::Running {
                start,
                lease,
                continues: Some(parking.clone()),
            }),
            _ => None,
        }
    }

    pub fn status(&self) -> RunStatus {
        match self {
            RunState::Running { .. } => RunStatus::Running,
            RunState::Awaiting { parking, .. } => parking.wait.kind.status(),
            RunState::Ended { end, .. } => end.status(),
        }
    }

    pub fn start(&self) -> Option<Start> {
        match self {
            RunState::Running { start, .. } | RunState::Awaiting { start, .. } => Some(*start),
            RunState::Ended { start, .. } => *start,
        }
    }

    pub fn finished_at(&self) -> Option<i64> {
        match self {
            RunState::Ended { finished_at, .. } => Some(*finished_at),
            _ => None,
        }
    }

    pub fn lease(&self) -> Option<&Lease> {
        match self {
            RunState::Running { lease, .. } => Some(lease),
            _ => None,
        }
    }

    /// The parking of a parked run, or the one a continuation continues.
    pub fn parking(&self) -> Option<&Parking> {
        match self {
            RunState::Awaiting { parking, .. } => Some(parking),
            RunState::Running { continues, .. } => continues.as_ref(),
            RunState::Ended { .. } => None,
        }
    }

    /// The wait a run is parked on, continues, or (unknown) continued.
    pub fn wait(&self) -> Option<&Wait> {
        match self {
            RunState::Ended {
                end: RunEnd::Unknown { continued },
                ..
            } => continued.as_ref(),
            _ => self.parking().map(|p| &p.wait),
        }
    }

    pub fn approval(&self) -> Option<&Approval> {
        self.parking().and_then(|p| p.approval.as_ref())
    }
}

#[cfg(test)]
mod tests;
