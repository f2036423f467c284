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

pub mod budget;
pub mod gate;
pub mod overdue;
pub mod window;

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

/// The largest usage amount a reply may report: beyond it a number is a
/// mistake (or a float's noise), never spending.
pub const USAGE_MAX: f64 = 1e15;

/// What an executor's reply says its run spent (docs/CONTRACT.md §5):
/// `"usage": {"KEY": number, …}`, each kept key checked. Kept as the reply
/// gave them, in key order.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub amounts: Vec<(String, f64)>,
}

/// Compared bit for bit, so that results holding usage stay `Eq`.
impl PartialEq for Usage {
    fn eq(&self, other: &Usage) -> bool {
        self.amounts.len() == other.amounts.len()
            && self
                .amounts
                .iter()
                .zip(&other.amounts)
                .all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits())
    }
}
impl Eq for Usage {}

impl Usage {
    pub fn is_empty(&self) -> bool {
        self.amounts.is_empty()
    }

    /// Reads a reply's `usage`: the entries of a non-negative finite
    /// number up to `USAGE_MAX` under a key of `check_key` are kept; any
    /// other entry (and the built-in key `runs`) is ignored, and all of it
    /// when it is not an object or has over `BUDGETS_MAX` keys. The second
    /// value says what was ignored, for the run's summary.
    pub fn read(value: &serde_json::Value) -> (Usage, Option<String>) {
        let Some(object) = value.as_object() else {
            return (
                Usage::default(),
                Some("usage ignored: it is not an object".into()),
            );
        };
        if object.len() > BUDGETS_MAX {
            let why = format!("usage ignored: more than {BUDGETS_MAX} keys");
            return (Usage::default(), Some(why));
        }
        let mut amounts = Vec::with_capacity(object.len());
        let mut ignored = Vec::new();
        for (key, amount) in object {
            match entry(key, amount) {
                Ok(number) => amounts.push((key.clone(), number)),
                Err(why) => ignored.push(why),
            }
        }
        amounts.sort_by(|a, b| a.0.cmp(&b.0));
        let note = (!ignored.is_empty()).then(|| format!("usage ignored: {}", ignored.join("; ")));
        (Usage { amounts }, note)
    }

    /// Reads `reconcile --usage KEY=N` (repeatable): each amount checked as
    /// a reply's usage entry is, each key given once.
    pub fn from_flags(texts: &[String]) -> Result<Usage, String> {
        let mut amounts: Vec<(String, f64)> = Vec::with_capacity(texts.len());
        for text in texts {
            let (key, number) = text.split_once('=').ok_or_else(|| {
                format!(
                    "--usage '{}' is not KEY=N (like usd=0.08)",
                    crate::text::escape(text)
                )
            })?;
            // As JSON where it is a JSON number, so it is shown as typed.
            let json = serde_json::from_str::<serde_json::Value>(number.trim()).ok();
            let value = match number.trim().parse::<f64>() {
                Ok(_) if json.as_ref().is_some_and(serde_json::Value::is_number) => {
                    json.unwrap_or_default()
                }
                Ok(n) if n.is_finite() => serde_json::json!(n),
                Ok(n) if !n.is_nan() => serde_json::json!(format!("{OUT_OF_RANGE}{number}")),
                _ => serde_json::json!(number),
            };
            let amount = entry(key, &value).map_err(|why| format!("--usage: {why}"))?;
            if amounts.iter().any(|(k, _)| k == key) {
                return Err(format!("--usage {key} is given twice"));
            }
            amounts.push((key.to_string(), amount));
        }
        amounts.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Usage { amounts })
    }

    /// In words: `tokens=1200 usd=0.6`.
    pub fn words(&self) -> String {
        let pairs: Vec<String> = self
            .amounts
            .iter()
            .map(|(k, v)| format!("{k}={}", amount_words(*v)))
            .collect();
        pairs.join(" ")
    }

    /// As stored on the run and shown in its JSON: `{"usd": 0.6}`.
    pub fn to_json(&self) -> serde_json::Value {
        let map = self
            .amounts
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!(decimal(*v))))
            .collect();
        serde_json::Value::Object(map)
    }

    /// This usage added to one stored as JSON (a run that parked and
    /// continued reports twice).
    pub fn added_to(&self, stored: Option<&str>) -> Usage {
        let mut amounts: Vec<(String, f64)> = stored
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
            .and_then(|v| v.as_object().cloned())
            .map(|m| {
                m.into_iter()
                    .filter_map(|(k, v)| Some((k, v.as_f64()?)))
                    .collect()
            })
            .unwrap_or_default();
        for (key, amount) in &self.amounts {
            match amounts.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 += amount,
                None => amounts.push((key.clone(), *amount)),
            }
        }
        amounts.sort_by(|a, b| a.0.cmp(&b.0));
        Usage { amounts }
    }
}

/// An amount as a person wrote it: the sum of 0.1 and 0.1 and 0.1 is
/// 0.3, not 0.30000000000000004. Rounded to nine decimals (finer than any
/// currency or token count), so that JSON and metrics print the shortest
/// decimal that stands for it.
pub fn decimal(amount: f64) -> f64 {
    if !amount.is_finite() {
        return amount;
    }
    format!("{amount:.9}").parse().unwrap_or(amount)
}

/// An amount for people: at most six decimals, no trailing zeros
/// (`1.2`, not `1.2000000000000002`).
pub fn amount_words(amount: f64) -> String {
    let text = format!("{amount:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" => "0".to_string(),
        other => other.to_string(),
    }
}

/// One entry of a reply's `usage`: its amount, or why it is ignored.
fn entry(key: &str, amount: &serde_json::Value) -> Result<f64, String> {
    let shown = crate::text::clip(&crate::text::escape(key), 40);
    if check_key(key).is_err() {
        return Err(format!("'{shown}' is not a key of a-z, 0-9 and _"));
    }
    if key == RUNS_KEY {
        return Err(format!("'{RUNS_KEY}' is counted by agentcron"));
    }
    // A number too large for a float, which JSON cannot hold as one, comes
    // marked as a string (`executor_result` reads the reply leniently).
    if let Some(text) = amount.as_str().and_then(|s| s.strip_prefix(OUT_OF_RANGE)) {
        let text = crate::text::clip(text, 40);
        return Err(if text.starts_with('-') {
            format!("{shown} {text} is negative")
        } else {
            format!("{shown} {text} is over the limit of {USAGE_MAX:e}")
        });
    }
    let Some(number) = amount.as_f64() else {
        let given = crate::text::clip(&crate::text::escape(&amount.to_string()), 40);
        return Err(format!("{shown} {given} is not a number"));
    };
    // Large numbers as they are usually written (`1e16`, not `1e+16`).
    let written = if number.abs() < USAGE_MAX {
        amount.to_string()
    } else {
        format!("{number:e}")
    };
    if number < 0.0 {
        return Err(format!("{shown} {written} is negative"));
    }
    if number > USAGE_MAX {
        return Err(format!(
            "{shown} {written} is over the limit of {USAGE_MAX:e}"
        ));
    }
    Ok(number)
}

/// What marks, in a reply read leniently, a number JSON could not hold
/// (`1e400`): a string of this prefix and the number as written.
pub const OUT_OF_RANGE: &str = "\u{FFFF}number:";

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
    fn usage_keeps_finite_non_negative_numbers_or_nothing() {
        use serde_json::json;
        let (usage, note) = Usage::read(&json!({"usd": 0.6, "tokens": 1200}));
        assert_eq!(note, None);
        assert_eq!(
            usage.amounts,
            [("tokens".to_string(), 1200.0), ("usd".to_string(), 0.6)]
        );
        for (bad, says) in [
            (json!({"usd": -1}), "usd -1 is negative"),
            (json!({"usd": 1e300}), "usd 1e300 is over the limit of 1e15"),
            (json!({"usd": "0.5"}), "usd \"0.5\" is not a number"),
            (json!({"usd": "NaN"}), "usd \"NaN\" is not a number"),
            (json!({"usd": null}), "usd null is not a number"),
            (
                json!({"usd": format!("{OUT_OF_RANGE}1e400")}),
                "usd 1e400 is over the limit of 1e15",
            ),
            (
                json!({"usd": format!("{OUT_OF_RANGE}-1e400")}),
                "usd -1e400 is negative",
            ),
            (json!({"USD": 1}), "'USD' is not a key"),
            (json!({"runs": 1}), "'runs' is counted by agentcron"),
            (json!([1, 2]), "not an object"),
        ] {
            let (usage, note) = Usage::read(&bad);
            assert!(usage.is_empty(), "{bad}");
            let note = note.unwrap();
            assert!(
                note.starts_with("usage ignored: ") && note.contains(says),
                "{note}"
            );
        }
        // The good entries of a reply are kept beside the bad ones.
        let (usage, note) = Usage::read(&json!({"usd": 0.5, "tokens": -1, "Bad": 2}));
        assert_eq!(usage.amounts, [("usd".to_string(), 0.5)]);
        let note = note.unwrap();
        assert!(
            note.contains("tokens -1") && note.contains("'Bad'"),
            "{note}"
        );
        let many: serde_json::Map<String, serde_json::Value> =
            (0..17).map(|i| (format!("k{i}"), json!(1))).collect();
        assert!(Usage::read(&serde_json::Value::Object(many)).1.is_some());
        let flags = |list: &[&str]| {
            Usage::from_flags(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let given = flags(&["usd=0.08", "tokens=1200"]).unwrap();
        assert_eq!(given.words(), "tokens=1200 usd=0.08");
        for (bad, says) in [
            (&["usd"][..], "is not KEY=N"),
            (&["usd=-1"], "usd -1 is negative"),
            (&["usd=1e400"], "usd 1e400 is over the limit of 1e15"),
            (&["usd=NaN"], "usd \"NaN\" is not a number"),
            (&["runs=1"], "counted by agentcron"),
            (&["usd=1", "usd=2"], "--usage usd is given twice"),
        ] {
            let err = flags(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let added = Usage::read(&json!({"usd": 0.5}))
            .0
            .added_to(Some(r#"{"usd":0.25,"tok":3}"#));
        assert_eq!(added.to_json(), json!({"tok": 3.0, "usd": 0.75}));
    }

    #[test]
    fn a_gate_is_one_line_of_words() {
        assert!(check_gate("/usr/bin/test -s /var/inbox").is_ok());
        assert!(check_gate("  ").is_err());
        assert!(check_gate("a\nb").is_err());
        assert!(check_gate("echo 'open").is_err());
    }

    #[test]
    fn amounts_print_as_decimals_without_float_noise() {
        let sum = 0.1 + 0.1 + 0.1;
        assert_eq!(serde_json::json!(decimal(sum)).to_string(), "0.3");
        assert_eq!(serde_json::json!(decimal(1.0 - 0.8)).to_string(), "0.2");
        assert_eq!(amount_words(1.0 - 0.8), "0.2");
        assert_eq!(decimal(1e15), 1e15);
        assert_eq!(decimal(0.000_000_001), 0.000_000_001);
        let added = Usage::read(&serde_json::json!({"usd": 0.1}))
            .0
            .added_to(Some(r#"{"usd":0.2}"#));
        assert_eq!(added.to_json().to_string(), r#"{"usd":0.3}"#);
    }
}
