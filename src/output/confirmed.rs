//! What a person confirms, described once (docs/CONTRACT.md §17): every
//! field of a payload in words, and a replacement's changes in words with
//! why a change must be read first. `show DRAFT` and the code message of
//! an agent's draft both render these, so neither can leave out a field
//! the other shows; their test walks every key a canonical payload holds.
//!
//! Agent-written text (instruction, gate, name, target) is quoted or
//! escaped here, and an instruction or gate whose words are not what they
//! look like gets a warning (`warnings`).

use serde_json::Value;

use crate::limits::{Budget, CatchUp};
use crate::payload::{changes, Change, Payload};
use crate::schedule::Tz;
use crate::text::{escape, human_duration, lookalikes, quoted};

/// One line of what a person confirms: its label, the payload keys it
/// shows, and its value in words.
pub struct Field {
    pub label: &'static str,
    pub keys: &'static [&'static str],
    pub value: String,
}

/// Every field of `payload` in the order a person reads them, each shown
/// set or not (a limit not set says so); the schedule in `zone`.
pub fn fields(payload: &Payload, zone: Tz) -> Vec<Field> {
    let field = |label, keys, value| Field { label, keys, value };
    vec![
        field(
            "drafted by",
            &["drafted_by"],
            payload
                .drafted_by
                .as_deref()
                .map(escape)
                .unwrap_or_else(|| "a person at a shell".into()),
        ),
        field(
            "schedule",
            &["schedule", "timezone", "follow_default"],
            schedule_words(payload, zone),
        ),
        field(
            "instruction",
            &["instruction"],
            quoted(&payload.instruction),
        ),
        field(
            "name",
            &["name"],
            payload.name.as_deref().map(escape).unwrap_or("-".into()),
        ),
        field("target", &["target"], escape(&payload.target)),
        field(
            "owners",
            &["owner_keys"],
            escape(&payload.owner_keys.join(", ")),
        ),
        field("tenant", &["tenant_key"], escape(&payload.tenant_key)),
        field("policy", &["policy"], payload.policy.to_string()),
        field(
            "grace",
            &["grace_seconds"],
            format!("{} s", payload.grace_seconds),
        ),
        field(
            "retries",
            &["max_retries", "retry_backoff_seconds"],
            format!(
                "{} (backoff {} s, doubling, max 1 h)",
                payload.max_retries, payload.retry_backoff_seconds
            ),
        ),
        field(
            "notices",
            &["notify", "realert_seconds", "pause_after"],
            payload.notice.describe(),
        ),
        field(
            "timeout",
            &["timeout_seconds"],
            match payload.timeout_seconds {
                Some(s) => format!("{} (the tick's --timeout caps it)", human_duration(s)),
                None => "none of its own (the tick's --timeout)".into(),
            },
        ),
        field(
            "profile",
            &["profile"],
            match &payload.profile {
                Some(bound) => bound.describe(),
                None => "none (the tick's --executor runs it)".into(),
            },
        ),
        field("budgets", &["budgets"], budget_words(&payload.budgets)),
        field(
            "gate",
            &["gate"],
            match &payload.gate {
                Some(gate) => format!("{} (exit 0 runs, 1 skips)", quoted(gate)),
                None => "none".into(),
            },
        ),
        field(
            "catch-up",
            &["catch_up"],
            match payload.catch_up {
                CatchUp::Latest => "latest (runs the most recent missed occurrence once)".into(),
                CatchUp::None => "none (missed occurrences are recorded missed)".into(),
            },
        ),
        field(
            "expect",
            &["expect_success_seconds"],
            match payload.expect_success_seconds {
                Some(s) => format!("a success within {}", human_duration(s)),
                None => "none (no overdue notice)".into(),
            },
        ),
    ]
}

/// The schedule in words with the zone it is read in: "(Asia/Shanghai)",
/// or for a following payload whom it follows and where they are now
/// (docs/CONTRACT.md §18).
pub fn schedule_words(payload: &Payload, zone: Tz) -> String {
    let summary = payload.schedule.describe(zone);
    match payload.follow_key() {
        Some(key) => format!("{summary}, follows {} (now {})", escape(key), zone.name()),
        None => format!("{summary} ({})", zone.name()),
    }
}

fn budget_words(budgets: &[Budget]) -> String {
    match budgets.is_empty() {
        true => "none".into(),
        false => budgets
            .iter()
            .map(Budget::describe)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// One `warning: …` line per agent-written field whose words are not what
/// they look like (`text::lookalikes`): the instruction, the gate, the
/// name, the target.
pub fn warnings(payload: &Payload) -> Vec<String> {
    let texts = [
        ("the instruction", Some(payload.instruction.as_str())),
        ("the gate", payload.gate.as_deref()),
        ("the name", payload.name.as_deref()),
        ("the target", Some(payload.target.as_str())),
    ];
    texts
        .into_iter()
        .filter_map(|(what, text)| {
            let said = lookalikes(text?)?;
            Some(match what {
                "the instruction" => format!("warning: {said}"),
                _ => format!("warning: {what}: {said}"),
            })
        })
        .collect()
}

/// A payload key in words: "timeout", "expected success within".
pub fn key_words(key: &str) -> Option<&'static str> {
    Some(match key {
        "budgets" => "budgets",
        "catch_up" => "catch-up",
        "drafted_by" => "drafted by",
        "expect_success_seconds" => "expected success within",
        "follow_default" => "zone while its owner has none",
        "gate" => "gate",
        "grace_seconds" => "grace",
        "instruction" => "instruction",
        "max_retries" => "retries",
        "name" => "name",
        "notify" => "notices",
        "owner_keys" => "owners",
        "pause_after" => "pause after failures",
        "policy" => "policy",
        "profile" => "profile",
        "realert_seconds" => "re-alert after",
        "retry_backoff_seconds" => "retry backoff",
        "schedule" => "schedule",
        "target" => "target",
        "tenant_key" => "tenant",
        "timeout_seconds" => "timeout",
        "timezone" => "zone",
        _ => return None,
    })
}

/// Why a change must be read before the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The task gets more power: it may write, run more, longer, or spend more.
    StepUp(&'static str),
    /// The person will be told less.
    Silenced(&'static str),
    /// Someone else is told or may act.
    Elsewhere(&'static str),
}

impl Why {
    /// "step-up: the executor may now write, …", as the person reads it.
    pub fn words(self) -> String {
        match self {
            Why::StepUp(why) => format!("step-up: {why}"),
            Why::Silenced(why) => format!("silenced: {why}"),
            Why::Elsewhere(why) => why.to_string(),
        }
    }
}

/// One change of a replacement as a person reads it.
pub struct Reviewed {
    pub change: Change,
    /// The field in words.
    pub label: String,
    pub why: Option<Why>,
}

/// The changes from `old` to `new` as a person reads them: step-ups first
/// (a policy's before all), then what silences, then what goes elsewhere,
/// then the rest, each group in key order.
pub fn review(old: &Payload, new: &Payload) -> Vec<Reviewed> {
    let mut all: Vec<Reviewed> = changes(old, new)
        .into_iter()
        .map(|change| Reviewed {
            label: key_words(&change.field)
                .map(String::from)
                .unwrap_or_else(|| escape(&change.field)),
            why: why(&change),
            change,
        })
        .collect();
    all.sort_by(|a, b| {
        let rank = |r: &Reviewed| match r.why {
            Some(Why::StepUp(_)) if r.change.field == "policy" => 0,
            Some(Why::StepUp(_)) => 1,
            Some(Why::Silenced(_)) => 2,
            Some(Why::Elsewhere(_)) => 3,
            None => 4,
        };
        (rank(a), &a.change.field).cmp(&(rank(b), &b.change.field))
    });
    all
}

/// Why a change gives the task more power or tells the person less, if it
/// does.
pub fn why(change: &Change) -> Option<Why> {
    let (old, new) = (&change.old, &change.new);
    let longer = |a: &Value, b: &Value| match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => b > a,
        (Some(_), None) => true,
        _ => false,
    };
    match change.field.as_str() {
        "policy" if new == "confirm_writes" => Some(Why::StepUp(
            "the executor may now write, asking before each write",
        )),
        "gate" => Some(Why::StepUp(match (old.is_null(), new.is_null()) {
            (true, _) => "a gate command will now run before each run",
            (false, true) => "its gate is gone: the executor runs every time",
            (false, false) => "its gate changed: the executor may run when it did not",
        })),
        "timeout_seconds" if longer(old, new) => Some(Why::StepUp("its runs may go on longer")),
        "budgets" if budget_raised(old, new) => Some(Why::StepUp(
            "a budget was raised or removed: its runs may spend more",
        )),
        "catch_up" if new == "latest" => Some(Why::StepUp("missed occurrences will run, late")),
        "notify" if loudness(new) < loudness(old) => {
            Some(Why::Silenced("fewer of its runs will be told to you"))
        }
        "expect_success_seconds" if new.is_null() => Some(Why::Silenced(
            "no overdue notice will tell you that its runs stopped succeeding",
        )),
        "expect_success_seconds" if longer(old, new) => {
            Some(Why::Silenced("an overdue notice comes later"))
        }
        "realert_seconds" if longer(old, new) => Some(Why::Silenced(
            "a repeated failure is told to you less often",
        )),
        "profile" => profile_why(old, new),
        "target" => Some(Why::Elsewhere("its notices will go somewhere else")),
        "owner_keys" => Some(Why::Elsewhere("other keys may act on it")),
        _ => None,
    }
}

/// A profile bound, unbound or rebound (docs/CONTRACT.md §22): a step-up
/// where it widens what runs — another command (the profile's for the
/// tick's executor, or back), user, folder, more passed variables, longer.
fn profile_why(old: &Value, new: &Value) -> Option<Why> {
    let read = |v: &Value| crate::profile::Bound::from_value(v).ok();
    match (read(old), read(new)) {
        (None, Some(_)) => Some(Why::StepUp(
            "its profile's command will run it, not the tick's executor",
        )),
        (Some(_), None) => Some(Why::StepUp(
            "the tick's executor will run it, not its profile's command",
        )),
        (Some(old), Some(new)) => new.definition.widening(&old.definition).map(Why::StepUp),
        (None, None) => None,
    }
}

/// From the loudest notice mode to the quietest; an absent mode is every
/// run (`always`), as a payload without one behaves.
fn loudness(mode: &Value) -> u8 {
    match mode.as_str().unwrap_or("always") {
        "always" => 3,
        "attention" => 2,
        "failures" => 1,
        _ => 0,
    }
}

/// Whether any budget of `old` is gone from `new`, or has a higher limit
/// there (per key and window): a budget added or lowered spends less.
fn budget_raised(old: &Value, new: &Value) -> bool {
    let parse = |v: &Value| -> Vec<Budget> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| Budget::parse(b.as_str()?).ok())
            .collect()
    };
    let (old, new) = (parse(old), parse(new));
    old.iter().any(|o| {
        !new.iter()
            .any(|n| n.key == o.key && n.period == o.period && n.limit <= o.limit)
    })
}

/// A changed value as a person reads it: durations in words, a gate or an
/// instruction quoted (the instruction to its first `instruction_chars`
/// characters, then "…"), budgets in words, an unset limit as "none".
pub fn value_words(
    field: &str,
    payload: &Payload,
    value: &Value,
    instruction_chars: usize,
) -> String {
    match (field, value) {
        ("instruction", Value::String(text)) => {
            let head = crate::text::head(text, instruction_chars);
            match head.len() < text.len() {
                true => format!("{}…", quoted(head)),
                false => quoted(head),
            }
        }
        ("gate", Value::String(gate)) => quoted(gate),
        ("budgets", Value::Array(list)) => list
            .iter()
            .filter_map(|b| Budget::parse(b.as_str()?).ok())
            .map(|b| b.describe())
            .collect::<Vec<_>>()
            .join(", "),
        (
            "budgets" | "gate" | "timeout_seconds" | "expect_success_seconds" | "pause_after",
            Value::Null,
        ) => "none".into(),
        ("catch_up", Value::Null) => "none".into(),
        ("profile", Value::Null) => "none (the tick's --executor)".into(),
        ("profile", value) => crate::profile::Bound::from_value(value)
            .map(|b| b.describe())
            .unwrap_or_else(|e| escape(&e.to_string())),
        ("notify", Value::Null) => "always (not set)".into(),
        (f, Value::Number(n)) if f.ends_with("_seconds") => {
            human_duration(n.as_i64().unwrap_or_default())
        }
        _ => crate::output::human::in_words(field, payload, value),
    }
}

/// A replacement's changes in words, one line each: "policy: read_only →
/// confirm_writes  [step-up: …]"; an instruction quoted to its first
/// `instruction_chars` characters.
pub fn change_lines(old: &Payload, new: &Payload, instruction_chars: usize) -> Vec<String> {
    review(old, new)
        .into_iter()
        .map(|r| {
            let c = &r.change;
            let why = r
                .why
                .map(|w| format!("  [{}]", w.words()))
                .unwrap_or_default();
            format!(
                "{}: {} → {}{why}",
                r.label,
                value_words(&c.field, old, &c.old, instruction_chars),
                value_words(&c.field, new, &c.new, instruction_chars)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::budgets;
    use crate::model::{NotifyMode, Policy};
    use crate::payload::tests::sample;

    /// (label, why in words) of each change from `old` to `new`, in order.
    fn reviewed(old: &Payload, new: &Payload) -> Vec<(String, Option<String>)> {
        review(old, new)
            .into_iter()
            .map(|r| (r.label, r.why.map(Why::words)))
            .collect()
    }

    #[test]
    fn step_ups_come_first_a_policy_before_all_then_what_silences() {
        let old = sample();
        let mut new = sample();
        new.max_retries = 100;
        new.policy = Policy::ConfirmWrites;
        new.notice.notify = Some(NotifyMode::Never);
        new.gate = Some("true".into());
        let labels: Vec<String> = reviewed(&old, &new).into_iter().map(|r| r.0).collect();
        assert_eq!(labels, ["policy", "gate", "notices", "retries"]);
        new.notice.notify = Some(NotifyMode::Always);
        new.policy = Policy::ReadOnly;
        new.gate = None;
        assert!(reviewed(&old, &new).iter().all(|(_, why)| why.is_none()));
    }

    #[test]
    fn a_gate_added_changed_or_removed_is_a_step_up() {
        let old = sample();
        let gated = Payload {
            gate: Some("test -s /in".into()),
            ..sample()
        };
        let regated = Payload {
            gate: Some("true".into()),
            ..sample()
        };
        for (a, b) in [(&old, &gated), (&gated, &regated), (&gated, &old)] {
            let changes = reviewed(a, b);
            assert_eq!(changes[0].0, "gate");
            assert!(changes[0].1.as_deref().unwrap().starts_with("step-up: "));
        }
    }

    #[test]
    fn a_longer_timeout_and_a_budget_raised_or_removed_are_step_ups_not_their_opposites() {
        let limited = |timeout, list: &[&str]| Payload {
            timeout_seconds: timeout,
            budgets: budgets(&list.iter().map(|b| b.to_string()).collect::<Vec<_>>()).unwrap(),
            ..sample()
        };
        let base = limited(Some(60), &["usd=5/day", "runs=2/day"]);
        let step_up = |new: &Payload| {
            reviewed(&base, new)
                .iter()
                .any(|(_, why)| why.as_deref().is_some_and(|w| w.starts_with("step-up")))
        };
        assert!(step_up(&limited(Some(120), &["usd=5/day", "runs=2/day"])));
        assert!(step_up(&limited(None, &["usd=5/day", "runs=2/day"])));
        assert!(step_up(&limited(Some(60), &["usd=6/day", "runs=2/day"])));
        assert!(step_up(&limited(Some(60), &["runs=2/day"])));
        assert!(step_up(&limited(Some(60), &[])));
        // Tighter: a shorter timeout, a budget lowered or added.
        assert!(!step_up(&limited(Some(30), &["usd=5/day", "runs=2/day"])));
        assert!(!step_up(&limited(Some(60), &["usd=4/day", "runs=1/day"])));
        assert!(!step_up(&limited(
            Some(60),
            &["usd=5/day", "runs=2/day", "tokens=9/day"]
        )));
    }

    #[test]
    fn expect_success_or_notices_removed_is_silenced_and_fields_are_named_in_words() {
        let old = Payload {
            expect_success_seconds: Some(86400),
            timeout_seconds: Some(60),
            ..sample()
        };
        let mut new = Payload {
            expect_success_seconds: None,
            timeout_seconds: Some(600),
            ..sample()
        };
        new.notice.notify = Some(NotifyMode::Failures);
        let lines = change_lines(&old, &new, 500);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(
            lines[0],
            "timeout: 1 min → 10 min  [step-up: its runs may go on longer]"
        );
        assert!(
            lines[1].starts_with("expected success within: 24 h → none  [silenced: "),
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("notices: always (not set) → failures  [silenced: "),
            "{lines:?}"
        );
        assert!(lines.iter().all(|l| !l.contains("_seconds")), "{lines:?}");
    }

    #[test]
    fn a_warning_names_the_field_whose_words_are_not_what_they_look_like() {
        let p = Payload {
            instruction: "mark it \u{430}pprov\u{435}d".into(),
            gate: Some("t\u{435}st -s /in".into()),
            ..sample()
        };
        let said = warnings(&p);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("warning: \"аpprovеd\" mixes Latin and Cyrillic"));
        assert!(said[1].starts_with("warning: the gate: \"tеst\" mixes"));
        assert!(warnings(&sample()).is_empty());
    }
}
