//! The reading tools' documents, and `pause`'s: each tool gathers what its
//! subcommand gathers and builds the document its `--json` prints, with
//! the subcommand's own functions. Nothing is printed and read back, and a
//! list the CLI streams element by element is collected here, since a tool
//! answers with one value.

use anyhow::Result;
use serde_json::Value;

use crate::commands::show::Shown;
use crate::commands::{
    explain, list, next, pause, runs, show, show_draft, status, transition_document, upcoming,
};
use crate::context::Ctx;

/// `list --json`.
pub fn list(ctx: &mut Ctx, args: list::ListArgs) -> Result<Value> {
    let mut items = Vec::new();
    list::each_document(ctx, &args, &mut |value| {
        items.push(value);
        Ok(())
    })?;
    Ok(Value::Array(items))
}

/// `show --json`, of a task or of a pending draft.
pub fn show(ctx: &mut Ctx, args: show::ShowArgs) -> Result<Value> {
    Ok(match show::find(ctx, &args.task)? {
        Shown::Task(found) => show::document(&found),
        Shown::Draft(made) => show_draft::document(ctx, &made),
    })
}

/// `runs --json`.
pub fn runs(ctx: &mut Ctx, args: runs::RunsArgs) -> Result<Value> {
    let mut items = Vec::new();
    runs::each_document(ctx, &args, &mut |value| {
        items.push(value);
        Ok(())
    })?;
    Ok(Value::Array(items))
}

/// `next --json`.
pub fn next(ctx: &mut Ctx, args: next::NextArgs) -> Result<Value> {
    let now = ctx.clock.now();
    let (task, coming) = next::coming(ctx, &args, now)?;
    Ok(next::document(&task, &coming))
}

/// `upcoming --json`.
pub fn upcoming(ctx: &mut Ctx, args: upcoming::UpcomingArgs) -> Result<Value> {
    Ok(upcoming::ahead(ctx, &args)?.document())
}

/// `explain --json`.
pub fn explain(ctx: &mut Ctx, args: explain::ExplainArgs) -> Result<Value> {
    Ok(explain::document(&explain::explained(ctx, &args)?))
}

/// `profile list --json`, without the tasks bound to each (other
/// people's among them): what an agent needs to pick one for a draft.
pub fn profiles(ctx: &mut Ctx) -> Result<Value> {
    let tenant = ctx.tenant.clone();
    let profiles = ctx.store()?.read(|tx| tx.profiles(Some(&tenant)))?;
    Ok(Value::Array(
        profiles
            .iter()
            .map(|p| {
                let mut value = crate::commands::profile::document(p, &[]);
                if let Some(object) = value.as_object_mut() {
                    object.remove("tasks");
                    object.remove("updated_by");
                }
                value
            })
            .collect(),
    ))
}

/// `status --json`, without where the store is: that is the person's to
/// know, not the agent's. Its exit code (1 when the last tick is stale) is
/// in the document (`stale`); its warnings go to the server's stderr,
/// as `status --json` says them, for whoever runs the server.
pub fn status(ctx: &mut Ctx, args: status::StatusArgs) -> Result<Value> {
    let report = status::report(ctx, status::max_age(&args)?)?;
    for warning in report.warnings() {
        ctx.out.warn(&warning);
    }
    let mut document = report.document();
    if let Some(document) = document.as_object_mut() {
        document.remove("database");
    }
    Ok(document)
}

/// `pause --json`.
pub fn pause(ctx: &mut Ctx, args: pause::PauseArgs) -> Result<Value> {
    Ok(transition_document(&pause::pause(ctx, &args)?))
}
