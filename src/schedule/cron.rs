//! Five-field cron expressions with Vixie semantics: `*`, lists, ranges,
//! steps, month and day names, 7 = Sunday, and day-of-month OR day-of-week
//! when both are restricted. Also the Vixie macros @hourly … @yearly.

use chrono::{Datelike, NaiveDate};

use super::ScheduleError;

/// A parsed expression: one bit per allowed value of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    minutes: u64,
    hours: u32,
    days_of_month: u32,
    months: u16,
    days_of_week: u8,
    dom_star: bool,
    dow_star: bool,
    /// Minute or hour written with `*`: the job follows real time across
    /// DST (Vixie's rule), instead of the shift/first-instant rule.
    pub frequent: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn error(message: String) -> ScheduleError {
    ScheduleError {
        message,
        hint: Some("cron takes five fields: minute hour day-of-month month day-of-week, e.g. \"*/15 9-17 * * 1-5\"".into()),
    }
}

impl CronExpr {
    pub fn parse(text: &str) -> Result<CronExpr, ScheduleError> {
        let trimmed = text.trim();
        let expanded = match trimmed.to_ascii_lowercase().as_str() {
            "@hourly" => "0 * * * *".to_string(),
            "@daily" | "@midnight" => "0 0 * * *".to_string(),
            "@weekly" => "0 0 * * 0".to_string(),
            "@monthly" => "0 0 1 * *".to_string(),
            "@yearly" | "@annually" => "0 0 1 1 *".to_string(),
            other if other.starts_with('@') => {
                return Err(error(format!("unknown cron macro '{trimmed}'")));
            }
            _ => trimmed.to_string(),
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(error(format!(
                "cron expression has {} fields, expected 5",
                fields.len()
            )));
        }
        let minutes = field(fields[0], "minute", 0, 59, None)?;
        let hours = field(fields[1], "hour", 0, 23, None)?;
        let dom = field(fields[2], "day-of-month", 1, 31, None)?;
        let months = field(fields[3], "month", 1, 12, Some(&MONTHS))?;
        let mut dow = field(fields[4], "day-of-week", 0, 7, Some(&DAYS))?;
        if dow & (1 << 7) != 0 {
            dow = (dow | 1) & !(1 << 7); // 7 is Sunday too
        }
        Ok(CronExpr {
            minutes,
            hours: hours as u32,
            days_of_month: dom as u32,
            months: months as u16,
            days_of_week: dow as u8,
            dom_star: fields[2].starts_with('*'),
            dow_star: fields[4].starts_with('*'),
            frequent: fields[0].starts_with('*') || fields[1].starts_with('*'),
        })
    }

    /// The allowed days of the month (1–31), empty when the field is `*`-led.
    pub fn restricted_days_of_month(&self) -> Vec<u32> {
        if self.dom_star {
            return Vec::new();
        }
        (1..=31)
            .filter(|d| self.days_of_month & (1 << d) != 0)
            .collect()
    }

    /// The allowed weekdays, Monday=0 … Sunday=6, empty when the field is `*`-led.
    pub fn restricted_weekdays(&self) -> Vec<u32> {
        if self.dow_star {
            return Vec::new();
        }
        // Stored Sunday=0 as cron numbers them.
        (0..7)
            .filter(|d| self.days_of_week & (1 << ((d + 1) % 7)) != 0)
            .collect()
    }

    /// The allowed months (1–12), empty when every month is.
    pub fn restricted_months(&self) -> Vec<u32> {
        let months: Vec<u32> = (1..=12).filter(|m| self.month_matches(*m)).collect();
        if months.len() == 12 {
            Vec::new()
        } else {
            months
        }
    }

    pub fn month_matches(&self, month: u32) -> bool {
        self.months & (1 << month) != 0
    }

    /// Vixie: if either day field is `*`-led both must match, else either.
    pub fn day_matches(&self, date: NaiveDate) -> bool {
        if !self.month_matches(date.month()) {
            return false;
        }
        let dom = self.days_of_month & (1 << date.day()) != 0;
        let dow = self.days_of_week & (1 << date.weekday().num_days_from_sunday()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    pub fn hours(&self) -> impl Iterator<Item = u32> + '_ {
        (0..24).filter(|h| self.hours & (1 << h) != 0)
    }

    pub fn minutes(&self) -> impl Iterator<Item = u32> + '_ {
        (0..60).filter(|m| self.minutes & (1 << m) != 0)
    }

    /// Whether any day can ever match (a cheap check before scanning years).
    pub fn can_match(&self) -> bool {
        // Day 31 exists only in 31-day months, 30 not in February, 29 in
        // February of leap years; a day-of-week alone always matches.
        const LONG: [u32; 7] = [1, 3, 5, 7, 8, 10, 12];
        (1..=12).filter(|m| self.month_matches(*m)).any(|m| {
            let max = if LONG.contains(&m) {
                31
            } else if m == 2 {
                29
            } else {
                30
            };
            let dom_any = (1..=max).any(|d| self.days_of_month & (1 << d) != 0);
            if self.dom_star || self.dow_star {
                dom_any && self.days_of_week != 0
            } else {
                dom_any || self.days_of_week != 0
            }
        })
    }
}

/// One field: a comma list of `*`, `N`, `A-B`, each optionally `/STEP`.
fn field(
    text: &str,
    name: &str,
    min: u32,
    max: u32,
    names: Option<&[&str]>,
) -> Result<u64, ScheduleError> {
    let mut bits = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| error(format!("bad step '{step}' in the {name} field")))?;
                if step == 0 || step > max {
                    return Err(error(format!(
                        "step {step} is out of range in the {name} field"
                    )));
                }
                (range, step)
            }
            None => (item, 1),
        };
        let (low, high) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (
                value(a, name, min, max, names)?,
                value(b, name, min, max, names)?,
            )
        } else {
            let v = value(range, name, min, max, names)?;
            // `5/10` means 5 to the maximum in steps of 10.
            (
                v,
                if step > 1 || item.contains('/') {
                    max
                } else {
                    v
                },
            )
        };
        if low > high {
            return Err(error(format!(
                "range {range} is reversed in the {name} field"
            )));
        }
        let mut v = low;
        while v <= high {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok(bits)
}

fn value(
    text: &str,
    name: &str,
    min: u32,
    max: u32,
    names: Option<&[&str]>,
) -> Result<u32, ScheduleError> {
    if let Some(names) = names {
        let lower = text.to_ascii_lowercase();
        if let Some(index) = names.iter().position(|n| *n == lower) {
            // Months are 1-based, days 0-based (Sunday = 0).
            return Ok(index as u32 + u32::from(names.len() == 12));
        }
    }
    let v: u32 = text
        .parse()
        .map_err(|_| error(format!("'{text}' is not a valid {name}")))?;
    if v < min || v > max {
        return Err(error(format!("{name} {v} is out of range {min}-{max}")));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn parses_lists_ranges_steps_and_names() {
        let c = CronExpr::parse("*/15 9-17 * jan-mar mon-fri").unwrap();
        assert_eq!(c.minutes().collect::<Vec<_>>(), [0, 15, 30, 45]);
        assert_eq!(c.hours().count(), 9);
        assert!(c.frequent);
        assert!(c.day_matches(date(2026, 1, 5))); // Monday
        assert!(!c.day_matches(date(2026, 1, 4))); // Sunday
        assert!(!c.day_matches(date(2026, 4, 6))); // April
        let c = CronExpr::parse("5/20 1,3 * * *").unwrap();
        assert_eq!(c.minutes().collect::<Vec<_>>(), [5, 25, 45]);
        assert!(!c.frequent);
    }

    #[test]
    fn seven_is_sunday_and_restricted_day_fields_or_together() {
        let c = CronExpr::parse("0 0 * * 7").unwrap();
        assert!(c.day_matches(date(2026, 12, 6)));
        // The 1st and 15th, or any Monday.
        let c = CronExpr::parse("0 0 1,15 * mon").unwrap();
        assert!(c.day_matches(date(2026, 12, 1))); // Tuesday the 1st
        assert!(c.day_matches(date(2026, 12, 7))); // Monday
        assert!(!c.day_matches(date(2026, 12, 8)));
        // A `*`-led day field makes both required (Vixie's DOM_STAR rule).
        let c = CronExpr::parse("0 0 */2 * mon").unwrap();
        assert!(!c.day_matches(date(2026, 12, 1)));
        assert!(c.day_matches(date(2026, 12, 7)));
    }

    #[test]
    fn rejects_malformed_expressions() {
        for bad in [
            "",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "5-1 * * * *",
            "*/0 * * * *",
            "a * * * *",
            "1-2-3 * * * *",
            "@often",
            "*/x * * * *",
        ] {
            assert!(CronExpr::parse(bad).is_err(), "{bad}");
        }
        assert!(CronExpr::parse("@daily").is_ok());
        assert!(!CronExpr::parse("0 0 30 2 *").unwrap().can_match());
        assert!(CronExpr::parse("0 0 29 2 *").unwrap().can_match());
        assert!(CronExpr::parse("0 0 30 2 mon").unwrap().can_match());
    }
}
