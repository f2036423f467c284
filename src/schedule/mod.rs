//! Pure time: the four schedule kinds, their stored JSON, human input, and
//! `next_after` with docs/CONTRACT.md §2's DST rule. Nothing here reads a clock
//! or the environment; every function takes its instants as values.

mod cron;
pub mod describe;
mod parse;
mod resolve;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;

use chrono::{Datelike, NaiveDate, Offset, TimeZone};
pub use chrono_tz::Tz;
use serde_json::{json, Map, Value};

pub use cron::CronExpr;
pub use parse::{parse_days, parse_duration, parse_hhmm, parse_instant, parse_time, parse_zone};
pub use resolve::compatible;

/// 9999-12-31T23:59:59Z: no occurrence is later.
pub const MAX_INSTANT: i64 = 253_402_300_799;

/// A bad schedule or time input, with a hint on how to write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    pub message: String,
    pub hint: Option<String>,
}

impl ScheduleError {
    pub fn new(message: impl Into<String>) -> ScheduleError {
        ScheduleError {
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> ScheduleError {
        self.hint = Some(hint.into());
        self
    }
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScheduleError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    Once {
        run_at: i64,
    },
    Interval {
        seconds: i64,
        anchor_at: i64,
    },
    /// Weekdays Monday = 0 … Sunday = 6, sorted; empty means every day.
    Calendar {
        hour: u32,
        minute: u32,
        weekdays: Vec<u32>,
    },
    Cron {
        expr: String,
    },
    /// A recurring schedule with an end (docs/CONTRACT.md §13, `--until` and
    /// `--count`): no occurrence after `until`. `--count N` is stored as the
    /// count and the instant of its Nth occurrence, resolved when drafted,
    /// so the hash fixes exactly which occurrences run. Stored as the inner
    /// schedule's JSON plus `until` (and `count`), so schedules without an
    /// end keep their JSON and their payloads their hashes.
    Ends {
        inner: Box<Schedule>,
        until: i64,
        count: Option<i64>,
    },
    /// A recurring schedule whose every occurrence is moved `offset`
    /// seconds later, `offset` in [0, spread) (`--spread`). The inner
    /// schedule's occurrences are resolved first, DST rule included, and
    /// the offset is added to the resulting instant: a daily 09:00 with
    /// offset 420 runs at 09:07 every day, DST days too, and a 02:30 shifted
    /// by a gap to 03:30 runs at 03:37. Stored as the inner JSON plus
    /// `spread` and `offset`.
    Spread {
        inner: Box<Schedule>,
        spread: i64,
        offset: i64,
    },
}

/// One occurrence; `shifted_from` names the wall time a DST gap moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    pub at: i64,
    pub shifted_from: Option<String>,
}

pub fn parse_cron(text: &str) -> Result<CronExpr, ScheduleError> {
    CronExpr::parse(text)
}

impl Schedule {
    pub fn kind(&self) -> &'static str {
        match self {
            Schedule::Once { .. } => "once",
            Schedule::Interval { .. } => "interval",
            Schedule::Calendar { .. } => "calendar",
            Schedule::Cron { .. } => "cron",
            Schedule::Ends { inner, .. } | Schedule::Spread { inner, .. } => inner.kind(),
        }
    }

    /// The last instant an occurrence may have, when the schedule ends.
    pub fn until(&self) -> Option<i64> {
        match self {
            Schedule::Ends { until, .. } => Some(*until),
            _ => None,
        }
    }

    /// The schedule without its end condition.
    pub fn without_end(&self) -> &Schedule {
        match self {
            Schedule::Ends { inner, .. } => inner,
            other => other,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Schedule::Once { run_at } => json!({"kind": "once", "run_at": run_at}),
            Schedule::Interval { seconds, anchor_at } => {
                json!({"kind": "interval", "seconds": seconds, "anchor_at": anchor_at})
            }
            Schedule::Calendar {
                hour,
                minute,
                weekdays,
            } => {
                json!({"kind": "calendar", "hour": hour, "minute": minute, "weekdays": weekdays})
            }
            Schedule::Cron { expr } => json!({"kind": "cron", "expr": expr}),
            Schedule::Ends {
                inner,
                until,
                count,
            } => {
                let mut value = inner.to_json();
                value["until"] = json!(until);
                if let Some(count) = count {
                    value["count"] = json!(count);
                }
                value
            }
            Schedule::Spread {
                inner,
                spread,
                offset,
            } => {
                let mut value = inner.to_json();
                value["spread"] = json!(spread);
                value["offset"] = json!(offset);
                value
            }
        }
    }

    /// Reads stored JSON strictly: exact keys, integers, valid ranges.
    pub fn from_json(value: &Value) -> Result<Schedule, ScheduleError> {
        let obj = value
            .as_object()
            .ok_or_else(|| ScheduleError::new("schedule is not a JSON object"))?;
        let schedule = if obj.contains_key("until") {
            Schedule::ends_from_json(obj)?
        } else if obj.contains_key("spread") {
            Schedule::spread_from_json(obj)?
        } else {
            Schedule::kind_from_json(obj)?
        };
        schedule.validate()?;
        Ok(schedule)
    }

    /// An end (`until`, and `count` if any) around the schedule the other
    /// fields make.
    fn ends_from_json(obj: &Map<String, Value>) -> Result<Schedule, ScheduleError> {
        let mut plain = obj.clone();
        let until = plain
            .remove("until")
            .and_then(|v| v.as_i64())
            .ok_or_else(|| ScheduleError::new("schedule field 'until' is not an integer"))?;
        let count =
            match plain.remove("count") {
                None => None,
                Some(v) => Some(v.as_i64().ok_or_else(|| {
                    ScheduleError::new("schedule field 'count' is not an integer")
                })?),
            };
        Ok(Schedule::Ends {
            inner: Box::new(Schedule::from_json(&Value::Object(plain))?),
            until,
            count,
        })
    }

    /// A spread (`spread` and `offset`) around the schedule the other
    /// fields make.
    fn spread_from_json(obj: &Map<String, Value>) -> Result<Schedule, ScheduleError> {
        let mut plain = obj.clone();
        let mut take = |key: &str| {
            plain.remove(key).and_then(|v| v.as_i64()).ok_or_else(|| {
                ScheduleError::new(format!("schedule field '{key}' is not an integer"))
            })
        };
        let (spread, offset) = (take("spread")?, take("offset")?);
        Ok(Schedule::Spread {
            inner: Box::new(Schedule::from_json(&Value::Object(plain))?),
            spread,
            offset,
        })
    }

    /// One of the plain kinds, with exactly its fields.
    fn kind_from_json(obj: &Map<String, Value>) -> Result<Schedule, ScheduleError> {
        let int = |key: &str| {
            obj.get(key).and_then(Value::as_i64).ok_or_else(|| {
                ScheduleError::new(format!("schedule field '{key}' is not an integer"))
            })
        };
        let keys = |expected: &[&str]| {
            if obj.len() == expected.len() && expected.iter().all(|k| obj.contains_key(*k)) {
                Ok(())
            } else {
                Err(ScheduleError::new(format!(
                    "schedule must have exactly the fields {expected:?}"
                )))
            }
        };
        let small = |key: &str| -> Result<u32, ScheduleError> {
            u32::try_from(int(key)?)
                .map_err(|_| ScheduleError::new(format!("schedule field '{key}' is out of range")))
        };
        Ok(match obj.get("kind").and_then(Value::as_str) {
            Some("once") => {
                keys(&["kind", "run_at"])?;
                Schedule::Once {
                    run_at: int("run_at")?,
                }
            }
            Some("interval") => {
                keys(&["kind", "seconds", "anchor_at"])?;
                Schedule::Interval {
                    seconds: int("seconds")?,
                    anchor_at: int("anchor_at")?,
                }
            }
            Some("calendar") => {
                keys(&["kind", "hour", "minute", "weekdays"])?;
                Schedule::Calendar {
                    hour: small("hour")?,
                    minute: small("minute")?,
                    weekdays: weekdays_from_json(&obj["weekdays"])?,
                }
            }
            Some("cron") => {
                keys(&["kind", "expr"])?;
                let expr = obj["expr"]
                    .as_str()
                    .ok_or_else(|| ScheduleError::new("expr is not a string"))?;
                Schedule::Cron {
                    expr: expr.to_string(),
                }
            }
            _ => return Err(ScheduleError::new("unknown schedule kind")),
        })
    }

    pub fn validate(&self) -> Result<(), ScheduleError> {
        match self {
            Schedule::Once { run_at } => {
                if !(0..=MAX_INSTANT).contains(run_at) {
                    return Err(ScheduleError::new("the time is outside 1970 to 9999"));
                }
            }
            Schedule::Interval { seconds, anchor_at } => {
                if *seconds < 60 {
                    return Err(ScheduleError::new(format!(
                        "an interval must be at least 60 s (got {seconds} s)"
                    ))
                    .hint("use --every 1m or longer"));
                }
                if !(0..=MAX_INSTANT).contains(anchor_at) {
                    return Err(ScheduleError::new(
                        "the interval's start is outside 1970 to 9999",
                    ));
                }
            }
            Schedule::Calendar {
                hour,
                minute,
                weekdays,
            } => validate_calendar(*hour, *minute, weekdays)?,
            Schedule::Cron { expr } => {
                CronExpr::parse(expr)?;
            }
            Schedule::Ends {
                inner,
                until,
                count,
            } => validate_ends(inner, *until, *count)?,
            Schedule::Spread {
                inner,
                spread,
                offset,
            } => validate_spread(inner, *spread, *offset)?,
        }
        Ok(())
    }

    pub fn describe(&self, tz: Tz) -> String {
        describe::describe(self, tz)
    }
}

/// A calendar schedule's weekdays: integers 0 (Monday) to 6.
fn weekdays_from_json(value: &Value) -> Result<Vec<u32>, ScheduleError> {
    value
        .as_array()
        .ok_or_else(|| ScheduleError::new("weekdays is not a list"))?
        .iter()
        .map(|d| d.as_u64().filter(|d| *d <= 6).map(|d| d as u32))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| ScheduleError::new("weekdays must be integers 0 to 6"))
}

fn validate_calendar(hour: u32, minute: u32, weekdays: &[u32]) -> Result<(), ScheduleError> {
    if hour > 23 || minute > 59 {
        return Err(ScheduleError::new(format!(
            "{hour:02}:{minute:02} is not a time of day"
        )));
    }
    if weekdays.iter().any(|d| *d > 6) || weekdays.windows(2).any(|w| w[0] >= w[1]) {
        return Err(ScheduleError::new(
            "weekdays must be sorted, distinct, 0 (Monday) to 6 (Sunday)",
        ));
    }
    Ok(())
}

/// An end goes around a recurring schedule only (a spread one included).
fn validate_ends(inner: &Schedule, until: i64, count: Option<i64>) -> Result<(), ScheduleError> {
    if matches!(*inner, Schedule::Once { .. } | Schedule::Ends { .. })
        || matches!(inner, Schedule::Spread { inner, .. } if matches!(**inner, Schedule::Once { .. }))
    {
        return Err(ScheduleError::new(
            "--until and --count only go with a recurring schedule",
        ));
    }
    inner.validate()?;
    if !(0..=MAX_INSTANT).contains(&until) {
        return Err(ScheduleError::new("the end is outside 1970 to 9999"));
    }
    if count.is_some_and(|n| n < 1) {
        return Err(ScheduleError::new("--count must be at least 1"));
    }
    Ok(())
}

/// A spread goes around a plain recurring schedule, and its offset is
/// below it.
fn validate_spread(inner: &Schedule, spread: i64, offset: i64) -> Result<(), ScheduleError> {
    if matches!(
        *inner,
        Schedule::Once { .. } | Schedule::Ends { .. } | Schedule::Spread { .. }
    ) {
        return Err(ScheduleError::new(
            "--spread only goes with a recurring schedule",
        ));
    }
    inner.validate()?;
    if !(1..=3600).contains(&spread) {
        return Err(ScheduleError::new(format!(
            "--spread must be 1 s to 1 h (got {spread} s)"
        )));
    }
    if !(0..spread).contains(&offset) {
        return Err(ScheduleError::new(
            "the spread's offset is not below the spread",
        ));
    }
    Ok(())
}

/// The first occurrence strictly later than `after`.
pub fn next_after(schedule: &Schedule, tz: Tz, after: i64) -> Option<Occurrence> {
    let plain = |at: i64| {
        Some(Occurrence {
            at,
            shifted_from: None,
        })
    };
    match schedule {
        Schedule::Ends { inner, until, .. } => {
            next_after(inner, tz, after).filter(|o| o.at <= *until)
        }
        Schedule::Spread { inner, offset, .. } => {
            let occ = next_after(inner, tz, after.saturating_sub(*offset))?;
            let at = occ
                .at
                .checked_add(*offset)
                .filter(|at| *at <= MAX_INSTANT)?;
            Some(Occurrence { at, ..occ })
        }
        Schedule::Once { run_at } => (*run_at > after).then_some(Occurrence {
            at: *run_at,
            shifted_from: None,
        }),
        Schedule::Interval { seconds, anchor_at } => {
            let at = if after < *anchor_at {
                *anchor_at
            } else {
                let steps = (after - anchor_at) / seconds + 1;
                anchor_at.checked_add(steps.checked_mul(*seconds)?)?
            };
            if at > MAX_INSTANT {
                None
            } else {
                plain(at)
            }
        }
        Schedule::Calendar { .. } | Schedule::Cron { .. } => {
            let rule = DayRule::of(schedule)?;
            let start = resolve::local_date(tz, after.clamp(0, MAX_INSTANT))?.pred_opt()?;
            let mut best: Option<Occurrence> = None;
            let mut days_after_best = 0;
            for date in start.iter_days().take(rule.scan_days()) {
                if best.is_some() {
                    // A gap shifts forward by at most a day, so a later day's
                    // time can beat an earlier day's only within two days.
                    days_after_best += 1;
                    if days_after_best > 2 {
                        break;
                    }
                }
                for occ in rule.instants(tz, date) {
                    if occ.at > after
                        && occ.at <= MAX_INSTANT
                        && best.as_ref().is_none_or(|b| occ.at < b.at)
                    {
                        best = Some(occ);
                    }
                }
            }
            best
        }
    }
}

/// The shortest time between successive occurrences, judged over the next
/// `sample` of them after `after`; None when fewer than two follow.
pub fn shortest_gap(schedule: &Schedule, tz: Tz, after: i64, sample: usize) -> Option<i64> {
    upcoming(schedule, tz, after, sample)
        .windows(2)
        .map(|w| w[1].at - w[0].at)
        .min()
}

/// The fixed offset of `--spread`: the first eight bytes of `seed` (a
/// SHA-256) as a big-endian integer, modulo the spread.
pub fn spread_offset(seed: &[u8], spread: i64) -> i64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&seed[..8]);
    (u64::from_be_bytes(first) % spread.max(1) as u64) as i64
}

/// Whether the occurrence at `at` is the last of a schedule with an end
/// (`--until`, `--count`); never for one without (a once task says so itself).
pub fn is_last(schedule: &Schedule, tz: Tz, at: i64) -> bool {
    schedule.until().is_some() && next_after(schedule, tz, at).is_none()
}

/// Up to `count` successive occurrences after `after`.
pub fn upcoming(schedule: &Schedule, tz: Tz, after: i64, count: usize) -> Vec<Occurrence> {
    let mut out = Vec::with_capacity(count);
    let mut cursor = after;
    while out.len() < count {
        match next_after(schedule, tz, cursor) {
            Some(occ) => {
                cursor = occ.at;
                out.push(occ);
            }
            None => break,
        }
    }
    out
}

/// The latest occurrence at or before `at`, found through widening windows
/// (a day, a week, a year, nine years) so that sparse schedules stay cheap.
pub fn last_at_or_before(schedule: &Schedule, tz: Tz, at: i64) -> Option<Occurrence> {
    for window in [86_400, 8 * 86_400, 367 * 86_400, 9 * 367 * 86_400] {
        let (_, last) = count_between(schedule, tz, at.saturating_sub(window), at, u64::MAX);
        if let Some(found) = last {
            // Recompute through next_after to learn whether DST shifted it.
            return next_after(schedule, tz, found - 1)
                .filter(|o| o.at == found)
                .or(Some(Occurrence {
                    at: found,
                    shifted_from: None,
                }));
        }
    }
    None
}

/// How many occurrences fall in (from, to], at most `limit`, and the last
/// one counted. Day by day for calendar and cron, arithmetic for intervals.
pub fn count_between(
    schedule: &Schedule,
    tz: Tz,
    from: i64,
    to: i64,
    limit: u64,
) -> (u64, Option<i64>) {
    if to <= from || limit == 0 {
        return (0, None);
    }
    match schedule {
        Schedule::Ends { inner, until, .. } => {
            count_between(inner, tz, from, to.min(*until), limit)
        }
        Schedule::Spread { inner, offset, .. } => {
            let to = to.min(MAX_INSTANT.saturating_sub(*offset));
            let (n, last) = count_between(inner, tz, from - offset, to - offset, limit);
            (n, last.map(|at| at + offset))
        }
        Schedule::Once { run_at } => {
            if *run_at > from && *run_at <= to {
                (1, Some(*run_at))
            } else {
                (0, None)
            }
        }
        Schedule::Interval { seconds, anchor_at } => {
            let Some(first) = next_after(schedule, tz, from) else {
                return (0, None);
            };
            let last_allowed = to.min(MAX_INSTANT);
            if first.at > last_allowed {
                return (0, None);
            }
            let available = ((last_allowed - first.at) / seconds + 1) as u64;
            let count = available.min(limit);
            let last = first.at + (count as i64 - 1) * seconds;
            debug_assert_eq!((last - anchor_at) % seconds, 0);
            (count, Some(last))
        }
        Schedule::Calendar { .. } | Schedule::Cron { .. } => {
            let Some(rule) = DayRule::of(schedule) else {
                return (0, None);
            };
            let (Some(start), Some(end)) = (
                resolve::local_date(tz, from.clamp(0, MAX_INSTANT)).and_then(|d| d.pred_opt()),
                resolve::local_date(tz, to.clamp(0, MAX_INSTANT)).and_then(|d| d.succ_opt()),
            ) else {
                return (0, None);
            };
            let mut seen: Vec<i64> = Vec::new();
            for date in start.iter_days().take_while(|d| *d <= end) {
                seen.extend(
                    rule.instants(tz, date)
                        .into_iter()
                        .map(|o| o.at)
                        .filter(|at| *at > from && *at <= to),
                );
                if seen.len() as u64 > limit.saturating_mul(2).saturating_add(64) {
                    break;
                }
            }
            seen.sort_unstable();
            seen.dedup();
            seen.truncate(limit.min(usize::MAX as u64) as usize);
            (seen.len() as u64, seen.last().copied())
        }
    }
}

/// Calendar and cron schedules as "which wall times on which local days".
enum DayRule {
    Calendar {
        hour: u32,
        minute: u32,
        weekdays: Vec<u32>,
    },
    Cron(CronExpr),
}

impl DayRule {
    fn of(schedule: &Schedule) -> Option<DayRule> {
        match schedule {
            Schedule::Calendar {
                hour,
                minute,
                weekdays,
            } => Some(DayRule::Calendar {
                hour: *hour,
                minute: *minute,
                weekdays: weekdays.clone(),
            }),
            Schedule::Cron { expr } => CronExpr::parse(expr)
                .ok()
                .filter(CronExpr::can_match)
                .map(DayRule::Cron),
            _ => None,
        }
    }

    /// How many days to look ahead before concluding there is no next one:
    /// a week for calendars; for cron, a whole 400-year Gregorian cycle, after
    /// which the calendar repeats (`0 0 29 2 */7`, a Sunday Feb 29, can be
    /// 40 years apart), so a cron that matches nowhere in it never will.
    fn scan_days(&self) -> usize {
        match self {
            DayRule::Calendar { .. } => 10,
            DayRule::Cron(_) => 146_097 + 366,
        }
    }

    /// Every instant the wall times of `date` resolve to.
    fn instants(&self, tz: Tz, date: NaiveDate) -> Vec<Occurrence> {
        match self {
            DayRule::Calendar {
                hour,
                minute,
                weekdays,
            } => {
                let weekday = date.weekday().num_days_from_monday();
                if !weekdays.is_empty() && !weekdays.contains(&weekday) {
                    return Vec::new();
                }
                fixed(tz, date, *hour, *minute).into_iter().collect()
            }
            DayRule::Cron(cron) => {
                if !cron.day_matches(date) {
                    return Vec::new();
                }
                let mut out = Vec::new();
                for hour in cron.hours() {
                    for minute in cron.minutes() {
                        if cron.frequent {
                            if let Some(local) = resolve::wall(date, hour, minute) {
                                out.extend(resolve::all_instants(tz, local).into_iter().map(
                                    |at| Occurrence {
                                        at,
                                        shifted_from: None,
                                    },
                                ));
                            }
                        } else {
                            out.extend(fixed(tz, date, hour, minute));
                        }
                    }
                }
                out
            }
        }
    }
}

/// A fixed wall time on a date under the shift / first-instant rule.
fn fixed(tz: Tz, date: NaiveDate, hour: u32, minute: u32) -> Option<Occurrence> {
    let local = resolve::wall(date, hour, minute)?;
    let resolved = resolve::compatible(tz, local)?;
    Some(Occurrence {
        at: resolved.at,
        shifted_from: resolved.shifted.then(|| format!("{hour:02}:{minute:02}")),
    })
}

/// RFC 3339 with the zone's offset at that instant: "2026-12-03T09:00:00+08:00".
/// Where RFC 3339 cannot say it, the instant is written in UTC instead: its
/// offsets are whole minutes (an offset with seconds, local mean time such
/// as Africa/Monrovia's -00:44:30 until 1972, would be cut and name another
/// instant) and its years have four digits (9999-12-31T23:00Z is already
/// the year 10000 in Sydney).
pub fn format_local(at: i64, tz: Tz) -> String {
    match tz.timestamp_opt(at, 0).single() {
        Some(t) if t.offset().fix().local_minus_utc() % 60 == 0 && t.year() <= 9999 => {
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
        }
        _ => format_utc(at),
    }
}

/// The instant on the zone's wall clock, for people: "2026-12-03 09:30 CST",
/// with its seconds when it has some ("12:00:30", as `--at` gave it).
pub fn format_wall(at: i64, tz: Tz) -> String {
    match tz.timestamp_opt(at, 0).single() {
        Some(t) if at.rem_euclid(60) != 0 => t.format("%Y-%m-%d %H:%M:%S %Z").to_string(),
        Some(t) => t.format("%Y-%m-%d %H:%M %Z").to_string(),
        None => format_utc(at),
    }
}

/// RFC 3339 in UTC: "2026-12-03T01:00:00Z".
pub fn format_utc(at: i64) -> String {
    match chrono::DateTime::from_timestamp(at, 0) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => at.to_string(),
    }
}
