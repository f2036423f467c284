//! Day-2 operations (docs/CONTRACT.md §13), one file per behaviour:
//! replacing a payload, triggering a run, how schedules end and spread,
//! `upcoming`.

mod ends;
mod replace;
mod trigger;
mod upcoming;

use serde_json::Value;

use crate::support::TestEnv;

const HOUR: i64 = 3600;

/// A confirmed task `name` running daily at 09:00 UTC.
pub fn daily(env: &TestEnv, name: &str) -> Value {
    env.task(&[
        "--instruction",
        "summarize",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--name",
        name,
    ])
}

/// Drafts a replacement; returns (draft_id, payload_hash).
pub fn replace_draft(env: &TestEnv, args: &[&str]) -> (String, String) {
    let mut all = vec!["draft", "--replace"];
    all.extend_from_slice(args);
    let d = env.json(&all);
    (
        d["draft_id"].as_str().unwrap().to_string(),
        d["payload_hash"].as_str().unwrap().to_string(),
    )
}

pub fn rfc3339(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
