//! The DST rule and the human input, with literal instants and zones, plus
//! properties every schedule must have.

use proptest::prelude::*;

use super::*;

fn utc(text: &str) -> i64 {
    parse_instant(text).unwrap()
}

fn zone(name: &str) -> Tz {
    parse_zone(name).unwrap()
}

fn next(schedule: &Schedule, tz: &str, after: &str) -> (String, Option<String>) {
    let occ = next_after(schedule, zone(tz), utc(after)).expect("an occurrence");
    (format_utc(occ.at), occ.shifted_from)
}

fn daily(hour: u32, minute: u32) -> Schedule {
    Schedule::Calendar {
        hour,
        minute,
        weekdays: vec![],
    }
}

fn cron(expr: &str) -> Schedule {
    Schedule::Cron { expr: expr.into() }
}

#[test]
fn format_local_names_the_same_instant_even_under_an_offset_with_seconds() {
    // Found by fuzzing: Monrovia kept -00:44:30 until 1972; RFC 3339 cannot
    // write those 30 s, so the local form fell 30 s off the instant.
    let monrovia = zone("Africa/Monrovia");
    assert_eq!(format_local(0, monrovia), "1970-01-01T00:00:00Z");
    assert_eq!(parse_time(&format_local(0, monrovia), monrovia), Ok(0));
    let later = utc("2026-03-01T12:00:00Z");
    assert_eq!(format_local(later, monrovia), "2026-03-01T12:00:00+00:00");
    assert_eq!(
        format_local(later, zone("Asia/Kolkata")),
        "2026-03-01T17:30:00+05:30"
    );
}

#[test]
fn format_local_stays_rfc_3339_when_the_local_year_is_past_9999() {
    // Found by fuzzing: "+10000-01-01T10:00:00+11:00" is not RFC 3339.
    let sydney = zone("Australia/Sydney");
    let at = utc("9999-12-31T23:00:00Z");
    assert_eq!(format_local(at, sydney), "9999-12-31T23:00:00Z");
    assert_eq!(parse_time(&format_local(at, sydney), sydney), Ok(at));
    assert_eq!(
        format_local(utc("9999-12-31T12:00:00Z"), sydney),
        "9999-12-31T23:00:00+11:00"
    );
}

#[test]
fn a_daily_time_in_a_spring_gap_runs_once_shifted_by_the_gap() {
    // New York, Berlin, London, Sydney: one-hour gaps.
    assert_eq!(
        next(&daily(2, 30), "America/New_York", "2026-03-07T12:00:00Z"),
        ("2026-03-08T07:30:00Z".into(), Some("02:30".into()))
    );
    assert_eq!(
        next(&daily(2, 30), "Europe/Berlin", "2026-03-28T12:00:00Z"),
        ("2026-03-29T01:30:00Z".into(), Some("02:30".into()))
    );
    assert_eq!(
        next(&daily(1, 30), "Europe/London", "2026-03-28T12:00:00Z"),
        ("2026-03-29T01:30:00Z".into(), Some("01:30".into()))
    );
    assert_eq!(
        next(&daily(2, 30), "Australia/Sydney", "2026-10-03T12:00:00Z").0,
        "2026-10-03T16:30:00Z"
    );
    // Lord Howe's half-hour gap (02:00 → 02:30) moves 02:15 to 02:45.
    assert_eq!(
        next(&daily(2, 15), "Australia/Lord_Howe", "2026-10-03T00:00:00Z"),
        ("2026-10-03T15:45:00Z".into(), Some("02:15".into()))
    );
    // Chatham: 02:45 → 03:45.
    assert_eq!(
        next(&daily(3, 0), "Pacific/Chatham", "2026-09-26T00:00:00Z").0,
        "2026-09-26T14:15:00Z"
    );
    // The day after, back to normal and unshifted.
    assert_eq!(
        next(&daily(2, 30), "America/New_York", "2026-03-08T07:30:00Z"),
        ("2026-03-09T06:30:00Z".into(), None)
    );
}

#[test]
fn a_daily_time_in_an_autumn_fold_runs_once_at_its_first_instant() {
    let s = daily(1, 30);
    assert_eq!(
        next(&s, "America/New_York", "2026-10-31T12:00:00Z").0,
        "2026-11-01T05:30:00Z"
    );
    assert_eq!(
        next(&s, "America/New_York", "2026-11-01T05:30:00Z").0,
        "2026-11-02T06:30:00Z",
        "not again at 06:30Z"
    );
    assert_eq!(
        next(&daily(2, 30), "Europe/Berlin", "2026-10-25T00:00:00Z").0,
        "2026-10-25T00:30:00Z"
    );
    assert_eq!(
        next(&daily(2, 30), "Europe/Berlin", "2026-10-25T00:30:00Z").0,
        "2026-10-26T01:30:00Z"
    );
}

#[test]
fn havana_and_sao_paulo_transitions_at_midnight() {
    // Havana springs forward at 00:00 → 01:00: 00:30 runs at 01:30 CDT.
    assert_eq!(
        next(&daily(0, 30), "America/Havana", "2026-03-07T12:00:00Z").0,
        "2026-03-08T05:30:00Z"
    );
    // Havana falls back at 01:00 → 00:00: 00:30 runs once, first instant.
    let fold = next(&daily(0, 30), "America/Havana", "2026-10-31T12:00:00Z").0;
    assert_eq!(fold, "2026-11-01T04:30:00Z");
    assert_eq!(
        next(&daily(0, 30), "America/Havana", &fold).0,
        "2026-11-02T05:30:00Z"
    );
    // São Paulo has had no DST since 2019: a plain daily time.
    assert_eq!(
        next(&daily(0, 0), "America/Sao_Paulo", "2026-11-01T12:00:00Z").0,
        "2026-11-02T03:00:00Z"
    );
}

#[test]
fn the_day_apia_skipped_yields_one_run() {
    let s = daily(9, 0);
    // 2011-12-29 10:00 in Apia (-10); the 30th does not exist.
    let first = next(&s, "Pacific/Apia", "2011-12-29T20:00:00Z");
    assert_eq!(
        first,
        ("2011-12-30T19:00:00Z".into(), Some("09:00".into())),
        "09:00 on the 31st (+14)"
    );
    assert_eq!(
        next(&s, "Pacific/Apia", &first.0),
        ("2011-12-31T19:00:00Z".into(), None),
        "then 2012-01-01 09:00"
    );
}

#[test]
fn weekdays_select_the_local_date_as_written() {
    // Wednesday 2026-12-02, 16:00 in Shanghai; weekdays 09:30 → Thursday.
    let s = Schedule::Calendar {
        hour: 9,
        minute: 30,
        weekdays: vec![0, 1, 2, 3, 4],
    };
    assert_eq!(
        next(&s, "Asia/Shanghai", "2026-12-02T08:00:00Z").0,
        "2026-12-03T01:30:00Z"
    );
    // Friday 2026-12-04 after the run → Monday.
    assert_eq!(
        next(&s, "Asia/Shanghai", "2026-12-04T01:30:00Z").0,
        "2026-12-07T01:30:00Z"
    );
}

#[test]
fn frequent_cron_follows_real_time_and_fixed_cron_follows_the_rule() {
    let ny = "America/New_York";
    // */30 in the spring gap: 01:30 EST then 03:00 EDT; nothing at 02:xx.
    assert_eq!(
        next(&cron("*/30 * * * *"), ny, "2026-03-08T06:30:00Z").0,
        "2026-03-08T07:00:00Z"
    );
    // Hourly in the fall fold: 01:00 EDT and 01:00 EST both run.
    assert_eq!(
        next(&cron("0 * * * *"), ny, "2026-11-01T04:30:00Z").0,
        "2026-11-01T05:00:00Z"
    );
    assert_eq!(
        next(&cron("0 * * * *"), ny, "2026-11-01T05:00:00Z").0,
        "2026-11-01T06:00:00Z"
    );
    assert_eq!(
        next(&cron("0 * * * *"), ny, "2026-11-01T06:00:00Z").0,
        "2026-11-01T07:00:00Z"
    );
    // Fixed 30 2 in the gap: shifted to 03:30 EDT; in the fold 30 1 runs once.
    assert_eq!(
        next(&cron("30 2 * * *"), ny, "2026-03-07T12:00:00Z"),
        ("2026-03-08T07:30:00Z".into(), Some("02:30".into()))
    );
    assert_eq!(
        next(&cron("30 1 * * *"), ny, "2026-11-01T05:30:00Z").0,
        "2026-11-02T06:30:00Z"
    );
    // A shift that reorders a day's times: 02:30 → 03:30 comes after 03:00.
    let s = cron("30 2,3 * * *");
    assert_eq!(
        next(&s, ny, "2026-03-08T06:00:00Z").0,
        "2026-03-08T07:30:00Z"
    );
    assert_eq!(
        next(&s, ny, "2026-03-08T07:30:00Z").0,
        "2026-03-09T06:30:00Z",
        "03:30 once, not twice"
    );
}

#[test]
fn cron_day_rules_and_impossible_dates() {
    assert_eq!(
        next(&cron("0 0 29 2 *"), "UTC", "2097-01-01T00:00:00Z").0,
        "2104-02-29T00:00:00Z"
    );
    assert_eq!(
        next_after(
            &cron("0 0 30 2 *"),
            zone("UTC"),
            utc("2026-01-01T00:00:00Z")
        ),
        None
    );
    assert_eq!(
        next(&cron("45 23 31 * *"), "UTC", "2026-04-01T00:00:00Z").0,
        "2026-05-31T23:45:00Z"
    );
    assert_eq!(
        next(&cron("0 12 * * 7"), "UTC", "2026-12-02T00:00:00Z").0,
        "2026-12-06T12:00:00Z"
    );
}

#[test]
fn intervals_and_once() {
    let s = Schedule::Interval {
        seconds: 3600,
        anchor_at: utc("2026-12-02T08:00:00Z"),
    };
    assert_eq!(
        next(&s, "UTC", "2026-12-02T08:00:00Z").0,
        "2026-12-02T09:00:00Z"
    );
    assert_eq!(
        next(&s, "UTC", "2026-12-01T00:00:00Z").0,
        "2026-12-02T08:00:00Z",
        "a future anchor is an occurrence"
    );
    let near_end = Schedule::Interval {
        seconds: 86400 * 365,
        anchor_at: utc("9999-01-01T00:00:00Z"),
    };
    assert_eq!(
        next_after(&near_end, zone("UTC"), utc("9999-06-01T00:00:00Z")),
        None
    );
    let once = Schedule::Once {
        run_at: utc("2026-12-03T00:00:00Z"),
    };
    assert!(next_after(&once, zone("UTC"), utc("2026-12-03T00:00:00Z")).is_none());
    assert_eq!(
        count_between(
            &s,
            zone("UTC"),
            utc("2026-12-02T08:00:00Z"),
            utc("2026-12-02T13:00:30Z"),
            100
        ),
        (5, Some(utc("2026-12-02T13:00:00Z")))
    );
}

#[test]
fn count_between_matches_repeated_next_after() {
    let tz = zone("America/New_York");
    for s in [
        cron("*/15 * * * *"),
        daily(1, 30),
        cron("30 2,3 * * *"),
        cron("0 * * * *"),
    ] {
        let (from, to) = (utc("2026-10-30T00:00:00Z"), utc("2026-11-03T00:00:00Z"));
        let mut expected = 0;
        let mut last = None;
        let mut cursor = from;
        while let Some(o) = next_after(&s, tz, cursor).filter(|o| o.at <= to) {
            expected += 1;
            last = Some(o.at);
            cursor = o.at;
        }
        assert_eq!(
            count_between(&s, tz, from, to, 1_000_000),
            (expected, last),
            "{s:?}"
        );
    }
}

#[test]
fn human_input_is_parsed_strictly() {
    assert_eq!(parse_duration("90s").unwrap(), 90);
    assert_eq!(parse_duration("1h30m").unwrap(), 5400);
    assert_eq!(parse_duration("2d").unwrap(), 172_800);
    assert_eq!(parse_duration("1w").unwrap(), 604_800);
    for bad in [
        "",
        "1x",
        "h",
        "10",
        "-5m",
        "1.5h",
        "0s",
        "99999999999999999999s",
        "200000w",
        "1h 30m",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_hhmm("9:30").unwrap(), (9, 30));
    for bad in ["24:00", "12:60", "930", "9:5", "-1:00", "ab:cd"] {
        assert!(parse_hhmm(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_days("mon,wed,fri").unwrap(), [0, 2, 4]);
    assert_eq!(parse_days("mon-fri").unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(parse_days("Weekends").unwrap(), [5, 6]);
    assert_eq!(parse_days("fri-mon").unwrap(), [0, 4, 5, 6]);
    assert_eq!(parse_days("daily").unwrap(), Vec::<u32>::new());
    assert_eq!(parse_days("mon-sun").unwrap(), Vec::<u32>::new());
    for bad in ["", "funday", "mo", "mon-", "mon,,fri"] {
        assert!(parse_days(bad).is_err(), "{bad}");
    }
    let berlin = zone("Europe/Berlin");
    assert_eq!(
        parse_time("2026-12-03T09:00:00+08:00", berlin).unwrap(),
        utc("2026-12-03T01:00:00Z")
    );
    assert_eq!(
        parse_time("2026-12-03 09:00", berlin).unwrap(),
        utc("2026-12-03T08:00:00Z")
    );
    assert_eq!(
        parse_time("2026-03-29T02:30", berlin).unwrap(),
        utc("2026-03-29T01:30:00Z"),
        "gap rule"
    );
    for bad in [
        "2026-02-30 09:00",
        "2026-12-03 24:00",
        "tomorrow",
        "2026-12-03",
        "1969-12-31 23:00",
    ] {
        assert!(parse_time(bad, berlin).is_err(), "{bad}");
    }
    for bad in [
        "Mars/Olympus",
        "../../etc/passwd",
        "",
        "Europe/Berlin\n",
        "/etc/localtime",
        "europe/berlin",
    ] {
        assert!(parse_zone(bad).is_err(), "{bad}");
    }
    assert!(parse_zone("europe/berlin")
        .unwrap_err()
        .hint
        .unwrap()
        .contains("Europe/Berlin"));
    assert_eq!(parse_instant("1796198400").unwrap(), 1_796_198_400);
}

#[test]
fn stored_json_round_trips_and_is_validated() {
    for s in [
        daily(9, 30),
        cron("*/15 9-17 * * 1-5"),
        Schedule::Once { run_at: 5 },
        Schedule::Interval {
            seconds: 60,
            anchor_at: 0,
        },
    ] {
        assert_eq!(Schedule::from_json(&s.to_json()).unwrap(), s);
    }
    for bad in [
        json!({"kind": "interval", "seconds": 59, "anchor_at": 0}),
        json!({"kind": "calendar", "hour": 24, "minute": 0, "weekdays": []}),
        json!({"kind": "calendar", "hour": 1, "minute": 0, "weekdays": [7]}),
        json!({"kind": "calendar", "hour": 1, "minute": 0, "weekdays": [2, 1]}),
        json!({"kind": "once", "run_at": "soon"}),
        json!({"kind": "once", "run_at": 1, "extra": 2}),
        json!({"kind": "cron", "expr": "* * *"}),
        json!({"kind": "weekly"}),
        json!([1]),
    ] {
        assert!(Schedule::from_json(&bad).is_err(), "{bad}");
    }
}

fn any_schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        (
            0..=23u32,
            0..=59u32,
            proptest::collection::btree_set(0..7u32, 0..7)
        )
            .prop_map(|(hour, minute, days)| Schedule::Calendar {
                hour,
                minute,
                weekdays: days.into_iter().collect()
            }),
        (60..=10_000_000i64, 0..=4_000_000_000i64)
            .prop_map(|(seconds, anchor_at)| Schedule::Interval { seconds, anchor_at }),
        prop::sample::select(vec![
            "*/15 * * * *",
            "0 * * * *",
            "30 2 * * *",
            "0 0 1,15 * mon",
            "15 1 * jan-mar sun",
            "0 */6 * * *",
            "45 23 31 * *",
            "0 9 * * 1-5"
        ])
        .prop_map(|e| Schedule::Cron {
            expr: e.to_string()
        }),
    ]
}

fn any_zone() -> impl Strategy<Value = Tz> {
    prop::sample::select(vec![
        "UTC",
        "America/New_York",
        "Europe/Berlin",
        "Australia/Lord_Howe",
        "Pacific/Apia",
        "America/Havana",
        "Pacific/Chatham",
        "Asia/Kolkata",
    ])
    .prop_map(|z| z.parse::<Tz>().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn next_is_strictly_later_and_stable_until_it(s in any_schedule(), tz in any_zone(),
                                                  t in 0i64..4_200_000_000, frac in 0.0f64..1.0) {
        if let Some(n) = next_after(&s, tz, t) {
            prop_assert!(n.at > t);
            // Any instant between t and the result has the same next occurrence.
            let mid = t + ((n.at - t) as f64 * frac) as i64;
            if mid < n.at {
                prop_assert_eq!(next_after(&s, tz, mid).map(|o| o.at), Some(n.at));
            }
        }
    }

    #[test]
    fn next_is_monotone(s in any_schedule(), tz in any_zone(), t1 in 0i64..4_200_000_000, d in 0i64..10_000_000) {
        let a = next_after(&s, tz, t1).map(|o| o.at);
        let b = next_after(&s, tz, t1 + d).map(|o| o.at);
        if let (Some(a), Some(b)) = (a, b) {
            prop_assert!(a <= b);
        }
    }

    #[test]
    fn intervals_stay_aligned(seconds in 60i64..10_000_000, anchor in 0i64..4_000_000_000, t in 0i64..4_200_000_000) {
        let s = Schedule::Interval { seconds, anchor_at: anchor };
        if let Some(n) = next_after(&s, chrono_tz::UTC, t) {
            prop_assert_eq!((n.at - anchor) % seconds, 0);
            prop_assert!(n.at >= anchor);
        }
    }

    #[test]
    fn calendar_runs_fall_on_their_weekday(hour in 0..=23u32, minute in 0..=59u32, day in 0..7u32,
                                           tz in any_zone(), t in 0i64..4_200_000_000) {
        let s = Schedule::Calendar { hour, minute, weekdays: vec![day] };
        let n = next_after(&s, tz, t).expect("a weekly calendar always has a next run");
        let local = tz.timestamp_opt(n.at, 0).single().unwrap();
        // The written date's weekday, or the day after when a gap pushed it over midnight.
        let wd = local.weekday().num_days_from_monday();
        prop_assert!(wd == day || (n.shifted_from.is_some() && wd == (day + 1) % 7), "{} {}", wd, day);
        if n.shifted_from.is_none() {
            prop_assert_eq!((local.hour(), local.minute()), (hour, minute));
        }
    }

    #[test]
    fn no_instant_panics(s in any_schedule(), tz in any_zone(), t in 0i64..=MAX_INSTANT) {
        let _ = next_after(&s, tz, t);
        let _ = count_between(&s, tz, t, t.saturating_add(86_400), 1000);
    }
}

use chrono::{Datelike, TimeZone, Timelike};

#[test]
fn an_end_round_trips_and_leaves_plain_schedules_as_they_were() {
    let inner = Schedule::Calendar {
        hour: 9,
        minute: 0,
        weekdays: vec![],
    };
    let plain = inner.to_json().to_string();
    assert_eq!(
        plain,
        r#"{"hour":9,"kind":"calendar","minute":0,"weekdays":[]}"#
    );
    let ends = Schedule::Ends {
        inner: Box::new(inner.clone()),
        until: 1_796_288_400,
        count: Some(2),
    };
    let text = ends.to_json().to_string();
    assert_eq!(
        text,
        r#"{"count":2,"hour":9,"kind":"calendar","minute":0,"until":1796288400,"weekdays":[]}"#
    );
    let back = Schedule::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(back, ends);
    let utc: Tz = "UTC".parse().unwrap();
    // 2026-12-02T08:00Z: the 09:00 of the 2nd and the 3rd, then nothing.
    let runs = upcoming(&ends, utc, 1_796_198_400, 5);
    assert_eq!(runs.len(), 2);
    assert!(is_last(&ends, utc, runs[1].at) && !is_last(&ends, utc, runs[0].at));
    assert_eq!(
        count_between(&ends, utc, 1_796_198_400, i64::MAX / 2, 100).0,
        2
    );
    for bad in [
        r#"{"kind":"once","run_at":5,"until":9}"#,
        r#"{"hour":9,"kind":"calendar","minute":0,"until":"x","weekdays":[]}"#,
        r#"{"count":0,"hour":9,"kind":"calendar","minute":0,"until":9,"weekdays":[]}"#,
    ] {
        assert!(
            Schedule::from_json(&serde_json::from_str(bad).unwrap()).is_err(),
            "{bad}"
        );
    }
}

/// `--spread` vectors: the inner occurrence is resolved first (DST rule
/// included), then the fixed offset is added to the instant.
#[test]
fn spread_moves_resolved_occurrences_by_the_offset() {
    let ny: Tz = "America/New_York".parse().unwrap();
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
    let daily = |hour, minute| Schedule::Spread {
        inner: Box::new(Schedule::Calendar {
            hour,
            minute,
            weekdays: vec![],
        }),
        spread: 900,
        offset: 420,
    };
    for (schedule, after, expected) in [
        // An ordinary day: 09:00 EST + 7 min.
        (daily(9, 0), "2026-12-02T00:00:00Z", "2026-12-02T14:07:00Z"),
        // Spring forward: 02:30 does not exist, shifted to 03:30 EDT, + 7 min.
        (daily(2, 30), "2026-03-08T05:00:00Z", "2026-03-08T07:37:00Z"),
        // Fall back: 01:30 runs once, at its first (EDT) instant, + 7 min.
        (daily(1, 30), "2026-11-01T04:00:00Z", "2026-11-01T05:37:00Z"),
        // The shift may cross midnight: 23:58 EST of Dec 1 + 7 min is 00:05 Dec 2.
        (
            daily(23, 58),
            "2026-12-02T00:00:00Z",
            "2026-12-02T05:05:00Z",
        ),
    ] {
        let occ = next_after(&schedule, ny, at(after)).unwrap();
        assert_eq!(occ.at, at(expected), "{schedule:?} after {after}");
    }
    // An occurrence whose shifted instant is still ahead is not skipped.
    let s = daily(9, 0);
    let due = at("2026-12-02T14:07:00Z");
    assert_eq!(next_after(&s, ny, due - 60).unwrap().at, due);
    assert_eq!(count_between(&s, ny, due - 60, due, 10), (1, Some(due)));
    assert_eq!(spread_offset(&[0xff; 32], 900), (u64::MAX % 900) as i64);
    let text = s.to_json().to_string();
    assert_eq!(
        text,
        r#"{"hour":9,"kind":"calendar","minute":0,"offset":420,"spread":900,"weekdays":[]}"#
    );
    assert_eq!(
        Schedule::from_json(&serde_json::from_str(&text).unwrap()).unwrap(),
        s
    );
    assert!(Schedule::from_json(
        &serde_json::from_str(r#"{"kind":"once","run_at":5,"spread":60,"offset":1}"#).unwrap()
    )
    .is_err());
}
