//! Human input of docs/CONTRACT.md §2: zones, durations, times, HH:MM, day lists.
//! Every error is one line saying what was wrong, with a hint.

use chrono::{DateTime, NaiveDateTime};
use chrono_tz::Tz;

use super::{resolve, ScheduleError, MAX_INSTANT};

/// A duration may not exceed this (100 years): beyond it, it is a typo.
const MAX_DURATION: i64 = 100 * 366 * 86400;

pub fn parse_zone(text: &str) -> Result<Tz, ScheduleError> {
    let unknown = || {
        ScheduleError::new(format!("unknown time zone '{}'", text.escape_debug()))
            .hint("use an IANA zone name such as Europe/Berlin, America/New_York or UTC")
    };
    if text.is_empty()
        || text.len() > 64
        || text.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(unknown());
    }
    match text.parse::<Tz>() {
        Ok(tz) => Ok(tz),
        Err(_) => match chrono_tz::TZ_VARIANTS
            .iter()
            .find(|tz| tz.name().eq_ignore_ascii_case(text))
        {
            Some(tz) => Err(
                ScheduleError::new(format!("unknown time zone '{text}'")).hint(format!(
                    "zone names are case-sensitive: did you mean {}?",
                    tz.name()
                )),
            ),
            None => Err(unknown()),
        },
    }
}

/// `90s`, `15m`, `1h30m`, `2d`, `1w`: the sum of the parts, in seconds.
pub fn parse_duration(text: &str) -> Result<i64, ScheduleError> {
    let bad = || {
        ScheduleError::new(format!("invalid duration '{}'", text.escape_debug()))
            .hint("write it like 90s, 15m, 1h30m, 2d or 1w")
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            'w' => 7 * 86400,
            _ => return Err(bad()),
        };
        if digits.is_empty() {
            return Err(bad());
        }
        let n: i64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|part| total.checked_add(part))
            .ok_or_else(too_long)?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(bad().hint(format!("add a unit: {digits}s, {digits}m, {digits}h …")));
    }
    if total == 0 {
        return Err(ScheduleError::new("a duration must be longer than zero"));
    }
    if total > MAX_DURATION {
        return Err(too_long());
    }
    Ok(total)
}

fn too_long() -> ScheduleError {
    ScheduleError::new("the duration is longer than 100 years")
}

/// RFC 3339 with an offset, or a local `YYYY-MM-DD HH:MM[:SS]` (or with `T`)
/// read in `tz` under the DST rule.
pub fn parse_time(text: &str, tz: Tz) -> Result<i64, ScheduleError> {
    let trimmed = text.trim();
    let at = if let Ok(t) = DateTime::parse_from_rfc3339(trimmed) {
        t.timestamp()
    } else {
        let local = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(trimmed, f).ok())
            .ok_or_else(|| {
                ScheduleError::new(format!("invalid time '{}'", text.escape_debug())).hint(
                    "use RFC 3339 (2026-12-03T09:00:00+08:00) or a local 'YYYY-MM-DD HH:MM' in the task's zone",
                )
            })?;
        resolve::compatible(tz, local)
            .ok_or_else(|| {
                ScheduleError::new(format!("'{text}' cannot be placed in {}", tz.name()))
            })?
            .at
    };
    if !(0..=MAX_INSTANT).contains(&at) {
        return Err(ScheduleError::new(format!(
            "'{text}' is outside 1970 to 9999"
        )));
    }
    Ok(at)
}

/// For `--now`: RFC 3339, or unix seconds.
pub fn parse_instant(text: &str) -> Result<i64, ScheduleError> {
    let trimmed = text.trim();
    if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return trimmed
            .parse::<i64>()
            .ok()
            .filter(|t| *t <= MAX_INSTANT)
            .ok_or_else(|| ScheduleError::new(format!("'{trimmed}' is outside 1970 to 9999")));
    }
    DateTime::parse_from_rfc3339(trimmed)
        .map(|t| t.timestamp())
        .ok()
        .filter(|t| (0..=MAX_INSTANT).contains(t))
        .ok_or_else(|| ScheduleError::new(format!("invalid time '{}'", text.escape_debug())))
}

/// `09:30` or `9:30`; 24:00 and 12:60 are refused.
pub fn parse_hhmm(text: &str) -> Result<(u32, u32), ScheduleError> {
    let bad = || {
        ScheduleError::new(format!("invalid time of day '{}'", text.escape_debug()))
            .hint("write it as HH:MM on a 24-hour clock, 00:00 to 23:59")
    };
    let (h, m) = text.trim().split_once(':').ok_or_else(bad)?;
    let digits = |s: &str, len: std::ops::RangeInclusive<usize>| {
        len.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 1..=2) || !digits(m, 2..=2) {
        return Err(bad());
    }
    let (hour, minute): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if hour > 23 || minute > 59 {
        return Err(bad());
    }
    Ok((hour, minute))
}

const DAY_NAMES: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

fn day(token: &str) -> Option<u32> {
    let lower = token.to_ascii_lowercase();
    if lower.len() < 3 {
        return None;
    }
    DAY_NAMES
        .iter()
        .position(|name| name.starts_with(&lower))
        .map(|i| i as u32)
}

/// `mon,wed,fri`, `mon-fri`, `weekdays`, `weekends`, `daily`; ranges may wrap
/// (`fri-mon` is Friday to Monday). All seven days is stored as "every day"
/// (an empty list), so equal schedules hash alike.
pub fn parse_days(text: &str) -> Result<Vec<u32>, ScheduleError> {
    let bad = |token: &str| {
        ScheduleError::new(format!("invalid day '{}'", token.escape_debug()))
            .hint("use mon,wed,fri, a range like mon-fri, or weekdays, weekends, daily")
    };
    let mut days = [false; 7];
    for token in text.split(',').map(str::trim) {
        match token.to_ascii_lowercase().as_str() {
            "weekdays" => days[..5].iter_mut().for_each(|d| *d = true),
            "weekends" => days[5..].iter_mut().for_each(|d| *d = true),
            "daily" | "everyday" => days.iter_mut().for_each(|d| *d = true),
            _ => match token.split_once('-') {
                Some((a, b)) => {
                    let (start, end) =
                        (day(a).ok_or_else(|| bad(a))?, day(b).ok_or_else(|| bad(b))?);
                    let mut d = start;
                    loop {
                        days[d as usize] = true;
                        if d == end {
                            break;
                        }
                        d = (d + 1) % 7;
                    }
                }
                None => days[day(token).ok_or_else(|| bad(token))? as usize] = true,
            },
        }
    }
    if days.iter().all(|d| *d) {
        return Ok(Vec::new());
    }
    Ok((0..7).filter(|d| days[*d as usize]).collect())
}
