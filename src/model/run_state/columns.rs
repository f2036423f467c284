//! A run's state as the runs table spells it, column by column, and back.
//! Reading columns back refuses those that contradict their status (a
//! running run without a lease, an ended one still parked): the store
//! quarantines or reports such a row like any other it cannot read.

use super::{Approval, Lease, Parking, RunEnd, RunState, Start, Wait, WaitKind};
use crate::model::RunStatus;

impl RunState {
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
