//! The canonical payload a person confirms, and its SHA-256 (docs/CONTRACT.md §3).
//!
//! Canonical means: keys sorted, `,` and `:` separators with no other
//! whitespace, non-ASCII written as UTF-8, integers for every number. serde_json
//! without `preserve_order` keeps object keys in a BTreeMap (byte order, which
//! for UTF-8 is code point order), and its compact writer emits exactly those
//! separators, so `to_string` of a `Value` is already canonical.

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::model::Policy;
use crate::schedule::{self, Schedule, Tz};

/// Everything a confirmed task is made of; hashing it fixes what will run.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    /// `agent:<client name>` when an agent drafted it through `agentcron mcp`
    /// (docs/CONTRACT.md §17); absent from the canonical text otherwise, so a
    /// draft made at a shell hashes as it always did.
    pub drafted_by: Option<String>,
    pub grace_seconds: i64,
    pub instruction: String,
    pub max_retries: i64,
    pub name: Option<String>,
    /// Sorted and deduplicated.
    pub owner_keys: Vec<String>,
    pub policy: Policy,
    pub retry_backoff_seconds: i64,
    pub schedule: Schedule,
    pub target: String,
    pub tenant_key: String,
    pub timezone: Tz,
}

impl Payload {
    /// The task confirming this payload creates: active, revision 1, its
    /// first occurrence at `next_run_at`.
    pub fn new_task(
        &self,
        task_id: String,
        payload_hash: String,
        next_run_at: i64,
        now: i64,
    ) -> crate::model::Task {
        crate::model::Task {
            task_id,
            drafted_by: self.drafted_by.clone(),
            tenant_key: self.tenant_key.clone(),
            name: self.name.clone(),
            owner_keys: self.owner_keys.clone(),
            target: self.target.clone(),
            instruction: self.instruction.clone(),
            schedule: self.schedule.clone(),
            timezone: self.timezone,
            policy: self.policy,
            grace_seconds: self.grace_seconds,
            max_retries: self.max_retries,
            retry_backoff_seconds: self.retry_backoff_seconds,
            payload_hash,
            state: crate::model::TaskState::Active,
            state_reason: None,
            state_changed_at: now,
            next_run_at: Some(next_run_at),
            revision: 1,
            created_at: now,
            updated_at: now,
            consecutive_failures: 0,
            next_retry_at: None,
            retry_run_id: None,
        }
    }

    /// The payload a confirmed task was made from.
    pub fn of_task(t: &crate::model::Task) -> Payload {
        Payload {
            drafted_by: t.drafted_by.clone(),
            grace_seconds: t.grace_seconds,
            instruction: t.instruction.clone(),
            max_retries: t.max_retries,
            name: t.name.clone(),
            owner_keys: t.owner_keys.clone(),
            policy: t.policy,
            retry_backoff_seconds: t.retry_backoff_seconds,
            schedule: t.schedule.clone(),
            target: t.target.clone(),
            tenant_key: t.tenant_key.clone(),
            timezone: t.timezone,
        }
    }

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
            "timezone": self.timezone.name(),
        });
        if let Some(agent) = &self.drafted_by {
            value["drafted_by"] = json!(agent);
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
        let timezone = schedule::parse_zone(&f.timezone).map_err(|e| anyhow!("{e}"))?;
        // Struct fields serialize in declaration (sorted) order with the
        // compact separators, so this is the canonical text of these fields;
        // the schedule and the zone must also be their one spelling.
        if schedule.to_json() != f.schedule
            || timezone.name() != f.timezone
            || serde_json::to_string(&f)? != raw
        {
            return Err(anyhow!("payload is not in canonical form"));
        }
        Ok(Payload {
            drafted_by: f.drafted_by,
            grace_seconds: f.grace_seconds,
            instruction: f.instruction,
            max_retries: f.max_retries,
            name: f.name,
            owner_keys: f.owner_keys,
            policy,
            retry_backoff_seconds: f.retry_backoff_seconds,
            schedule,
            target: f.target,
            tenant_key: f.tenant_key,
            timezone,
        })
    }
}

/// A payload's fields as JSON gives them, in canonical (sorted) order; no
/// other field is allowed.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct StoredFields {
    // Written only when present: `"drafted_by":null` is not canonical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    drafted_by: Option<String>,
    grace_seconds: i64,
    instruction: String,
    max_retries: i64,
    name: Option<String>,
    owner_keys: Vec<String>,
    policy: String,
    retry_backoff_seconds: i64,
    schedule: Value,
    target: String,
    tenant_key: String,
    timezone: String,
}

/// Lower-case hex SHA-256 of the bytes: `printf %s "$payload" | sha256sum`.
pub fn hash_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    // Every task read hashes its payload: no allocation per byte.
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
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
mod tests {
    use super::*;

    fn sample() -> Payload {
        Payload {
            drafted_by: None,
            grace_seconds: 60,
            instruction: "summarize the on-call channel — 值班".into(),
            max_retries: 3,
            name: Some("oncall".into()),
            owner_keys: vec!["unix:alice".into()],
            policy: Policy::ReadOnly,
            retry_backoff_seconds: 60,
            schedule: Schedule::Calendar {
                hour: 9,
                minute: 30,
                weekdays: vec![0, 1, 2, 3, 4],
            },
            target: "chat:42".into(),
            tenant_key: "default".into(),
            timezone: "Asia/Shanghai".parse().unwrap(),
        }
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
