//! Delivering notices through the notifier (docs/CONTRACT.md §7): the claim is
//! committed before the notifier starts; exit 0 is delivered, exit 75 puts
//! the notice back to pending after a doubling delay (60 s up to 1 h),
//! anything else is unknown and never resent.
//!
//! Notices go out alongside the executors, never in front of a claim: the
//! worker that recorded an outcome sends its notice when a lane is free
//! (tick/execute.rs), and the pending lane (tick/lane.rs) sends the rest one
//! at a time, each at most once per tick. Neither is known here: this
//! module only delivers, so the dependency runs one way, from them to it.
//!
//! A stop signal (`crate::interrupt`) kills a running notifier's group at
//! its next heartbeat (its notice is `unknown`: it may have been sent) and
//! starts no other.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::clock::Clock;
use crate::model::{DeliveryState, Notice, Run, Task};
use crate::process::notifier::NotifierExit;
use crate::store::{NoticeClaim, NoticeFinish, Store, Tx};
use crate::wire as json;

pub use crate::process::notifier::{Notifier, EX_TEMPFAIL};

/// First delay after an exit 75; it doubles with each attempt.
pub const TEMPFAIL_BACKOFF: i64 = 60;
/// The longest delay between two attempts of one notice.
pub const MAX_TEMPFAIL_BACKOFF: i64 = 3600;

/// Delay before the next attempt after `attempts` attempts ended in exit 75.
pub fn tempfail_delay(attempts: i64) -> i64 {
    let exponent = (attempts - 1).clamp(0, 30) as u32;
    TEMPFAIL_BACKOFF
        .saturating_mul(1i64 << exponent)
        .min(MAX_TEMPFAIL_BACKOFF)
}

/// What became of one notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub notice: Notice,
    /// The task of the notice's run, when it could be read.
    pub task: Option<super::TaskRef>,
    pub state: DeliveryState,
    pub error: Option<String>,
}

/// How a delivery whose notifier never started begins its error.
const NOT_STARTED: &str = "notifier could not start";

impl Delivery {
    /// The notifier could not be started (nothing was sent; the tick exits 1).
    pub fn notifier_did_not_start(&self) -> bool {
        self.error
            .as_deref()
            .is_some_and(|e| e.starts_with(NOT_STARTED))
    }
}

/// Claims a pending notice (its own transaction) and delivers it.
pub fn deliver_pending(
    store: &mut dyn Store,
    notifier: &Notifier,
    notice: &Notice,
    clock: &Clock,
) -> Result<Option<Delivery>> {
    let token = uuid::Uuid::new_v4().to_string();
    let now = clock.now();
    let deadline = now + deadline_seconds(notifier);
    let claimed = store.write(|tx| {
        // Another tick may have claimed it since we listed it: skip, quietly.
        match tx.claim_notice(&NoticeClaim {
            delivery_id: &notice.delivery_id,
            token: &token,
            deadline,
            now,
        }) {
            Ok(()) => Ok(true),
            Err(e) if is_conflict(&e) => Ok(false),
            Err(e) => Err(e),
        }
    });
    let claimed = match claimed {
        Ok(claimed) => claimed,
        // The connection dropped and the claim did not commit (or no one
        // can tell: then a later tick freezes it past its deadline). The
        // notice is not lost, and one notice must not stop the whole tick.
        Err(e) if crate::error::is_connection_lost(&e) => false,
        Err(e) => return Err(e),
    };
    if !claimed {
        return Ok(None);
    }
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_delivery_claim");
    // One notice after another on this thread: its result waits for no
    // other write.
    deliver_claimed(store, notifier, notice, &token, None, clock, Duration::ZERO).map(Some)
}

/// The claim deadline: the notifier's timeout plus the time to kill it.
pub fn deadline_seconds(notifier: &Notifier) -> i64 {
    (notifier.timeout + notifier.kill_grace).as_secs() as i64 + 5
}

/// The task and run a notice's notifier is told of, as stored.
pub type Told = (Option<Task>, Option<Run>);

/// Reads what the notifier of `notice` is told of, inside `tx`.
pub fn read_told(tx: &mut dyn Tx, notice: &Notice) -> Result<Told> {
    Ok(match tx.run_and_task(&notice.run_id)? {
        Some((run, task)) => (task.and_then(Result::ok), Some(run)),
        None => (None, None),
    })
}

/// Runs the notifier for a notice this tick has claimed, and records the
/// result. `told`: the task and run as read in the claim's transaction,
/// when it read them (else they are read now). The result may wait up to
/// `share_within` for another thread's write to share its commit
/// (`RESULT_WAIT` for a worker's notice: the tick claims for the slot its
/// run freed meanwhile).
pub fn deliver_claimed(
    store: &mut dyn Store,
    notifier: &Notifier,
    notice: &Notice,
    token: &str,
    told: Option<Told>,
    clock: &Clock,
    share_within: Duration,
) -> Result<Delivery> {
    let (task, run) = match told {
        Some(told) => told,
        None => store.read(|tx| read_told(tx, notice))?,
    };
    let env = vec![
        ("AGENTCRON_TENANT".into(), notice.tenant_key.clone()),
        ("AGENTCRON_RUN_ID".into(), notice.run_id.clone()),
        ("AGENTCRON_DELIVERY_ID".into(), notice.delivery_id.clone()),
    ];
    let exit = notifier.notify(&stdin_for(notice, task.as_ref(), run.as_ref()), env);
    let (state, error) = delivery_state(exit);
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_notifier_exit");
    let task = task.as_ref().map(super::TaskRef::of);
    let result = Reported {
        state,
        error: error.as_deref(),
    };
    match record(
        store,
        notice,
        run.as_ref(),
        token,
        result,
        clock,
        share_within,
    ) {
        Ok(()) => Ok(Delivery {
            notice: notice.clone(),
            task,
            state,
            error,
        }),
        // Our deadline passed and another tick already froze the notice as
        // unknown: it stays unknown, whatever the notifier said.
        Err(e) if is_conflict(&e) => Ok(Delivery {
            notice: notice.clone(),
            task,
            state: DeliveryState::Unknown,
            error: Some("the delivery deadline passed before the result was recorded".into()),
        }),
        Err(e) => Err(e),
    }
}

/// The notifier's standard input for a run notice (docs/CONTRACT.md §7).
fn stdin_for(notice: &Notice, task: Option<&Task>, run: Option<&Run>) -> serde_json::Value {
    json!({
        "task": task.map(json::task),
        "run": run.map(json::run),
        "target": notice.target,
        // Words for a person, which a notifier may show as they are: the
        // summary and reason in them are escaped as the CLI escapes them
        // (`run` keeps them as data).
        "message": crate::text::escape(&notice.message),
        "kind": notice.kind.map(|k| k.as_str()),
        // The same id at every attempt of this notice, so a notifier can
        // deduplicate on its own; the state the notice tells.
        "notice_id": notice.delivery_id,
        "state": notice.kind.map(super::notice_policy::state_of),
        "suppressed_since_last": notice.suppressed_since_last,
    })
}

/// What the notifier's end makes of the notice, and the error recorded.
fn delivery_state(exit: NotifierExit) -> (DeliveryState, Option<String>) {
    match exit {
        NotifierExit::Sent => (DeliveryState::Delivered, None),
        NotifierExit::NothingSent => (
            DeliveryState::Pending,
            Some("notifier exited 75: nothing was sent; trying again later".to_string()),
        ),
        NotifierExit::Exited(code) => (
            DeliveryState::Unknown,
            Some(format!("notifier exited {code}")),
        ),
        NotifierExit::Signaled(sig) => (
            DeliveryState::Unknown,
            Some(format!("notifier killed by signal {sig}")),
        ),
        NotifierExit::TimedOut => (
            DeliveryState::Unknown,
            Some("notifier timed out".to_string()),
        ),
        NotifierExit::Interrupted => (
            DeliveryState::Unknown,
            Some("notifier killed: the tick was interrupted".to_string()),
        ),
        NotifierExit::Lost(e) => (DeliveryState::Unknown, Some(e)),
        // It never started, so nothing was sent: safe to try again later.
        NotifierExit::NotStarted(e) => {
            (DeliveryState::Pending, Some(format!("{NOT_STARTED}: {e}")))
        }
    }
}

/// Records how the delivery went, under this tick's claim (`token`).
fn record(
    store: &mut dyn Store,
    notice: &Notice,
    run: Option<&Run>,
    token: &str,
    result: Reported<'_>,
    clock: &Clock,
    share_within: Duration,
) -> Result<()> {
    let Reported { state, error } = result;
    let now = clock.now();
    // A notice claimed in its outcome's transaction carries its attempt
    // already; one listed as pending was counted by the claim since.
    let attempts = if notice.state == DeliveryState::Sending {
        notice.attempts
    } else {
        notice.attempts + 1
    };
    let retry_at = (state == DeliveryState::Pending).then(|| now + tempfail_delay(attempts));
    // Nothing waits on this write soon (the notice went out; until it
    // lands the notice reads `sending`, and a crash leaves it to freeze as
    // `unknown` past its deadline, never sent again): it may wait a moment
    // for another write of the tick to carry it, the claim that fills the
    // slot its run freed or another outcome, one commit for both.
    let (notice, task_id) = (notice.clone(), run.map(|r| r.task_id.clone()));
    let (token, error) = (token.to_string(), error.map(str::to_string));
    store.write_soon(share_within, move |tx| {
        tx.finish_notice(&NoticeFinish {
            delivery_id: &notice.delivery_id,
            token: &token,
            to: state,
            error: error.as_deref(),
            retry_at,
            now,
        })?;
        let detail =
            json!({"delivery_id": notice.delivery_id, "state": state.as_str(), "error": error});
        tx.append_event(&Event {
            task_id: task_id.clone(),
            run_id: Some(notice.run_id.clone()),
            ..Event::of_tenant(
                AuditAction::Delivery,
                &notice.tenant_key,
                "agentcron:tick",
                now,
                detail,
            )
        })
    })
}

/// How long a worker's notice result waits for another write to share its
/// commit.
pub const RESULT_WAIT: Duration = Duration::from_millis(25);

/// What the notifier's end said, as recorded.
struct Reported<'a> {
    state: DeliveryState,
    error: Option<&'a str>,
}

pub fn is_conflict(err: &anyhow::Error) -> bool {
    matches!(
        crate::error::classify(err).0,
        crate::error::ErrorKind::Conflict
    )
}
