//! Building a draft's payload from plain values (docs/CONTRACT.md §2, §3):
//! the `draft` flags or a tasks file's keys, as a `DraftSpec`, become the
//! canonical payload a person confirms and its next runs, with every check a
//! draft makes. No clap here: `draft` turns its flags into a spec, `plan`
//! its TOML tables.

use anyhow::Result;

use crate::error::{fail, CmdError};
use crate::model::{NoticePolicy, NotifyMode, Policy};
use crate::payload::Payload;
use crate::schedule::{self, Occurrence, Schedule, Tz};
use crate::text::escape;

/// The longest instruction a task may carry.
pub const INSTRUCTION_MAX_BYTES: usize = 32768;

/// What a draft asks for: each value as given (None when not given). The
/// schedule is one of `at`, `in_`, `every` (with `start`), `daily` (with
/// `days`) or `cron`; text values are parsed here, with the flag's name in
/// every error.
#[derive(Debug, Clone, Default)]
pub struct DraftSpec {
    /// The instruction itself (a handler reads `-` from stdin first).
    pub instruction: Option<String>,
    pub at: Option<String>,
    pub in_: Option<String>,
    pub every: Option<String>,
    pub start: Option<String>,
    pub daily: Option<String>,
    pub days: Option<String>,
    pub cron: Option<String>,
    pub spread: Option<String>,
    pub until: Option<String>,
    pub count: Option<u32>,
    pub name: Option<String>,
    pub target: Option<String>,
    pub policy: Option<Policy>,
    pub tz: Option<String>,
    pub grace: Option<String>,
    pub max_retries: Option<u32>,
    pub retry_backoff: Option<String>,
    pub notify: Option<NotifyMode>,
    pub realert: Option<String>,
    pub pause_after: Option<u32>,
}

/// How late a run may start and still run, unless the draft says: a tick
/// per minute sees an occurrence up to 60 s after it is due, plus the
/// tick's own start-up and a claim queued behind another tick's, so 90 s.
pub const DEFAULT_GRACE_SECONDS: i64 = 90;

/// `at` rounded up to a whole minute (itself when it is one).
fn next_whole_minute(at: i64) -> i64 {
    at + (60 - at.rem_euclid(60)) % 60
}

/// Who drafts, where and when: what a new payload takes from the caller.
pub struct Drafter<'a> {
    pub now: i64,
    /// The zone of a task that names none.
    pub default_zone: Tz,
    pub tenant: &'a str,
    /// The caller's identity keys, sorted: a new task's owners.
    pub owner_keys: Vec<String>,
    /// The first identity key: the default target.
    pub actor: &'a str,
    /// The current zone (docs/CONTRACT.md §18) of the key the payload would
    /// follow: its first owner key (a replacement's, else the caller's).
    pub owner_zone: Option<Tz>,
    /// `agent:<client name>` when an agent drafts through `agentcron mcp`:
    /// recorded in the payload, whatever an older payload said.
    pub drafted_by: Option<String>,
}

/// What `--tz` asks for: a zone, or `follow` (the owner's zone, §18).
struct ZoneChoice {
    /// The payload's zone: its fixed zone, or a following one's default.
    payload_zone: Tz,
    follow: bool,
    /// The zone the schedule is read in now.
    in_force: Tz,
}

/// `--tz ZONE`, `--tz follow`, or nothing (a replacement keeps its old
/// choice). A new following payload's default is the owner's current zone,
/// else the zone the draft would have without `--tz`; a replacement that
/// keeps following keeps its default (nothing about it changed).
fn zone_choice(who: &Drafter<'_>, args: &DraftSpec, old: Option<&Payload>) -> Result<ZoneChoice> {
    let without_tz = old.map_or(who.default_zone, |o| o.timezone);
    let (payload_zone, follow) = match (args.tz.as_deref(), old) {
        (Some(crate::payload::FOLLOW), Some(old)) if old.follow => (old.timezone, true),
        (Some(crate::payload::FOLLOW), _) => (who.owner_zone.unwrap_or(without_tz), true),
        (Some(name), _) => (schedule::parse_zone(name).map_err(CmdError::from)?, false),
        (None, Some(old)) => (old.timezone, old.follow),
        (None, None) => (who.default_zone, false),
    };
    let in_force = match follow {
        true => who.owner_zone.unwrap_or(payload_zone),
        false => payload_zone,
    };
    Ok(ZoneChoice {
        payload_zone,
        follow,
        in_force,
    })
}

/// The canonical payload `spec` describes, over the confirmed payload `old`
/// when replacing, and its next three runs: every check a draft makes on
/// its values. `draft` and `plan` (each task of a file) build with it.
pub fn build_payload(
    who: &Drafter<'_>,
    args: &DraftSpec,
    old: Option<&Payload>,
) -> Result<(Payload, Vec<Occurrence>)> {
    let zone_choice = zone_choice(who, args, old)?;
    // Times are read, and the preview computed, in the zone in force now.
    let zone = zone_choice.in_force;
    let old_base = old.map(|o| base_of(&o.schedule));
    let schedule = match (schedule_from(args, zone, who.now, old_base)?, old) {
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
    if zone_choice.follow && !crate::payload::follows_a_wall_clock(&schedule) {
        return fail(
            CmdError::usage(format!(
                "--tz follow needs a --daily or --cron schedule, not {}",
                schedule.kind()
            ))
            .with_hint("a once or interval schedule is fixed instants; give --tz ZONE"),
        );
    }
    let schedule = with_spread(args, schedule, zone, who.now)?;
    let schedule = with_end(args, schedule, zone, who.now)?;
    let upcoming = schedule::upcoming(&schedule, zone, who.now, 3);
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
        drafted_by: who.drafted_by.clone(),
        grace_seconds: match (&args.grace, old) {
            (Some(g), _) => duration_flag("--grace", g, true)?,
            (None, Some(old)) => old.grace_seconds,
            (None, None) => DEFAULT_GRACE_SECONDS,
        },
        instruction: match (&args.instruction, old) {
            (Some(text), _) => {
                check_instruction(text)?;
                text.clone()
            }
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
        notice: notice_policy(args, old.map(|o| o.notice))?,
        // A replacement never changes who owns the task, nor its tenant.
        owner_keys: match old {
            Some(old) => old.owner_keys.clone(),
            None => who.owner_keys.clone(),
        },
        policy: match (args.policy, old) {
            (Some(p), _) => p,
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
                crate::model::check_key("--target", t)?;
                t.clone()
            }
            (None, Some(old)) => old.target.clone(),
            (None, None) => who.actor.to_string(),
        },
        tenant_key: match old {
            Some(old) => old.tenant_key.clone(),
            None => who.tenant.to_string(),
        },
        timezone: zone_choice.payload_zone,
        follow: zone_choice.follow,
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
            if let Some(last) = schedule::upcoming(inner, zone, who.now, *n as usize).last() {
                *until = last.at;
            }
        }
    }
    let upcoming = schedule::upcoming(&payload.schedule, zone, who.now, 3);
    if upcoming.is_empty() {
        return fail(CmdError::usage("the schedule has no occurrence after now"));
    }
    Ok((payload, upcoming))
}

/// The notice settings (docs/CONTRACT.md §16): what the flags say, over the
/// replaced payload's, over a new draft's defaults. A replacement that says
/// nothing keeps the old settings, absent ones included, so its hash moves
/// only for what the person changed.
fn notice_policy(args: &DraftSpec, old: Option<NoticePolicy>) -> Result<NoticePolicy> {
    let base = old.unwrap_or_else(NoticePolicy::for_new_draft);
    let realert_seconds = match &args.realert {
        Some(text) => Some(duration_flag("--realert", text, false)?),
        None => base.realert_seconds,
    };
    let pause_after = match args.pause_after {
        Some(0) => {
            return fail(
                CmdError::usage("--pause-after must be at least 1")
                    .with_hint("leave it out to never pause a failing task"),
            )
        }
        Some(n) => Some(i64::from(n)),
        None => base.pause_after,
    };
    Ok(NoticePolicy {
        notify: args.notify.or(base.notify),
        realert_seconds,
        pause_after,
    })
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
fn with_spread(args: &DraftSpec, schedule: Schedule, zone: Tz, now: i64) -> Result<Schedule> {
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
fn with_end(args: &DraftSpec, schedule: Schedule, zone: Tz, now: i64) -> Result<Schedule> {
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

/// The recurring core of a schedule, without its spread or end.
fn base_of(schedule: &Schedule) -> &Schedule {
    match schedule {
        Schedule::Ends { inner, .. } | Schedule::Spread { inner, .. } => base_of(inner),
        other => other,
    }
}

/// The schedule the flags describe; None when no schedule flag was given.
///
/// A replacement (`old`: the replaced schedule's core) changes only the
/// parts its flags name (docs/CONTRACT.md §13): `--daily` keeps a calendar's
/// days and `--days` its time of day; `--every` keeps an interval's anchor
/// and `--start` its period. `--at`, `--in` and `--cron` replace it whole.
fn schedule_from(
    args: &DraftSpec,
    zone: Tz,
    now: i64,
    old: Option<&Schedule>,
) -> Result<Option<Schedule>> {
    let old_calendar = match old {
        Some(Schedule::Calendar {
            hour,
            minute,
            weekdays,
        }) => Some((*hour, *minute, weekdays)),
        _ => None,
    };
    let old_interval = match old {
        Some(Schedule::Interval { seconds, anchor_at }) => Some((*seconds, *anchor_at)),
        _ => None,
    };
    if args.days.is_some() && args.daily.is_none() && old_calendar.is_none() {
        return fail(
            CmdError::usage("--days only goes with --daily")
                .with_hint("e.g. --daily 09:30 --days mon-fri"),
        );
    }
    if args.start.is_some() && args.every.is_none() && old_interval.is_none() {
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
    } else if args.every.is_some() || args.start.is_some() {
        let seconds = match (&args.every, old_interval) {
            (Some(every), _) => schedule::parse_duration(every).map_err(CmdError::from)?,
            (None, Some((seconds, _))) => seconds,
            (None, None) => return fail(CmdError::usage("--start only goes with --every")),
        };
        let anchor_at = match (&args.start, old_interval) {
            (Some(start), _) => schedule::parse_time(start, zone).map_err(CmdError::from)?,
            (None, Some((_, anchor_at))) => anchor_at,
            // In phase with a per-minute cron: at a drafting second of :11,
            // every tick at :00 would find the run 49 s late.
            (None, None) => next_whole_minute(now),
        };
        Schedule::Interval { seconds, anchor_at }
    } else if args.daily.is_some() || args.days.is_some() {
        let (hour, minute) = match (&args.daily, old_calendar) {
            (Some(daily), _) => schedule::parse_hhmm(daily).map_err(CmdError::from)?,
            (None, Some((hour, minute, _))) => (hour, minute),
            (None, None) => return fail(CmdError::usage("--days only goes with --daily")),
        };
        let weekdays = match (&args.days, old_calendar) {
            (Some(days), _) => schedule::parse_days(days).map_err(CmdError::from)?,
            (None, Some((_, _, weekdays))) => weekdays.clone(),
            (None, None) => Vec::new(),
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

/// A duration value of `flag` in seconds; `0` only when `zero_ok`.
pub fn duration_flag(flag: &str, text: &str, zero_ok: bool) -> Result<i64> {
    if zero_ok && matches!(text.trim(), "0" | "0s") {
        return Ok(0);
    }
    schedule::parse_duration(text)
        .map_err(|e| CmdError::usage(format!("{flag}: {}", e.message)).into())
}
