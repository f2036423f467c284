//! Schedules in words, for the person confirming them.

use chrono_tz::Tz;

use super::Schedule;

const SHORT: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

pub fn describe(schedule: &Schedule, tz: Tz) -> String {
    match schedule {
        Schedule::Ends {
            inner,
            until,
            count,
        } => match count {
            Some(n) => format!(
                "{}, {n} time{} (the last at {})",
                describe(inner, tz),
                if *n == 1 { "" } else { "s" },
                super::format_wall(*until, tz)
            ),
            None => format!(
                "{}, until {}",
                describe(inner, tz),
                super::format_wall(*until, tz)
            ),
        },
        Schedule::Spread {
            inner,
            spread,
            offset,
        } => format!(
            "{}, each moved {} later (spread {})",
            describe(inner, tz),
            seconds_in_words(*offset),
            seconds_in_words(*spread)
        ),
        Schedule::Once { run_at } => format!("once at {}", super::format_wall(*run_at, tz)),
        Schedule::Interval { seconds, anchor_at } => format!(
            "every {} from {}",
            duration_words(*seconds),
            super::format_wall(*anchor_at, tz)
        ),
        Schedule::Calendar {
            hour,
            minute,
            weekdays,
        } => {
            let days = match weekdays.as_slice() {
                [] => "every day".to_string(),
                [0, 1, 2, 3, 4] => "every weekday (Mon–Fri)".to_string(),
                [5, 6] => "every weekend day (Sat, Sun)".to_string(),
                list => format!(
                    "on {}",
                    list.iter()
                        .map(|d| SHORT[*d as usize])
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!("{days} at {hour:02}:{minute:02}")
        }
        Schedule::Cron { expr } => match super::cron::CronExpr::parse(expr) {
            Ok(parsed) => format!("{} (cron \"{expr}\")", cron_words(&parsed)),
            Err(_) => format!("cron \"{expr}\""),
        },
    }
}

/// A cron expression in words, from what it allows rather than how it is
/// spelled: "*/15 9-17 * * 1-5" → "every 15 min, 09:00–17:59, Mon–Fri".
pub fn cron_words(cron: &super::cron::CronExpr) -> String {
    let minutes: Vec<u32> = cron.minutes().collect();
    let hours: Vec<u32> = cron.hours().collect();
    let all_hours = hours.len() == 24;
    let mut parts = Vec::new();
    let mut at_times = false;
    match (minutes.as_slice(), all_hours) {
        ([0], true) => parts.push("every hour".to_string()),
        ([m], true) => parts.push(format!("every hour at :{m:02}")),
        ([m], false) if hours.len() <= 4 => {
            let times: Vec<String> = hours.iter().map(|h| format!("{h:02}:{m:02}")).collect();
            parts.push(format!("at {}", times.join(", ")));
            at_times = true;
        }
        ([m], false) => {
            parts.push(format!("every hour at :{m:02}"));
            parts.push(hour_window(&hours));
        }
        (list, _) => {
            parts.push(minute_words(list));
            if !all_hours {
                parts.push(hour_window(&hours));
            }
        }
    }
    let dom = cron.restricted_days_of_month();
    let dow = cron.restricted_weekdays();
    let days = match (dom.is_empty(), dow.is_empty()) {
        (true, true) => None,
        (false, true) => Some(day_of_month_words(&dom)),
        (true, false) => Some(weekday_words(&dow)),
        // Vixie: when both are restricted, either one matching will do.
        (false, false) => Some(format!(
            "{} or {}",
            day_of_month_words(&dom),
            weekday_words(&dow)
        )),
    };
    match days {
        Some(days) => parts.push(days),
        None if at_times => parts.push("every day".to_string()),
        None => {}
    }
    let months = cron.restricted_months();
    if !months.is_empty() {
        const NAMES: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let names: Vec<&str> = months.iter().map(|m| NAMES[*m as usize - 1]).collect();
        parts.push(format!("in {}", names.join(", ")));
    }
    parts.join(", ")
}

fn minute_words(minutes: &[u32]) -> String {
    if minutes.len() == 60 {
        return "every minute".to_string();
    }
    // An even step from :00 that divides the hour: "every 15 min".
    if let [0, second, ..] = minutes {
        let step = *second;
        if 60 % step == 0
            && minutes
                .iter()
                .enumerate()
                .all(|(i, m)| *m == i as u32 * step)
            && minutes.len() as u32 == 60 / step
        {
            return format!("every {step} min");
        }
    }
    let list: Vec<String> = minutes.iter().map(|m| format!(":{m:02}")).collect();
    format!("at {} past the hour", list.join(", "))
}

/// "09:00–17:59" for a run of hours, else the hours listed.
fn hour_window(hours: &[u32]) -> String {
    let (first, last) = (hours[0], hours[hours.len() - 1]);
    if last - first + 1 == hours.len() as u32 {
        return format!("{first:02}:00–{last:02}:59");
    }
    let list: Vec<String> = hours.iter().map(|h| format!("{h:02}h")).collect();
    format!("hours {}", list.join(", "))
}

fn weekday_words(days: &[u32]) -> String {
    let (first, last) = (days[0], days[days.len() - 1]);
    if days.len() > 2 && last - first + 1 == days.len() as u32 {
        return format!("{}–{}", SHORT[first as usize], SHORT[last as usize]);
    }
    days.iter()
        .map(|d| SHORT[*d as usize])
        .collect::<Vec<_>>()
        .join(", ")
}

fn day_of_month_words(days: &[u32]) -> String {
    let list: Vec<String> = days.iter().map(u32::to_string).collect();
    let noun = if days.len() == 1 { "day" } else { "days" };
    format!("{noun} {} of the month", list.join(", "))
}

/// 5400 → "1h30m", 90 → "1m30s", 604800 → "1w".
pub fn duration_words(seconds: i64) -> String {
    let mut rest = seconds;
    let mut out = String::new();
    for (unit, size) in [
        ("w", 604_800),
        ("d", 86_400),
        ("h", 3_600),
        ("m", 60),
        ("s", 1),
    ] {
        if rest >= size {
            out.push_str(&format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// "7 min 12 s", "1 h", "45 s".
fn seconds_in_words(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    let mut parts = Vec::new();
    if h > 0 {
        parts.push(format!("{h} h"));
    }
    if m > 0 {
        parts.push(format!("{m} min"));
    }
    if s > 0 || parts.is_empty() {
        parts.push(format!("{s} s"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::cron::CronExpr;

    fn words(expr: &str) -> String {
        cron_words(&CronExpr::parse(expr).unwrap())
    }

    #[test]
    fn cron_expressions_read_as_words() {
        assert_eq!(
            words("*/15 9-17 * * 1-5"),
            "every 15 min, 09:00–17:59, Mon–Fri"
        );
        assert_eq!(words("0 9 * * *"), "at 09:00, every day");
        assert_eq!(words("30 8,18 * * sat,sun"), "at 08:30, 18:30, Sat, Sun");
        assert_eq!(words("0 * * * *"), "every hour");
        assert_eq!(words("@hourly"), "every hour");
        assert_eq!(
            words("5 */2 * * *"),
            "every hour at :05, hours 00h, 02h, 04h, 06h, 08h, 10h, 12h, 14h, 16h, 18h, 20h, 22h"
        );
        assert_eq!(words("* * * * *"), "every minute");
        assert_eq!(words("0,20,45 * * * *"), "at :00, :20, :45 past the hour");
        assert_eq!(words("0 0 1 * *"), "at 00:00, day 1 of the month");
        assert_eq!(
            words("0 0 1,15 * 0"),
            "at 00:00, days 1, 15 of the month or Sun"
        );
        assert_eq!(words("0 12 * jan,jul 7"), "at 12:00, Sun, in Jan, Jul");
        assert_eq!(
            words("*/10 * * * mon,wed,fri"),
            "every 10 min, Mon, Wed, Fri"
        );
    }
}
