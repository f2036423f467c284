//! The canonical payload a person confirms, and its SHA-256 (docs/CONTRACT.md §3).
//!
//! Canonical means: keys sorted, `,` and `:` separators with no other
//! whitespace, non-ASCII written as UTF-8, integers for every number. serde_json
//! without `preserve_order` keeps object keys in a BTreeMap (byte order, which
//! for UTF-8 is code point order), and its compact writer emits exactly those
//! separators, so `to_string` of a `Value` is already canonical.

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};

pub use crate::digest::hash_hex;
use crate::limits::{self, Budget, CatchUp};
use crate::schedule::{self, Schedule, Tz};
use crate::vocabulary::string_enum;

/// Everything a confirmed task is made of; hashing it fixes what will run.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    /// At most this much per window (docs/CONTRACT.md §6), sorted by
    /// spelling; written only when there is one.
    pub budgets: Vec<Budget>,
    /// Whether missed occurrences catch up; written only when `latest`.
    pub catch_up: CatchUp,
    /// `agent:<client name>` when an agent drafted it through `agentcron mcp`
    /// (docs/CONTRACT.md §17); absent from the canonical text otherwise, so a
    /// draft made at a shell hashes as it always did.
    pub drafted_by: Option<String>,
    /// A notice of kind `overdue` when no run succeeded within this long of
    /// the last success (or of the confirmation); written only when set.
    pub expect_success_seconds: Option<i64>,
    /// The command run before the executor, deciding whether it runs;
    /// written only when set.
    pub gate: Option<String>,
    pub grace_seconds: i64,
    pub instruction: String,
    pub max_retries: i64,
    pub name: Option<String>,
    /// `notify`, `realert_seconds`, `pause_after`: each written only when set.
    pub notice: NoticePolicy,
    /// Sorted and deduplicated.
    pub owner_keys: Vec<String>,
    pub policy: Policy,
    /// The profile that runs the task (docs/CONTRACT.md §22): its name,
    /// definition and hash as confirmed; written only when set, so a
    /// payload without one keeps its hash and runs the tick's executor.
    pub profile: Option<Box<crate::profile::Bound>>,
    pub retry_backoff_seconds: i64,
    pub schedule: Schedule,
    pub target: String,
    pub tenant_key: String,
    /// The run's own wall-clock limit, 1 s to `TIMEOUT_SECONDS_MAX`
    /// (docs/CONTRACT.md §6); the tick's `--timeout` stays the upper bound.
    /// Absent from the canonical text when unset, so older payloads keep
    /// their hashes.
    pub timeout_seconds: Option<i64>,
    /// The zone the schedule is read in, fixed or following its owner.
    pub zone: Zone,
}

/// The longest a task's own timeout may be: 24 h.
pub const TIMEOUT_SECONDS_MAX: i64 = 86400;

/// The zone a payload's schedule is read in, as confirmed: one zone, or
/// (`"timezone":"follow"`) its first owner key's current zone
/// (docs/CONTRACT.md §18), `fallback` while that key has none. The zone a
/// following task is read in now is the task's own `zone_in_force`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Fixed(Tz),
    Follows { fallback: Tz },
}

impl Zone {
    pub fn follows(self) -> bool {
        matches!(self, Zone::Follows { .. })
    }

    /// The zone the payload names: the fixed zone, or the fallback.
    pub fn named(self) -> Tz {
        match self {
            Zone::Fixed(zone) | Zone::Follows { fallback: zone } => zone,
        }
    }

    /// A following payload's fallback (its `follow_default`).
    pub fn fallback(self) -> Option<Tz> {
        match self {
            Zone::Fixed(_) => None,
            Zone::Follows { fallback } => Some(fallback),
        }
    }

    /// The zone in force given the followed key's current zone, if any.
    pub fn in_force(self, owner_zone: Option<Tz>) -> Tz {
        match self {
            Zone::Fixed(zone) => zone,
            Zone::Follows { fallback } => owner_zone.unwrap_or(fallback),
        }
    }
}

string_enum!(
    /// What the executor may do, passed to it verbatim.
    Policy {
        ReadOnly = "read_only",
        ConfirmWrites = "confirm_writes",
    }
);

string_enum!(
    /// A task's notice policy (docs/CONTRACT.md §16): which settled runs are
    /// worth telling a person about.
    NotifyMode {
        Always = "always",
        Attention = "attention",
        Failures = "failures",
        Never = "never",
    }
);

/// A task's notice settings as confirmed (docs/CONTRACT.md §16). Each is
/// absent from payloads drafted before the policy existed, so their hashes
/// still hold: an absent mode is `always`, today's behaviour then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoticePolicy {
    pub notify: Option<NotifyMode>,
    pub realert_seconds: Option<i64>,
    pub pause_after: Option<i64>,
}

impl NoticePolicy {
    /// The re-alert window when the payload names none.
    pub const DEFAULT_REALERT_SECONDS: i64 = 3600;

    /// What a new draft gets when its flags say nothing.
    pub fn for_new_draft() -> NoticePolicy {
        NoticePolicy {
            notify: Some(NotifyMode::Attention),
            realert_seconds: Some(Self::DEFAULT_REALERT_SECONDS),
            pause_after: None,
        }
    }

    pub fn mode(&self) -> NotifyMode {
        self.notify.unwrap_or(NotifyMode::Always)
    }

    pub fn realert(&self) -> i64 {
        self.realert_seconds
            .unwrap_or(Self::DEFAULT_REALERT_SECONDS)
    }

    /// In words, for `draft`, `show` and `plan`:
    /// "attention (failures re-alert after 1 h; pause after 3 failures)".
    pub fn describe(&self) -> String {
        let mode = self.mode();
        let mut parts = Vec::new();
        if matches!(mode, NotifyMode::Attention | NotifyMode::Failures) {
            parts.push(format!(
                "failures re-alert after {}",
                crate::text::human_duration(self.realert())
            ));
        }
        if let Some(n) = self.pause_after {
            parts.push(format!("pause after {n} consecutive failures"));
        }
        let absent = if self.notify.is_none() {
            " (not set: every run)"
        } else {
            ""
        };
        match parts.is_empty() {
            true => format!("{mode}{absent}"),
            false => format!("{mode}{absent} ({})", parts.join("; ")),
        }
    }
}

/// What a following payload writes where a fixed one writes its zone.
pub const FOLLOW: &str = "follow";

impl Payload {
    /// The key whose zone a following payload is read in: its first owner
    /// key (owner keys are sorted, so "first" is stable; docs/CONTRACT.md §18).
    pub fn follow_key(&self) -> Option<&str> {
        self.zone
            .follows()
            .then(|| self.owner_keys.first().map(String::as_str))
            .flatten()
    }

    /// A fixed payload has exactly the fields it always had, so its hash is
    /// what it always was; only a following one adds `follow_default`.
    pub fn to_value(&self) -> Value {
        let mut value = json!({
            "grace_seconds": self.grace_seconds,
            "instruction": self.instruction,
            "max_retries": self.max_retries,
            "name": self.name,
            "owner_keys": self.owner_keys,
            "policy": self.policy.as_str(),
            "retry_backoff_seconds": self.retry_backoff_seconds,
            "schedule": self.schedule.to_json(),
            "target": self.target,
            "tenant_key": self.tenant_key,
            "timezone": self.zone.named().name(),
        });
        if let Some(agent) = &self.drafted_by {
            value["drafted_by"] = json!(agent);
        }
        // Absent, not null, when unset: payloads confirmed before the notice
        // policy keep their bytes and hashes.
        if let Some(mode) = self.notice.notify {
            value["notify"] = json!(mode.as_str());
        }
        if let Some(seconds) = self.notice.realert_seconds {
            value["realert_seconds"] = json!(seconds);
        }
        if let Some(n) = self.notice.pause_after {
            value["pause_after"] = json!(n);
        }
        if let Some(seconds) = self.timeout_seconds {
            value["timeout_seconds"] = json!(seconds);
        }
        if !self.budgets.is_empty() {
            let spelled: Vec<String> = self.budgets.iter().map(Budget::spelling).collect();
            value["budgets"] = json!(spelled);
        }
        if self.catch_up != CatchUp::None {
            value["catch_up"] = json!(self.catch_up.as_str());
        }
        if let Some(seconds) = self.expect_success_seconds {
            value["expect_success_seconds"] = json!(seconds);
        }
        if let Some(gate) = &self.gate {
            value["gate"] = json!(gate);
        }
        if let Some(profile) = &self.profile {
            value["profile"] = profile.to_value();
        }
        if let Zone::Follows { fallback } = self.zone {
            value["timezone"] = json!(FOLLOW);
            value["follow_default"] = json!(fallback.name());
        }
        value
    }

    /// The canonical bytes (as a string: they are always UTF-8).
    pub fn canonical(&self) -> String {
        self.to_value().to_string()
    }

    /// Reads a payload back, checking every field and that the text is in
    /// canonical form (a payload in any other spelling was not written by
    /// agentcron: its hash vouches for bytes nobody confirmed as such). Every
    /// task read and every confirm goes through here, so it deserializes
    /// straight into typed fields and checks the form by serializing those
    /// same fields again (a few microseconds, no JSON tree).
    pub fn from_canonical(raw: &str) -> Result<Payload> {
        let f: StoredFields = serde_json::from_str(raw).context("payload is not valid")?;
        let policy = Policy::parse(&f.policy)
            .ok_or_else(|| anyhow!("payload policy '{}' is unknown", f.policy))?;
        let schedule =
            Schedule::from_json(&f.schedule).map_err(|e| anyhow!("payload schedule: {e}"))?;
        let notice = notice_policy(&f)?;
        let (budgets, catch_up) = spend_limits(&f)?;
        if let Some(profile) = &f.profile {
            profile.check()?;
        }
        if f.timeout_seconds
            .is_some_and(|s| !(1..=TIMEOUT_SECONDS_MAX).contains(&s))
        {
            return Err(anyhow!(
                "payload timeout_seconds must be from 1 to {TIMEOUT_SECONDS_MAX}"
            ));
        }
        // A following payload names its fallback zone; a fixed one names
        // none (an absent key is the payload every older task has).
        let (zone_text, follow) = match (f.timezone.as_str(), &f.follow_default) {
            (FOLLOW, Some(default)) => (default.as_str(), true),
            (FOLLOW, None) => return Err(anyhow!("a following payload needs follow_default")),
            (_, Some(_)) => return Err(anyhow!("follow_default without \"timezone\":\"follow\"")),
            (zone, None) => (zone, false),
        };
        let timezone = schedule::parse_zone(zone_text).map_err(|e| anyhow!("{e}"))?;
        if follow && !follows_a_wall_clock(&schedule) {
            return Err(anyhow!(
                "a {} schedule cannot follow its owner's zone",
                schedule.kind()
            ));
        }
        // Struct fields serialize in declaration (sorted) order with the
        // compact separators, so this is the canonical text of these fields;
        // the schedule and the zone must also be their one spelling.
        if schedule.to_json() != f.schedule
            || timezone.name() != zone_text
            || serde_json::to_string(&f)? != raw
        {
            return Err(anyhow!("payload is not in canonical form"));
        }
        Ok(Payload {
            budgets,
            catch_up,
            drafted_by: f.drafted_by,
            expect_success_seconds: f.expect_success_seconds,
            gate: f.gate,
            grace_seconds: f.grace_seconds,
            instruction: f.instruction,
            max_retries: f.max_retries,
            name: f.name,
            notice,
            owner_keys: f.owner_keys,
            policy,
            profile: f.profile,
            retry_backoff_seconds: f.retry_backoff_seconds,
            schedule,
            target: f.target,
            tenant_key: f.tenant_key,
            timeout_seconds: f.timeout_seconds,
            zone: match follow {
                true => Zone::Follows { fallback: timezone },
                false => Zone::Fixed(timezone),
            },
        })
    }
}

/// Whether a zone change moves the schedule's occurrences: calendar and cron
/// read a wall clock; a once instant and an interval's anchor are instants
/// already, so following a zone would change nothing they do.
pub fn follows_a_wall_clock(schedule: &Schedule) -> bool {
    matches!(schedule.kind(), "calendar" | "cron")
}

/// A payload's fields as JSON gives them, in canonical (sorted) order; no
/// other field is allowed.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct StoredFields {
    // Each written only when set: `"budgets":[]` or `"gate":null` is not
    // canonical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budgets: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    catch_up: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    drafted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expect_success_seconds: Option<i64>,
    /// Only in a following payload: absent, a payload is what it always was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    follow_default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gate: Option<String>,
    grace_seconds: i64,
    instruction: String,
    max_retries: i64,
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notify: Option<String>,
    owner_keys: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pause_after: Option<i64>,
    policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile: Option<Box<crate::profile::Bound>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    realert_seconds: Option<i64>,
    retry_backoff_seconds: i64,
    schedule: Value,
    target: String,
    tenant_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_seconds: Option<i64>,
    timezone: String,
}

/// A stored payload's spending limits, each checked as a draft checks it
/// and in its one spelling: its budgets and its catch-up (the other two
/// are read as stored once checked).
fn spend_limits(f: &StoredFields) -> Result<(Vec<Budget>, CatchUp)> {
    let budgets = match &f.budgets {
        None => Vec::new(),
        Some(list) if list.is_empty() => return Err(anyhow!("payload budgets is empty")),
        Some(list) => {
            let parsed = limits::budgets(list).map_err(|e| anyhow!("payload budgets: {e}"))?;
            if parsed.iter().map(Budget::spelling).ne(list.iter().cloned()) {
                return Err(anyhow!("payload budgets are not in canonical form"));
            }
            parsed
        }
    };
    let catch_up = match f.catch_up.as_deref() {
        None => CatchUp::None,
        Some("latest") => CatchUp::Latest,
        Some(other) => return Err(anyhow!("payload catch_up '{other}' is not \"latest\"")),
    };
    if f.expect_success_seconds.is_some_and(|s| {
        !(limits::EXPECT_SUCCESS_MIN_SECONDS..=limits::EXPECT_SUCCESS_MAX_SECONDS).contains(&s)
    }) {
        return Err(anyhow!("payload expect_success_seconds is out of range"));
    }
    if let Some(gate) = &f.gate {
        limits::check_gate(gate).map_err(|e| anyhow!("payload gate: {e}"))?;
    }
    Ok((budgets, catch_up))
}

/// The notice settings of a stored payload, each checked as a draft checks it.
fn notice_policy(f: &StoredFields) -> Result<NoticePolicy> {
    let notify = match &f.notify {
        None => None,
        Some(text) => Some(
            NotifyMode::parse(text).ok_or_else(|| anyhow!("payload notify '{text}' is unknown"))?,
        ),
    };
    if f.realert_seconds.is_some_and(|s| s < 1) {
        return Err(anyhow!("payload realert_seconds must be positive"));
    }
    if f.pause_after.is_some_and(|n| n < 1) {
        return Err(anyhow!("payload pause_after must be at least 1"));
    }
    Ok(NoticePolicy {
        notify,
        realert_seconds: f.realert_seconds,
        pause_after: f.pause_after,
    })
}

/// One payload field that differs, as JSON values.
pub struct Change {
    pub field: String,
    pub old: Value,
    pub new: Value,
}

/// The payload fields that differ, in the payload's (sorted) key order. The
/// zone a schedule is read in is part of how it reads, so the schedule is
/// compared in words as well as by value.
pub fn changes(old: &Payload, new: &Payload) -> Vec<Change> {
    let (Value::Object(a), Value::Object(b)) = (old.to_value(), new.to_value()) else {
        return Vec::new();
    };
    a.iter()
        .filter_map(|(key, old_value)| {
            let new_value = b.get(key).cloned().unwrap_or(Value::Null);
            (old_value != &new_value).then(|| Change {
                field: key.clone(),
                old: old_value.clone(),
                new: new_value,
            })
        })
        .chain(
            // Keys only the new payload has (an end condition added).
            b.iter()
                .filter(|(key, _)| !a.contains_key(*key))
                .map(|(key, v)| Change {
                    field: key.clone(),
                    old: Value::Null,
                    new: v.clone(),
                }),
        )
        .collect()
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A payload of the shape most tests start from (other modules' too).
    pub fn sample() -> Payload {
        Payload {
            drafted_by: None,
            grace_seconds: 60,
            instruction: "summarize the on-call channel — 值班".into(),
            max_retries: 3,
            name: Some("oncall".into()),
            notice: NoticePolicy::default(),
            owner_keys: vec!["unix:alice".into()],
            policy: Policy::ReadOnly,
            profile: None,
            retry_backoff_seconds: 60,
            schedule: Schedule::Calendar {
                hour: 9,
                minute: 30,
                weekdays: vec![0, 1, 2, 3, 4],
            },
            target: "chat:42".into(),
            tenant_key: "default".into(),
            timeout_seconds: None,
            budgets: Vec::new(),
            catch_up: CatchUp::None,
            expect_success_seconds: None,
            gate: None,
            zone: Zone::Fixed("Asia/Shanghai".parse().unwrap()),
        }
    }

    #[test]
    fn a_fixed_payload_hashes_as_it_always_did() {
        // Pinned before following zones existed: the absent key is the old payload.
        assert_eq!(
            hash_hex(sample().canonical().as_bytes()),
            "a2fb08a68d8781a59e2bd9798151e7f5088d79707ef88683f5c6a6c758f91561"
        );
        assert!(!sample().canonical().contains("follow"));
    }

    #[test]
    fn a_following_payload_names_follow_and_its_default() {
        let following = Payload {
            zone: Zone::Follows {
                fallback: "Asia/Shanghai".parse().unwrap(),
            },
            ..sample()
        };
        let text = following.canonical();
        assert!(text.starts_with(r#"{"follow_default":"Asia/Shanghai","grace_seconds":60,"#));
        assert!(text.ends_with(r#""tenant_key":"default","timezone":"follow"}"#));
        assert_eq!(Payload::from_canonical(&text).unwrap(), following);
        assert_eq!(following.follow_key(), Some("unix:alice"));
        for bad in [
            text.replacen(r#""follow_default":"Asia/Shanghai","#, "", 1),
            text.replacen(r#""timezone":"follow""#, r#""timezone":"UTC""#, 1),
            text.replacen(
                r#""follow_default":"Asia/Shanghai""#,
                r#""follow_default":"follow""#,
                1,
            ),
        ] {
            assert!(Payload::from_canonical(&bad).is_err(), "{bad}");
        }
        let once = Payload {
            schedule: Schedule::Once {
                run_at: 1_800_000_000,
            },
            ..following
        };
        assert!(Payload::from_canonical(&once.canonical()).is_err());
    }

    #[test]
    fn canonical_form_is_sorted_compact_utf8() {
        let text = sample().canonical();
        assert!(text.starts_with(
            r#"{"grace_seconds":60,"instruction":"summarize the on-call channel — 值班","#
        ));
        assert!(text.contains(
            r#""schedule":{"hour":9,"kind":"calendar","minute":30,"weekdays":[0,1,2,3,4]}"#
        ));
        assert!(!text.contains(": ") && !text.contains(", "));
    }

    #[test]
    fn round_trips_and_rejects_reordered_keys() {
        let text = sample().canonical();
        assert_eq!(Payload::from_canonical(&text).unwrap(), sample());
        let spaced = text.replacen(":60,", ": 60,", 1);
        assert!(Payload::from_canonical(&spaced).is_err());
    }

    #[test]
    fn every_field_and_its_spelling_is_checked() {
        let text = sample().canonical();
        for bad in [
            text.replacen(r#""grace_seconds":60"#, r#""grace_seconds":60.5"#, 1),
            text.replacen(r#""policy":"read_only""#, r#""policy":"anything""#, 1),
            text.replacen(
                r#""timezone":"Asia/Shanghai""#,
                r#""timezone":"Mars/Base""#,
                1,
            ),
            text.replacen('{', r#"{"extra":1,"#, 1),
            text.replacen(r#""target":"chat:42","#, "", 1),
            text.replacen(
                r#""target":"chat:42""#,
                r#""target":"chat:42","target":"x""#,
                1,
            ),
            text.replacen(r#""name":"oncall","#, "", 1),
            text.replacen(r#""weekdays":[0,1,2,3,4]"#, r#""weekdays":[4,3,2,1,0]"#, 1),
            text.replacen(
                r#""timezone":"Asia/Shanghai""#,
                r#""timezone":"asia/shanghai""#,
                1,
            ),
            text.replacen('}', " }", 1),
            format!("{text}\n"),
            "[]".to_string(),
            String::new(),
        ] {
            assert!(Payload::from_canonical(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_payload_without_a_notice_policy_keeps_its_bytes() {
        let text = sample().canonical();
        assert!(!text.contains("notify") && !text.contains("realert"));
        assert_eq!(
            Payload::from_canonical(&text).unwrap().notice,
            NoticePolicy::default()
        );
    }

    #[test]
    fn the_notice_policy_is_written_in_key_order_and_read_back() {
        let mut p = sample();
        p.notice = NoticePolicy {
            notify: Some(NotifyMode::Attention),
            realert_seconds: Some(3600),
            pause_after: Some(3),
        };
        let text = p.canonical();
        assert!(text.contains(r#""name":"oncall","notify":"attention","owner_keys""#));
        assert!(text.contains(r#""pause_after":3,"policy""#));
        assert!(text.contains(r#""realert_seconds":3600,"retry_backoff_seconds""#));
        assert_eq!(Payload::from_canonical(&text).unwrap(), p);
        for bad in [
            text.replacen(r#""notify":"attention""#, r#""notify":"sometimes""#, 1),
            text.replacen(r#""notify":"attention""#, r#""notify":null"#, 1),
            text.replacen(r#""pause_after":3"#, r#""pause_after":0"#, 1),
            text.replacen(r#""realert_seconds":3600"#, r#""realert_seconds":-1"#, 1),
        ] {
            assert!(Payload::from_canonical(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spending_limits_are_written_only_when_set_and_read_back_in_one_spelling() {
        for key in ["budgets", "catch_up", "expect_success_seconds", "gate"] {
            assert!(!sample().canonical().contains(key), "{key}");
        }
        let limited = Payload {
            budgets: crate::limits::budgets(&["usd=2.5/day".into(), "runs=2/day".into()]).unwrap(),
            catch_up: CatchUp::Latest,
            expect_success_seconds: Some(86400),
            gate: Some("test -s /var/inbox".into()),
            ..sample()
        };
        let text = limited.canonical();
        assert!(
            text.starts_with(r#"{"budgets":["runs=2/day","usd=2.5/day"],"catch_up":"latest","#),
            "{text}"
        );
        assert!(
            text.contains(
                r#""expect_success_seconds":86400,"gate":"test -s /var/inbox","grace_seconds""#
            ),
            "{text}"
        );
        assert_eq!(Payload::from_canonical(&text).unwrap(), limited);
        for (from, to) in [
            ("runs=2/day", "runs=2.0/day"),
            (
                r#"["runs=2/day","usd=2.5/day"]"#,
                r#"["usd=2.5/day","runs=2/day"]"#,
            ),
            (r#"["runs=2/day","usd=2.5/day"]"#, "[]"),
            (r#""latest""#, r#""none""#),
            ("86400", "5"),
            ("test -s /var/inbox", ""),
        ] {
            let bad = text.replacen(from, to, 1);
            assert!(Payload::from_canonical(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_timeout_is_written_only_when_set_and_read_back_in_range() {
        // Unset: the pinned hash of `a_fixed_payload_hashes_as_it_always_did`.
        assert!(!sample().canonical().contains("timeout"));
        let limited = Payload {
            timeout_seconds: Some(120),
            ..sample()
        };
        let text = limited.canonical();
        assert!(text.contains(r#""tenant_key":"default","timeout_seconds":120,"timezone""#));
        assert_eq!(Payload::from_canonical(&text).unwrap(), limited);
        for bad in ["0", "-1", "86401", "null", "1.5"] {
            let bad = text.replacen("120", bad, 1);
            assert!(Payload::from_canonical(&bad).is_err(), "{bad}");
        }
        let day = text.replacen("120", "86400", 1);
        assert!(Payload::from_canonical(&day).is_ok());
    }

    #[test]
    fn an_agents_draft_carries_drafted_by_and_a_shells_does_not() {
        let shell = sample().canonical();
        assert!(!shell.contains("drafted_by"));
        let agent = Payload {
            drafted_by: Some("agent:claude-code".into()),
            ..sample()
        };
        let text = agent.canonical();
        assert!(text.starts_with(r#"{"drafted_by":"agent:claude-code","grace_seconds":60,"#));
        assert_eq!(Payload::from_canonical(&text).unwrap(), agent);
        let null = shell.replacen('{', r#"{"drafted_by":null,"#, 1);
        assert!(Payload::from_canonical(&null).is_err());
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            hash_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
