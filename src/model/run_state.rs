//! What a run has in each of its states (docs/CONTRACT.md §5): a running run
//! its lease, a parked one its wait (and an owner's approval), an ended one
//! its end and when. A run's status is read from its state, so the status
//! and the fields it implies cannot disagree.
//!
//! `StateColumns` is a state as the runs table spells it. Reading one back
//! refuses columns that contradict their status (a running run without a
//! lease, an ended one still parked): the store quarantines or reports such
//! a row like any other it cannot read, never guesses.

use super::RunStatus;
use crate::vocabulary::string_enum;

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

    /// The state as the runs table spells it.
    pub fn columns(&self) -> StateColumns {
        let start = self.start();
        let wait = self.wait();
        let approval = self.approval();
        StateColumns {
            status: self.status(),
            started_at: start.map(|s| s.at),
            finished_at: self.finished_at(),
            lease_token: self.lease().map(|l| l.token.clone()),
            lease_until: self.lease().map(|l| l.until),
            blocked_by: match self {
                RunState::Ended {
                    end: RunEnd::SkippedOverlap { blocked_by },
                    ..
                } => Some(blocked_by.clone()),
                _ => None,
            },
            wait_kind: wait.map(|w| w.kind.as_str().to_string()),
            wait_id: wait.map(|w| w.id.clone()),
            wait_deadline: wait.map(|w| w.deadline),
            queued_seconds: start.and_then(|s| s.queued_seconds),
            approved_at: approval.map(|a| a.at),
            approved_by: approval.map(|a| a.by.clone()),
        }
    }
}

/// A run's state as the runs table spells it, column by column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateColumns {
    pub status: RunStatus,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub lease_token: Option<String>,
    pub lease_until: Option<i64>,
    pub blocked_by: Option<String>,
    pub wait_kind: Option<String>,
    pub wait_id: Option<String>,
    pub wait_deadline: Option<i64>,
    pub queued_seconds: Option<i64>,
    pub approved_at: Option<i64>,
    pub approved_by: Option<String>,
}

impl StateColumns {
    /// The state these columns hold, or why they contradict their status.
    ///
    /// Columns a settled row keeps from an earlier state and nothing reads
    /// are passed over: the lease token a parked or ended run still holds,
    /// and the lease end of a run frozen when its lease expired (the
    /// freezing reads it as it changes the row).
    pub fn state(self) -> Result<RunState, String> {
        let status = self.status;
        let start = match (self.started_at, self.queued_seconds) {
            (Some(at), queued_seconds) => Some(Start { at, queued_seconds }),
            (None, None) => None,
            (None, Some(_)) => {
                return Err(format!(
                    "a {status} run waited in a queue but never started"
                ))
            }
        };
        let wait = self.wait()?;
        let approval = match (self.approved_at, self.approved_by) {
            (Some(at), Some(by)) => Some(Approval { at, by }),
            (None, None) => None,
            _ => {
                return Err(format!(
                    "a {status} run's approval lacks its time or its approver"
                ))
            }
        };
        if approval.is_some() && !status.is_awaiting() {
            return Err(format!("a {status} run holds an approval"));
        }
        if self.blocked_by.is_some() != (status == RunStatus::SkippedOverlap) {
            return Err(format!(
                "a {status} run's blocked_by does not fit its status"
            ));
        }
        let started = || start.ok_or_else(|| format!("a {status} run has no start time"));
        let open = |finished_at: Option<i64>| match finished_at {
            Some(_) => Err(format!("a {status} run has a finish time")),
            None => Ok(()),
        };
        match status {
            RunStatus::Running => {
                open(self.finished_at)?;
                let (Some(token), Some(until)) = (self.lease_token, self.lease_until) else {
                    return Err("a running run holds no lease".into());
                };
                Ok(RunState::Running {
                    start: started()?,
                    lease: Lease { token, until },
                    continues: wait.map(|wait| Parking {
                        wait,
                        approval: None,
                    }),
                })
            }
            RunStatus::AwaitingConfirmation | RunStatus::AwaitingAuthorization => {
                open(self.finished_at)?;
                let wait = match wait {
                    Some(wait) if wait.kind.status() == status => wait,
                    _ => return Err(format!("a {status} run has no wait of its kind")),
                };
                Ok(RunState::Awaiting {
                    start: started()?,
                    parking: Parking { wait, approval },
                })
            }
            _ => {
                let Some(finished_at) = self.finished_at else {
                    return Err(format!("a {status} run has no finish time"));
                };
                let end = match (status, self.blocked_by) {
                    (RunStatus::Unknown, _) => RunEnd::Unknown { continued: wait },
                    (_, _) if wait.is_some() => {
                        return Err(format!("a {status} run is still parked on a wait"))
                    }
                    (RunStatus::SkippedOverlap, Some(blocked_by)) => {
                        RunEnd::SkippedOverlap { blocked_by }
                    }
                    (status, _) => RunEnd::of(status)
                        .ok_or_else(|| format!("a {status} run cannot have ended"))?,
                };
                Ok(RunState::Ended {
                    end,
                    start,
                    finished_at,
                })
            }
        }
    }

    /// The wait the columns name: all three of its columns, or none.
    fn wait(&self) -> Result<Option<Wait>, String> {
        let status = self.status;
        match (&self.wait_kind, &self.wait_id, self.wait_deadline) {
            (None, None, None) => Ok(None),
            (Some(kind), Some(id), Some(deadline)) => Ok(Some(Wait {
                kind: WaitKind::parse(kind)
                    .ok_or_else(|| format!("a {status} run waits for an unknown kind '{kind}'"))?,
                id: id.clone(),
                deadline,
            })),
            _ => Err(format!(
                "a {status} run's wait lacks its kind, id or deadline"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait() -> Wait {
        Wait {
            kind: WaitKind::Confirmation,
            id: "w1".into(),
            deadline: 900,
        }
    }

    fn start() -> Start {
        Start {
            at: 100,
            queued_seconds: Some(5),
        }
    }

    /// One state of each shape the store holds.
    fn states() -> Vec<RunState> {
        let lease = Lease {
            token: "t1".into(),
            until: 400,
        };
        let parking = Parking {
            wait: wait(),
            approval: Some(Approval {
                at: 200,
                by: "unix:alice".into(),
            }),
        };
        vec![
            RunState::Running {
                start: start(),
                lease: lease.clone(),
                continues: None,
            },
            RunState::Running {
                start: start(),
                lease,
                continues: Some(Parking {
                    wait: wait(),
                    approval: None,
                }),
            },
            RunState::Awaiting {
                start: start(),
                parking,
            },
            RunState::Ended {
                end: RunEnd::Unknown {
                    continued: Some(wait()),
                },
                start: Some(start()),
                finished_at: 500,
            },
            RunState::Ended {
                end: RunEnd::Succeeded,
                start: Some(start()),
                finished_at: 500,
            },
            RunState::not_run(
                RunEnd::SkippedOverlap {
                    blocked_by: "r0".into(),
                },
                500,
            ),
            RunState::not_run(RunEnd::Missed, 500),
        ]
    }

    #[test]
    fn every_state_reads_back_from_its_columns() {
        for state in states() {
            assert_eq!(state.columns().state(), Ok(state.clone()), "{state:?}");
        }
    }

    #[test]
    fn columns_a_state_keeps_from_before_are_passed_over() {
        // A parked run keeps the token of the lease it ran under; a frozen
        // one also the lease's end.
        let mut parked = states()[2].columns();
        parked.lease_token = Some("t0".into());
        assert_eq!(parked.state(), Ok(states()[2].clone()));
        let mut frozen = states()[3].columns();
        frozen.lease_token = Some("t0".into());
        frozen.lease_until = Some(400);
        assert_eq!(frozen.state(), Ok(states()[3].clone()));
    }

    #[test]
    fn columns_that_contradict_their_status_are_refused() {
        let running = states()[0].columns();
        let parked = states()[2].columns();
        let succeeded = states()[4].columns();
        let cases = [
            StateColumns {
                lease_token: None,
                ..running.clone()
            },
            StateColumns {
                started_at: None,
                queued_seconds: None,
                ..running.clone()
            },
            StateColumns {
                finished_at: Some(500),
                ..running.clone()
            },
            StateColumns {
                approved_at: Some(200),
                approved_by: Some("unix:alice".into()),
                ..running
            },
            StateColumns {
                wait_id: None,
                ..parked.clone()
            },
            StateColumns {
                status: RunStatus::AwaitingAuthorization,
                ..parked.clone()
            },
            StateColumns {
                wait_kind: Some("telepathy".into()),
                ..parked.clone()
            },
            StateColumns {
                approved_by: None,
                ..parked.clone()
            },
            StateColumns {
                finished_at: None,
                ..succeeded.clone()
            },
            StateColumns {
                wait_kind: Some("confirmation".into()),
                wait_id: Some("w1".into()),
                wait_deadline: Some(900),
                ..succeeded.clone()
            },
            StateColumns {
                blocked_by: Some("r0".into()),
                ..succeeded.clone()
            },
            StateColumns {
                status: RunStatus::SkippedOverlap,
                ..succeeded.clone()
            },
            StateColumns {
                started_at: None,
                ..succeeded
            },
        ];
        for columns in cases {
            assert!(columns.clone().state().is_err(), "{columns:?}");
        }
    }

    #[test]
    fn an_outcome_parks_or_ends_the_run_it_settles() {
        let running = &states()[0];
        let parked = running
            .after(RunStatus::AwaitingConfirmation, Some(wait()), 500)
            .unwrap();
        assert_eq!(parked.status(), RunStatus::AwaitingConfirmation);
        assert_eq!(
            (parked.finished_at(), parked.start()),
            (None, Some(start()))
        );
        let ended = running.after(RunStatus::Failed, None, 500).unwrap();
        assert_eq!((ended.finished_at(), ended.lease()), (Some(500), None));
        assert!(running
            .after(RunStatus::AwaitingAuthorization, Some(wait()), 500)
            .is_err());
        assert!(running
            .after(RunStatus::AwaitingConfirmation, None, 500)
            .is_err());
        assert!(running.after(RunStatus::Running, None, 500).is_err());
    }
}
