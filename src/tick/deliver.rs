//! Delivering notices through the notifier (docs/CONTRACT.md §7): the claim is
//! committed before the notifier starts; exit 0 is delivered, exit 75 puts
//! the notice back to pending after a doubling delay (60 s up to 1 h),
//! anything else is unknown and never resent.
//!
//! Notices go out alongside the executors, never in front of a claim: the
//! worker that recorded an outcome sends its notice when a lane is free
//! (tick/execute.rs), and one pending lane here sends the rest one at a
//! time, each at most once per tick.
//!
//! A stop signal (`crate::interrupt`) kills a running notifier's group at
//! its next heartbeat (its notice is `unknown`: it may have been sent) and
//! starts no other.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::clock::Clock;
use crate::error::BusyStep;
use crate::model::{DeliveryState, Notice};
use crate::process::{self, ChildExit, ChildSpec, Heartbeat, Launch};
use crate::store::{shared::SharedStore, NoticeFinish, Store};
use crate::wire as json;

/// EX_TEMPFAIL: the notifier says nothing was sent.
pub const EX_TEMPFAIL: i32 = 75;

/// First delay after an exit 75; it doubles with each attempt.
pub const TEMPFAIL_BACKOFF: i64 = 60;
/// The longest delay between two attempts of one notice.
pub const MAX_TEMPFAIL_BACKOFF: i64 = 3600;

/// Notices one tick's pending lane sends at most.
pub const MAX_DELIVERIES: usize = 200;

/// Once the tick's executors are done, how long the pending lane may go on
/// starting deliveries before the tick ends (a notifier hung on every
/// notice must not keep a tick alive for hours).
const DELIVERY_TAIL: Duration = Duration::from_secs(60);

/// How often an idle pending lane looks for new notices while executors run.
const LANE_POLL: Duration = Duration::from_millis(100);

/// Delay before the next attempt after `attempts` attempts ended in exit 75.
pub fn tempfail_delay(attempts: i64) -> i64 {
    let exponent = (attempts - 1).clamp(0, 30) as u32;
    TEMPFAIL_BACKOFF
        .saturating_mul(1i64 << exponent)
        .min(MAX_TEMPFAIL_BACKOFF)
}

/// How to run the notifier.
#[derive(Debug, Clone)]
pub struct Notifier {
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// The environment it starts from, and as whom it runs (§19).
    pub launch: Launch,
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
        match tx.claim_notice(&notice.delivery_id, &token, deadline, now) {
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
    deliver_claimed(store, notifier, notice, &token, clock).map(Some)
}

/// The claim deadline: the notifier's timeout plus the time to kill it.
pub fn deadline_seconds(notifier: &Notifier) -> i64 {
    (notifier.timeout + notifier.kill_grace).as_secs() as i64 + 5
}

/// Runs the notifier for a notice this tick has claimed, and records the result.
pub fn deliver_claimed(
    store: &mut dyn Store,
    notifier: &Notifier,
    notice: &Notice,
    token: &str,
    clock: &Clock,
) -> Result<Delivery> {
    let (task, run) = store.read(|tx| {
        let run = tx.run(&notice.run_id)?;
        let task = match &run {
            Some(r) => tx.task(&r.task_id)?.and_then(Result::ok),
            None => None,
        };
        Ok((task, run))
    })?;
    let stdin = json!({
        "task": task.as_ref().map(json::task),
        "run": run.as_ref().map(json::run),
        "target": notice.target,
        // Words for a person, which a notifier may show as they are: the
        // summary and reason in them are escaped as the CLI escapes them
        // (`run` keeps them as data).
        "message": crate::text::escape(&notice.message),
        "kind": notice.kind.map(|k| k.as_str()),
        "suppressed_since_last": notice.suppressed_since_last,
    });
    let spec = ChildSpec {
        argv: notifier.argv.clone(),
        stdin: format!("{stdin}\n").into_bytes(),
        env: vec![
            ("AGENTCRON_TENANT".into(), notice.tenant_key.clone()),
            ("AGENTCRON_RUN_ID".into(), notice.run_id.clone()),
            ("AGENTCRON_DELIVERY_ID".into(), notice.delivery_id.clone()),
        ],
        launch: notifier.launch.clone(),
        timeout: notifier.timeout,
        kill_grace: notifier.kill_grace,
        output_cap: 64 * 1024,
    };
    let heartbeat = &mut || match crate::interrupt::received() {
        Some(_) => Heartbeat::Abort,
        None => Heartbeat::Continue,
    };
    let (state, error) = match process::run_child(&spec, Duration::from_millis(100), heartbeat) {
        Ok(out) => match out.exit {
            ChildExit::Exited(0) => (DeliveryState::Delivered, None),
            ChildExit::Exited(EX_TEMPFAIL) => (
                DeliveryState::Pending,
                Some("notifier exited 75: nothing was sent; trying again later".to_string()),
            ),
            ChildExit::Exited(code) => (
                DeliveryState::Unknown,
                Some(format!("notifier exited {code}")),
            ),
            ChildExit::Signaled(sig) => (
                DeliveryState::Unknown,
                Some(format!("notifier killed by signal {sig}")),
            ),
            ChildExit::TimedOut => (
                DeliveryState::Unknown,
                Some("notifier timed out".to_string()),
            ),
            ChildExit::Aborted => (
                DeliveryState::Unknown,
                Some("notifier killed: the tick was interrupted".to_string()),
            ),
        },
        Err(process::SpawnError::Lost(e)) => (DeliveryState::Unknown, Some(e)),
        // It never started, so nothing was sent: safe to try again later.
        Err(e) => (DeliveryState::Pending, Some(format!("{NOT_STARTED}: {e}"))),
    };
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_notifier_exit");
    let now = clock.now();
    // A notice claimed in its outcome's transaction carries its attempt
    // already; one listed as pending was counted by the claim since.
    let attempts = if notice.state == DeliveryState::Sending {
        notice.attempts
    } else {
        notice.attempts + 1
    };
    let retry_at = (state == DeliveryState::Pending).then(|| now + tempfail_delay(attempts));
    let recorded = store.write(|tx| {
        tx.finish_notice(&NoticeFinish {
            delivery_id: &notice.delivery_id,
            token,
            to: state,
            error: error.as_deref(),
            retry_at,
            now,
        })?;
        let detail =
            json!({"delivery_id": notice.delivery_id, "state": state.as_str(), "error": error});
        tx.append_event(&Event {
            task_id: run.as_ref().map(|r| r.task_id.clone()),
            run_id: Some(notice.run_id.clone()),
            ..Event::of_tenant(
                AuditAction::Delivery,
                &notice.tenant_key,
                "agentcron:tick",
                now,
                detail,
            )
        })
    });
    match recorded {
        Ok(()) => Ok(Delivery {
            notice: notice.clone(),
            task: task.as_ref().map(super::TaskRef::of),
            state,
            error,
        }),
        // Our deadline passed and another tick already froze the notice as
        // unknown: it stays unknown, whatever the notifier said.
        Err(e) if is_conflict(&e) => Ok(Delivery {
            notice: notice.clone(),
            task: task.as_ref().map(super::TaskRef::of),
            state: DeliveryState::Unknown,
            error: Some("the delivery deadline passed before the result was recorded".into()),
        }),
        Err(e) => Err(e),
    }
}

pub fn is_conflict(err: &anyhow::Error) -> bool {
    matches!(
        crate::error::classify(err).0,
        crate::error::ErrorKind::Conflict
    )
}

/// The lane that sends pending notices while the tick's executors run.
pub struct PendingLane {
    executors_done: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl PendingLane {
    pub fn start(
        store: &SharedStore,
        notifier: &Notifier,
        tenant: Option<String>,
        clock: Clock,
        messages: mpsc::Sender<super::execute::Message>,
    ) -> PendingLane {
        let executors_done = Arc::new(AtomicBool::new(false));
        let (done, mut store, notifier) =
            (executors_done.clone(), store.handle(), notifier.clone());
        let handle = std::thread::spawn(move || {
            let result = drain(
                store.as_mut(),
                &notifier,
                tenant.as_deref(),
                clock,
                &done,
                &messages,
            );
            let result = result.busy_during("delivering waiting notices");
            let _ = messages.send(super::execute::Message::LaneDone(result));
        });
        PendingLane {
            executors_done,
            handle,
        }
    }

    /// Tells the lane that no executor of this tick runs any more: it ends
    /// once nothing is left to send (or its time is up).
    pub fn executors_done(&self) {
        self.executors_done.store(true, Ordering::Release);
    }

    pub fn join(self) {
        self.executors_done();
        let _ = self.handle.join();
    }
}

fn drain(
    store: &mut dyn Store,
    notifier: &Notifier,
    tenant: Option<&str>,
    clock: Clock,
    executors_done: &AtomicBool,
    messages: &mpsc::Sender<super::execute::Message>,
) -> Result<()> {
    let mut attempted = HashSet::new();
    let mut done_since: Option<Instant> = None;
    loop {
        let done = executors_done.load(Ordering::Acquire);
        if done && done_since.is_none() {
            done_since = Some(Instant::now());
        }
        let out_of_time = done_since.is_some_and(|t| t.elapsed() > DELIVERY_TAIL);
        let interrupted = crate::interrupt::received().is_some();
        if attempted.len() >= MAX_DELIVERIES || out_of_time || interrupted {
            return Ok(());
        }
        let now = clock.now();
        let notices: Vec<Notice> = store
            .read(|tx| tx.notices_to_send(now, tenant, 64))?
            .into_iter()
            .filter(|n| !attempted.contains(&n.delivery_id))
            .collect();
        if notices.is_empty() {
            if done {
                return Ok(());
            }
            std::thread::sleep(LANE_POLL);
            continue;
        }
        for notice in notices {
            if crate::interrupt::received().is_some() {
                return Ok(());
            }
            // At most one attempt per notice per tick.
            attempted.insert(notice.delivery_id.clone());
            let Some(delivery) = deliver_pending(store, notifier, &notice, &clock)? else {
                continue;
            };
            let failed_to_start = delivery.notifier_did_not_start();
            let _ = messages.send(super::execute::Message::Delivered(Box::new(delivery)));
            if failed_to_start {
                // The same notifier will not start for the next one either.
                return Ok(());
            }
            if attempted.len() >= MAX_DELIVERIES {
                return Ok(());
            }
        }
    }
}
