//! Reading a state back from its columns, and the states outcomes leave.

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
