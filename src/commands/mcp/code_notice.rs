//! Sending an agent draft's one-time code to the person (docs/CONTRACT.md
//! §7, §17): a notice of kind `confirm_code`, through the same notifier as
//! the tick's notices, to the task's target, once, right after the draft is
//! committed (never while a transaction is open). The notifier is spawned
//! as the tick spawns it (`process::notifier`); the record is written by
//! `ops::confirm_code`.
//!
//! The code is in clear only in this process's memory and the notifier's
//! stdin: it is not put in the deliveries ledger (whose notices are kept and
//! retried), so an exit 75 or a failure is not retried. The person can still
//! confirm at their own terminal, where `confirm` shows a fresh code. The
//! audit trail records that a code was sent, to whom, and how it went —
//! never the code. A stop signal stops the notifier (the record says the
//! code may have been sent); a record that cannot be written does not undo
//! the draft, whose answer then says it exists.

use anyhow::Result;
use serde_json::{json, Value};

use crate::commands::draft::{confirm_line, Made};
use crate::commands::show_draft;
use crate::context::Ctx;
use crate::model::short_id;
use crate::ops::confirm_code;
use crate::output::confirmed;
use crate::process::notifier::NotifierExit;
use crate::text::{self, escape, quoted, relative, wall_time};
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

/// Sends `code` for the draft `made` to its target, and records how it
/// went. The record may fail (the database went away while the notifier
/// ran) when the code is already out: how it went is returned all the
/// same, beside the record's failure, for the agent to be told that its
/// draft exists rather than draft again.
pub fn send(
    ctx: &mut Ctx,
    notifier: Option<&Notifier>,
    made: &Made,
    code: &str,
) -> (Sent, Result<()>) {
    let sent = match notifier {
        None => Sent::Nothing("no notifier configured".into()),
        Some(notifier) => run_notifier(ctx, notifier, made, code),
    };
    let now = ctx.clock.now();
    let (draft, target) = (&made.draft, &made.payload.target);
    let recorded = ctx.store().and_then(|store| {
        confirm_code::record_sent(store, now, draft, target, sent.state(), sent.error())
    });
    (sent, recorded)
}

/// How much of the instruction the message quotes; the rest is read with
/// `agentcron show DRAFT`.
pub const QUOTED_CHARS: usize = 500;

/// The person's commands for this draft: `show` and `confirm` (with
/// NNNNNN for the code), each behind the prefix that makes them work as
/// printed (`sudo -u agentcron`, in the README's deployment).
pub struct Commands {
    pub show: String,
    pub confirm: String,
}

impl Commands {
    pub fn of(ctx: &Ctx, made: &Made) -> Commands {
        let mut show = vec![
            "agentcron".to_string(),
            "show".into(),
            made.draft.draft_id.clone(),
        ];
        for (flag, value) in ctx.flags_for_followup() {
            show.push(flag.into());
            show.push(value);
        }
        Commands {
            show: text::command_line(ctx.confirm_prefix(), &shell_words::join(show)),
            confirm: confirm_line(ctx, &made.draft),
        }
    }
}

/// The message the person reads (docs/CONTRACT.md §17): who drafted; a
/// new task, or a change to which task with each changed field, step-ups
/// first; the schedule with its zone and next runs; the instruction quoted
/// and escaped as the agent's words (its first 500 characters, its size and
/// SHA-256 when longer, and the command that shows it all); the rest of the
/// payload; then the code and the confirm command. Nothing the agent wrote
/// appears unquoted or unescaped.
pub fn message(made: &Made, code: &str, commands: &Commands, now: i64) -> String {
    let (draft, payload, zone) = (&made.draft, &made.payload, made.zone);
    let agent = escape(payload.drafted_by.as_deref().unwrap_or("an agent"));
    let mut lines = Vec::new();
    match &made.replacing {
        Some(task) => {
            lines.push(format!(
                "agentcron: {agent} drafted a change to your task {} ({}). What changes \
                 (old → new):",
                escape(&task.label()),
                short_id(&task.task_id)
            ));
            for line in show_draft::change_lines(made, QUOTED_CHARS) {
                lines.push(format!("  {line}"));
            }
        }
        None => lines.push(format!("agentcron: {agent} drafted a new task for you.")),
    }
    let runs: Vec<String> = made
        .upcoming
        .iter()
        .map(|o| wall_time(o.at, zone))
        .collect();
    let runs = match runs.is_empty() {
        true => "none".to_string(),
        false => runs.join(", "),
    };
    let instruction = &payload.instruction;
    let whole = instruction.chars().count() <= QUOTED_CHARS;
    // Every field `show DRAFT` shows, from the same description: who
    // drafted is said above, the schedule and the instruction in lines of
    // their own, the rest one line each.
    for field in confirmed::fields(payload, zone) {
        match field.label {
            "drafted by" => {}
            "schedule" => lines.push(format!("Schedule: {}; next runs: {runs}.", field.value)),
            "instruction" => {
                lines.push(match whole {
                    true => "The instruction, in the agent's words (quoted, escaped):".into(),
                    false => format!(
                        "The instruction, in the agent's words (quoted, escaped), its first \
                         {QUOTED_CHARS} characters of {}:",
                        show_draft::instruction_size(instruction)
                    ),
                });
                lines.push(format!(
                    "  {}",
                    quoted(text::head(instruction, QUOTED_CHARS))
                ));
                if !whole {
                    lines.push(format!(
                        "Read all of it before you confirm: {}",
                        commands.show
                    ));
                }
                lines.extend(confirmed::warnings(payload));
                lines.push("What else you confirm:".into());
            }
            label => lines.push(format!("  {label}: {}", field.value)),
        }
    }
    lines.push(format!(
        "Your one-time code is {code}. To schedule it, run yourself before {} ({}):",
        wall_time(draft.expires_at, zone),
        relative(draft.expires_at, now)
    ));
    lines.push(format!("  {}", commands.confirm.replace("NNNNNN", code)));
    lines.push(format!(
        "To read it all first: {}. If you did not ask for it, ignore this.",
        commands.show
    ));
    lines.join("\n")
}

fn run_notifier(ctx: &Ctx, notifier: &Notifier, made: &Made, code: &str) -> Sent {
    if let Some(signal) = crate::interrupt::received() {
        return Sent::Nothing(format!(
            "agentcron mcp was stopped by {} before the notifier ran",
            crate::interrupt::name(signal)
        ));
    }
    let (draft, payload) = (&made.draft, &made.payload);
    let commands = Commands::of(ctx, made);
    let message = message(made, code, &commands, ctx.clock.now());
    // The same, structured, for a notifier that renders it as it likes.
    let mut document = show_draft::document(ctx, made);
    document["confirm_command"] = json!(commands.confirm);
    document["show_command"] = json!(commands.show);
    let changes = document
        .as_object_mut()
        .and_then(|d| d.remove("changes"))
        .unwrap_or(Value::Null);
    let stdin = json!({
        "kind": "confirm_code",
        "task": null,
        "run": null,
        "draft": document,
        "changes": changes,
        "code": code,
        "target": payload.target,
        "message": message,
    });
    let env = vec![
        ("AGENTCRON_TENANT".into(), draft.tenant_key.clone()),
        ("AGENTCRON_DRAFT_ID".into(), draft.draft_id.clone()),
        ("AGENTCRON_NOTICE_KIND".into(), "confirm_code".into()),
    ];
    // A stop signal stops the notifier (within its kill grace), so that
    // how it went is recorded before the server exits.
    match notifier.notify(&stdin, env) {
        NotifierExit::Sent => Sent::Delivered,
        NotifierExit::NothingSent => {
            Sent::Nothing("the notifier exited 75: nothing was sent".into())
        }
        NotifierExit::Exited(code) => Sent::Unknown(format!("the notifier exited {code}")),
        NotifierExit::Signaled(sig) => {
            Sent::Unknown(format!("the notifier was killed by signal {sig}"))
        }
        NotifierExit::TimedOut => Sent::Unknown("the notifier timed out".into()),
        NotifierExit::Interrupted => Sent::Unknown(format!(
            "agentcron mcp was stopped by {} while the notifier ran: the code may have \
             been sent",
            crate::interrupt::received().map_or("a signal", crate::interrupt::name)
        )),
        NotifierExit::Lost(e) => Sent::Unknown(e),
        NotifierExit::NotStarted(e) => Sent::Nothing(format!("the notifier could not start: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{budgets, CatchUp};
    use crate::model::{Draft, NotifyMode, Policy};
    use crate::payload::{NoticePolicy, Payload, Zone};
    use crate::schedule::Schedule;

    /// A payload with every key a canonical payload can hold set, written
    /// out whole (no `..`): a new payload field does not compile here until
    /// it is given a value, and then the walk below checks it is shown.
    fn every_field() -> Payload {
        Payload {
            budgets: budgets(&["usd=2.5/day".into()]).unwrap(),
            catch_up: CatchUp::Latest,
            drafted_by: Some("agent:walker".into()),
            expect_success_seconds: Some(2 * 86400),
            gate: Some("test -s /var/inbox".into()),
            grace_seconds: 120,
            instruction: "summarize the inbox".into(),
            max_retries: 4,
            name: Some("inbox".into()),
            notice: NoticePolicy {
                notify: Some(NotifyMode::Failures),
                realert_seconds: Some(7200),
                pause_after: Some(5),
            },
            owner_keys: vec!["unix:alice".into()],
            policy: Policy::ConfirmWrites,
            profile: Some(Box::new(crate::profile::Bound::new(
                "triager",
                crate::profile::Definition {
                    command: "inbox-agent --read-only".into(),
                    cwd: Some("/srv/mail".into()),
                    max_concurrent: Some(2),
                    pass_env: vec!["MAIL_TOKEN".into()],
                    run_as: Some("mail".into()),
                    timeout_seconds: Some(900),
                },
            ))),
            retry_backoff_seconds: 90,
            schedule: Schedule::Calendar {
                hour: 9,
                minute: 30,
                weekdays: vec![0, 1, 2, 3, 4],
            },
            target: "chat:42".into(),
            tenant_key: "default".into(),
            timeout_seconds: Some(600),
            zone: Zone::Follows {
                fallback: "Europe/Berlin".parse().unwrap(),
            },
        }
    }

    fn made(payload: Payload) -> Made {
        let canonical = payload.canonical();
        Made {
            draft: Draft {
                draft_id: "d1a2b3c4-0000-4000-8000-000000000000".into(),
                tenant_key: "default".into(),
                payload_hash: crate::payload::hash_hex(canonical.as_bytes()),
                payload: canonical,
                created_by: "unix:alice".into(),
                created_at: 1_800_000_000,
                expires_at: 1_800_001_800,
                replaces: None,
                code: None,
            },
            zone: payload.zone.named(),
            payload,
            upcoming: Vec::new(),
            replacing: None,
        }
    }

    #[test]
    fn the_code_message_and_show_draft_render_every_payload_key() {
        let made = made(every_field());
        let commands = Commands {
            show: "agentcron show d1a2b3c4".into(),
            confirm: "agentcron confirm d1a2b3c4 --code NNNNNN".into(),
        };
        let message = message(&made, "123456", &commands, 1_800_000_000);
        let shown = show_draft::detail_text(&made, 1_800_000_000, "agentcron confirm d1a2b3c4");
        let fields = confirmed::fields(&made.payload, made.zone);
        let keys = made.payload.to_value();
        for key in keys.as_object().unwrap().keys() {
            let field = fields
                .iter()
                .find(|f| f.keys.contains(&key.as_str()))
                .unwrap_or_else(|| panic!("no field of the description shows `{key}`"));
            assert!(
                message.contains(&field.value),
                "the code message leaves out `{key}` ({}):\n{message}",
                field.value
            );
            assert!(
                shown.contains(&format!("{:<13} {}", field.label, field.value)),
                "show DRAFT leaves out `{key}` ({}):\n{shown}",
                field.value
            );
            assert!(
                confirmed::key_words(key).is_some(),
                "`{key}` has no words for a replacement's changes"
            );
        }
        // A value each field shows, in words.
        for said in [
            "failures (failures re-alert after 2 h; pause after 5 consecutive failures)",
            "\"test -s /var/inbox\" (exit 0 runs, 1 skips)",
            "10 min (the tick's --timeout caps it)",
            "usd 2.5 a day",
            "latest (runs the most recent missed occurrence once)",
            "a success within 2 d",
            "follows unix:alice",
        ] {
            assert!(message.contains(said), "{said}:\n{message}");
            assert!(shown.contains(said), "{said}:\n{shown}");
        }
    }
}
