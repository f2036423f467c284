//! Issue 25: a notice policy (docs/CONTRACT.md §16). Each case runs real
//! ticks — one process each, so every decision below was read back from
//! the store by a new process — with the executor and notifier fixtures;
//! the notifier's journal is what a person received, the ledger
//! (`runs --json`, `status`, `metrics`) what was held back and why.

mod gaps;
mod policy;
mod protocol;
mod quiet;
mod states;
mod status;
mod week;
mod wording;

use serde_json::Value;

use crate::support::rig::Rig;

pub const STEP: i64 = 300;

/// A rig with a notifier that delivers, and one task `job` every 5 minutes
/// under `attention` unless `extra` names a mode.
pub fn rig_with_task(extra: &[&str]) -> Rig {
    let rig = Rig::new();
    rig.with_notifier(0);
    let mut args = vec!["--instruction", "x", "--every", "5m", "--name", "job"];
    args.extend_from_slice(extra);
    // The default of a new draft, said out loud (the suite helper would
    // otherwise ask for every notice).
    if !extra.contains(&"--notify") {
        args.extend(["--notify", "attention"]);
    }
    rig.env.task(&args);
    rig
}

/// The next occurrence's tick, the executor answering `reply` (a JSON
/// line), and the notices it sent.
pub fn tick_replying(rig: &Rig, reply: &str) -> Vec<Value> {
    let before = rig.notices().len();
    rig.env.set_env("FIXTURE_MODE", &format!("json:{reply}"));
    rig.env.advance(STEP);
    rig.tick(&[]).ok();
    rig.notices()[before..].to_vec()
}

pub fn failed(summary: &str) -> String {
    format!(r#"{{"status":"failed","summary":"{summary}"}}"#)
}

pub fn succeeded(summary: &str) -> String {
    format!(r#"{{"status":"succeeded","summary":"{summary}"}}"#)
}

/// The ledger row of the task's latest run's notice.
pub fn last_notice(rig: &Rig) -> (String, Option<String>) {
    let sql = "SELECT d.state, d.suppressed_reason FROM deliveries d JOIN runs r USING (run_id)
               ORDER BY r.scheduled_for DESC, d.seq DESC LIMIT 1";
    let row = rig.env.sql(sql).into_iter().next().expect("a notice");
    let reason = (!row[1].is_empty() && row[1] != "NULL").then(|| row[1].clone());
    (row[0].clone(), reason)
}
