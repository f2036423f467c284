//! Issue 44 item 2: occurrences missed in one gap of ticks are one notice
//! per wake under `attention`, naming every task (kind `gap`); a task whose
//! catch-up ran says nothing of what it missed.

use super::*;
use crate::support::Rig;

fn attention_task(rig: &Rig, name: &str, extra: &[&str]) {
    let mut args = vec![
        "--instruction",
        "x",
        "--every",
        "5m",
        "--name",
        name,
        "--notify",
        "attention",
    ];
    args.extend_from_slice(extra);
    rig.env.task(&args);
}

fn missed_or_gap(rig: &Rig) -> Vec<Value> {
    (rig.notices().into_iter())
        .filter(|n| n["kind"] == "missed" || n["kind"] == "gap")
        .collect()
}

#[test]
fn tasks_that_missed_in_one_gap_are_one_notice_per_wake() {
    let rig = Rig::new();
    rig.with_notifier(0);
    for name in ["inbox", "digest", "backup"] {
        attention_task(&rig, name, &[]);
    }
    attention_task(&rig, "news", &["--catch-up", "latest"]);
    // The host sleeps from 08:00 to 09:02: each task missed 12 occurrences.
    rig.env.advance(62 * 60);
    rig.tick(&[]).ok();
    let told = missed_or_gap(&rig);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["kind"], "gap");
    assert_eq!(told[0]["state"], "missed");
    let message = told[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "3 tasks missed occurrences while no tick ran (the host slept or cron was not running): "
        ),
        "{message}"
    );
    for name in ["inbox 12", "digest 12", "backup 12"] {
        assert!(message.contains(name), "{message}");
    }
    assert!(!message.contains("news"), "the catch-up ran: {message}");
    // Each other missed run is in the ledger, held back as told.
    assert_eq!(
        rig.env.count(
            "SELECT count(*) FROM deliveries WHERE suppressed_reason = 'told in the gap notice'"
        ),
        2
    );
    // A tick on time (09:05) tells nothing more; a second wake is a
    // second notice.
    rig.env.advance(3 * 60);
    rig.tick(&[]).ok();
    rig.env.advance(30 * 60);
    rig.tick(&[]).ok();
    assert_eq!(missed_or_gap(&rig).len(), 2, "{:?}", missed_or_gap(&rig));
}

#[test]
fn a_task_alone_in_its_gap_keeps_its_missed_notice() {
    let rig = Rig::new();
    rig.with_notifier(0);
    attention_task(&rig, "inbox", &[]);
    rig.env.advance(62 * 60);
    rig.tick(&[]).ok();
    let told = missed_or_gap(&rig);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["kind"], "missed");
}
