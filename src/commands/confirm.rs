//! `agentcron confirm`: turn a draft into an active task, atomically, only
//! when the person confirms the exact payload hash — and, for a draft an
//! agent made through `agentcron mcp`, the one-time code that reached the
//! person (docs/CONTRACT.md §17).

use anyhow::Result;
use clap::Args;

use crate::context::Ctx;
use crate::error::fail;
use crate::ops::confirm::Outcome;
use crate::ops::confirm_code::Proof;
use crate::ops::{self, access::Caller, confirm_code};
use crate::output::terminal;

/// Confirm a draft: create the task it describes
///
/// Checks, in one transaction, that the draft exists and has not expired, that HASH
/// is its payload hash (and the hash of the stored payload), that you own it in this
/// tenant, and that its schedule still has a future occurrence. Any failed check
/// creates nothing.
///
/// A draft an agent made through `agentcron mcp` also needs its one-time code: the
/// notifier sent it to the task's target (`--code NNNNNN`), or, run at your own
/// terminal without --code, confirm shows a code there for you to type back. Three
/// wrong codes void the draft; the agent's own key cannot confirm it (exit 4). At a
/// terminal, confirm first prints the draft in full, as `agentcron show DRAFT` does.
///
/// Refused inside a run (exit 4), as are the other commands that change schedules: a run
/// cannot confirm its own. Confirm from your own shell.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The draft id printed by `agentcron draft`
    pub draft_id: String,

    /// The full 64-hex payload hash printed by `agentcron draft`
    #[arg(long, value_name = "HASH", value_parser = parse_hash)]
    pub hash: String,

    /// The six-digit one-time code of an agent's draft, from the message you received
    #[arg(long, value_name = "NNNNNN", value_parser = parse_code)]
    pub code: Option<String>,
}

fn parse_code(text: &str) -> Result<String, String> {
    if confirm_code::is_well_formed(text) {
        Ok(text.to_string())
    } else {
        Err("expected the six digits of the one-time code".into())
    }
}

fn parse_hash(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected the full 64-character hex SHA-256 printed by `agentcron draft`".into())
    }
}

pub fn run(ctx: &mut Ctx, args: ConfirmArgs) -> Result<()> {
    let now = ctx.clock.now();
    let actor = ctx.actor().to_string();
    let identity = ctx.identity.clone();
    let tenant = ctx.tenant.clone();
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    // An agent's draft confirmed at the person's own terminal, without
    // --code: a fresh code is shown there and must be typed back.
    let at_terminal = args.code.is_none()
        && terminal::is_interactive()
        && ctx
            .store()?
            .read(|tx| ops::confirm::needs_code(tx, &caller, &args.draft_id))?;
    let (shown, typed) = if at_terminal {
        let shown = confirm_code::new_code();
        // The draft in full first, as `show DRAFT` prints it: the person
        // reads what they confirm before the code that confirms it.
        let draft = super::show_draft::pending(ctx, &args.draft_id)
            .map(|made| super::show_draft::detail(ctx, &made, now) + "\n\n")
            .unwrap_or_default();
        let typed = terminal::show_and_read(
            &format!(
                "{draft}agentcron: an agent drafted {}; to confirm it, type this one-time code: \
                 {shown}",
                args.draft_id
            ),
            "code: ",
        )?;
        (shown, typed)
    } else {
        (String::new(), String::new())
    };
    let proof = match &args.code {
        Some(code) => Proof::Code(code),
        None if at_terminal => Proof::Terminal {
            shown: &shown,
            typed: &typed,
        },
        None => Proof::None,
    };
    let outcome = ops::confirm::confirm_in(
        ctx.store()?,
        &caller,
        &args.draft_id,
        &args.hash,
        proof,
        &actor,
        now,
    )?;
    let confirmed = match outcome {
        Outcome::Confirmed(confirmed) => *confirmed,
        // A wrong code was counted (or voided the draft) before this.
        Outcome::Refused(refusal) => return fail(refusal),
    };
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
            crate::output::human::when(task.next_run_at, task.zone_in_force, now)
        ));
    }
    ctx.out.line(&format!(
        "Confirmed task {} ({}). Next run {}.",
        task.task_id,
        crate::text::escape(&task.label()),
        crate::output::human::when(task.next_run_at, task.zone_in_force, now)
    ))
}
