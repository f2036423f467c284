//! Scenario 2: a tick SIGKILLed at a random moment (sometimes its
//! executors' process groups too), then recovery ticks with the clock past
//! the lease. Every run ends in a legal state and nothing is ever replayed:
//! a run that became `unknown` is never executed again.

use std::time::{Duration, Instant};

use super::{assert_invariants, journal_starts, kill, seeded, spawn, stress};
use crate::support::T0;
use crate::tick::Rig;

const HOUR: i64 = 3600;
const TASKS: usize = 3;

#[test]
fn random_kills_never_replay_a_run() {
    let (mut rng, _guard) = seeded("random_kills", 42);
    let iterations = 40 * stress();
    let rig = Rig::new();
    let journal = rig.env.path("exec.journal");
    for i in 0..TASKS {
        rig.env.task(&[
            "--instruction",
            &format!("killable {i}"),
            "--every",
            "1h",
            "--max-retries",
            "0",
        ]);
    }
    rig.env.set_env("FIXTURE_MODE", "sleep");
    let began = Instant::now();
    let (mut group_kills, mut unknown, mut reconciled) = (0, 0, 0);
    for iteration in 0..iterations {
        rig.env.set_now(T0 + (iteration as i64 + 1) * HOUR);
        let sleep_ms = rng.below(301);
        rig.env.set_env(
            "FIXTURE_SLEEP",
            &format!("{}.{:03}", sleep_ms / 1000, sleep_ms % 1000),
        );
        let jobs = (1 + rng.below(3)).to_string();
        let starts_before = journal_starts(&journal).len();
        let mut tick = spawn(&rig.env, &["tick", "--lease", "2s", "--jobs", &jobs]);
        std::thread::sleep(Duration::from_millis(rng.below(400)));
        kill(tick.id() as i32, libc::SIGKILL);
        let _ = tick.wait();
        if rng.chance(50) {
            for (_, _, pid) in &journal_starts(&journal)[starts_before..] {
                kill(-pid, libc::SIGKILL);
                group_kills += 1;
            }
        }
        // Recovery: later than any lease the dead tick held.
        rig.env.advance(10);
        rig.tick(&["--lease", "2s"]).ok();
        rig.env.advance(1);
        rig.tick(&["--lease", "2s"]).ok();
        assert_eq!(
            rig.env
                .count("SELECT count(*) FROM runs WHERE status = 'running'"),
            0,
            "iteration {iteration}: a run is still running after recovery"
        );
        assert_invariants(&rig.env, &journal);
        // The operator settles what is uncertain, so the next occurrences can run.
        let open = rig
            .env
            .sql("SELECT run_id FROM runs WHERE status = 'unknown'");
        unknown += open.len();
        for (n, run) in open.iter().enumerate() {
            let decision = ["abandoned", "confirmed_failed", "confirmed_succeeded"][n % 3];
            rig.env
                .run(&[
                    "reconcile",
                    &run[0],
                    "--decision",
                    decision,
                    "--reason",
                    "reliability test",
                ])
                .ok();
            reconciled += 1;
        }
    }
    // Let orphaned executors finish, then a last tick must not start any of
    // their runs again.
    std::thread::sleep(Duration::from_millis(400));
    rig.env.advance(HOUR);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.tick(&[]).ok();
    let figures = assert_invariants(&rig.env, &journal);
    let unknown_started = rig.env.count(
        "SELECT count(*) FROM runs WHERE status IN ('unknown') OR run_id IN
           (SELECT run_id FROM reconciliations)",
    );
    eprintln!(
        "random kills: {iterations} iterations, {} runs, {} executor starts, {} occurrences, \
         {unknown} became unknown, {reconciled} reconciled, {group_kills} executor groups killed, \
         0 replays, {:?}",
        figures.runs,
        figures.starts,
        figures.occurrences,
        began.elapsed()
    );
    assert_eq!(unknown_started as usize, reconciled);
}
