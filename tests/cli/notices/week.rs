//! Issue 44: the week of a laptop user in Berlin, scripted with
//! AGENTCRON_NOW — six ordinary tasks, the laptop asleep every night and
//! off one sick day, across the 25 October DST change — with real ticks,
//! executor, gate and notifier. What a person receives: at most 35
//! notices, none for a gate's skip, at most one missed/gap notice per
//! wake, and every piece of news.

use chrono::{TimeZone, Timelike};
use chrono_tz::Europe::Berlin;

use super::*;
use crate::support::{write_script, Rig};

/// Monday 19 October 2026, 08:00 in Berlin (CEST): the tasks are confirmed.
const START: i64 = 1_792_389_600;
const HOUR: i64 = 3600;

/// What each task's executor does, by the task's name: a file per task
/// under the control directory holds its mode.
const EXECUTOR: &str = r#"#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | grep -o '"name":"[^"]*"' | head -1 | cut -d'"' -f4)
when=$(printf '%s' "$input" | grep -o '"scheduled_local":"[^"]*"' | head -1 | cut -d'"' -f4)
mode=$(cat "CTRL/$name" 2>/dev/null || echo ok)
case "$mode" in
  hang) sleep 3; echo '{"status":"succeeded","summary":"done"}' ;;
  fail) echo '{"status":"failed","summary":"disk full at '"$when"'"}' ;;
  news) echo '{"status":"succeeded","summary":"news of '"$when"'"}' ;;
  spend) echo '{"status":"succeeded","summary":"done","usage":{"usd":0.5}}' ;;
  *) echo '{"status":"succeeded","summary":"done"}' ;;
esac
"#;

/// The inbox's gate: nothing new unless the control directory says so.
const GATE: &str = r#"#!/bin/sh
cat >/dev/null
if [ -e CTRL/inbox-open ]; then exit 0; fi
echo "nothing new in the inbox"
exit 1
"#;

fn set_mode(rig: &Rig, task: &str, mode: &str) {
    std::fs::write(rig.env.path("ctrl").join(task), mode).unwrap();
}

fn set_gate(rig: &Rig, open: bool) {
    let path = rig.env.path("ctrl").join("inbox-open");
    if open {
        std::fs::write(path, "").unwrap();
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// The six tasks of the issue, in Berlin.
fn confirm_tasks(rig: &Rig, gate: &str) {
    let task = |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend([
            "--instruction",
            "x",
            "--tz",
            "Europe/Berlin",
            "--notify",
            "attention",
        ]);
        rig.env.task(&args);
    };
    task(&[
        "--name",
        "digest",
        "--daily",
        "07:00",
        "--days",
        "weekdays",
        "--catch-up",
        "latest",
    ]);
    task(&["--name", "agent", "--every", "2h", "--budget", "usd=1/day"]);
    task(&["--name", "inbox", "--every", "1h", "--gate", gate]);
    task(&[
        "--name",
        "backup",
        "--daily",
        "22:00",
        "--expect-success",
        "26h",
        "--max-retries",
        "0",
    ]);
    task(&[
        "--name",
        "hang",
        "--daily",
        "12:00",
        "--timeout",
        "1s",
        "--max-retries",
        "0",
    ]);
    task(&["--name", "reminder", "--daily", "09:00"]);
}

/// Whether the laptop is on at `at`: awake 07:30 to 22:59 in Berlin, but
/// not on Wednesday 21 October (sick).
fn awake(at: i64) -> bool {
    let local = Berlin.timestamp_opt(at, 0).unwrap();
    let day = local.format("%Y-%m-%d").to_string();
    let minutes = local.hour() * 60 + local.minute();
    day != "2026-10-21" && (7 * 60 + 30..23 * 60).contains(&minutes)
}

#[test]
fn a_week_on_a_laptop_is_a_few_notices_worth_reading() {
    let rig = Rig::new();
    rig.with_notifier(0);
    let ctrl = rig.env.path("ctrl");
    std::fs::create_dir_all(&ctrl).unwrap();
    let ctrl = ctrl.to_str().unwrap().to_string();
    let executor = rig.env.path("week-executor.sh");
    write_script(&executor, &EXECUTOR.replace("CTRL", &ctrl));
    let gate = rig.env.path("week-gate.sh");
    write_script(&gate, &GATE.replace("CTRL", &ctrl));
    rig.env
        .set_env("AGENTCRON_EXECUTOR", executor.to_str().unwrap());
    rig.env.set_now(START);
    confirm_tasks(&rig, gate.to_str().unwrap());
    set_mode(&rig, "digest", "news");
    set_mode(&rig, "agent", "spend");
    set_mode(&rig, "backup", "fail");
    set_mode(&rig, "inbox", "news");
    // Every half hour the laptop is on, until Monday 26 October, 08:00.
    let mut wakes = 0;
    let mut per_wake_worst = 0;
    let mut was_awake = true;
    let mut at = START;
    while at <= START + 7 * 24 * HOUR {
        at += HOUR / 2;
        if !awake(at) {
            was_awake = false;
            continue;
        }
        let local = Berlin.timestamp_opt(at, 0).unwrap();
        let day = local.format("%m-%d").to_string();
        // The backup fails two nights (19, 20 October), then works; the
        // hang hangs on Friday; the inbox has news twice.
        if day == "10-22" {
            set_mode(&rig, "backup", "ok");
        }
        set_mode(&rig, "hang", if day == "10-23" { "hang" } else { "ok" });
        set_gate(
            &rig,
            matches!((day.as_str(), local.hour()), ("10-20", 15) | ("10-23", 10)),
        );
        let before = rig.notices().len();
        rig.env.set_now(at);
        rig.tick(&[]).ok();
        let sent = &rig.notices()[before..];
        let missed = sent
            .iter()
            .filter(|n| n["kind"] == "missed" || n["kind"] == "gap")
            .count();
        if !was_awake {
            wakes += 1;
        }
        per_wake_worst = per_wake_worst.max(missed);
        was_awake = true;
    }
    let notices = rig.notices();
    let of = |task: &str, kind: &str| -> Vec<&Value> {
        (notices.iter())
            .filter(|n| n["task"]["name"] == task && n["kind"] == kind)
            .collect()
    };
    let summary: Vec<String> = (notices.iter())
        .map(|n| format!("{} {} {}", n["task"]["name"], n["kind"], n["message"]))
        .collect();
    assert!(
        notices.len() <= 35,
        "{} notices: {summary:#?}",
        notices.len()
    );
    assert!(wakes >= 6, "{wakes} wakes");
    assert!(
        per_wake_worst <= 1,
        "a wake sent {per_wake_worst}: {summary:#?}"
    );
    // Nothing for the gate's skips, and they happened.
    assert!(notices.iter().all(|n| n["run"]["status"] != "skipped_gate"));
    assert!(
        rig.env
            .count("SELECT count(*) FROM runs WHERE status = 'skipped_gate'")
            > 50,
        "the gate skipped"
    );
    // The news arrived: the backup's first failure, its overdue, its
    // recovery; the hang's failure; the first budget; the inbox's news.
    let backup = of("backup", "failure");
    assert!(!backup.is_empty(), "{summary:#?}");
    assert!(backup[0]["message"].as_str().unwrap().contains("disk full"));
    assert_eq!(of("backup", "overdue").len(), 1, "{summary:#?}");
    assert_eq!(of("backup", "recovery").len(), 1, "{summary:#?}");
    let hang = of("hang", "failure");
    assert_eq!(hang.len(), 1, "{summary:#?}");
    assert!(hang[0]["message"]
        .as_str()
        .unwrap()
        .contains("timed out after 1 s"));
    assert!(!of("agent", "budget").is_empty(), "{summary:#?}");
    assert!(of("inbox", "success").len() >= 2, "{summary:#?}");
    assert!(of("digest", "success").len() >= 4, "{summary:#?}");
}
