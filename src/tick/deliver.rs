//! Delivering notices through the notifier (SPEC section 7): the claim is
//! committed before the notifier starts; exit 0 is delivered, exit 75 puts
//! the notice back to pending, anything else is unknown and never resent.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::context::Clock;
use crate::model::{DeliveryState, Event, Notice};
use crate::output::json;
use crate::process::{self, ChildExit, ChildSpec, Heartbeat};
use crate::store::{NoticeFinish, Store};

/// EX_TEMPFAIL: the notifier says nothing was sent.
pub const EX_TEMPFAIL: i32 = 75;

/// How to run the notifier.
#[derive(Debug, Clone)]
pub struct Notifier {
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub kill_grace: Duration,
}

/// What became of one notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub notice: Notice,
    pub state: DeliveryState,
    pub error: Option<String>,
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
        "message": notice.message,
    });
    let spec = ChildSpec {
        argv: notifier.argv.clone(),
        stdin: format!("{stdin}\n").into_bytes(),
        env: vec![
            ("AGENTCRON_TENANT".into(), notice.tenant_key.clone()),
            ("AGENTCRON_RUN_ID".into(), notice.run_id.clone()),
            ("AGENTCRON_DELIVERY_ID".into(), notice.delivery_id.clone()),
        ],
        timeout: notifier.timeout,
        kill_grace: notifier.kill_grace,
        output_cap: 64 * 1024,
    };
    let (state, error) = match process::run_child(&spec, Duration::from_secs(3600), &mut || {
        Heartbeat::Continue
    }) {
        Ok(out) => match out.exit {
            ChildExit::Exited(0) => (DeliveryState::Delivered, None),
            ChildExit::Exited(EX_TEMPFAIL) => (
                DeliveryState::Pending,
                Some("notifier exited 75: nothing was sent; retrying later".to_string()),
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
            ChildExit::Aborted => (DeliveryState::Unknown, Some("notifier aborted".to_string())),
        },
        Err(process::SpawnError::Lost(e)) => (DeliveryState::Unknown, Some(e)),
        // It never started, so nothing was sent: safe to try again later.
        Err(e) => (
            DeliveryState::Pending,
            Some(format!("notifier could not start: {e}")),
        ),
    };
    #[cfg(feature = "test-hooks")]
    crate::hooks::at("after_notifier_exit");
    let now = clock.now();
    let recorded = store.write(|tx| {
        tx.finish_notice(&NoticeFinish {
            delivery_id: &notice.delivery_id,
            token,
            to: state,
            error: error.as_deref(),
            now,
        })?;
        tx.append_event(&Event {
            at: now,
            tenant_key: notice.tenant_key.clone(),
            actor: "agentcron:tick".into(),
            action: "delivery".into(),
            task_id: run.as_ref().map(|r| r.task_id.clone()),
            run_id: Some(notice.run_id.clone()),
            detail: json!({"delivery_id": notice.delivery_id, "state": state.as_str(), "error": error}),
        })
    });
    match recorded {
        Ok(()) => Ok(Delivery {
            notice: notice.clone(),
            state,
            error,
        }),
        // Our deadline passed and another tick already froze the notice as
        // unknown: it stays unknown, whatever the notifier said.
        Err(e) if is_conflict(&e) => Ok(Delivery {
            notice: notice.clone(),
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
