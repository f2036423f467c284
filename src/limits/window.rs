//! The window a budget counts in (docs/CONTRACT.md §6, Budgets): the local
//! day, the week from Monday, or the month from its first day that holds an
//! instant, in the task's zone. Pure: instants in, instants out.
//!
//! A window starts at the local midnight of its first day, resolved by the
//! rule of §2: a midnight that does not exist (a gap, as in
//! America/Santiago or America/Havana) starts the window at the first
//! instant after the gap, and a midnight that happens twice (a fold) at
//! the first of the two. So a day is 23 or 25 hours long across a change,
//! and consecutive windows always meet: each ends where the next begins.

use chrono::{Datelike, Days, Months, NaiveDate};
use chrono_tz::Tz;

use crate::limits::BudgetPeriod;
use crate::schedule::compatible;

/// A window: `start` inclusive, `end` exclusive, UTC seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: i64,
}

impl Window {
    pub fn contains(&self, at: i64) -> bool {
        (self.start..self.end).contains(&at)
    }
}

/// The window of `period` in `zone` that holds the instant `at`. None only
/// where the calendar ends (beyond the year 9999).
pub fn window(period: BudgetPeriod, zone: Tz, at: i64) -> Option<Window> {
    let date = local_date(zone, at)?;
    let first = first_day(period, date)?;
    let next = next_first_day(period, first)?;
    let window = Window {
        start: midnight(zone, first)?,
        end: midnight(zone, next)?,
    };
    // Every instant of a local date is at or after its midnight as §2
    // resolves it (a gap's instants have no date), so this always holds.
    window.contains(at).then_some(window)
}

/// The calendar date the wall clock of `zone` shows at `at`.
fn local_date(zone: Tz, at: i64) -> Option<NaiveDate> {
    use chrono::TimeZone;
    zone.timestamp_opt(at, 0).single().map(|t| t.date_naive())
}

/// The first day of the period holding `date`.
fn first_day(period: BudgetPeriod, date: NaiveDate) -> Option<NaiveDate> {
    match period {
        BudgetPeriod::Day => Some(date),
        BudgetPeriod::Week => {
            date.checked_sub_days(Days::new(u64::from(date.weekday().num_days_from_monday())))
        }
        BudgetPeriod::Month => date.with_day(1),
    }
}

/// The first day of the period after the one starting on `first`.
fn next_first_day(period: BudgetPeriod, first: NaiveDate) -> Option<NaiveDate> {
    match period {
        BudgetPeriod::Day => first.checked_add_days(Days::new(1)),
        BudgetPeriod::Week => first.checked_add_days(Days::new(7)),
        BudgetPeriod::Month => first.checked_add_months(Months::new(1)),
    }
}

/// The instant `date` begins in `zone` (§2's rule for a gap or a fold).
fn midnight(zone: Tz, date: NaiveDate) -> Option<i64> {
    compatible(zone, date.and_hms_opt(0, 0, 0)?).map(|r| r.at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn zone(name: &str) -> Tz {
        name.parse().unwrap()
    }

    /// The instant of a wall time in `zone` (its first, in a fold).
    fn local(name: &str, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        zone(name)
            .with_ymd_and_hms(y, mo, d, h, mi, 0)
            .earliest()
            .unwrap()
            .timestamp()
    }

    fn utc(text: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp()
    }

    fn day(name: &str, at: i64) -> Window {
        window(BudgetPeriod::Day, zone(name), at).unwrap()
    }

    #[test]
    fn a_day_in_utc_is_24_hours_from_midnight() {
        let w = day("UTC", utc("2026-03-08T13:45:00Z"));
        assert_eq!(w.start, utc("2026-03-08T00:00:00Z"));
        assert_eq!(w.end, utc("2026-03-09T00:00:00Z"));
        // Midnight itself opens the next window.
        let next = day("UTC", w.end);
        assert_eq!(next.start, w.end);
    }

    #[test]
    fn new_york_has_a_23_and_a_25_hour_day() {
        let spring = day(
            "America/New_York",
            local("America/New_York", 2026, 3, 8, 12, 0),
        );
        assert_eq!(spring.start, utc("2026-03-08T05:00:00Z"));
        assert_eq!(spring.end, utc("2026-03-09T04:00:00Z"));
        assert_eq!(spring.end - spring.start, 23 * 3600);
        let fall = day(
            "America/New_York",
            local("America/New_York", 2026, 11, 1, 12, 0),
        );
        assert_eq!(fall.start, utc("2026-11-01T04:00:00Z"));
        assert_eq!(fall.end - fall.start, 25 * 3600);
    }

    #[test]
    fn berlin_days_and_weeks_cross_the_change() {
        let w = day("Europe/Berlin", utc("2026-03-29T10:00:00Z"));
        assert_eq!(w.start, utc("2026-03-28T23:00:00Z"));
        assert_eq!(w.end, utc("2026-03-29T22:00:00Z"));
        // Sunday 29 March: its week began on Monday 23 March, at +01:00.
        let week = window(BudgetPeriod::Week, zone("Europe/Berlin"), w.start).unwrap();
        assert_eq!(week.start, utc("2026-03-22T23:00:00Z"));
        assert_eq!(week.end, utc("2026-03-29T22:00:00Z"));
        assert_eq!(week.end - week.start, 7 * 86400 - 3600);
    }

    #[test]
    fn a_midnight_in_a_gap_starts_at_the_first_instant_after_it() {
        // Santiago springs forward at 00:00 on 6 September 2026 (to 01:00).
        let at = local("America/Santiago", 2026, 9, 6, 12, 0);
        let w = day("America/Santiago", at);
        assert_eq!(w.start, utc("2026-09-06T04:00:00Z"), "01:00 -03");
        assert_eq!(w.end, utc("2026-09-07T03:00:00Z"));
        assert_eq!(w.end - w.start, 23 * 3600);
        // The day before ends where this one begins.
        let before = day("America/Santiago", w.start - 1);
        assert_eq!(before.end, w.start);
        // Havana springs forward at 00:00 on 8 March 2026.
        let havana = day("America/Havana", local("America/Havana", 2026, 3, 8, 9, 0));
        assert_eq!(havana.start, utc("2026-03-08T05:00:00Z"), "01:00 CDT");
        assert_eq!(havana.end - havana.start, 23 * 3600);
    }

    #[test]
    fn a_day_that_repeats_its_last_hour_is_25_hours() {
        // Santiago falls back at 00:00 on 5 April 2026 to 23:00 on the 4th:
        // the 4th's last hour happens twice, and the 5th begins once.
        let w = day(
            "America/Santiago",
            local("America/Santiago", 2026, 4, 4, 12, 0),
        );
        assert_eq!(w.start, utc("2026-04-04T03:00:00Z"));
        assert_eq!(w.end, utc("2026-04-05T04:00:00Z"));
        assert_eq!(w.end - w.start, 25 * 3600);
        let repeated = utc("2026-04-05T03:30:00Z");
        assert_eq!(day("America/Santiago", repeated), w);
    }

    #[test]
    fn lord_howe_moves_half_an_hour() {
        // Lord Howe: +11 in summer, +10:30 from 5 April 2026 02:00.
        let w = day(
            "Australia/Lord_Howe",
            local("Australia/Lord_Howe", 2026, 4, 5, 12, 0),
        );
        assert_eq!(w.start, utc("2026-04-04T13:00:00Z"));
        assert_eq!(w.end, utc("2026-04-05T13:30:00Z"));
        assert_eq!(w.end - w.start, 24 * 3600 + 1800);
    }

    #[test]
    fn a_month_runs_from_its_first_day() {
        let at = local("America/New_York", 2026, 3, 20, 8, 0);
        let w = window(BudgetPeriod::Month, zone("America/New_York"), at).unwrap();
        assert_eq!(w.start, utc("2026-03-01T05:00:00Z"));
        assert_eq!(w.end, utc("2026-04-01T04:00:00Z"));
        let feb = window(
            BudgetPeriod::Month,
            zone("UTC"),
            utc("2028-02-29T23:59:59Z"),
        )
        .unwrap();
        assert_eq!(feb.start, utc("2028-02-01T00:00:00Z"));
        assert_eq!(feb.end, utc("2028-03-01T00:00:00Z"));
    }

    #[test]
    fn windows_meet_every_hour_for_a_year_in_every_zone() {
        for name in [
            "Europe/Berlin",
            "America/New_York",
            "America/Santiago",
            "Australia/Lord_Howe",
            "UTC",
            "America/Havana",
        ] {
            for period in [BudgetPeriod::Day, BudgetPeriod::Week, BudgetPeriod::Month] {
                let mut at = utc("2026-01-01T00:00:00Z");
                while at < utc("2027-01-01T00:00:00Z") {
                    let w = window(period, zone(name), at).unwrap();
                    assert!(w.contains(at), "{name} {period} {at}");
                    assert_eq!(window(period, zone(name), w.end).unwrap().start, w.end);
                    at += 3600;
                }
            }
        }
    }
}
