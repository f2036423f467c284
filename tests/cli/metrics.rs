//! `metrics` (docs/CONTRACT.md §15): the store's state in the Prometheus text
//! format, checked by a real parser (`promtool check metrics`, which
//! scripts/ensure-metrics-parser installs for CI).
use crate::support::{assert_contains, assert_starts_with, fed, Rig, Task};

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

const HOUR: i64 = 3600;

/// Runs `promtool check metrics` on the text: parse errors and lint
/// problems (wrong suffixes, missing HELP) both fail. Without promtool the
/// check is skipped, unless CI requires it.
fn promtool_accepts(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(_) if std::env::var_os("AGENTCRON_REQUIRE_METRICS_PARSER").is_none() => {
            crate::support::skipped(
                "promtool is not installed, the metrics are not validated: run scripts/ensure-metrics-parser",
            );
            return;
        }
        Err(e) => panic!("promtool: {e}"),
    };
    let out = fed(child, text.as_bytes());
    assert!(
        out.status.success(),
        "promtool refused the metrics:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sample<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
}

#[test]
fn metrics_expose_ticks_backlog_runs_notices_and_gaps_in_the_prometheus_format() {
    let rig = Rig::new();
    // Never ticked: no last-tick sample at all (absent, not 1970).
    Task::named("a").confirm(&rig.env);
    Task::named("b").confirm(&rig.env);
    let out = rig.env.run(&["metrics"]).ok();
    promtool_accepts(&out.stdout);
    assert!(
        !out.stdout.contains("agentcron_last_tick"),
        "{}",
        out.stdout
    );
    assert_eq!(sample(&out.stdout, "agentcron_due_tasks"), "0");

    // Both due; a tick that may start one leaves the other queued.
    rig.env.advance(HOUR);
    rig.tick(&["--max-runs", "1"]).ok();
    let tick_at = rig.env.now();
    rig.env.advance(120);
    let out = rig.env.run(&["metrics"]).ok();
    promtool_accepts(&out.stdout);
    let text = &out.stdout;
    assert_eq!(
        sample(text, "agentcron_last_tick_timestamp_seconds"),
        tick_at.to_string()
    );
    let took: f64 = sample(text, "agentcron_last_tick_duration_seconds")
        .parse()
        .unwrap();
    assert!((0.0..60.0).contains(&took), "{took}");
    assert_eq!(sample(text, "agentcron_due_tasks"), "1");
    assert_eq!(sample(text, "agentcron_queued_tasks"), "1");
    assert_eq!(sample(text, "agentcron_oldest_queued_wait_seconds"), "120");
    assert_eq!(sample(text, "agentcron_runs{status=\"succeeded\"}"), "1");
    assert_eq!(sample(text, "agentcron_runs{status=\"unknown\"}"), "0");
    // No notifier: the run's notice waits.
    assert_eq!(sample(text, "agentcron_notices{state=\"pending\"}"), "1");
    assert_eq!(
        sample(text, "agentcron_notices{state=\"undeliverable\"}"),
        "0"
    );
    assert_eq!(sample(text, "agentcron_scheduler_gap_events"), "0");
    assert_contains(text, "# TYPE agentcron_runs gauge\n");
    assert_contains(text, "# HELP agentcron_unknown_runs ");

    // Cron stopped for two hours: a gap; then a run times out into unknown.
    rig.env.advance(2 * HOUR - 120);
    rig.env.executors_sleep("3");
    let out = rig.tick(&["--max-runs", "1", "--timeout", "1s", "--kill-grace", "1s"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("the host slept or cron was not running"),
        "{out:?}"
    );
    let out = rig.env.run(&["metrics"]).ok();
    promtool_accepts(&out.stdout);
    assert_eq!(sample(&out.stdout, "agentcron_scheduler_gap_events"), "1");
    assert_eq!(sample(&out.stdout, "agentcron_unknown_runs"), "1");
    assert_eq!(
        sample(&out.stdout, "agentcron_runs{status=\"unknown\"}"),
        "1"
    );

    // --json: the same samples as one document.
    let doc = rig.env.json(&["metrics"]);
    let unknown = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "agentcron_runs" && m["labels"]["status"] == "unknown")
        .unwrap();
    assert_eq!(unknown["value"], 1.0);

    // --textfile: the same text, replaced atomically, 0644, nothing left over.
    let folder = rig.env.path("textfile");
    std::fs::create_dir(&folder).unwrap();
    let file = folder.join("agentcron.prom");
    std::fs::write(&file, "old").unwrap();
    let written = rig
        .env
        .run(&["metrics", "--textfile", file.to_str().unwrap()])
        .ok();
    assert_eq!(written.stdout, "");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text, out.stdout);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
    let names: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("agentcron.prom")]);

    // A folder that does not exist: one error line, exit 1.
    let missing = rig.env.path("nowhere/agentcron.prom");
    let out = rig
        .env
        .run(&["metrics", "--textfile", missing.to_str().unwrap()])
        .fails(1);
    assert_starts_with(
        &out.stderr,
        &format!(
            "agentcron: error: writing {}: No such file or directory",
            missing.display()
        ),
    );
}
