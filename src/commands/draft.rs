//! `agentcron draft`: propose a task and show exactly what would be confirmed.

use std::io::Read;

use anyhow::{Context, Result};
use clap::{ArgGroup, Args, ValueEnum};
use serde_json::json;

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Draft, NotifyMode, Policy};
use crate::ops::access::Caller;
use crate::ops::draft::{check_instruction, DraftSpec, Request, INSTRUCTION_MAX_BYTES};
pub use crate::ops::draft::{Agent, Made};
use crate::payload::Payload;
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
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::ops::draft::COUNT_MAX)))]
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

    /// Run the task with the operator's profile NAME (`agentcron profile list`): its command,
    /// folder, user, passed variables, time limit and concurrency, bound as they are now
    ///
    /// The payload you confirm holds the profile's definition and hash, so your confirmation
    /// covers who runs the words and with what. If the operator changes or deletes the profile
    /// later, the task's runs are skipped_profile until you confirm again (`draft --replace
    /// TASK`). `none` removes it from a replacement. Without one, the tick's --executor runs it.
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(crate::completion::profile_names))]
    pub profile: Option<String>,

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
          value_parser = clap::value_parser!(u32).range(0..=i64::from(crate::ops::draft::MAX_RETRIES_MAX)))]
    pub max_retries: Option<u32>,

    /// First retry delay; each further retry doubles it, capped at 1 h [default: 60s]
    #[arg(long, value_name = "DUR")]
    pub retry_backoff: Option<String>,

    /// Stop a run after DUR (1 s to 24 h): its process group gets TERM, then KILL; a read_only
    /// run then fails (and is retried), a confirm_writes run is unknown [default: only the
    /// tick's --timeout, which also caps this]
    #[arg(long, value_name = "DUR")]
    pub timeout: Option<String>,

    /// At most N of KEY per day, week or month in the task's zone (repeatable; `runs` counts
    /// runs started, other keys the executor's reported usage); a run due once it is spent is
    /// skipped_budget. A budget stops the next run, not the current one: a run that starts
    /// within the window may take it past its limit (unless the executor reports usage as it
    /// goes). `none` removes every budget from a replacement
    #[arg(long, value_name = "KEY=N/PERIOD", value_delimiter = ',')]
    pub budget: Vec<String>,

    /// Run CMD (split into words, no shell) before the executor, at most 30 s: exit 0 runs the
    /// executor, exit 1 skips the run (skipped_gate), anything else runs it anyway. `none`
    /// removes the gate from a replacement
    #[arg(long, value_name = "CMD")]
    pub gate: Option<String>,

    /// When ticks find occurrences past their grace (cron stopped, the host slept): `latest`
    /// runs the most recent once, `none` records them all missed [default: none]
    #[arg(long, value_name = "WHICH", value_parser = ["none", "latest"])]
    pub catch_up: Option<String>,

    /// Send one `overdue` notice when no run succeeded within DUR of the last success (or of
    /// the confirmation). `none` removes it from a replacement
    #[arg(long, value_name = "DUR")]
    pub expect_success: Option<String>,

    /// Which runs are worth a notice: every settled run, those needing attention, failures only, or only what can never be silenced (unknown, parked) [default: attention]
    #[arg(long, value_enum, value_name = "MODE")]
    pub notify: Option<NotifyArg>,

    /// How long a repeated failure (same reason) stays quiet before it is sent again [default: 1h]
    #[arg(long, value_name = "DUR")]
    pub realert: Option<String>,

    /// Pause the task after N consecutive failures (only `resume` restarts it)
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::ops::draft::PAUSE_AFTER_MAX)))]
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
    let made = make(ctx, &args, &spec, None)?;
    print_made(ctx, &made)
}

/// Makes the draft `args` (its values in `spec`) describe, as the caller;
/// `agent` when an agent drafts through `agentcron mcp`.
pub fn make(
    ctx: &mut Ctx,
    args: &DraftArgs,
    spec: &DraftSpec,
    agent: Option<Agent<'_>>,
) -> Result<Made> {
    let (tenant, identity) = (ctx.tenant.clone(), ctx.identity.clone());
    let request = Request {
        caller: Caller {
            tenant: &tenant,
            identity: &identity,
        },
        now: ctx.clock.now(),
        default_zone: ctx.default_zone,
        replace: args.replace.as_deref(),
        ttl: &args.ttl,
        agent,
    };
    crate::ops::draft::make(ctx.store()?, request, spec)
}

/// Prints what a draft made, as `draft` and `draft --replace` do.
pub fn print_made(ctx: &Ctx, made: &Made) -> Result<()> {
    if ctx.out.json {
        return ctx.out.document(&made_document(ctx, made));
    }
    match &made.replacing {
        Some(task) => super::draft_replace::print(ctx, made, task, &confirm_line(ctx, &made.draft)),
        None => print(ctx, &made.draft, &made.payload, made.zone, &made.upcoming),
    }
}

/// The document `draft --json` prints for what it made: a replacing draft
/// adds what it replaces and the diff.
pub fn made_document(ctx: &Ctx, made: &Made) -> serde_json::Value {
    let (draft, payload) = (&made.draft, &made.payload);
    let mut value = document(ctx, draft, payload, made.zone, &made.upcoming);
    if let Some(task) = &made.replacing {
        // The instant the draft was made: one clock read for the command.
        super::draft_replace::add_replaced(&mut value, task, payload, draft.created_at);
    }
    value
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
            policy: self.policy.map(|p| Policy::from(p).as_str().to_string()),
            profile: self.profile.clone(),
            tz: self.tz.clone(),
            grace: self.grace.clone(),
            max_retries: self.max_retries,
            retry_backoff: self.retry_backoff.clone(),
            timeout: self.timeout.clone(),
            budget: (!self.budget.is_empty()).then(|| self.budget.clone()),
            gate: self.gate.clone(),
            catch_up: self.catch_up.clone(),
            expect_success: self.expect_success.clone(),
            notify: self
                .notify
                .map(|m| NotifyMode::from(m).as_str().to_string()),
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

/// The draft as `--json` prints it (docs/CONTRACT.md §9), whatever it replaces.
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
        "warnings": crate::output::confirmed::warnings(payload),
    })
}

fn print(
    ctx: &Ctx,
    draft: &Draft,
    payload: &Payload,
    zone: Tz,
    upcoming: &[Occurrence],
) -> Result<()> {
    if ctx.out.json {
        return ctx
            .out
            .document(&document(ctx, draft, payload, zone, upcoming));
    }
    // The instant the draft was made: one clock read for the command.
    let now = draft.created_at;
    let mut text = format!(
        "Draft {} — expires {} ({})\n\n",
        draft.draft_id,
        wall_time(draft.expires_at, zone),
        relative(draft.expires_at, now)
    );
    let warnings = crate::output::confirmed::warnings(payload)
        .into_iter()
        .map(|w| ("", w));
    let rows = [
        ("instruction", escape(&payload.instruction)),
        (
            "schedule",
            crate::output::confirmed::schedule_words(payload, zone),
        ),
        (
            "name",
            payload.name.as_deref().map(escape).unwrap_or("-".into()),
        ),
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
    let timeout = crate::output::human::limit_rows(payload);
    let drafted_by = payload
        .drafted_by
        .as_ref()
        .map(|agent| ("drafted by", escape(agent)));
    let (first, rest) = rows.split_at(1);
    let rows = first
        .iter()
        .cloned()
        .chain(warnings)
        .chain(rest.iter().cloned());
    for (label, value) in rows.chain(timeout).chain(drafted_by) {
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

/// The exact confirm command, carrying the flags that put the draft where
/// it is, behind the prefix every command handed to a person carries.
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
    crate::text::command_line(ctx.confirm_prefix(), &shell_words::join(words))
}
