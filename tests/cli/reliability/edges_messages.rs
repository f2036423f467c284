//! Messages and smaller edges (issue 33, item 14): what a dry run, a
//! backup, an agent and a warning say when the state is unusual. Real
//! processes throughout; the ones that involve a store run on both.

use super::{journal_starts, kill};
use crate::support::{spawn_tick, wait_for, Rig, T0};

const HOUR: i64 = 3600;

/// A task `long` whose run holds a lease no tick renews any more: its tick
/// and executor were killed with SIGKILL. Returns the run id.
fn orphaned_lease(rig: &Rig) -> String {
    let env = &rig.env;
    env.set_env("FIXTURE_MODE", "sleep");
    env.set_env("FIXTURE_SLEEP", "30");
    env.task(&["--instruction", "x", "--every", "1h", "--name", "long"]);
    env.set_now(T0 + HOUR);
    let journal = env.path("exec.journal");
    let mut tick = spawn_tick(rig, &[]);
    wait_for("the executor", || !journal_starts(&journal).is_empty());
    let (run_id, _, pid) = journal_starts(&journal).remove(0);
    kill(tick.id() as i32, libc::SIGKILL);
    kill(-pid, libc::SIGKILL);
    tick.wait().unwrap();
    env.set_env("FIXTURE_MODE", "succeed");
    run_id
}

/// (a) The dry run says what step 1 of the real tick does with a lease that
/// expired, and changes nothing.
#[test]
fn a_dry_run_reports_the_leases_the_tick_would_expire() {
    let rig = Rig::new();
    let run_id = orphaned_lease(&rig);
    rig.env.set_now(T0 + HOUR + 120);
    let dry = rig.tick(&["--dry-run"]).ok();
    assert_eq!(
        dry.stdout,
        format!(
            "would freeze run {} of task long: lease expired, outcome unknown \
             (`agentcron reconcile` settles it once you know what happened)\n",
            &run_id[..8]
        )
    );
    let events = rig.tick_json(&["--dry-run"]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "would_expire_lease");
    assert_eq!(events[0]["task_name"], "long");
    assert_eq!(events[0]["run"]["run_id"], run_id.as_str());
    assert_eq!(rig.runs("long")[0]["status"], "running");
    let real = rig.tick_json(&[]);
    assert!(
        real.iter()
            .any(|e| e["event"] == "lease_expired" && e["run"]["run_id"] == run_id.as_str()),
        "{real:?}"
    );
    assert_eq!(rig.runs("long")[0]["status"], "unknown");
}
