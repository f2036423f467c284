//! `agentcron mcp`: a Model Context Protocol server on stdio for an agent
//! host (docs/CONTRACT.md §17). Agents draft, people confirm: the tools
//! draft, read and (with `--allow pause`) pause, and nothing the server
//! offers makes a task run. Identity and tenant are the server's own
//! (`--as`, `--tenant`), fixed when it starts; a tool argument never sets
//! them. Each tool is its subcommand: `arguments` reads a call's JSON with
//! the subcommand's clap definition, `tools` derives the schemas from it,
//! `call` answers it with the document its `--json` prints (`documents`
//! builds it from what the subcommand gathers), `words` adds the short text,
//! `code_notice` sends an agent draft's one-time code, `draft_status` tells
//! a draft's fate, `server` speaks the protocol (rmcp) and `transport`
//! carries it over stdio, a line's read bounded.

mod arguments;
mod call;
mod code_notice;
mod documents;
mod draft_status;
mod server;
mod tools;
mod transport;
mod words;

use std::sync::mpsc;

use anyhow::{Context, Result};
use clap::Args;

use crate::commands::flags::{duration, notifier_from, LaunchArgs};
use crate::context::Ctx;
use crate::error::{fail, CmdError};

/// Serve drafting and reading tools to an AI agent over MCP on stdio
///
/// Tools: draft, draft_replace, draft_status, list, show, runs, next, upcoming, explain
/// and status; pause (with a reason) only with --allow pause. Nothing it offers
/// confirms, applies, resumes, triggers, deletes, reconciles, approves or denies. The
/// identity and tenant are this command's --as and --tenant, never a tool's argument.
///
/// A draft made here records `drafted_by: agent:<client name>` in its payload, and its
/// one-time confirmation code goes to the task's target through the notifier (as the
/// tick's notices do): the person confirms with `agentcron confirm … --code NNNNNN`.
/// The message says who drafted, a new task or each field a change alters (step-ups
/// of policy and silenced notices first), the schedule in its zone with the next runs,
/// and the instruction quoted and escaped as the agent's words (past 500 characters,
/// its size and SHA-256 and `agentcron show DRAFT` to read the rest); the notifier's
/// stdin has it all as JSON too. At most --max-drafts drafts an hour, and 20 waiting,
/// per person. The store is created by the first draft, never by reading.
///
/// Configure it in the agent host as a stdio server, e.g. `agentcron mcp --as
/// unix:alice`; see the README's "Agents" section for the stronger deployment
/// under a dedicated user, where the commands handed to the person begin with
/// `sudo -u USER` (or --confirm-prefix).
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer this tool: only `pause` can be allowed
    #[arg(long, value_name = "TOOL", value_delimiter = ',')]
    pub allow: Vec<String>,

    /// The notifier that sends an agent draft's one-time code, split by shell word rules
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// Refuse more than N drafts for the person in any hour (and more than 20 waiting)
    ///
    /// Each draft sends the person a code; past the limit a draft is a tool error that
    /// says when to try again.
    #[arg(long, value_name = "N", default_value = "10",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_drafts: u32,

    /// Begin the commands handed to the person with these words, so that they work as
    /// printed: e.g. `--confirm-prefix 'sudo -u agentcron'` when this server runs as
    /// another user [default: $AGENTCRON_CONFIRM_PREFIX, else `sudo -u $USER` when run by
    /// sudo, else none]
    ///
    /// Split by shell word rules; `--confirm-prefix ''` turns the sudo default off.
    #[arg(long, value_name = "WORDS")]
    pub confirm_prefix: Option<String>,

    /// How long the notifier may take
    #[arg(long, value_name = "DUR", default_value = "60s", hide = true)]
    pub notify_timeout: String,

    /// Time between SIGTERM and SIGKILL when the notifier is stopped
    #[arg(long, value_name = "DUR", default_value = "5s", hide = true)]
    pub kill_grace: String,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

pub fn run(ctx: &mut Ctx, args: McpArgs) -> Result<i32> {
    let allow_pause = allowed(&args.allow)?;
    // Every command this server hands out begins with it (`ctx`'s).
    let prefix = confirm_prefix(ctx, args.confirm_prefix.as_deref())?;
    ctx.set_confirm_prefix(prefix);
    let session = call::Session {
        allow_pause,
        notifier: notifier_from(
            args.notifier.as_deref(),
            duration("--notify-timeout", &args.notify_timeout)?,
            duration("--kill-grace", &args.kill_grace)?,
            &args.launch.launch()?,
        )?,
        max_drafts: args.max_drafts,
    };
    // `status` reports the server's tenant only, never the others'.
    ctx.confine_to_tenant();
    // A stop signal ends the server between calls, never inside one: a
    // call's transaction commits, a code notifier is stopped and its
    // notice recorded (`code_notice`), then the server exits 128 + signal.
    crate::interrupt::catch_stop_signals()
        .map_err(|e| anyhow::anyhow!("cannot catch stop signals: {e}"))?;
    let (jobs, calls) = mpsc::channel::<server::Job>();
    let server = server::Server::new(tools::offered(allow_pause), jobs);
    // The protocol on its own thread; the store stays on this one.
    let protocol = std::thread::spawn(move || serve(server));
    loop {
        if let Some(signal) = crate::interrupt::received() {
            // The protocol thread may be blocked reading stdin: not joined.
            ctx.out.warn(&format!(
                "interrupted by {}: the server stopped",
                crate::interrupt::name(signal)
            ));
            return Ok(crate::interrupt::exit_code(signal));
        }
        match calls.recv_timeout(SIGNAL_CHECK) {
            Ok(job) => {
                let result = call::answer(ctx, &session, &job.call);
                // A client that went away no longer waits for the answer.
                let _ = job.reply.send(result);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    match protocol.join() {
        Ok(result) => result.map(|()| 0),
        Err(_) => Err(anyhow::anyhow!("the MCP protocol thread failed")),
    }
}

/// How often an idle server looks for a stop signal.
const SIGNAL_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// `--confirm-prefix`, else the context's (AGENTCRON_CONFIRM_PREFIX, else
/// `sudo -u USER` when sudo started this server as USER).
fn confirm_prefix(ctx: &Ctx, given: Option<&str>) -> Result<Vec<String>> {
    if let Some(words) = given {
        return shell_words::split(words).map_err(|e| {
            CmdError::usage(format!("--confirm-prefix: {e}"))
                .with_hint("quote it as a shell would, e.g. 'sudo -u agentcron'")
                .into()
        });
    }
    Ok(ctx.confirm_prefix().to_vec())
}

/// `--allow`: only `pause` can be added; anything else is refused before
/// the server starts.
fn allowed(allow: &[String]) -> Result<bool> {
    for tool in allow {
        if !tools::allowable(tool) {
            let known = matches!(
                tool.as_str(),
                "confirm"
                    | "apply"
                    | "resume"
                    | "trigger"
                    | "delete"
                    | "reconcile"
                    | "approve"
                    | "deny"
            );
            let why = if known {
                "a person does that at a shell, never an agent"
            } else {
                "no such tool can be allowed"
            };
            return fail(
                CmdError::usage(format!("--allow {}: {why}", crate::text::escape(tool)))
                    .with_hint("only --allow pause exists"),
            );
        }
    }
    Ok(!allow.is_empty())
}

/// Serves MCP on stdin/stdout until the client closes them, every line's
/// read bounded (`transport`).
fn serve(server: server::Server) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the MCP runtime")?;
    runtime.block_on(async move {
        use rmcp::ServiceExt;
        let running = server
            .serve(transport::BoundedStdio::new())
            .await
            .map_err(|e| anyhow::anyhow!("the MCP client did not start a session: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session ended abnormally: {e}"))?;
        Ok(())
    })
}
