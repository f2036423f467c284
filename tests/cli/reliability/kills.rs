//! Scenario 2: a tick SIGKILLed at a random moment (sometimes its executors'
//! or notifiers' process groups too), then recovery ticks with the clock
//! past the lease. Every run ends in a legal state and nothing is ever
//! replayed: a run that became `unknown` is never executed again, a notice
//! whose notifier was called is never sent again.
//!
//! 1,000 kills by default (×AGENTCRON_STRESS), spread over four databases
//! killed side by side so the suite stays within CI's minutes.
use crate::support::{Rig, Task, T0};

use std::time::{Duration, Instant};

use super::{
    assert_invariants, assert_notified_at_most_once, journal_starts, kill, notifier_calls,
    reconcile_unknown, recover, seeded, spawn, stress, Rng, SettledRuns,
};

const HOUR: i64 = 3600;
const TASKS: usize = 3;
const RIGS: u64 = 4;
const KILLS_PER_RIG: u64 = 250;

/// What one rig's kills came to.
#[derive(Debug, Default)]
struct Tally {
    runs: usize,
    starts: usize,
    occurrences: usize,
    unknown: usize,
    executor_groups_killed: usize,
    notifiers_killed: usize,
    notices: usize,
}

#[test]
fn random_kills_never_replay_a_run() {
    let (mut rng, _guard) = seeded("random_kills", 42);
    let iterations = KILLS_PER_RIG * stress();
    let seeds: Vec<u64> = (0..RIGS).map(|_| rng.next()).collect();
    let began = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let workers: Vec<_> = seeds
            .iter()
            .map(|&seed| scope.spawn(move || kill_repeatedly(Rng::new(seed), iterations)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .expect("a kill loop failed (its seed is printed above)")
            })
            .collect()
    });
    let sum = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    eprintln!(
        "random kills: {} kills over {RIGS} databases, {} runs, {} executor starts, {} occurrences accounted for, {} became \
         unknown, {} executor groups and {} notifiers killed, {} notices, 0 replays, \
         0 notices twice, {:?}",
        RIGS * iterations,
        sum(|t| t.runs),
        sum(|t| t.starts),
        sum(|t| t.occurrences),
        sum(|t| t.unknown),
        sum(|t| t.executor_groups_killed),
        sum(|t| t.notifiers_killed),
        sum(|t| t.notices),
        began.elapsed()
    );
}

fn kill_repeatedly(mut rng: Rng, iterations: u64) -> Tally {
    let rig = Rig::new();
    let journal = rig.env.path("exec.journal");
    let calls = rig.env.path("notify.calls");
    for i in 0..TASKS {
        Task::new()
            .instruction(&format!("killable {i}"))
            .max_retries("0")
            .confirm(&rig.env);
    }
    rig.with_notifier(0);
    rig.env.set_env("FIXTURE_MODE", "sleep");
    let mut tally = Tally::default();
    let mut settled = SettledRuns::read(&rig.env);
    for iteration in 0..iterations {
        rig.env.set_now(T0 + (iteration as i64 + 1) * HOUR);
        rig.env
            .set_env("FIXTURE_SLEEP", &format!("0.{:03}", rng.below(150)));
        rig.env
            .set_env("NOTIFIER_SLEEP", &format!("0.{:03}", rng.below(100)));
        let jobs = (1 + rng.below(3)).to_string();
        let starts_before = journal_starts(&journal).len();
        let notifiers_before = notifier_calls(&calls).len();
        let mut tick = spawn(&rig.env, &["tick", "--lease", "2s", "--jobs", &jobs]);
        std::thread::sleep(Duration::from_millis(rng.below(250)));
        kill(tick.id() as i32, libc::SIGKILL);
        let _ = tick.wait();
        if rng.chance(50) {
            for (_, _, pid) in &journal_starts(&journal)[starts_before..] {
                kill(-pid, libc::SIGKILL);
                tally.executor_groups_killed += 1;
            }
        }
        if rng.chance(50) {
            for (pid, _, _) in &notifier_calls(&calls)[notifiers_before..] {
                kill(-pid, libc::SIGKILL);
                tally.notifiers_killed += 1;
            }
        }
        recover(&rig, 600, &format!("iteration {iteration}"));
        // The full check reads every run and journal line; every 20th kill
        // keeps the suite linear (the last check sees everything anyway).
        if iteration % 20 == 19 {
            assert_invariants(&rig.env, &journal);
            assert_notified_at_most_once(&rig.env, &calls);
            settled = settled.assert_unchanged(&rig.env);
        }
        tally.unknown += reconcile_unknown(&rig.env, "reliability test");
    }
    // Let orphaned executors and notifiers finish, then a last tick must not
    // start any of their runs or send any of their notices again.
    std::thread::sleep(Duration::from_millis(300));
    rig.env.advance(HOUR);
    rig.env.set_env("FIXTURE_MODE", "succeed");
    rig.tick(&[]).ok();
    let figures = assert_invariants(&rig.env, &journal);
    tally.notices = assert_notified_at_most_once(&rig.env, &calls);
    settled.assert_unchanged(&rig.env);
    let reconciled = rig.env.count("SELECT count(*) FROM reconciliations");
    assert_eq!(
        reconciled as usize, tally.unknown,
        "every unknown run was reconciled once"
    );
    tally.runs = figures.runs;
    tally.starts = figures.starts;
    tally.occurrences = figures.occurrences as usize;
    tally
}
