//! `agentcron draft`: propose a task and show exactly what would be confirmed.

use std::io::Read;

use anyhow::{Context, Result};
use clap::{ArgGroup, Args, ValueEnum};
use serde_json::json;

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Draft, Event, Policy, Replaces, TaskState};
use crate::ops::access::Caller;
use crate::output::json::time;
use crate::output::{escape, relative, wall_time};
use crate::payload::{hash_hex, Payload};
use crate::schedule::{self, Occurrence, Schedule, Tz};

pub const INSTRUCTION_MAX_BYTES: usize = 32768;

/// Draft a task: show what would run, its payload hash, and the confirm line
///
/// Nothing runs until the draft is confirmed with `agentcron confirm DRAFT_ID --hash HASH`
/// before it expires. Exactly one schedule flag is required, except with --replace.
///
/// With `--replace TASK` the draft starts from the task's confirmed payload and changes
/// only the flags given; it shows each changed field (old → new), the next runs before
/// and after, and the new payload hash. Confirming it swaps the task's payload in place
/// (same id, owners and tenant; revision + 1), and is refused (exit 5) when the task
/// changed since the draft.
#[derive(Debug, Args)]
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
    pub in_: Option<String>,

    /// Run every DURATION (at least 60 s), first one interval after now or at --start
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,

    /// Anchor of an --every schedule: occurrences are START + n × DURATION
    #[arg(long, value_name = "TIME", requires = "every")]
    pub start: Option<String>,

    /// Run every day at HH:MM on the task's wall clock
    #[arg(long, value_name = "HH:MM")]
    pub daily: Option<String>,

    /// Restrict --daily to these days: `mon,wed,fri`, `mon-fri`, `weekdays`, `weekends`, `daily`
    #[arg(long, value_name = "LIST", requires = "daily", add = clap_complete::ArgValueCompleter::new(crate::completion::days))]
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

    /// The task's time zone (IANA name) [default: $AGENTCRON_TZ, else the system zone, else UTC]
    #[arg(long, value_name = "ZONE", add = clap_complete::ArgValueCompleter::new(crate::completion::zones))]
    pub tz: Option<String>,

    /// How late a run may start and still run; later ones are recorded as missed [default: 60s]
    #[arg(long, value_name = "DUR")]
    pub grace: Option<String>,

    /// How many times a failed run is retried [default: 3]
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_retries: Option<u32>,

    /// First retry delay; each further retry doubles it, capped at 1 h [default: 60s]
    #[arg(long, value_name = "DUR")]
    pub retry_backoff: Option<String>,

    /// How long the draft may wait for confirmation
    #[arg(long, value_name = "DUR", default_value = "30m")]
    pub ttl: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
    let replacing = match &args.replace {
        Some(arg) => Some(replaced_task(ctx, arg)?),
        None => None,
    };
    let old = replacing.as_ref().map(Payload::of_task);
    let (payload, upcoming) = build_payload(ctx, &args, old.as_ref())?;
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
    let draft = Draft {
        draft_id: uuid::Uuid::new_v4().to_string(),
        tenant_key: payload.tenant_key.clone(),
        payload_hash: hash_hex(canonical.as_bytes()),
        payload: canonical,
        created_by: ctx.actor().to_string(),
        created_at: ctx.now,
        expires_at: ctx.now + ttl,
        replaces: replacing.as_ref().map(|t| Replaces {
            task_id: t.task_id.clone(),
            revision: t.revision,
        }),
    };
    let mut detail = json!({"draft_id": draft.draft_id, "payload_hash": draft.payload_hash,
                            "expires_at": time(Some(draft.expires_at))});
    if let Some(task) = &replacing {
        detail["replaces_task_id"] = json!(task.task_id);
        detail["replaces_revision"] = json!(task.revision);
    }
    let event = Event {
        at: ctx.now,
        tenant_key: ctx.tenant.clone(),
        actor: ctx.actor().to_string(),
        action: "draft".into(),
        task_id: None,
        run_id: None,
        detail,
    };
    let replaced_id = replacing.as_ref().map(|t| t.task_id.clone());
    ctx.store()?.write(|tx| {
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
    match &replacing {
        Some(task) => super::draft_replace::print(ctx, &draft, task, &payload, &upcoming),
        None => print(ctx, &draft, &payload, &upcoming),
    }
}

/// The canonical payload the draft flags describe, over the confirmed
/// payload `old` when replacing, and its next three runs: every check
/// `draft` makes on its flags. `plan` builds each task of a file with it.
pub fn build_payload(
    ctx: &Ctx,
    args: &DraftArgs,
    old: Option<&Payload>,
) -> Result<(Payload, Vec<Occurrence>)> {
    let zone = match (&args.tz, old) {
        (Some(name), _) => schedule::parse_zone(name).map_err(CmdError::from)?,
        (None, Some(old)) => old.timezone,
        (None, None) => ctx.default_zone,
    };
    let schedule = match (schedule_from(args, zone, ctx.now)?, old) {
        (Some(schedule), Some(old)) => {
            keep_end(keep_spread(schedule, &old.schedule), &old.schedule)
        }
        (Some(schedule), None) => schedule,
        (None, Some(old)) => old.schedule.clone(),
        (None, None) => {
            return fail(
                CmdError::usage("a schedule is required")
                    .with_hint("use one of --at, --in, --every, --daily or --cron"),
            )
        }
    };
    let schedule = with_spread(args, schedule, zone, ctx.now)?;
    let schedule = with_end(args, schedule, zone, ctx.now)?;
    let upcoming = schedule::upcoming(&schedule, zone, ctx.now, 3);
    if upcoming.is_empty() {
        return fail(
            CmdError::usage(format!(
                "the schedule {} has no occurrence after now",
                schedule.describe(zone)
            ))
            .with_hint("pick a time in the future"),
        );
    }
    let payload = Payload {
        grace_seconds: match (&args.grace, old) {
            (Some(g), _) => duration_flag("--grace", g, true)?,
            (None, Some(old)) => old.grace_seconds,
            (None, None) => 60,
        },
        instruction: match (&args.instruction, old) {
            (Some(text), _) => instruction(text)?,
            (None, Some(old)) => old.instruction.clone(),
            (None, None) => return fail(CmdError::usage("--instruction is required")),
        },
        max_retries: match (args.max_retries, old) {
            (Some(n), _) => i64::from(n),
            (None, Some(old)) => old.max_retries,
            (None, None) => 3,
        },
        name: match (&args.name, old) {
            (Some(name), _) => Some(check_name(name)?),
            (None, Some(old)) => old.name.clone(),
            (None, None) => None,
        },
        // A replacement never changes who owns the task, nor its tenant.
        owner_keys: match old {
            Some(old) => old.owner_keys.clone(),
            None => ctx.owner_keys(),
        },
        policy: match (args.policy, old) {
            (Some(p), _) => p.into(),
            (None, Some(old)) => old.policy,
            (None, None) => Policy::ReadOnly,
        },
        retry_backoff_seconds: match (&args.retry_backoff, old) {
            (Some(b), _) => duration_flag("--retry-backoff", b, false)?,
            (None, Some(old)) => old.retry_backoff_seconds,
            (None, None) => 60,
        },
        schedule,
        target: match (&args.target, old) {
            (Some(t), _) => {
                crate::context::check_key("--target", t)?;
                t.clone()
            }
            (None, Some(old)) => old.target.clone(),
            (None, None) => ctx.actor().to_string(),
        },
        tenant_key: match old {
            Some(old) => old.tenant_key.clone(),
            None => ctx.tenant.clone(),
        },
        timezone: zone,
    };
    // The spread's offset comes from the payload's SHA-256 taken with the
    // offset at 0, so anyone can recompute it; then the occurrences move.
    let mut payload = payload;
    if let Some(spread) = spread_of(&payload.schedule) {
        let seed = <sha2::Sha256 as sha2::Digest>::digest(payload.canonical().as_bytes());
        set_offset(
            &mut payload.schedule,
            schedule::spread_offset(&seed, spread),
        );
        // `--count N` ends at the Nth occurrence as moved.
        if let Schedule::Ends {
            inner,
            until,
            count: Some(n),
        } = &mut payload.schedule
        {
            if let Some(last) = schedule::upcoming(inner, zone, ctx.now, *n as usize).last() {
                *until = last.at;
            }
        }
    }
    let upcoming = schedule::upcoming(&payload.schedule, zone, ctx.now, 3);
    if upcoming.is_empty() {
        return fail(CmdError::usage("the schedule has no occurrence after now"));
    }
    Ok((payload, upcoming))
}

/// The spread of a schedule, when it has one (under its end, if any).
fn spread_of(schedule: &Schedule) -> Option<i64> {
    match schedule {
        Schedule::Spread { spread, .. } => Some(*spread),
        Schedule::Ends { inner, .. } => spread_of(inner),
        _ => None,
    }
}

fn set_offset(schedule: &mut Schedule, to: i64) {
    match schedule {
        Schedule::Spread { offset, .. } => *offset = to,
        Schedule::Ends { inner, .. } => set_offset(inner, to),
        _ => {}
    }
}

/// A replacement's new schedule keeps the old one's spread unless flags change it.
fn keep_spread(schedule: Schedule, old: &Schedule) -> Schedule {
    match spread_of(old) {
        Some(spread) if !matches!(schedule, Schedule::Once { .. }) => Schedule::Spread {
            inner: Box::new(schedule),
            spread,
            offset: 0,
        },
        _ => schedule,
    }
}

/// Applies `--spread DUR` below any end: at most 1 h and at most the
/// schedule's period (its shortest gap over the next 50 occurrences). The
/// offset is set once the payload is known (`set_offset`).
fn with_spread(args: &DraftArgs, schedule: Schedule, zone: Tz, now: i64) -> Result<Schedule> {
    let Some(text) = &args.spread else {
        return Ok(schedule);
    };
    let spread = schedule::parse_duration(text)
        .map_err(|e| CmdError::usage(format!("--spread: {}", e.message)))?;
    let (end, bare) = match schedule {
        Schedule::Ends {
            inner,
            until,
            count,
        } => (Some((until, count)), *inner),
        other => (None, other),
    };
    let bare = match bare {
        Schedule::Spread { inner, .. } => *inner,
        other => other,
    };
    if matches!(bare, Schedule::Once { .. }) {
        return fail(
            CmdError::usage("--spread only goes with a recurring schedule")
                .with_hint("use --every, --daily or --cron"),
        );
    }
    if spread > 3600 {
        return fail(CmdError::usage("--spread must be at most 1h"));
    }
    if let Some(gap) = schedule::shortest_gap(&bare, zone, now, 50) {
        if spread > gap {
            return fail(CmdError::usage(format!(
                "--spread {text} is longer than the schedule's period ({gap} s)"
            )));
        }
    }
    let spread = Schedule::Spread {
        inner: Box::new(bare),
        spread,
        offset: 0,
    };
    spread.validate().map_err(CmdError::from)?;
    Ok(match end {
        Some((until, count)) => Schedule::Ends {
            inner: Box::new(spread),
            until,
            count,
        },
        None => spread,
    })
}

/// A replacement's new schedule keeps the old one's end unless flags change it.
fn keep_end(schedule: Schedule, old: &Schedule) -> Schedule {
    match old {
        Schedule::Ends { until, count, .. } if !matches!(schedule, Schedule::Once { .. }) => {
            Schedule::Ends {
                inner: Box::new(schedule),
                until: *until,
                count: *count,
            }
        }
        _ => schedule,
    }
}

/// Applies `--until` or `--count`. `--count N` ends the schedule at its Nth
/// occurrence after now (the draft's creation): the count and that instant
/// are both in the payload, so the hash fixes which occurrences run, and
/// every one of them counts whatever its outcome (missed, skipped_overlap).
fn with_end(args: &DraftArgs, schedule: Schedule, zone: Tz, now: i64) -> Result<Schedule> {
    if args.until.is_none() && args.count.is_none() {
        return Ok(schedule);
    }
    let inner = schedule.without_end().clone();
    if matches!(inner, Schedule::Once { .. }) {
        return fail(
            CmdError::usage("--until and --count only go with a recurring schedule")
                .with_hint("use --every, --daily or --cron"),
        );
    }
    let (until, count) = match (&args.until, args.count) {
        (Some(text), _) => (
            schedule::parse_time(text, zone).map_err(CmdError::from)?,
            None,
        ),
        (None, Some(n)) => {
            let runs = schedule::upcoming(&inner, zone, now, n as usize);
            match runs.last() {
                Some(last) => (last.at, Some(i64::from(n))),
                None => (now, Some(i64::from(n))),
            }
        }
        (None, None) => unreachable!("checked above"),
    };
    let ends = Schedule::Ends {
        inner: Box::new(inner),
        until,
        count,
    };
    ends.validate().map_err(CmdError::from)?;
    Ok(ends)
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

/// The schedule the flags describe; None when no schedule flag was given.
fn schedule_from(args: &DraftArgs, zone: Tz, now: i64) -> Result<Option<Schedule>> {
    if args.days.is_some() && args.daily.is_none() {
        return fail(
            CmdError::usage("--days only goes with --daily")
                .with_hint("e.g. --daily 09:30 --days mon-fri"),
        );
    }
    if args.start.is_some() && args.every.is_none() {
        return fail(
            CmdError::usage("--start only goes with --every")
                .with_hint("e.g. --every 1h --start 2026-12-03T09:00:00Z"),
        );
    }
    let schedule = if let Some(at) = &args.at {
        let run_at = schedule::parse_time(at, zone).map_err(CmdError::from)?;
        if run_at <= now {
            return fail(
                CmdError::usage(format!("--at {at} is in the past"))
                    .with_hint("give a future time, or use --in DURATION"),
            );
        }
        Schedule::Once { run_at }
    } else if let Some(delay) = &args.in_ {
        let seconds = schedule::parse_duration(delay).map_err(CmdError::from)?;
        Schedule::Once {
            run_at: now.saturating_add(seconds),
        }
    } else if let Some(every) = &args.every {
        let seconds = schedule::parse_duration(every).map_err(CmdError::from)?;
        let anchor_at = match &args.start {
            Some(start) => schedule::parse_time(start, zone).map_err(CmdError::from)?,
            None => now,
        };
        Schedule::Interval { seconds, anchor_at }
    } else if let Some(daily) = &args.daily {
        let (hour, minute) = schedule::parse_hhmm(daily).map_err(CmdError::from)?;
        let weekdays = match &args.days {
            Some(days) => schedule::parse_days(days).map_err(CmdError::from)?,
            None => Vec::new(),
        };
        Schedule::Calendar {
            hour,
            minute,
            weekdays,
        }
    } else if let Some(expr) = &args.cron {
        schedule::parse_cron(expr).map_err(CmdError::from)?;
        Schedule::Cron {
            expr: expr.split_whitespace().collect::<Vec<_>>().join(" "),
        }
    } else {
        return Ok(None);
    };
    schedule.validate().map_err(CmdError::from)?;
    Ok(Some(schedule))
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

pub fn check_instruction(text: &str) -> Result<()> {
    if text.len() > INSTRUCTION_MAX_BYTES {
        return fail(CmdError::usage(format!(
            "the instruction is {} bytes; at most {INSTRUCTION_MAX_BYTES} are allowed",
            text.len()
        )));
    }
    if text.contains('\0') {
        return fail(CmdError::usage("the instruction contains a NUL byte"));
    }
    if text.trim().is_empty() {
        return fail(
            CmdError::usage("the instruction is empty").with_hint("say what the agent should do"),
        );
    }
    Ok(())
}

pub fn check_name(name: &str) -> Result<String> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !valid {
        return fail(
            CmdError::usage(format!("invalid --name '{}'", escape(name)))
                .with_hint("use 1–64 of the characters A-Z a-z 0-9 . _ -"),
        );
    }
    Ok(name.to_string())
}

fn duration_flag(flag: &str, text: &str, zero_ok: bool) -> Result<i64> {
    if zero_ok && matches!(text.trim(), "0" | "0s") {
        return Ok(0);
    }
    schedule::parse_duration(text)
        .map_err(|e| CmdError::usage(format!("{flag}: {}", e.message)).into())
}

/// The draft as `--json` prints it (docs/CONTRACT.md §9); a replacing draft adds
/// what it replaces and the diff.
pub(super) fn document(
    ctx: &Ctx,
    draft: &Draft,
    payload: &Payload,
    upcoming: &[Occurrence],
) -> serde_json::Value {
    let zone = payload.timezone;
    json!({
        "draft_id": draft.draft_id,
        "expires_at": time(Some(draft.expires_at)),
        "payload": draft.payload,
        "payload_hash": draft.payload_hash,
        "schedule": payload.schedule.to_json(),
        "summary": payload.schedule.describe(zone),
        "next_runs": upcoming.iter().map(|o| time(Some(o.at))).collect::<Vec<_>>(),
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
    upcoming: &[Occurrence],
) -> Result<()> {
    let zone = payload.timezone;
    let summary = payload.schedule.describe(zone);
    if ctx.out.json {
        return ctx.out.document(&document(ctx, draft, payload, upcoming));
    }
    let now = ctx.out.now();
    let mut text = format!(
        "Draft {} — expires {} ({})\n\n",
        draft.draft_id,
        wall_time(draft.expires_at, zone),
        relative(draft.expires_at, now)
    );
    let rows = [
        ("instruction", escape(&payload.instruction)),
        ("schedule", format!("{summary} ({})", zone.name())),
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
        ("owners", escape(&payload.owner_keys.join(", "))),
    ];
    for (label, value) in rows {
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

/// The exact confirm command, carrying the flags that put the draft where it is.
pub(super) fn confirm_line(ctx: &Ctx, draft: &Draft) -> String {
    let mut words = vec![
        "agentcron".to_string(),
        "confirm".into(),
        draft.draft_id.clone(),
    ];
    words.push("--hash".into());
    words.push(draft.payload_hash.clone());
    for (flag, value) in ctx.flags_for_followup() {
        words.push(flag.into());
        words.push(value);
    }
    shell_words::join(words)
}
