//! Schedules in words, for the person confirming them.

use chrono_tz::Tz;

use super::Schedule;

const SHORT: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

pub fn describe(schedule: &Schedule, tz: Tz) -> String {
    match schedule {
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
        Schedule::Cron { expr } => format!("cron \"{expr}\""),
    }
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
