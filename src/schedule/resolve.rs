//! Local wall-clock time → instants, under docs/CONTRACT.md §2's rule (the one
//! RFC 5545, java.time and RFC 9557 "compatible" share): a time inside a gap
//! is shifted forward by the gap's length, a time inside a fold takes its
//! first instant. `all_instants` is the real-time view frequent cron jobs use.

use chrono::{LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone};
use chrono_tz::Tz;

/// An instant a wall time resolved to, and whether a gap shifted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    pub at: i64,
    pub shifted: bool,
}

pub fn wall(date: NaiveDate, hour: u32, minute: u32) -> Option<NaiveDateTime> {
    NaiveTime::from_hms_opt(hour, minute, 0).map(|t| date.and_time(t))
}

/// The compatible resolution: exactly one instant for every wall time.
pub fn compatible(tz: Tz, local: NaiveDateTime) -> Option<Resolved> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => Some(Resolved {
            at: t.timestamp(),
            shifted: false,
        }),
        LocalResult::Ambiguous(first, _) => Some(Resolved {
            at: first.timestamp(),
            shifted: false,
        }),
        LocalResult::None => {
            // Reading the wall time with the offset in force just before the
            // gap is the same as moving it forward by the gap's length.
            let before = offset_before_gap(tz, local)?;
            Some(Resolved {
                at: local.and_utc().timestamp() - before,
                shifted: true,
            })
        }
    }
}

/// Every instant at which the wall clock shows `local`: none in a gap, two
/// in a fold.
pub fn all_instants(tz: Tz, local: NaiveDateTime) -> Vec<i64> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => vec![t.timestamp()],
        LocalResult::Ambiguous(a, b) => vec![a.timestamp(), b.timestamp()],
        LocalResult::None => Vec::new(),
    }
}

/// The UTC offset (seconds) of the last wall time that exists before
/// `local`. Steps back a quarter hour at a time: gaps are short (a day at
/// most, Pacific/Apia 2011), so this ends within 100 steps.
fn offset_before_gap(tz: Tz, local: NaiveDateTime) -> Option<i64> {
    let mut probe = local;
    for _ in 0..200 {
        probe = probe.checked_sub_signed(chrono::Duration::minutes(15))?;
        match tz.from_local_datetime(&probe) {
            LocalResult::Single(t) => return Some(i64::from(t.offset().fix().local_minus_utc())),
            LocalResult::Ambiguous(_, later) => {
                return Some(i64::from(later.offset().fix().local_minus_utc()))
            }
            LocalResult::None => continue,
        }
    }
    None
}

/// The local date of an instant in the zone.
pub fn local_date(tz: Tz, at: i64) -> Option<NaiveDate> {
    tz.timestamp_opt(at, 0).single().map(|t| t.date_naive())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(tz: &str, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Resolved {
        let tz: Tz = tz.parse().unwrap();
        compatible(
            tz,
            wall(NaiveDate::from_ymd_opt(y, mo, d).unwrap(), h, mi).unwrap(),
        )
        .unwrap()
    }

    fn utc(text: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp()
    }

    #[test]
    fn gaps_shift_forward_by_their_length() {
        // New York 2026-03-08: 02:00 → 03:00.
        assert_eq!(
            at("America/New_York", 2026, 3, 8, 2, 30),
            Resolved {
                at: utc("2026-03-08T07:30:00Z"),
                shifted: true
            }
        );
        // Lord Howe 2026-10-04: 02:00 → 02:30 (a 30-minute gap).
        assert_eq!(
            at("Australia/Lord_Howe", 2026, 10, 4, 2, 15).at,
            utc("2026-10-03T15:45:00Z")
        );
        // Apia skipped 2011-12-30 entirely: 09:00 that day is 09:00 on the 31st.
        let apia = at("Pacific/Apia", 2011, 12, 30, 9, 0);
        assert!(apia.shifted);
        assert_eq!(apia.at, at("Pacific/Apia", 2011, 12, 31, 9, 0).at);
    }

    #[test]
    fn folds_take_the_first_instant() {
        // New York 2026-11-01: 01:30 happens at 05:30Z (EDT) and 06:30Z (EST).
        assert_eq!(
            at("America/New_York", 2026, 11, 1, 1, 30),
            Resolved {
                at: utc("2026-11-01T05:30:00Z"),
                shifted: false
            }
        );
        let tz: Tz = "America/New_York".parse().unwrap();
        let local = wall(NaiveDate::from_ymd_opt(2026, 11, 1).unwrap(), 1, 30).unwrap();
        assert_eq!(
            all_instants(tz, local),
            [utc("2026-11-01T05:30:00Z"), utc("2026-11-01T06:30:00Z")]
        );
        let gap = wall(NaiveDate::from_ymd_opt(2026, 3, 8).unwrap(), 2, 30).unwrap();
        assert!(all_instants(tz, gap).is_empty());
    }
}
