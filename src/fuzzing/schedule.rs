//! Schedule parsing and `next_after`, checked against docs/CONTRACT.md §2.
//!
//! Input, one field per line (missing lines are empty):
//! 0. zone: an IANA name; when it does not parse, a zone is picked from the bytes
//! 1. after: what `parse_instant` reads, else a signed integer clamped to
//!    1970…9999, else 0
//! 2. kind: `at`, `in`, `every`, `daily`, `cron` or `json` (the draft flags,
//!    and stored JSON)
//! 3. its argument: TIME, DURATION, DURATION, HH:MM, a cron expression, JSON
//! 4. the optional second argument: `every`'s start TIME, `daily`'s day list
//!
//! Every line also goes through every parser on its own.

use chrono::{Datelike, TimeZone, Timelike};
use chrono_tz::{Tz, TZ_VARIANTS};
use serde_json::Value;

use crate::schedule::{self, Occurrence, Schedule, MAX_INSTANT};

/// Lines beyond these are not parsed on their own: they only cost time.
const MAX_LINES: usize = 16;

pub fn check_schedule(data: &[u8]) {
    let lines = super::lines(data);
    let field = |i: usize| lines.get(i).map_or("", String::as_str);
    let tz = schedule::parse_zone(field(0))
        .unwrap_or_else(|_| TZ_VARIANTS[super::pick(data, TZ_VARIANTS.len())]);
    let after = instant(field(1));
    for line in lines.iter().take(MAX_LINES) {
        parsers_hold(line, tz);
    }
    let second = lines.get(4).map(String::as_str);
    let Some(built) = build(field(2), field(3), second, tz, after) else {
        return;
    };
    if built.validate().is_err() {
        return;
    }
    json_round_trips(&built);
    occurrences_hold(&built, tz, after);
}

fn instant(text: &str) -> i64 {
    schedule::parse_instant(text).unwrap_or_else(|_| {
        text.trim()
            .parse::<i64>()
            .map_or(0, |n| n.clamp(0, MAX_INSTANT))
    })
}

/// What each parser accepts is in range and reads back the same.
fn parsers_hold(text: &str, tz: Tz) {
    let some_error = |e: schedule::ScheduleError| assert!(!e.message.is_empty(), "{text:?}");
    match schedule::parse_zone(text) {
        Ok(zone) => assert_eq!(schedule::parse_zone(zone.name()), Ok(zone), "{text:?}"),
        Err(e) => some_error(e),
    }
    match schedule::parse_duration(text) {
        Ok(seconds) => assert!((1..=100 * 366 * 86400).contains(&seconds), "{text:?}"),
        Err(e) => some_error(e),
    }
    match schedule::parse_time(text, tz) {
        Ok(at) => assert!((0..=MAX_INSTANT).contains(&at), "{text:?} in {tz}"),
        Err(e) => some_error(e),
    }
    match schedule::parse_instant(text) {
        Ok(at) => {
            assert!((0..=MAX_INSTANT).contains(&at), "{text:?}");
            assert_eq!(schedule::parse_instant(&at.to_string()), Ok(at));
            assert_eq!(schedule::parse_instant(&schedule::format_utc(at)), Ok(at));
            assert_eq!(
                schedule::parse_time(&schedule::format_local(at, tz), tz),
                Ok(at)
            );
        }
        Err(e) => some_error(e),
    }
    match schedule::parse_hhmm(text) {
        Ok((hour, minute)) => {
            assert!(hour < 24 && minute < 60, "{text:?}");
            let written = format!("{hour:02}:{minute:02}");
            assert_eq!(schedule::parse_hhmm(&written), Ok((hour, minute)));
        }
        Err(e) => some_error(e),
    }
    match schedule::parse_days(text) {
        Ok(days) => {
            assert!(
                days.len() < 7,
                "{text:?}: all seven days are stored as none"
            );
            assert!(days.windows(2).all(|w| w[0] < w[1]), "{text:?}: {days:?}");
            assert!(days.iter().all(|d| *d < 7), "{text:?}: {days:?}");
        }
        Err(e) => some_error(e),
    }
    match schedule::parse_cron(text) {
        Ok(cron) => {
            // `draft` stores the expression with its whitespace normalized.
            let stored = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(schedule::parse_cron(&stored), Ok(cron), "{text:?}");
            assert_eq!(Schedule::Cron { expr: stored }.validate(), Ok(()));
        }
        Err(e) => some_error(e),
    }
}

/// The schedule `draft` would build from these flags (with `now` = `after`).
fn build(kind: &str, arg: &str, second: Option<&str>, tz: Tz, after: i64) -> Option<Schedule> {
    let valid = |s: Schedule| {
        assert_eq!(s.validate(), Ok(()), "{kind} {arg:?} {second:?}");
        s
    };
    Some(match kind.trim() {
        "at" => valid(Schedule::Once {
            run_at: schedule::parse_time(arg, tz).ok()?,
        }),
        "in" => Schedule::Once {
            run_at: after.saturating_add(schedule::parse_duration(arg).ok()?),
        },
        "every" => Schedule::Interval {
            seconds: schedule::parse_duration(arg).ok()?,
            anchor_at: match second {
                Some(start) => schedule::parse_time(start, tz).ok()?,
                None => after,
            },
        },
        "daily" => {
            let (hour, minute) = schedule::parse_hhmm(arg).ok()?;
            let weekdays = match second {
                Some(days) => schedule::parse_days(days).ok()?,
                None => Vec::new(),
            };
            valid(Schedule::Calendar {
                hour,
                minute,
                weekdays,
            })
        }
        "cron" => {
            schedule::parse_cron(arg).ok()?;
            valid(Schedule::Cron {
                expr: arg.split_whitespace().collect::<Vec<_>>().join(" "),
            })
        }
        "json" => {
            let value: Value = serde_json::from_str(arg).ok()?;
            let parsed = Schedule::from_json(&value).ok()?;
            // Strict reading: exactly what was stored comes back out.
            assert_eq!(parsed.to_json(), value, "{arg}");
            valid(parsed)
        }
        _ => return None,
    })
}

fn json_round_trips(s: &Schedule) {
    let stored = s.to_json().to_string();
    let value: Value = serde_json::from_str(&stored).expect("to_json writes JSON");
    assert_eq!(Schedule::from_json(&value), Ok(s.clone()), "{stored}");
}

fn occurrences_hold(s: &Schedule, tz: Tz, after: i64) {
    let _ = s.describe(tz);
    let next = schedule::next_after(s, tz, after);
    let upcoming = schedule::upcoming(s, tz, after, 4);
    assert_eq!(
        upcoming.first().map(|o| o.at),
        next.as_ref().map(|o| o.at),
        "{s:?} in {tz} after {after}"
    );
    let mut previous = after;
    for occurrence in &upcoming {
        assert!(
            occurrence.at > previous && occurrence.at <= MAX_INSTANT,
            "{s:?} in {tz}: {} after {previous}",
            occurrence.at
        );
        occurrence_fits(s, tz, occurrence);
        previous = occurrence.at;
    }
    let Some(next) = next else {
        // Nothing later: the day-by-day count agrees (cron only near the
        // end of time, where its 400-year scan is short).
        if !matches!(s, Schedule::Cron { .. }) || MAX_INSTANT - after < 3 * 366 * 86400 {
            assert_eq!(
                schedule::count_between(s, tz, after, MAX_INSTANT, 1),
                (0, None),
                "{s:?} in {tz} after {after}"
            );
        }
        return;
    };
    // No occurrence was skipped between `after` and `next`.
    let first_after = |t: i64| schedule::next_after(s, tz, t).map(|o| o.at);
    let context = format!("{s:?} in {tz} after {after}: next {}", next.at);
    assert_eq!(first_after(next.at - 1), Some(next.at), "{context}");
    assert_eq!(
        first_after(after + (next.at - after) / 2),
        Some(next.at),
        "{context}"
    );
    assert_eq!(
        schedule::count_between(s, tz, after, next.at, 2),
        (1, Some(next.at)),
        "{context}"
    );
    let last = schedule::last_at_or_before(s, tz, next.at).map(|o| o.at);
    assert_eq!(last, Some(next.at), "{context}");
    if let Some(before) = schedule::last_at_or_before(s, tz, next.at - 1) {
        assert!(
            before.at <= after,
            "{context}: last before is {}",
            before.at
        );
    }
}

/// One occurrence is what its schedule says, read on the zone's wall clock.
fn occurrence_fits(s: &Schedule, tz: Tz, occurrence: &Occurrence) {
    let _ = (
        schedule::format_local(occurrence.at, tz),
        schedule::format_wall(occurrence.at, tz),
    );
    let local = tz
        .timestamp_opt(occurrence.at, 0)
        .single()
        .expect("an instant has one wall time");
    let wall = local.naive_local();
    let hhmm = format!("{:02}:{:02}", wall.hour(), wall.minute());
    let context = format!("{s:?} in {tz}: {} ({wall})", occurrence.at);
    // A fixed wall time runs at its first instant (a fold runs once).
    let first_instant = || {
        tz.from_local_datetime(&wall)
            .earliest()
            .map(|t| t.timestamp())
    };
    match (s, &occurrence.shifted_from) {
        (Schedule::Once { run_at }, None) => assert_eq!(occurrence.at, *run_at, "{context}"),
        (Schedule::Interval { seconds, anchor_at }, None) => {
            assert!(occurrence.at >= *anchor_at, "{context}");
            assert_eq!((occurrence.at - anchor_at) % seconds, 0, "{context}");
        }
        (
            Schedule::Calendar {
                hour,
                minute,
                weekdays,
            },
            None,
        ) => {
            assert_eq!((wall.hour(), wall.minute()), (*hour, *minute), "{context}");
            let weekday = wall.weekday().num_days_from_monday();
            assert!(
                weekdays.is_empty() || weekdays.contains(&weekday),
                "{context}"
            );
            assert_eq!(first_instant(), Some(occurrence.at), "{context}");
        }
        (Schedule::Cron { expr }, None) => {
            let cron = schedule::parse_cron(expr).expect("a validated expression");
            assert!(cron.day_matches(wall.date()), "{context}");
            assert!(cron.hours().any(|h| h == wall.hour()), "{context}");
            assert!(cron.minutes().any(|m| m == wall.minute()), "{context}");
            if !cron.frequent {
                assert_eq!(first_instant(), Some(occurrence.at), "{context}");
            }
        }
        (Schedule::Calendar { .. } | Schedule::Cron { .. }, Some(shifted)) => {
            // A gap moved it: the wall clock never showed the time it names.
            assert_ne!(*shifted, hhmm, "{context}");
        }
        // The fuzzer draws no end conditions; they only cut occurrences off.
        (Schedule::Ends { .. } | Schedule::Spread { .. }, _) => {}
        (_, Some(shifted)) => panic!("{context}: only wall times shift, not {shifted}"),
    }
}
