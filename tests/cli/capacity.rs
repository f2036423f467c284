//! docs/CONTRACT.md §6, "Capacity is not lateness": work-conserving claims,
//! lateness from first sight, fairness across tenants, the host-wide
//! `--max-running` limit, and deliveries that never delay a claim. Every
//! test drives real `tick` processes and counts executions from the
//! executor fixture's journal.
use crate::support::{assert_contains, finished, Rig, Task, T0};

use std::time::{Duration, Instant};

use crate::reliability::{executions, spawn};

/// 2026-12-02T09:00:00Z, the first `--daily 09:00` occurrence after T0.
const NINE: i64 = T0 + 3600;

fn daily_tasks(rig: &Rig, count: usize, tenant: Option<&str>) {
    for i in 0..count {
        let name = format!("{}t{i}", tenant.unwrap_or(""));
        let mut args = vec!["--instruction", "x", "--daily", "09:00", "--tz", "UTC"];
        args.extend(["--name", name.as_str()]);
        if let Some(t) = tenant {
            args.extend(["--tenant", t]);
        }
        rig.env.task(&args);
    }
}

fn statuses(rig: &Rig, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    args.extend(["runs", "--limit", "1000"]);
    let runs = rig.env.run(&args).ok().json();
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_nine_oclock_burst_runs_every_task_though_the_ticks_lack_capacity() {
    let rig = Rig::new();
    daily_tasks(&rig, 12, None);
    // Three ticks a minute apart, each able to start five: the second and
    // third start their runs 65 s and 125 s after 09:00, past the 60 s grace.
    for minute in 0..3 {
        rig.env.set_now(NINE + 5 + 60 * minute);
        rig.tick(&["--max-runs", "5", "--jobs", "1"]).ok();
        if minute == 0 {
            // `status` shows the queue the first tick left.
            let status = rig.env.json(&["status"]);
            assert_eq!(status["queue"]["queued"], 7, "{status}");
            assert_eq!(status["queue"]["due_now"], 7, "{status}");
            assert_eq!(status["queue"]["running"], 0, "{status}");
            let text = rig.env.run(&["status"]).ok().stdout;
            assert_contains(&text, "7 queued, the oldest waiting");
        }
    }
    let statuses = statuses(&rig, &[]);
    assert_eq!(statuses.len(), 12, "{statuses:?}");
    assert!(statuses.iter().all(|s| s == "succeeded"), "{statuses:?}");
    assert_eq!(executions(&rig.env.path("exec.journal")).len(), 12);
    // The wait for a slot is recorded, and is not lateness.
    let runs = rig.env.json(&["runs", "--limit", "100"]);
    let mut queued: Vec<i64> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["queued_seconds"].as_i64().unwrap())
        .collect();
    queued.sort();
    assert_eq!(queued.first(), Some(&5));
    assert!(*queued.last().unwrap() >= 125, "{queued:?}");
    // `explain` names the rule and the figures.
    let explained = rig.env.run(&["explain", "t11"]).ok().stdout;
    assert_contains(&explained, "succeeded");
}

#[test]
fn with_the_default_slots_one_tick_runs_the_whole_burst() {
    let rig = Rig::new();
    daily_tasks(&rig, 12, None);
    rig.env.set_now(NINE + 5);
    rig.tick(&[]).ok();
    let statuses = statuses(&rig, &[]);
    assert_eq!(statuses.len(), 12);
    assert!(statuses.iter().all(|s| s == "succeeded"), "{statuses:?}");
}

#[test]
fn the_first_tick_after_grace_still_records_missed() {
    let rig = Rig::new();
    daily_tasks(&rig, 2, None);
    // Just past the default grace (90 s).
    rig.env.set_now(NINE + 91);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "missed");
    assert_contains(&out.stdout, "no tick saw it due within grace");
    assert_eq!(statuses(&rig, &[]), ["missed", "missed"]);
    assert!(executions(&rig.env.path("exec.journal")).is_empty());
}

#[test]
fn a_queued_occurrence_overtaken_by_the_next_one_is_missed_and_only_the_newest_runs() {
    let rig = Rig::new();
    Task::named("five")
        .cron("*/5 * * * *")
        .tz("UTC")
        .confirm(&rig.env);
    Task::named("hog")
        .cron("*/5 * * * *")
        .tz("UTC")
        .confirm(&rig.env);
    // 08:05:10: one slot, `five` waits behind the other task.
    rig.env.set_now(T0 + 310);
    let out = rig
        .tick(&["--max-runs", "1", "--jobs", "1", "--verbose"])
        .ok();
    assert_contains(&out.stdout, "1 due run(s) queued");
    // 08:10:30: both occurrences of the queued task are due; only 08:10 runs.
    rig.env.set_now(T0 + 630);
    rig.tick(&["--max-runs", "10"]).ok();
    let (queued, other) = if rig.runs("five").iter().any(|r| r["status"] == "missed") {
        ("five", "hog")
    } else {
        ("hog", "five")
    };
    let runs = rig.runs(queued);
    let mine: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["scheduled_for"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        mine,
        [
            ("2026-12-02T08:10:00Z".to_string(), "succeeded".to_string()),
            ("2026-12-02T08:05:00Z".to_string(), "missed".to_string()),
        ],
        "newest first"
    );
    assert!(
        runs[1]["reason"]
            .as_str()
            .unwrap()
            .contains("superseded while queued"),
        "{}",
        runs[1]
    );
    // The task that ran at 08:05 had nothing queued: its 08:10 simply ran.
    let statuses: Vec<String> = rig
        .runs(other)
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["succeeded", "succeeded"]);
}

#[test]
fn claims_interleave_tenants_so_a_lone_task_is_not_starved() {
    let rig = Rig::new();
    daily_tasks(&rig, 8, Some("busy"));
    daily_tasks(&rig, 1, Some("quiet"));
    rig.env.set_now(NINE + 5);
    rig.tick(&["--max-runs", "5", "--jobs", "1"]).ok();
    assert_eq!(statuses(&rig, &["--tenant", "quiet"]), ["succeeded"]);
    assert_eq!(statuses(&rig, &["--tenant", "busy"]).len(), 4);
}

#[test]
fn queued_runs_start_when_their_slot_frees_and_history_says_when() {
    let rig = Rig::new();
    daily_tasks(&rig, 4, None);
    rig.env.executors_sleep("2");
    rig.env.set_now(NINE + 5);
    rig.tick(&["--jobs", "1"]).ok();
    let runs = rig.env.json(&["runs", "--limit", "10"]);
    let mut started: Vec<i64> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            chrono::DateTime::parse_from_rfc3339(r["started_at"].as_str().unwrap())
                .unwrap()
                .timestamp()
        })
        .collect();
    started.sort();
    assert_eq!(started.len(), 4);
    for pair in started.windows(2) {
        assert!(
            pair[1] - pair[0] >= 1,
            "starts spread by the runs: {started:?}"
        );
    }
    assert!(started[3] - started[0] >= 5, "{started:?}");
    // People see the wait too.
    let table = rig.env.run(&["runs"]).ok().stdout;
    assert_contains(&table, " after due");
    // The journal agrees: one executor at a time.
    let mut spans: Vec<(i128, i128)> = executions(&rig.env.path("exec.journal"))
        .iter()
        .map(|e| (e.started_ns.unwrap(), e.ended_ns.unwrap()))
        .collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[1].0 >= pair[0].1, "one slot, one executor: {spans:?}");
    }
}

#[test]
#[allow(clippy::disallowed_methods)] // compares with the journal's wall-clock times
fn a_notifier_hung_on_an_old_notice_does_not_delay_a_due_run() {
    let rig = Rig::new();
    Task::named("old").confirm(&rig.env);
    daily_tasks(&rig, 1, None);
    // An old run whose notice waits (no notifier then).
    rig.env.set_now(T0 + 3600 - 10);
    rig.env.run(&["tick"]).ok();
    // Now the notifier hangs past its timeout on that old notice.
    rig.with_notifier(0);
    rig.env.set_env("NOTIFIER_SLEEP", "6");
    rig.env.set_now(NINE + 5);
    let began = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    let tick = Instant::now();
    rig.tick(&["--notify-timeout", "3s", "--kill-grace", "1s"]);
    let starts: Vec<i128> = executions(&rig.env.path("exec.journal"))
        .iter()
        .filter_map(|e| e.started_ns)
        .collect();
    assert!(!starts.is_empty());
    let latest_start = starts.iter().max().unwrap() - began;
    // A blocked claim would start it only after the notifier's 3 s timeout;
    // 2 s leaves room for a loaded machine to start the tick process itself.
    assert!(
        latest_start < 2_000_000_000,
        "the due run started {latest_start} ns after the tick began"
    );
    assert!(tick.elapsed() >= Duration::from_secs(3), "the notifier ran");
}

#[test]
fn max_running_holds_across_sixteen_concurrent_ticks() {
    let rig = Rig::new();
    // 200 due tasks, seeded directly: drafting them one by one through the
    // binary would dominate the test's time.
    for i in 0..200 {
        Task::named(&format!("m{i}")).confirm(&rig.env);
    }
    rig.env.executors_sleep("0.05");
    rig.env.set_now(T0 + 3600 + 5);
    let ticks: Vec<_> = (0..16)
        .map(|_| {
            spawn(
                &rig.env,
                &[
                    "tick",
                    "--max-running",
                    "3",
                    "--jobs",
                    "4",
                    "--max-runs",
                    "1000",
                ],
            )
        })
        .collect();
    for tick in ticks {
        finished(tick, 0);
    }
    // Ticks that found the limit reached left queued work: one more drains it.
    loop {
        let out = rig
            .tick(&["--max-running", "3", "--jobs", "3", "--max-runs", "1000"])
            .ok();
        if out.stdout.is_empty() {
            break;
        }
    }
    let runs = executions(&rig.env.path("exec.journal"));
    assert_eq!(runs.len(), 200, "every task ran once");
    let mut tasks: Vec<&str> = runs.iter().map(|e| e.task.as_str()).collect();
    tasks.sort();
    tasks.dedup();
    assert_eq!(tasks.len(), 200, "no task ran twice");
    // Never more than three executors alive at once, from the journal.
    let peak = peak_alive(&runs);
    assert!(peak <= 3, "{peak} executors alive at once");
    assert!(statuses(&rig, &[]).iter().all(|s| s == "succeeded"));
}

/// The most executors alive at once, from the journal's start and end times.
fn peak_alive(runs: &[crate::reliability::Execution]) -> i32 {
    let mut edges: Vec<(i128, i32)> = Vec::new();
    for e in runs {
        edges.push((e.started_ns.unwrap(), 1));
        edges.push((e.ended_ns.unwrap(), -1));
    }
    edges.sort();
    let (mut alive, mut peak) = (0, 0);
    for (_, step) in edges {
        alive += step;
        peak = peak.max(alive);
    }
    peak
}

#[test]
fn host_jobs_holds_across_the_overlapping_ticks_of_one_host() {
    let rig = Rig::new();
    for i in 0..30 {
        Task::named(&format!("h{i}")).confirm(&rig.env);
    }
    rig.env.executors_sleep("0.2");
    rig.env.set_now(T0 + 3600 + 5);
    // Six ticks at once, as cron's minutes overlap while runs go on: each
    // could run four, the host runs three.
    let flags = ["tick", "--jobs", "4", "--host-jobs", "3"];
    let ticks: Vec<_> = (0..6).map(|_| spawn(&rig.env, &flags)).collect();
    for tick in ticks {
        finished(tick, 0);
    }
    while !rig.tick(&flags[1..]).ok().stdout.is_empty() {}
    let runs = executions(&rig.env.path("exec.journal"));
    let mut tasks: Vec<&str> = runs.iter().map(|e| e.task.as_str()).collect();
    tasks.sort();
    tasks.dedup();
    assert_eq!((runs.len(), tasks.len()), (30, 30), "every task ran once");
    let peak = peak_alive(&runs);
    assert!(peak <= 3, "{peak} executors alive at once on this host");
    assert!(statuses(&rig, &[]).iter().all(|s| s == "succeeded"));
}

#[test]
fn a_tick_claims_only_within_its_claim_window_and_the_rest_keeps_its_place() {
    let rig = Rig::new();
    daily_tasks(&rig, 4, None);
    rig.env.executors_sleep("1");
    // One slot, one-second runs, a one-second window: the tick starts at
    // most the runs it could claim in its first second, then lets them
    // finish and exits; the due work it leaves is queued.
    rig.env.set_now(NINE + 5);
    let out = rig
        .tick(&["--jobs", "1", "--claim-for", "1s", "--verbose"])
        .ok();
    let started = executions(&rig.env.path("exec.journal")).len();
    assert!((1..=2).contains(&started), "{started} runs started");
    assert_contains(&out.stdout, "due run(s) queued");
    // The next minute's tick, past the 60 s grace: the rest still run.
    rig.env.set_now(NINE + 125);
    rig.tick(&[]).ok();
    assert_eq!(statuses(&rig, &[]), ["succeeded"; 4]);
}

#[test]
fn a_triggered_run_waiting_for_a_slot_keeps_its_place_past_grace() {
    let rig = Rig::new();
    for name in ["a", "b"] {
        Task::named(name).every("1d").confirm(&rig.env);
    }
    rig.env.set_now(T0 + 600);
    rig.env.run(&["trigger", "a"]).ok();
    rig.env.run(&["trigger", "b"]).ok();
    let out = rig
        .tick(&["--max-runs", "1", "--jobs", "1", "--verbose"])
        .ok();
    assert_contains(&out.stdout, "1 due run(s) queued");
    // Two minutes later, past the 60 s grace: the queued trigger still runs.
    rig.env.set_now(T0 + 720);
    rig.tick(&[]).ok();
    for name in ["a", "b"] {
        let runs = rig.runs(name);
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0]["status"], "succeeded", "{}", runs[0]);
        assert_eq!(runs[0]["trigger"], "manual");
    }
}
