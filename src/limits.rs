//! What a run may spend, as the person confirms it with the schedule
//! (docs/CONTRACT.md §6): budgets per window, the gate before the executor,
//! whether missed occurrences catch up, and how long the task may go
//! without a success. Each is a payload field written only when set, so a
//! payload drafted before them keeps its bytes and its hash.
//!
//! A budget is written in the payload as the text a person types,
//! `usd=5/day`: the canonical payload holds integers only, and a limit may be
//! a fraction (`usd=2.5/day`); its one spelling is Rust's shortest
//! round-trip form of the number (`5`, `2.5`).

use crate::vocabulary::string_enum;

string_enum!(
    /// The window a budget counts in, in the task's zone: a calendar day,
    /// a week from Monday, a month from its first day.
    BudgetPeriod {
        Day = "day",
        Week = "week",
        Month = "month",
    }
);

string_enum!(
    /// What a tick does with occurrences it finds past their grace (cron
    /// stopped, the host slept): record them missed (`none`), or run the
    /// most recent of them once (`latest`).
    CatchUp {
        None = "none",
        Latest = "latest",
    }
);

/// The built-in key: runs started (triggers and retries included).
pub const RUNS_KEY: &str = "runs";
/// The most budgets a task, and usage keys a reply, may carry.
pub const BUDGETS_MAX: usize = 16;
/// The longest a usage or budget key may be.
pub const KEY_MAX_BYTES: usize = 32;
/// The longest gate command, in bytes.
pub const GATE_MAX_BYTES: usize = 4096;
/// How long a gate may run before it is stopped (and fails open).
pub const GATE_TIMEOUT_SECONDS: u64 = 30;
/// The shortest and longest `--expect-success`: a minute, a year.
pub const EXPECT_SUCCESS_MIN_SECONDS: i64 = 60;
pub const EXPECT_SUCCESS_MAX_SECONDS: i64 = 366 * 86400;

/// One budget: at most `limit` of `key` per `period`.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub key: String,
    pub limit: f64,
    pub period: BudgetPeriod,
}

impl Budget {
    /// Reads `KEY=N/PERIOD`, the spelling of `--budget` and of the payload.
    pub fn parse(text: &str) -> Result<Budget, String> {
        let form = || format!("'{text}' is not KEY=N/PERIOD (like usd=5/day or runs=2/day)");
        let (key, rest) = text.split_once('=').ok_or_else(form)?;
        let (number, period) = rest.split_once('/').ok_or_else(form)?;
        check_key(key)?;
        let period = BudgetPeriod::parse(period).ok_or_else(|| {
            format!(
                "budget period '{period}' is not one of {}",
                BudgetPeriod::spellings()
            )
        })?;
        let limit = number
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n > 0.0 && *n <= 1e15)
            .ok_or_else(|| format!("budget limit '{number}' must be a number above 0"))?;
        Ok(Budget {
            key: key.to_string(),
            limit,
            period,
        })
    }

    /// The one spelling: `usd=2.5/day`.
    pub fn spelling(&self) -> String {
        format!("{}={}/{}", self.key, self.limit, self.period)
    }

    /// In words, for `show`: "usd 2.5 a day".
    pub fn describe(&self) -> String {
        format!("{} {} a {}", self.key, self.limit, self.period)
    }
}

/// Budgets as the payload holds them: sorted by spelling, one per key and
/// period, at most `BUDGETS_MAX`.
pub fn budgets(texts: &[String]) -> Result<Vec<Budget>, String> {
    let mut list = texts
        .iter()
        .map(|t| Budget::parse(t.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    list.sort_by_key(Budget::spelling);
    if list.len() > BUDGETS_MAX {
        return Err(format!("at most {BUDGETS_MAX} budgets"));
    }
    if let Some(pair) = list
        .windows(2)
        .find(|w| w[0].key == w[1].key && w[0].period == w[1].period)
    {
        return Err(format!(
            "two budgets of '{}' per {}",
            pair[0].key, pair[0].period
        ));
    }
    Ok(list)
}

/// A usage or budget key: `[a-z0-9_]{1,32}`.
pub fn check_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= KEY_MAX_BYTES
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "budget key '{}' must be 1 to {KEY_MAX_BYTES} of a-z, 0-9 and _",
            crate::text::escape(key)
        )),
    }
}

/// A gate command as confirmed: non-empty, one line, at most
/// `GATE_MAX_BYTES`, and split into words as the tick will split it.
pub fn check_gate(command: &str) -> Result<(), String> {
    if command.trim().is_empty() {
        return Err("the gate command is empty".into());
    }
    if command.len() > GATE_MAX_BYTES {
        return Err(format!("the gate command is over {GATE_MAX_BYTES} bytes"));
    }
    if command.chars().any(char::is_control) {
        return Err("the gate command has a control character".into());
    }
    shell_words::split(command)
        .map(|_| ())
        .map_err(|e| format!("the gate command does not split into words: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_has_one_spelling() {
        for (given, spelled) in [
            ("usd=5/day", "usd=5/day"),
            ("usd=5.0/day", "usd=5/day"),
            ("usd=2.50/month", "usd=2.5/month"),
            ("runs=2/week", "runs=2/week"),
            ("tokens=1e6/day", "tokens=1000000/day"),
        ] {
            assert_eq!(Budget::parse(given).unwrap().spelling(), spelled);
            let again = Budget::parse(spelled).unwrap();
            assert_eq!(again.spelling(), spelled);
        }
    }

    #[test]
    fn a_bad_budget_says_what_is_wrong() {
        for (bad, says) in [
            ("usd", "KEY=N/PERIOD"),
            ("usd=5", "KEY=N/PERIOD"),
            ("USD=5/day", "a-z, 0-9"),
            ("=5/day", "a-z, 0-9"),
            ("usd=0/day", "above 0"),
            ("usd=-1/day", "above 0"),
            ("usd=inf/day", "above 0"),
            ("usd=NaN/day", "above 0"),
            ("usd=5/year", "day, week, month"),
        ] {
            let err = Budget::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let long = format!("{}=1/day", "k".repeat(33));
        assert!(Budget::parse(&long).is_err());
    }

    #[test]
    fn budgets_are_sorted_and_one_per_key_and_period() {
        let list = budgets(&[
            "usd=5/day".into(),
            "runs=2/day".into(),
            "usd=50/month".into(),
        ])
        .unwrap();
        let spelled: Vec<String> = list.iter().map(Budget::spelling).collect();
        assert_eq!(spelled, ["runs=2/day", "usd=5/day", "usd=50/month"]);
        let twice = budgets(&["usd=5/day".into(), "usd=6/day".into()]).unwrap_err();
        assert!(twice.contains("two budgets"), "{twice}");
        let many: Vec<String> = (0..17).map(|i| format!("k{i}=1/day")).collect();
        assert!(budgets(&many).is_err());
    }

    #[test]
    fn a_gate_is_one_line_of_words() {
        assert!(check_gate("/usr/bin/test -s /var/inbox").is_ok());
        assert!(check_gate("  ").is_err());
        assert!(check_gate("a\nb").is_err());
        assert!(check_gate("echo 'open").is_err());
    }
}
