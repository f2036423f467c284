//! `agentcron mcp`: a Model Context Protocol server on stdio for an agent
//! host (docs/CONTRACT.md §17). Agents draft, people confirm: the tools
//! draft, read and (with `--allow pause`) pause, and nothing the server
//! offers makes a task run. Identity and tenant are the server's own
//! (`--as`, `--tenant`), fixed when it starts; a tool argument never sets
//! them. Each tool is its subcommand: `arguments` reads a call's JSON with
//! the subcommand's clap definition, `tools` derives the schemas from it,
//! `call` runs it with its output captured, `words` adds the short text,
//! `code_notice` sends an agent draft's one-time code, `draft_status` tells
//! a draft's fate, and `server` speaks the protocol (rmcp).

mod arguments;
mod call;
mod code_notice;
mod draft_status;
mod server;
mod tools;
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
/// Configure it in the agent host as a stdio server, e.g. `agentcron mcp --as
/// unix:alice`; see the README's "Agents" section for the stronger deployment
/// under a dedicated user.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer this tool: only `pause` can be allowed
    #[arg(long, value_name = "TOOL", value_delimiter = ',')]
    pub allow: Vec<String>,

    /// The notifier that sends an agent draft's one-time code, split by shell word rules
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// How long the notifier may take
    #[arg(long, value_name = "DUR", default_value = "60s", hide = true)]
    pub notify_timeout: String,

    /// Time between SIGTERM and SIGKILL when the notifier is stopped
    #[arg(long, value_name = "DUR", default_value = "5s", hide = true)]
    pub kill_grace: String,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

pub fn run(ctx: &mut Ctx, args: McpArgs) -> Result<()> {
    let allow_pause = allowed(&args.allow)?;
    let session = call::Session {
        allow_pause,
        notifier: notifier_from(
            args.notifier.as_deref(),
            duration("--notify-timeout", &args.notify_timeout)?,
            duration("--kill-grace", &args.kill_grace)?,
            &args.launch.launch()?,
        )?,
    };
    // `status` reports the server's tenant only, never the others'.
    ctx.confine_to_tenant();
    let (jobs, calls) = mpsc::channel::<server::Job>();
    let server = server::Server::new(tools::offered(allow_pause), jobs);
    // The protocol on its own thread; the store stays on this one.
    let protocol = std::thread::spawn(move || serve(server));
    for job in calls {
        let result = call::answer(ctx, &session, &job.call);
        // A client that went away no longer waits for the answer.
        let _ = job.reply.send(result);
    }
    match protocol.join() {
        Ok(result) => result,
        Err(_) => Err(anyhow::anyhow!("the MCP protocol thread failed")),
    }
}

/// `--allow`: only `pause` can be added; anything else is refused before
/// the server starts.
fn allowed(allow: &[String]) -> Result<bool> {
    for tool in allow {
        if !tools::ALLOWABLE.contains(&tool.as_str()) {
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

/// Serves MCP on stdin/stdout until the client closes them.
fn serve(server: server::Server) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the MCP runtime")?;
    runtime.block_on(async move {
        use rmcp::ServiceExt;
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("the MCP client did not start a session: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session ended abnormally: {e}"))?;
        Ok(())
    })
}
