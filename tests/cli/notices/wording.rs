//! Issue 44 item 4: counts where they belong, and amounts as a person
//! writes them. Real ticks; the notifier's journal and the executor's
//! saved stdin are what was said.
use super::*;
use crate::support::assert_contains;

fn stdin_of(rig: &Rig, run_id: &str) -> Value {
    let text = std::fs::read_to_string(rig.env.path("stdin").join(format!("{run_id}.json")))
        .expect("the executor's stdin was saved");
    serde_json::from_str(&text).unwrap()
}

/// A coalesced missed run's notice names the span it stands for, and says
/// its count once.
#[test]
fn a_missed_notice_names_its_span_and_counts_once() {
    let rig = rig_with_task(&[]);
    // No tick from 08:00 until 08:42: 08:05 … 08:40 passed past grace.
    rig.env.advance(42 * 60);
    rig.tick(&[]).ok();
    let missed: Vec<Value> = (rig.notices().into_iter())
        .filter(|n| n["kind"] == "missed")
        .collect();
    assert_eq!(missed.len(), 1, "{missed:?}");
    let message = missed[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("job (2026-12-02 08:05 UTC … 2026-12-02 08:40 UTC) missed: "),
        "{message}"
    );
    assert_eq!(message.matches("8 occurrences").count(), 1, "{message}");
    let table = rig.env.run(&["runs", "job"]).ok().stdout;
    assert_eq!(table.matches("occurrence").count(), 1, "{table}");
}

/// Usage of 0.1, three times, is 0.3 spent: on the executor's stdin, in
/// `show`, in `metrics`, never 0.30000000000000004.
#[test]
fn amounts_print_without_float_noise() {
    let rig = rig_with_task(&["--budget", "usd=1/day"]);
    let reply = r#"{"status":"succeeded","summary":"ok","usage":{"usd":0.1}}"#;
    for _ in 0..4 {
        tick_replying(&rig, reply);
    }
    let run_id = rig.runs("job")[0]["run_id"].as_str().unwrap().to_string();
    let stdin =
        std::fs::read_to_string(rig.env.path("stdin").join(format!("{run_id}.json"))).unwrap();
    assert!(stdin.contains(r#""spent":0.3}"#), "{stdin}");
    assert!(stdin.contains(r#""remaining":0.7,"#), "{stdin}");
    assert_eq!(
        stdin_of(&rig, &run_id)["limits"]["budgets"][0]["spent"],
        0.3
    );
    let shown = rig.env.run(&["show", "job"]).ok().stdout;
    assert_contains(&shown, "usd 0.4 of 1");
    assert!(!shown.contains("0000000"), "{shown}");
    let metrics = rig.env.run(&["metrics"]).ok().stdout;
    assert_contains(&metrics, "agentcron_usage_total{key=\"usd\"} 0.4\n");
}
