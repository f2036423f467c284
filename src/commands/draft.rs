//! `agentcron draft`: propose a task and show exactly what would be confirmed.

use std::io::Read;

use anyhow::{Context, Result};
use clap::{ArgGroup, Args, ValueEnum};
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Draft, NotifyMode, Policy, Replaces, TaskState};
use crate::ops::access::Caller;
use crate::ops::draft::{
    build_payload, check_instruction, duration_flag, DraftSpec, INSTRUCTION_MAX_BYTES,
};
use crate::payload::{hash_hex, Payload};
use crate::schedule::{self, Occurrence, Tz};
use crate::text::{escape, relative, wall_time};
use crate::wire::time;

/// Draft a task: show what would run, its payload hash, and the confirm line
///
/// Nothing runs until the draft is confirmed with `agentcron confirm DRAFT_ID --hash HASH`
/// before it expires. Exactly one schedule flag is required, except with --replace.
///
/// With `--replace TASK` the draft starts from the task's confirmed payload and changes
/// only the flags given; it shows each changed field (old → new), the next runs before
/// and after, and the new payload hash. Of the schedule, `--at`, `--in` and `--cron`
/// replace it whole; `--daily` keeps the task's `--days` and `--days` its time of day;
/// `--every` keeps its `--start` anchor and `--start` its period; the zone, `--spread`
/// and the end (`--until`, `--count`) are kept unless given. Confirming it swaps the task's payload in place
/// (same id, owners and tenant; revision + 1), and is refused (exit 5) when the task
/// changed since the draft.
#[derive(Debug, Args, schemars::JsonSchema)]
#[command(group(ArgGroup::new("schedule").args(["at", "in_", "every", "daily", "cron"])))]
pub struct DraftArgs {
    /// What the agent should do (1–32768 bytes of UTF-8); `-` reads standard input
    #[arg(
        long,
        value_name = "TEXT",
        allow_hyphen_values = true,
        required_unless_present = "replace"
    )]
    pub instruction: Option<String>,

    /// Draft a new payload for this task (id, unique id prefix, or name)
    #[arg(long, value_name = "TASK", add = clap_complete::ArgValueCompleter::new(crate::completion::tasks))]
    pub replace: Option<String>,

    /// Run once at TIME (RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` in the task's zone)
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,

    /// Run once after DURATION from now (`90s`, `15m`, `1h30m`, `2d`, `1w`)
    #[arg(long = "in", value_name = "DURATION")]
    #[schemars(rename = "in")]
    pub in_: Option<String>,

    /// Run every DURATION (at least 60 s), from the next whole minute or from --start
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,

    /// Anchor of an --every schedule: occurrences are START + n × DURATION
    #[arg(long, value_name = "TIME")]
    pub start: Option<String>,

    /// Run every day at HH:MM on the task's wall clock
    #[arg(long, value_name = "HH:MM")]
    pub daily: Option<String>,

    /// Restrict --daily to these days: `mon,wed,fri`, `mon-fri`, `weekdays`, `weekends`, `daily`
    #[arg(long, value_name = "LIST", add = clap_complete::ArgValueCompleter::new(crate::completion::days))]
    pub days: Option<String>,

    /// Run on a five-field cron expression ("m h dom mon dow"), in the task's zone
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,

    /// Move every occurrence by a fixed offset in [0, DUR) taken from the payload hash
    /// (at most 1 h and the schedule's period), so tasks at the same time start apart
    #[arg(long, value_name = "DUR")]
    pub spread: Option<String>,

    /// End a recurring schedule: no occurrence after TIME; the task then completes
    #[arg(long, value_name = "TIME", conflicts_with = "count")]
    pub until: Option<String>,

    /// End a recurring schedule after N occurrences, counted from the draft's creation
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub count: Option<u32>,

    /// A unique name to address the task by: 1–64 of [A-Za-z0-9._-]
    #[arg(long)]
    pub name: Option<String>,

    /// Where the notifier delivers [default: your first identity key]
    #[arg(long, value_name = "T")]
    pub target: Option<String>,

    /// What the executor may do [default: read_only]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,

    /// The task's time zone (IANA name), or `follow` [default: $AGENTCRON_TZ, else the system
    /// zone, else UTC]
    ///
    /// `follow` (--daily and --cron only): the task runs in its first owner key's current
    /// zone, as the host sets it with `agentcron zone set`; while that key has none, in the
    /// zone the draft would otherwise have (recorded in the payload as `follow_default`).
    #[arg(long, value_name = "ZONE", add = clap_complete::ArgValueCompleter::new(crate::completion::draft_zones))]
    pub tz: Option<String>,

    /// How late a run may start and still run; later ones are recorded as missed [default: 90s]
    #[arg(long, value_name = "DUR")]
    pub grace: Option<String>,

    /// How many times a failed run is retried [default: 3]
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_retries: Option<u32>,

    /// First retry delay; each further retry doubles it, capped at 1 h [default: 60s]
    #[arg(long, value_name = "DUR")]
    pub retry_backoff: Option<String>,

    /// Which runs are worth a notice: every settled run, those needing attention, failures only, or only what can never be silenced (unknown, parked) [default: attention]
    #[arg(long, value_enum, value_name = "MODE")]
    pub notify: Option<NotifyArg>,

    /// How long a repeated failure (same reason) stays quiet before it is sent again [default: 1h]
    #[arg(long, value_name = "DUR")]
    pub realert: Option<String>,

    /// Pause the task after N consecutive failures (only `resume` restarts it)
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub pause_after: Option<u32>,

    /// How long the draft may wait for confirmation
    #[arg(long, value_name = "DUR", default_value = "30m")]
    pub ttl: String,
}

/// `--notify`: the notice policy's modes (docs/CONTRACT.md §16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, schemars::JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum NotifyArg {
    /// Every settled run
    Always,
    /// Failures (deduplicated), recoveries, unknown, missed, skipped, parked runs and changed content
    Attention,
    /// Failures (deduplicated), recoveries, unknown and parked runs
    Failures,
    /// Only unknown and parked runs, which need a person
    Never,
}

impl From<NotifyArg> for NotifyMode {
    fn from(mode: NotifyArg) -> NotifyMode {
        match mode {
            NotifyArg::Always => NotifyMode::Always,
            NotifyArg::Attention => NotifyMode::Attention,
            NotifyArg::Failures => NotifyMode::Failures,
            NotifyArg::Never => NotifyMode::Never,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, schemars::JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum PolicyArg {
    /// The executor must not change anything
    #[value(name = "read_only")]
    ReadOnly,
    /// The executor asks before each write
    #[value(name = "confirm_writes")]
    ConfirmWrites,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::ReadOnly => Policy::ReadOnly,
            PolicyArg::ConfirmWrites => Policy::ConfirmWrites,
        }
    }
}

pub fn run(ctx: &mut Ctx, args: DraftArgs) -> Result<()> {
    let spec = args.spec()?;
    let made = make(ctx, &args, spec, None)?;
    print_made(ctx, &made)
}

/// The agent behind a draft made through `agentcron mcp` (docs/CONTRACT.md
/// §17): recorded in the payload, and the one-time code that confirms it.
pub struct Agent<'a> {
    /// `agent:<client name>`.
    pub drafted_by: &'a str,
    /// The code in clear: only its salted hash is stored.
    pub code: &'a str,
    /// At most this many agent drafts for the person in an hour.
    pub max_per_hour: u32,
}

/// At most this many of an agent's drafts for one person wait at once.
pub const MAX_WAITING_AGENT_DRAFTS: i64 = 20;

/// The agent's limits (docs/CONTRACT.md §17), checked in the transaction
/// that would add the draft: at most `max_per_hour` drafts for the person
/// in the last hour (counted from the audit trail, which keeps the ones
/// already confirmed), and at most `MAX_WAITING_AGENT_DRAFTS` waiting.
/// Counted per person, whatever the client calls itself: a client that
/// renames itself gains nothing. A refusal says when to try again.
fn check_agent_limits(
    tx: &mut dyn crate::store::Tx,
    tenant: &str,
    actor: &str,
    max_per_hour: u32,
    now: i64,
) -> Result<()> {
    let made = tx.agent_drafts_since(tenant, actor, now - 3599)?;
    let max = max_per_hour as usize;
    if made.len() >= max {
        // The draft that must leave the hour for one more to fit.
        let frees = made[made.len() - max] + 3600;
        return fail(
            CmdError::new(
                crate::error::ErrorKind::Busy,
                format!(
                "{} drafts for this person in the last hour, the most allowed (--max-drafts {max})",
                made.len()
            ),
            )
            .with_hint(format!(
                "try again at {} ({}), or ask the person to draft at a shell",
                crate::schedule::format_utc(frees),
                relative(frees, now)
            )),
        );
    }
    let waiting = tx.agent_drafts_waiting(tenant, actor, now)?;
    if waiting >= MAX_WAITING_AGENT_DRAFTS {
        return fail(
            CmdError::new(
                crate::error::ErrorKind::Busy,
                format!("{waiting} drafts for this person wait for confirmation, the most allowed"),
            )
            .with_hint("try again when the person has confirmed some, or they expired"),
        );
    }
    Ok(())
}

/// What a draft made: the stored draft, its payload and next runs, and the
/// task it replaces.
pub struct Made {
    pub draft: Draft,
    pub payload: Payload,
    /// The zone the draft is shown in: a following one's owner's, as of now.
    pub zone: crate::schedule::Tz,
    pub upcoming: Vec<Occurrence>,
    pub replacing: Option<crate::model::Task>,
}

/// Makes the draft `args` (its values in `spec`) describe, in one write
/// transaction; an agent's draft records the agent and locks it with its code.
pub fn make(
    ctx: &mut Ctx,
    args: &DraftArgs,
    spec: DraftSpec,
    agent: Option<Agent<'_>>,
) -> Result<Made> {
    let now = ctx.clock.now();
    let replacing = match &args.replace {
        Some(arg) => Some(replaced_task(ctx, arg)?),
        None => None,
    };
    let old = replacing.as_ref().map(Payload::of_task);
    let owner_zone = super::follow_zone(ctx, spec.tz.as_deref(), old.as_ref())?;
    let mut drafter = super::drafter(ctx, owner_zone);
    drafter.drafted_by = agent.as_ref().map(|a| a.drafted_by.to_string());
    let (payload, upcoming) = build_payload(&drafter, &spec, old.as_ref())?;
    let ttl = duration_flag("--ttl", &args.ttl, false)?;
    if ttl > 7 * 86400 {
        return fail(CmdError::usage("--ttl must be at most 7 days"));
    }
    let canonical = payload.canonical();
    if let Some(task) = &replacing {
        if task.payload_hash == hash_hex(canonical.as_bytes()) {
            return fail(
                CmdError::usage(format!(
                    "the flags given leave task {} unchanged",
                    escape(&task.label())
                ))
                .with_hint("give the flags to change, e.g. --daily 10:00 or --instruction TEXT"),
            );
        }
    }
    let draft_id = uuid::Uuid::new_v4().to_string();
    // An agent drafts for the person whose keys the server runs with: the
    // audit trail names that person (`log` shows drafts to their author)
    // and the event's detail the agent.
    let actor = ctx.actor().to_string();
    let draft = Draft {
        tenant_key: payload.tenant_key.clone(),
        payload_hash: hash_hex(canonical.as_bytes()),
        payload: canonical,
        created_by: actor.clone(),
        created_at: now,
        expires_at: now + ttl,
        replaces: replacing.as_ref().map(|t| Replaces {
            task_id: t.task_id.clone(),
            revision: t.revision,
        }),
        code: agent
            .as_ref()
            .map(|agent| crate::ops::confirm_code::lock(agent.code, &draft_id)),
        draft_id,
    };
    let mut detail = json!({"draft_id": draft.draft_id, "payload_hash": draft.payload_hash,
                            "expires_at": time(Some(draft.expires_at))});
    if let Some(task) = &replacing {
        detail["replaces_task_id"] = json!(task.task_id);
        detail["replaces_revision"] = json!(task.revision);
    }
    if let Some(agent) = &payload.drafted_by {
        detail["drafted_by"] = json!(agent);
    }
    let event = Event::of_tenant(AuditAction::Draft, &ctx.tenant, &actor, now, detail);
    let replaced_id = replacing.as_ref().map(|t| t.task_id.clone());
    let limit = agent.as_ref().map(|a| a.max_per_hour);
    let tenant = ctx.tenant.clone();
    ctx.store()?.write(|tx| {
        if let Some(max_per_hour) = limit {
            check_agent_limits(tx, &tenant, &draft.created_by, max_per_hour, now)?;
        }
        if let Some(name) = &payload.name {
            let holder = tx.task_id_named(&payload.tenant_key, name)?;
            if holder.is_some() && holder != replaced_id {
                return fail(
                    CmdError::conflict(format!("a task named '{name}' already exists"))
                        .with_hint("choose another --name, or delete the old task first"),
                );
            }
        }
        tx.insert_draft(&draft)?;
        tx.append_event(&event)
    })?;
    // A following draft is shown in its owner's zone as of now.
    let zone = match payload.follow {
        true => owner_zone.unwrap_or(payload.timezone),
        false => payload.timezone,
    };
    Ok(Made {
        draft,
        payload,
        zone,
        upcoming,
        replacing,
    })
}

/// Prints what a draft made, as `draft` and `draft --replace` do.
pub fn print_made(ctx: &Ctx, made: &Made) -> Result<()> {
    let (draft, payload, zone, upcoming) = (&made.draft, &made.payload, made.zone, &made.upcoming);
    match &made.replacing {
        Some(task) => super::draft_replace::print(ctx, draft, task, payload, zone, upcoming),
        None => print(ctx, draft, payload, zone, upcoming),
    }
}

/// The task `--replace` names, as the caller may change it: owned, in this
/// tenant, and active or paused (a completed, deleted or quarantined task
/// has nothing left to replace).
fn replaced_task(ctx: &mut Ctx, arg: &str) -> Result<crate::model::Task> {
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let caller = Caller {
        tenant: &tenant,
        identity: &identity,
    };
    let task = ctx
        .store()?
        .read(|tx| crate::ops::access::owned_task(tx, &caller, arg))?;
    if !matches!(task.state, TaskState::Active | TaskState::Paused) {
        return fail(
            CmdError::conflict(format!(
                "task {} is {}; only an active or paused task can be replaced",
                escape(&task.label()),
                task.state
            ))
            .with_hint("draft a new task instead"),
        );
    }
    Ok(task)
}

impl DraftArgs {
    /// The values the flags give, the instruction read from stdin for `-`.
    pub fn spec(&self) -> Result<DraftSpec> {
        Ok(DraftSpec {
            instruction: self.instruction.as_deref().map(instruction).transpose()?,
            at: self.at.clone(),
            in_: self.in_.clone(),
            every: self.every.clone(),
            start: self.start.clone(),
            daily: self.daily.clone(),
            days: self.days.clone(),
            cron: self.cron.clone(),
            spread: self.spread.clone(),
            until: self.until.clone(),
            count: self.count,
            name: self.name.clone(),
            target: self.target.clone(),
            policy: self.policy.map(Policy::from),
            tz: self.tz.clone(),
            grace: self.grace.clone(),
            max_retries: self.max_retries,
            retry_backoff: self.retry_backoff.clone(),
            notify: self.notify.map(NotifyMode::from),
            realert: self.realert.clone(),
            pause_after: self.pause_after,
        })
    }
}

fn instruction(arg: &str) -> Result<String> {
    let text = if arg == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(INSTRUCTION_MAX_BYTES as u64 + 2)
            .read_to_end(&mut bytes)
            .context("reading the instruction from standard input")?;
        // `echo text | agentcron draft --instruction -` means "text".
        if bytes.ends_with(b"\n") {
            bytes.pop();
            if bytes.ends_with(b"\r") {
                bytes.pop();
            }
        }
        // Only the first bytes were read, so the true size is unknown (and
        // the cut may split a character: check the size before the UTF-8).
        if bytes.len() > INSTRUCTION_MAX_BYTES {
            return fail(CmdError::usage(format!(
                "the instruction on standard input is more than {INSTRUCTION_MAX_BYTES} bytes, \
                 the most allowed"
            )));
        }
        String::from_utf8(bytes)
            .map_err(|_| CmdError::usage("the instruction on standard input is not UTF-8"))?
    } else {
        arg.to_string()
    };
    check_instruction(&text)?;
    Ok(text)
}

/// The draft as `--json` prints it (docs/CONTRACT.md §9); a replacing draft adds
/// what it replaces and the diff.
pub(super) fn document(
    ctx: &Ctx,
    draft: &Draft,
    payload: &Payload,
    zone: Tz,
    upcoming: &[Occurrence],
) -> serde_json::Value {
    json!({
        "draft_id": draft.draft_id,
        "expires_at": time(Some(draft.expires_at)),
        "payload": draft.payload,
        "payload_hash": draft.payload_hash,
        "schedule": payload.schedule.to_json(),
        "summary": payload.schedule.describe(zone),
        "next_runs": upcoming.iter().map(|o| time(Some(o.at))).collect::<Vec<_>>(),
        "drafted_by": payload.drafted_by,
        "next_runs_local": upcoming.iter().map(|o| json!({
            "at": schedule::format_local(o.at, zone),
            "dst_shifted_from": o.shifted_from,
            "last": schedule::is_last(&payload.schedule, zone, o.at),
        })).collect::<Vec<_>>(),
        "confirm_command": confirm_line(ctx, draft),
    })
}

pub(super) fn print(
    ctx: &Ctx,
    draft: &Draft,
    payload: &Payload,
    zone: Tz,
    upcoming: &[Occurrence],
) -> Result<()> {
    let summary = payload.schedule.describe(zone);
    if ctx.out.json {
        return ctx
            .out
            .document(&document(ctx, draft, payload, zone, upcoming));
    }
    let now = ctx.clock.now();
    let mut text = format!(
        "Draft {} — expires {} ({})\n\n",
        draft.draft_id,
        wall_time(draft.expires_at, zone),
        relative(draft.expires_at, now)
    );
    let rows = [
        ("instruction", escape(&payload.instruction)),
        ("schedule", schedule_words(&summary, payload, zone)),
        ("name", payload.name.clone().unwrap_or_else(|| "-".into())),
        ("target", escape(&payload.target)),
        ("policy", payload.policy.to_string()),
        ("grace", format!("{} s", payload.grace_seconds)),
        (
            "retries",
            format!(
                "{} (backoff {} s, doubling, max 1 h)",
                payload.max_retries, payload.retry_backoff_seconds
            ),
        ),
        ("notices", payload.notice.describe()),
        ("owners", escape(&payload.owner_keys.join(", "))),
    ];
    let drafted_by = payload
        .drafted_by
        .as_ref()
        .map(|agent| ("drafted by", escape(agent)));
    for (label, value) in rows.into_iter().chain(drafted_by) {
        text.push_str(&format!("  {label:<12} {value}\n"));
    }
    text.push_str("\nNext runs:\n");
    for o in upcoming {
        text.push_str(&format!(
            "  {}  ({})",
            wall_time(o.at, zone),
            relative(o.at, now)
        ));
        if let Some(wall) = &o.shifted_from {
            text.push_str(&format!(
                "  DST: {wall} does not exist that day, shifted forward"
            ));
        }
        if schedule::is_last(&payload.schedule, zone, o.at) {
            text.push_str("  (the last)");
        }
        text.push('\n');
    }
    text.push_str(&format!("\nPayload hash: {}\n", draft.payload_hash));
    text.push_str(&format!(
        "\nTo confirm, run:\n  {}",
        confirm_line(ctx, draft)
    ));
    ctx.out.line(&text)
}

/// The schedule in words with the zone it is read in: "(Asia/Shanghai)",
/// or for a following draft whom it follows and where they are now
/// (docs/CONTRACT.md §18).
fn schedule_words(summary: &str, payload: &Payload, zone: Tz) -> String {
    match payload.follow_key() {
        Some(key) => format!("{summary}, follows {} (now {})", escape(key), zone.name()),
        None => format!("{summary} ({})", zone.name()),
    }
}

/// The exact confirm command, carrying the flags that put the draft where it is.
pub(super) fn confirm_line(ctx: &Ctx, draft: &Draft) -> String {
    let mut words = vec![
        "agentcron".to_string(),
        "confirm".into(),
        draft.draft_id.clone(),
    ];
    words.push("--hash".into());
    words.push(draft.payload_hash.clone());
    // An agent's draft: the person adds the code the notifier sent them.
    if draft.code.is_some() {
        words.push("--code".into());
        words.push("NNNNNN".into());
    }
    for (flag, value) in ctx.flags_for_followup() {
        words.push(flag.into());
        words.push(value);
    }
    shell_words::join(words)
}
