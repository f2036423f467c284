//! Issue 28: what a newcomer under real cron was misled by. `status` says
//! when cron stopped (a warning, `"stale": true`, the last gap for a day).

use crate::support::{TestEnv, T0};
use crate::tick::Rig;

const MINUTE: i64 = 60;

#[test]
fn status_says_when_cron_stopped_and_names_the_last_gap() {
    let rig = Rig::new();
    let env = &rig.env;
    env.task(&["--instruction", "x", "--every", "1h", "--name", "h"]);
    rig.tick(&[]).ok();
    // A minute later all is well: quiet, not stale.
    env.advance(MINUTE);
    let out = env.run(&["status"]).ok();
    assert_eq!(out.stderr, "", "{}", out.stderr);
    assert_eq!(env.json(&["status"])["stale"], false);
    // Five minutes without a tick while a task is active: cron stopped.
    env.advance(5 * MINUTE);
    let out = env.run(&["status"]).ok();
    assert!(
        out.stderr
            .contains("no tick for 6 min while 1 task(s) are active"),
        "{}",
        out.stderr
    );
    let status = env.run(&["--json", "status"]).ok().json();
    assert_eq!(status["stale"], true);
    // The exit code changes only with --max-tick-age.
    env.run(&["status", "--max-tick-age", "10m"]).ok();
    assert_eq!(env.run(&["status", "--max-tick-age", "2m"]).code, 1);
    // Cron comes back after 8 minutes in all: the gap is named for a day.
    env.advance(2 * MINUTE);
    rig.tick(&[]).ok();
    let out = env.run(&["status"]).ok();
    assert!(
        out.stdout
            .contains("last gap   no tick for 8 min until 2026-12-02 08:08"),
        "{}",
        out.stdout
    );
    let gap = &env.json(&["status"])["last_gap"];
    assert_eq!(gap["seconds"], 8 * MINUTE, "{gap}");
    assert_eq!(gap["until"], "2026-12-02T08:08:00Z");
    // A day later the gap is history (`log` keeps it).
    env.set_now(T0 + 8 * MINUTE + 86400 + 1);
    let status = env.run(&["--json", "status"]).ok().json();
    assert!(status["last_gap"].is_null(), "{status}");
}

#[test]
fn status_of_a_store_with_no_active_task_is_never_stale_by_default() {
    let env = TestEnv::new();
    env.draft(&["--instruction", "x", "--every", "1h"]);
    let out = env.run(&["status"]).ok();
    assert_eq!(out.stderr, "");
    assert_eq!(env.json(&["status"])["stale"], false);
}
