//! Sending an agent draft's one-time code to the person (docs/CONTRACT.md
//! §7, §17): a notice of kind `confirm_code`, through the same notifier as
//! the tick's notices, to the task's target, once, right after the draft is
//! committed (never while a transaction is open).
//!
//! The code is in clear only in this process's memory and the notifier's
//! stdin: it is not put in the deliveries ledger (whose notices are kept and
//! retried), so an exit 75 or a failure is not retried. The person can still
//! confirm at their own terminal, where `confirm` shows a fresh code. The
//! audit trail records that a code was sent, to whom, and how it went —
//! never the code.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::commands::draft::{confirm_line, Made};
use crate::context::Ctx;
use crate::model::Event;
use crate::process::{self, ChildExit, ChildSpec, Heartbeat};
use crate::schedule;
use crate::tick::deliver::EX_TEMPFAIL;
use crate::tick::Notifier;

/// How sending the code went.
pub enum Sent {
    Delivered,
    /// Nothing was sent: no notifier, it could not start, or it said so (exit 75).
    Nothing(String),
    /// The notifier failed after it started: the code may have reached the person.
    Unknown(String),
}

impl Sent {
    pub fn state(&self) -> &'static str {
        match self {
            Sent::Delivered => "delivered",
            Sent::Nothing(_) => "not_sent",
            Sent::Unknown(_) => "unknown",
        }
    }

    pub fn error(&self) -> Option<&str> {
        match self {
            Sent::Delivered => None,
            Sent::Nothing(e) | Sent::Unknown(e) => Some(e),
        }
    }
}

/// Sends `code` for the draft `made` to its target, and records how it went.
pub fn send(ctx: &mut Ctx, notifier: Option<&Notifier>, made: &Made, code: &str) -> Result<Sent> {
    let sent = match notifier {
        None => Sent::Nothing("no notifier configured".into()),
        Some(notifier) => run_notifier(ctx, notifier, made, code),
    };
    let (draft, target) = (&made.draft, &made.payload.target);
    let event = Event {
        at: ctx.clock.now(),
        tenant_key: draft.tenant_key.clone(),
        actor: "agentcron:mcp".into(),
        action: "confirm_code".into(),
        task_id: None,
        run_id: None,
        detail: json!({"draft_id": draft.draft_id, "target": target,
                       "state": sent.state(), "error": sent.error()}),
    };
    ctx.store()?.write(|tx| tx.append_event(&event))?;
    Ok(sent)
}

fn run_notifier(ctx: &Ctx, notifier: &Notifier, made: &Made, code: &str) -> Sent {
    let (draft, payload) = (&made.draft, &made.payload);
    let summary = payload.schedule.describe(payload.timezone);
    let command = confirm_line(ctx, draft).replace("NNNNNN", code);
    let agent = payload.drafted_by.as_deref().unwrap_or("an agent");
    let message = format!(
        "agentcron: {agent} drafted a task for you: {summary} ({}): \"{}\". Your one-time \
         code is {code}. To schedule it, run yourself before {}: {command} — if you did not \
         ask for it, ignore this.",
        payload.timezone.name(),
        crate::text::clip(&payload.instruction, 120),
        schedule::format_utc(draft.expires_at),
    );
    let stdin = json!({
        "kind": "confirm_code",
        "task": null,
        "run": null,
        "draft": {
            "draft_id": draft.draft_id,
            "payload_hash": draft.payload_hash,
            "drafted_by": payload.drafted_by,
            "summary": summary,
            "expires_at": crate::wire::time(Some(draft.expires_at)),
        },
        "target": payload.target,
        "message": message,
    });
    let spec = ChildSpec {
        argv: notifier.argv.clone(),
        stdin: format!("{stdin}\n").into_bytes(),
        env: vec![
            ("AGENTCRON_TENANT".into(), draft.tenant_key.clone()),
            ("AGENTCRON_DRAFT_ID".into(), draft.draft_id.clone()),
            ("AGENTCRON_NOTICE_KIND".into(), "confirm_code".into()),
        ],
        launch: notifier.launch.clone(),
        timeout: notifier.timeout,
        kill_grace: notifier.kill_grace,
        output_cap: 64 * 1024,
    };
    match process::run_child(&spec, Duration::from_millis(100), &mut || {
        Heartbeat::Continue
    }) {
        Ok(out) => match out.exit {
            ChildExit::Exited(0) => Sent::Delivered,
            ChildExit::Exited(EX_TEMPFAIL) => {
                Sent::Nothing("the notifier exited 75: nothing was sent".into())
            }
            ChildExit::Exited(code) => Sent::Unknown(format!("the notifier exited {code}")),
            ChildExit::Signaled(sig) => {
                Sent::Unknown(format!("the notifier was killed by signal {sig}"))
            }
            ChildExit::TimedOut | ChildExit::Aborted => {
                Sent::Unknown("the notifier timed out".into())
            }
        },
        Err(process::SpawnError::Lost(e)) => Sent::Unknown(e),
        Err(e) => Sent::Nothing(format!("the notifier could not start: {e}")),
    }
}
