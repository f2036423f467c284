//! Quiet under cron (docs/CONTRACT.md §6): stdout, which cron mails, holds
//! only what needs a person; `--verbose` and `--log FILE` the narrative.
use crate::support::{assert_contains, Task};

use super::*;

/// The command part of the line `agentcron crontab` prints, run by sh as
/// cron would run it: with the test's clock and fixtures' variables, but
/// without the PATH, database, executor or notifier of the test's
/// environment (the line must carry them).
fn run_crontab_line(rig: &Rig, line: &str) -> crate::support::Outcome {
    let command = line.splitn(6, ' ').nth(5).expect("five schedule fields");
    // cron turns `\%` back into `%`.
    let command = command.replace("\\%", "%");
    let test_env = rig.env.command(&[]);
    let kept = test_env.get_envs().filter_map(|(k, v)| {
        let k = k.to_str()?;
        let line_has_it = matches!(
            k,
            "PATH" | "AGENTCRON_DB" | "AGENTCRON_EXECUTOR" | "AGENTCRON_NOTIFIER"
        );
        let v = v?.to_owned();
        (!line_has_it).then(|| (k.to_string(), v))
    });
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&command)
        .env_clear()
        .envs(kept)
        .output()
        .expect("run the crontab line");
    crate::support::Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn the_printed_crontab_line_mails_nothing_for_a_busy_successful_tick() {
    let rig = Rig::new();
    rig.with_notifier(0);
    for i in 0..6 {
        Task::named(&format!("t{i}")).every("5m").confirm(&rig.env);
    }
    let printed = rig
        .env
        .run(&[
            "crontab",
            "--executor",
            &crate::support::rig::fixture("executor.sh"),
            "--notifier",
            &crate::support::rig::fixture("notifier.sh"),
            "--log",
            rig.env.path("tick.log").to_str().unwrap(),
        ])
        .ok()
        .stdout;
    let line = printed
        .lines()
        .find(|l| l.starts_with("* * * * * "))
        .unwrap();
    rig.env.advance(STEP);
    let out = run_crontab_line(&rig, line);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(rig.starts().len(), 6, "a busy tick: six runs");
    assert_eq!(
        out.stdout.lines().count(),
        0,
        "cron would mail: {}",
        out.stdout
    );
    assert_eq!(out.stderr, "");
    // The narrative is in the log, timestamped, with the tenant.
    let log = std::fs::read_to_string(rig.env.path("tick.log")).unwrap();
    let runs: Vec<&str> = log.lines().filter(|l| l.contains(" succeeded")).collect();
    assert_eq!(runs.len(), 6, "{log}");
    assert!(
        runs.iter()
            .all(|l| l.starts_with("2026-12-02T08:0") && l.contains(" tenant=default run ")),
        "{log}"
    );
}

#[test]
fn a_tick_prints_what_needs_a_person_and_verbose_prints_the_narrative() {
    let rig = rig_with_task(&["--max-retries", "1", "--retry-backoff", "1m"]);
    // A failure with a retry left is not news yet.
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.advance(STEP);
    let out = rig.tick(&[]).ok();
    assert_eq!(out.stdout, "", "a retry is pending");
    // The retry fails too: nothing left, a person must look.
    rig.env.advance(60);
    let out = rig.tick(&[]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert!(lines[0].contains(" failed: it broke"), "{}", out.stdout);
    assert!(
        lines[0].contains(" of task job ("),
        "names the task: {}",
        out.stdout
    );
    // --verbose: every claim, run and notice.
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.env.advance(STEP);
    let out = rig.tick(&["--verbose"]).ok();
    assert_contains(&out.stdout, "run job for ");
    assert_contains(&out.stdout, " succeeded");
    // --json is for scripts: all events, whatever the mode.
    rig.env.advance(STEP);
    let events = rig.tick_json(&[]);
    assert!(events.iter().any(|e| e["event"] == "claimed"), "{events:?}");
}

#[test]
fn a_log_that_cannot_be_opened_stops_the_tick_before_it_claims() {
    let rig = rig_with_task(&[]);
    rig.env.advance(STEP);
    let out = rig.tick(&["--log", "/nonexistent-dir/tick.log"]).fails(1);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert_contains(&out.stderr, "cannot open the log /nonexistent-dir/tick.log");
    assert!(rig.starts().is_empty());
}

/// Issue 44 item 6: on a laptop, cron's mail says the gap in words, once,
/// and repeats no notice the notifier delivers.
#[test]
fn after_a_sleep_the_tick_says_the_gap_in_words_once_and_repeats_no_delivered_notice() {
    let rig = rig_with_task(&["--max-retries", "0"]);
    rig.env.advance(STEP);
    rig.tick(&[]).ok();
    // The laptop sleeps 15 h 15 min; the run after it fails for good.
    rig.env.set_env("FIXTURE_MODE", "fail");
    rig.env.advance(15 * 3600 + 15 * 60);
    let out = rig.tick(&[]).ok();
    assert_eq!(
        out.stderr,
        "agentcron: warning: the previous tick was 15 h 15 min ago (at 2026-12-02T08:05:00Z): \
         the host slept or cron was not running; 1 task(s) had occurrences due\n"
    );
    // The failure went to the notifier: cron's mail does not repeat it.
    assert!(rig.notices().iter().any(|n| n["kind"] == "failure"));
    assert_eq!(out.stdout, "", "delivered by the notifier");
    // The next tick, a minute on, is no new gap.
    rig.env.advance(60);
    let out = rig.tick(&[]).ok();
    assert_eq!(out.stderr, "");
}
