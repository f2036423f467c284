//! The operations a case is made of, and how they are generated. Targets
//! (which task, run, notice or draft) are `Sel` values resolved against
//! what exists when the step runs, so a shrunk sequence stays meaningful.

use proptest::prelude::*;

use agentcron::model::{DeliveryState, RunStatus};

use crate::model::Sched;

/// A schedule relative to the moment the task is drafted.
#[derive(Debug, Clone, Copy)]
pub enum SchedSpec {
    Once { in_seconds: i64 },
    Interval { seconds: i64, anchor_in: i64 },
}

impl SchedSpec {
    pub fn at(self, now: i64) -> Sched {
        match self {
            SchedSpec::Once { in_seconds } => Sched::Once {
                run_at: now + in_seconds,
            },
            SchedSpec::Interval { seconds, anchor_in } => Sched::Interval {
                seconds,
                anchor_at: now + anchor_in,
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct TaskSpec {
    pub name: Option<&'static str>,
    pub sched: SchedSpec,
    pub grace: i64,
    pub max_retries: i64,
    pub backoff: i64,
}

/// Which of the existing items an operation targets: the n-th, modulo how
/// many there are (shrinks towards the first).
#[derive(Debug, Clone, Copy)]
pub struct Sel(pub usize);

impl Sel {
    pub fn index(self, len: usize) -> usize {
        self.0 % len
    }
}

/// Which lease or claim token an operation presents.
#[derive(Debug, Clone, Copy)]
pub enum Tok {
    /// The one the store handed out.
    Right,
    /// One that was never handed out.
    Wrong,
    /// Another run's (or notice's) token: stale for this one.
    Other(Sel),
}

/// A run or notice to act on: usually one the operation fits (a running
/// run for Finish, a pending notice for ClaimNotice), sometimes any at all,
/// so that wrong-status attempts are exercised too.
#[derive(Debug, Clone, Copy)]
pub struct Pick {
    pub index: Sel,
    pub any: bool,
}

fn pick() -> impl Strategy<Value = Pick> {
    (any::<usize>().prop_map(Sel), prop::bool::weighted(0.2))
        .prop_map(|(index, any)| Pick { index, any })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    StaleRevision,
    WrongState,
}

#[derive(Debug, Clone)]
pub enum Op {
    /// draft, then confirm in a second transaction (as the two commands do).
    Create(TaskSpec),
    /// Confirm a draft again: a consumed one is a Conflict, a refused one
    /// (its name was taken) may now succeed.
    Reconfirm(Sel),
    Pause {
        task: Sel,
        stale: bool,
    },
    Resume {
        task: Sel,
        stale: bool,
    },
    Delete {
        task: Sel,
        stale: bool,
    },
    /// A transition whose guard is wrong: always a Conflict.
    RawTransition {
        task: Sel,
        guard: Guard,
    },
    /// Lifecycle change by someone who owns nothing: Denied.
    PauseAsStranger(Sel),
    Advance(i64),
    /// One claim transaction of a tick.
    Claim {
        lease: i64,
    },
    Renew {
        run: Pick,
        tok: Tok,
        extend: i64,
    },
    /// The executor's outcome, recorded under a lease token.
    Finish {
        run: Pick,
        tok: Tok,
        to: RunStatus,
        notify: bool,
        wait: i64,
    },
    ExpireLeases,
    Reconcile {
        run: Pick,
        succeeded: bool,
    },
    Approve {
        run: Pick,
        right_wait: bool,
        lease: i64,
    },
    Deny(Pick),
    ExpireContinuations,
    ClaimNotice {
        notice: Pick,
        twice: bool,
        deadline: i64,
    },
    FinishNotice {
        notice: Pick,
        tok: Tok,
        to: DeliveryState,
    },
    ExpireNotices,
}

fn task_spec() -> impl Strategy<Value = TaskSpec> {
    let sched = prop_oneof![
        (30i64..400).prop_map(|in_seconds| SchedSpec::Once { in_seconds }),
        (prop::sample::select(vec![60i64, 120, 300, 3600]), 0i64..300)
            .prop_map(|(seconds, anchor_in)| SchedSpec::Interval { seconds, anchor_in }),
    ];
    (
        prop::sample::select(vec![None, None, Some("alpha"), Some("beta")]),
        sched,
        prop::sample::select(vec![0i64, 60, 300, 3600]),
        prop::sample::select(vec![0i64, 1, 3]),
        prop::sample::select(vec![60i64, 600]),
    )
        .prop_map(|(name, sched, grace, max_retries, backoff)| TaskSpec {
            name,
            sched,
            grace,
            max_retries,
            backoff,
        })
}

fn tok() -> impl Strategy<Value = Tok> {
    prop_oneof![
        6 => Just(Tok::Right),
        1 => Just(Tok::Wrong),
        1 => any::<usize>().prop_map(Sel).prop_map(Tok::Other),
    ]
}

/// Small steps mostly, sometimes past a lease or several occurrences.
fn advance() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => 0i64..=5,
        4 => 10i64..120,
        2 => 120i64..900,
        1 => 900i64..8000,
    ]
}

fn outcome() -> impl Strategy<Value = RunStatus> {
    prop::sample::select(vec![
        RunStatus::Succeeded,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Failed,
        RunStatus::DeliveryFailed,
        RunStatus::Unknown,
        RunStatus::AwaitingConfirmation,
        RunStatus::AwaitingAuthorization,
    ])
}

pub fn op() -> impl Strategy<Value = Op> {
    let lease = || prop::sample::select(vec![30i64, 60, 300, 900]);
    prop_oneof![
        4 => task_spec().prop_map(Op::Create),
        1 => any::<usize>().prop_map(Sel).prop_map(Op::Reconfirm),
        2 => (any::<usize>().prop_map(Sel), prop::bool::weighted(0.2)).prop_map(|(task, stale)| Op::Pause { task, stale }),
        2 => (any::<usize>().prop_map(Sel), prop::bool::weighted(0.2)).prop_map(|(task, stale)| Op::Resume { task, stale }),
        1 => (any::<usize>().prop_map(Sel), prop::bool::weighted(0.2)).prop_map(|(task, stale)| Op::Delete { task, stale }),
        1 => (any::<usize>().prop_map(Sel), prop_oneof![Just(Guard::StaleRevision), Just(Guard::WrongState)])
            .prop_map(|(task, guard)| Op::RawTransition { task, guard }),
        1 => any::<usize>().prop_map(Sel).prop_map(Op::PauseAsStranger),
        8 => advance().prop_map(Op::Advance),
        8 => lease().prop_map(|lease| Op::Claim { lease }),
        2 => (pick(), tok(), 0i64..200).prop_map(|(run, tok, extend)| Op::Renew { run, tok, extend }),
        10 => (pick(), tok(), outcome(), any::<bool>(), -60i64..900)
            .prop_map(|(run, tok, to, notify, wait)| Op::Finish { run, tok, to, notify, wait }),
        3 => Just(Op::ExpireLeases),
        3 => (pick(), any::<bool>()).prop_map(|(run, succeeded)| Op::Reconcile { run, succeeded }),
        3 => (pick(), prop::bool::weighted(0.8), lease())
            .prop_map(|(run, right_wait, lease)| Op::Approve { run, right_wait, lease }),
        1 => pick().prop_map(Op::Deny),
        1 => Just(Op::ExpireContinuations),
        3 => (pick(), prop::bool::weighted(0.3), 10i64..300)
            .prop_map(|(notice, twice, deadline)| Op::ClaimNotice { notice, twice, deadline }),
        3 => (
            pick(),
            tok(),
            prop::sample::select(vec![DeliveryState::Delivered, DeliveryState::Pending, DeliveryState::Unknown]),
        )
            .prop_map(|(notice, tok, to)| Op::FinishNotice { notice, tok, to }),
        1 => Just(Op::ExpireNotices),
    ]
}

pub fn ops(max_len: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=max_len)
}
