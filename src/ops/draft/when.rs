//! The schedule a draft's values describe (docs/CONTRACT.md §2, §13): one
//! of `at`, `in`, `every` (with `start`), `daily` (with `days`) or `cron`,
//! over a replaced schedule's parts, then its spread and its end.

use anyhow::Result;

use super::spec::DraftSpec;
use crate::error::{fail, CmdError};
use crate::schedule::{self, Schedule, Tz};

/// `at` rounded up to a whole minute (itself when it is one).
fn next_whole_minute(at: i64) -> i64 {
    at + (60 - at.rem_euclid(60)) % 60
}

/// The spread of a schedule, when it has one (under its end, if any).
pub(super) fn spread_of(schedule: &Schedule) -> Option<i64> {
    match schedule {
        Schedule::Spread { spread, .. } => Some(*spread),
        Schedule::Ends { inner, .. } => spread_of(inner),
        _ => None,
    }
}

pub(super) fn set_offset(schedule: &mut Schedule, to: i64) {
    match schedule {
        Schedule::Spread { offset, .. } => *offset = to,
        Schedule::Ends { inner, .. } => set_offset(inner, to),
        _ => {}
    }
}

/// A replacement's new schedule keeps the old one's spread unless flags change it.
pub(super) fn keep_spread(schedule: Schedule, old: &Schedule) -> Schedule {
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
pub(super) fn with_spread(
    args: &DraftSpec,
    schedule: Schedule,
    zone: Tz,
    now: i64,
) -> Result<Schedule> {
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
    if spread > super::spec::SPREAD_MAX_SECONDS {
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
pub(super) fn keep_end(schedule: Schedule, old: &Schedule) -> Schedule {
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
pub(super) fn with_end(
    args: &DraftSpec,
    schedule: Schedule,
    zone: Tz,
    now: i64,
) -> Result<Schedule> {
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
pub(super) fn base_of(schedule: &Schedule) -> &Schedule {
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
pub(super) fn schedule_from(
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
        interval(args, zone, now, old_interval)?
    } else if args.daily.is_some() || args.days.is_some() {
        calendar(args, old_calendar)?
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

/// `--every` (with `--start`): a replacement keeps the anchor or the period
/// it is not given.
fn interval(
    args: &DraftSpec,
    zone: Tz,
    now: i64,
    old_interval: Option<(i64, i64)>,
) -> Result<Schedule> {
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
    Ok(Schedule::Interval { seconds, anchor_at })
}

/// `--daily` (with `--days`): a replacement keeps the days or the time of
/// day it is not given.
fn calendar(args: &DraftSpec, old_calendar: Option<(u32, u32, &Vec<u32>)>) -> Result<Schedule> {
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
    Ok(Schedule::Calendar {
        hour,
        minute,
        weekdays,
    })
}
