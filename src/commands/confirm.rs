//! `agentcron confirm`: turn a draft into an active task, atomically, only
//! when the person confirms the exact payload hash.

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::ops::{self, access::Caller};

/// Confirm a draft: create the task it describes
///
/// Checks, in one transaction, that the draft exists and has not expired, that HASH
/// is its payload hash (and the hash of the stored payload), that you own it in this
/// tenant, and that its schedule still has a future occurrence. Any failed check
/// creates nothing.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The draft id printed by `agentcron draft`
    pub draft_id: String,

    /// The full 64-hex payload hash printed by `agentcron draft`
    #[arg(long, value_name = "HASH", value_parser = parse_hash)]
    pub hash: String,
}

fn parse_hash(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected the full 64-character hex SHA-256 printed by `agentcron draft`".into())
    }
}

pub fn run(ctx: &mut Ctx, args: ConfirmArgs) -> Result<()> {
    let now = ctx.now;
    let actor = ctx.actor().to_string();
    let identity = ctx.identity.clone();
    let tenant = ctx.tenant.clone();
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let confirmed = ctx
        .store()?
        .write(|tx| ops::confirm::confirm(tx, &caller, &args.draft_id, &args.hash, &actor, now))?;
    let (task, replaced) = (confirmed.task, confirmed.replaced);
    if ctx.out.json {
        return ctx.out.document(&crate::wire::task(&task));
    }
    if let Some(old) = replaced {
        return ctx.out.line(&format!(
            "Replaced the payload of task {} ({}): revision {} → {}, hash {}… → {}…. Next run {}.",
            task.task_id,
            crate::text::escape(&task.label()),
            old.revision,
            task.revision,
            &old.payload_hash[..8],
            &task.payload_hash[..8],
            crate::output::human::when(task.next_run_at, task.timezone, ctx.out.now())
        ));
    }
    ctx.out.line(&format!(
        "Confirmed task {} ({}). Next run {}.",
        task.task_id,
        crate::text::escape(&task.label()),
        crate::output::human::when(task.next_run_at, task.timezone, ctx.out.now())
    ))
}
