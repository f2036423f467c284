//! One tool call: its arguments read by the subcommand's own clap
//! definition, its document built from what the subcommand gathers by the
//! function its `--json` prints (`documents`; `draft` builds its own from
//! `ops::draft`), and a short text beside it. Nothing a call does is
//! printed on stdout, which carries the protocol. Each call is the
//! subcommand's own one short transaction; an error becomes a tool error
//! carrying the CLI's message, hint and exit code, and a panic is caught,
//! so no call takes the server down.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::Result;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

use super::arguments::{parse, JsonObject};
use super::code_notice;
use super::documents;
use super::tools::{Access, DraftStatusArgs, ToolName, REPLACE_TASK};
use super::words;
use crate::commands::{self, draft::DraftArgs};
use crate::context::Ctx;
use crate::error::{classify, fail, CmdError, ErrorKind};
use crate::ops::confirm_code;
use crate::output::{error_words, ErrorWords};
use crate::tick::Notifier;

/// What the server was started with, fixed for its life.
pub struct Session {
    pub allow_pause: bool,
    pub notifier: Option<Notifier>,
    /// `--max-drafts`: drafts for the person per hour.
    pub max_drafts: u32,
}

/// One tool call as the client sent it.
pub struct Call {
    /// One the server offers (it refuses any other before the call).
    pub tool: ToolName,
    pub arguments: JsonObject,
    /// The client's name from its `initialize` (clientInfo.name).
    pub client: String,
}

/// A tool's answer: the JSON document and the words beside it.
struct Answer {
    value: Value,
    text: String,
}

/// Runs one call against the store; never fails, never panics out.
pub fn answer(ctx: &mut Ctx, session: &Session, call: &Call) -> CallToolResult {
    ctx.begin_call();
    let outcome = catch_unwind(AssertUnwindSafe(|| run(ctx, session, call)));
    match outcome {
        Ok(Ok(answer)) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
            result.structured_content = Some(wrap(answer.value));
            result
        }
        Ok(Err(err)) => error_result(&err),
        Err(_) => error_result(&anyhow::anyhow!(
            "agentcron failed inside the {} tool (a bug); nothing more was done",
            call.tool
        )),
    }
}

/// Structured content is an object: a JSON array (`list`, `runs`) is
/// handed over as `{"items": [...]}`.
fn wrap(value: Value) -> Value {
    match value {
        Value::Object(_) => value,
        other => json!({ "items": other }),
    }
}

/// The error as `--json` reports it on stderr, and in the CLI's words.
fn error_result(err: &anyhow::Error) -> CallToolResult {
    let ErrorWords {
        kind,
        message,
        hint,
        ..
    } = error_words(err, false);
    let mut text = format!("agentcron: error: {message}");
    if let Some(hint) = &hint {
        text.push_str(&format!("\n  hint: {}", crate::text::escape(hint)));
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({"error": {
        "kind": kind.as_str(), "message": message, "hint": hint, "exit_code": kind.exit_code(),
    }}));
    result
}

fn run(ctx: &mut Ctx, session: &Session, call: &Call) -> Result<Answer> {
    let drafts = call.tool.spec().access == Access::Drafts;
    // Only a draft creates the store; until then the reading tools find none.
    ctx.create_store_if_missing(drafts);
    if let Err(e) = ctx.store() {
        let missing = classify(&e).0 == ErrorKind::NotFound && !crate::store::schema::is_behind(&e);
        if !drafts && missing {
            // Its error names the path, which is none of the agent's business.
            return fail(
                CmdError::not_found("there is no agentcron store yet: nothing was drafted")
                    .with_hint("draft a task first"),
            );
        }
        return Err(e);
    }
    tool(ctx, session, call).map_err(|e| unowned_is_not_found(ctx, call, e))
}

/// A task or run of another owner or tenant is, to the agent, one that
/// does not exist: a denial would tell it that it exists, and its name.
fn unowned_is_not_found(ctx: &Ctx, call: &Call, err: anyhow::Error) -> anyhow::Error {
    if !call.tool.spec().names_one || classify(&err).0 != ErrorKind::Denied {
        return err;
    }
    let named = ["task", "run"].iter().find_map(|k| {
        call.arguments
            .get(*k)
            .and_then(Value::as_str)
            .map(|v| (*k, v))
    });
    let message = match named {
        Some((what, arg)) => format!(
            "no {what} '{}' in tenant '{}'",
            crate::text::escape(arg),
            crate::text::escape(&ctx.tenant)
        ),
        None => "no such task".to_string(),
    };
    CmdError::not_found(message)
        .with_hint("`list` shows the person's tasks")
        .into()
}

fn tool(ctx: &mut Ctx, session: &Session, call: &Call) -> Result<Answer> {
    use ToolName as T;
    let name = call.tool;
    if !name.offered(session.allow_pause) {
        return fail(CmdError::not_found(format!(
            "this server offers no tool '{name}'"
        )));
    }
    let schema = name.schema();
    let arguments = &call.arguments;
    match name {
        T::Draft | T::DraftReplace => {
            let renamed = if name == T::DraftReplace {
                REPLACE_TASK
            } else {
                &[]
            };
            // Without its task, draft_replace would be a new draft.
            if name == T::DraftReplace && arguments.get("task").is_none_or(Value::is_null) {
                return fail(
                    CmdError::usage("draft_replace needs the task it replaces")
                        .with_hint("give task: its name, id or an id prefix"),
                );
            }
            let args: DraftArgs = parse(name.as_str(), &schema, arguments, renamed)?;
            draft(ctx, session, call, args)
        }
        T::DraftStatus => draft_status(ctx, call),
        T::Profiles => {
            let _: super::tools::ProfilesArgs = args_of(call)?;
            said(documents::profiles(ctx)?, words::profiles)
        }
        T::List => said(documents::list(ctx, args_of(call)?)?, words::list),
        T::Show => said(documents::show(ctx, args_of(call)?)?, words::show),
        T::Runs => said(documents::runs(ctx, args_of(call)?)?, words::runs),
        T::Next => said(documents::next(ctx, args_of(call)?)?, words::next),
        T::Upcoming => said(documents::upcoming(ctx, args_of(call)?)?, words::upcoming),
        T::Explain => said(documents::explain(ctx, args_of(call)?)?, words::explain),
        T::Status => said(documents::status(ctx, args_of(call)?)?, words::status),
        T::Pause => {
            let args: commands::pause::PauseArgs = args_of(call)?;
            if args.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return fail(
                    CmdError::usage("pause needs a reason")
                        .with_hint("say why, for the person who will read it"),
                );
            }
            said(documents::pause(ctx, args)?, words::pause)
        }
    }
}

/// The call's arguments as its subcommand's Args, read by that
/// subcommand's clap definition.
fn args_of<A: clap::Args + clap::FromArgMatches>(call: &Call) -> Result<A> {
    parse(
        call.tool.as_str(),
        &call.tool.schema(),
        &call.arguments,
        &[],
    )
}

/// `draft_status`: what became of a draft the agent made.
fn draft_status(ctx: &mut Ctx, call: &Call) -> Result<Answer> {
    let args: DraftStatusArgs = args_of(call)?;
    let value = super::draft_status::status(ctx, &args.draft_id)?;
    Ok(Answer {
        text: words::draft_status(&value),
        value,
    })
}

/// A tool's document with its words beside it.
fn said(value: Value, words: fn(&Value) -> String) -> Result<Answer> {
    Ok(Answer {
        text: words(&value),
        value,
    })
}

/// `draft` and `draft_replace`: the draft `draft --json` would make, with
/// the agent in its payload and a one-time code sent to the person.
fn draft(ctx: &mut Ctx, session: &Session, call: &Call, args: DraftArgs) -> Result<Answer> {
    if args.instruction.as_deref() == Some("-") {
        return fail(
            CmdError::usage("the instruction '-' reads standard input at a shell")
                .with_hint("give the instruction's text itself"),
        );
    }
    let spec = args.spec()?;
    let code = confirm_code::new_code();
    let drafted_by = format!("agent:{}", call.client);
    let agent = crate::ops::draft::Agent {
        drafted_by: &drafted_by,
        code: &code,
        max_per_hour: session.max_drafts,
    };
    let made = commands::draft::make(ctx, &args, &spec, Some(agent))?;
    // The document `draft --json` prints, built, not printed and read back.
    let mut value = commands::draft::made_document(ctx, &made);
    let (sent, recorded) = code_notice::send(ctx, session.notifier.as_ref(), &made, &code);
    let commands = code_notice::Commands::of(ctx, &made);
    value["confirm_command"] = json!(commands.confirm);
    value["show_command"] = json!(commands.show);
    value["zone"] = json!(made.zone.name());
    let target = made.payload.target.clone();
    value["confirm_code"] = json!({"sent_to": target, "state": sent.state(),
        "error": sent.error(), "recorded": recorded.is_ok()});
    let mut text = words::draft(&value, &crate::text::escape(&target), &sent);
    // The draft is committed and its code handled: an error here would
    // have the agent draft again, and the person get a second code.
    if let Err(e) = &recorded {
        text = format!(
            "{}\n{text}",
            words::unrecorded(&made.draft.draft_id, &crate::error::sentence(e))
        );
    }
    Ok(Answer { text, value })
}
