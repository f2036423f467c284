//! Model-based test of the store (issue #6): random sequences of the
//! operations commands and the tick perform, applied both to a real store
//! (a SQLite file opened as the program opens it, or a PostgreSQL schema with
//! `AGENTCRON_TEST_STORE=postgres`) and to the reference model in
//! `model.rs`. After every step the store's state, read back through the
//! store traits, must equal the model's, and the global invariants must hold.
//!
//! Deterministic: a fixed seed (override with `AGENTCRON_SEED=N`), no
//! persisted failures; `AGENTCRON_STRESS=N` multiplies the number of cases.
//! On a failure proptest shrinks the sequence and the panic prints it.

mod check;
mod drive;
mod model;
mod ops;

use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};

/// Cases at AGENTCRON_STRESS=1, and the longest sequence a case runs.
const CASES: u32 = 160;
const STEPS: usize = 100;
const DEFAULT_SEED: u64 = 0x6167_656e_7463_726f; // "agentcro"

fn stress() -> u32 {
    std::env::var("AGENTCRON_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1)
}

fn seed() -> u64 {
    std::env::var("AGENTCRON_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED)
}

fn runner(cases: u32, seed: u64) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&seed.wrapping_mul(i as u64 * 2 + 1).to_le_bytes());
    }
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn run_model(backend: drive::Backend, cases: u32) {
    let seed = seed();
    eprintln!(
        "store_model: {backend:?}, {cases} cases of up to {STEPS} steps, seed {seed} \
         (replay: AGENTCRON_SEED={seed})"
    );
    let mut runner = runner(cases, seed);
    let started = std::time::Instant::now();
    let result = runner.run(&ops::ops(STEPS), |ops| {
        drive::run_case(backend, &ops).map_err(proptest::test_runner::TestCaseError::fail)
    });
    match result {
        Ok(()) => eprintln!(
            "store_model: passed in {:.1?}; exercised:\n{}",
            started.elapsed(),
            drive::tally_report()
        ),
        Err(TestError::Fail(why, ops)) => panic!(
            "the store disagrees with the model: {why}\n\
             minimal failing sequence ({} steps):\n{ops:#?}\n\
             replay: AGENTCRON_SEED={seed} cargo test --test store_model",
            ops.len()
        ),
        Err(TestError::Abort(why)) => panic!("proptest aborted: {why} (seed {seed})"),
    }
}

#[test]
fn sqlite_store_matches_the_model() {
    run_model(drive::Backend::Sqlite, CASES * stress());
}

#[test]
fn postgres_store_matches_the_model() {
    if std::env::var("AGENTCRON_TEST_STORE").as_deref() != Ok("postgres") {
        eprintln!("skipped: set AGENTCRON_TEST_STORE=postgres to run against PostgreSQL");
        return;
    }
    // A schema per case costs more on the server: fewer cases.
    run_model(drive::Backend::Postgres, (CASES / 4).max(1) * stress());
}

/// The sequences that found defects, replayed as they were shrunk.
mod regressions {
    use agentcron::model::RunStatus;

    use crate::drive::{run_case, Backend};
    use crate::ops::{Op, Pick, SchedSpec, Sel, TaskSpec, Tok};

    fn once_in_30s(grace: i64) -> Op {
        Op::Create(TaskSpec {
            name: None,
            sched: SchedSpec::Once { in_seconds: 30 },
            grace,
            max_retries: 0,
            backoff: 60,
        })
    }

    fn first() -> Pick {
        Pick {
            index: Sel(0),
            any: false,
        }
    }

    fn finish(to: RunStatus, notify: bool) -> Op {
        Op::Finish {
            run: first(),
            tok: Tok::Right,
            to,
            notify,
            wait: 0,
        }
    }

    /// Defect 1: resume recorded a second run for a once task's occurrence.
    #[test]
    fn resuming_a_claimed_once_task_records_no_second_run() {
        let ops = [
            once_in_30s(300),
            Op::Advance(30),
            Op::Claim { lease: 30 },
            Op::Pause {
                task: Sel(0),
                stale: false,
            },
            Op::Resume {
                task: Sel(0),
                stale: false,
            },
        ];
        run_case(Backend::Sqlite, &ops).unwrap();
    }

    /// Defect 2: `check` called an approved continuation's second departure
    /// from running a violation.
    #[test]
    fn an_approved_run_finishing_is_no_violation() {
        let ops = [
            once_in_30s(300),
            Op::Advance(30),
            Op::Claim { lease: 30 },
            finish(RunStatus::AwaitingConfirmation, false),
            Op::Approve {
                run: first(),
                right_wait: true,
                lease: 30,
            },
            finish(RunStatus::Succeeded, false),
        ];
        run_case(Backend::Sqlite, &ops).unwrap();
    }

    /// Defect 3 (PostgreSQL): a due retry of a once task broke due_tasks.
    #[test]
    fn a_due_retry_of_a_once_task_is_claimed_on_postgres() {
        if std::env::var("AGENTCRON_TEST_STORE").as_deref() != Ok("postgres") {
            return;
        }
        let ops = [
            Op::Create(TaskSpec {
                name: None,
                sched: SchedSpec::Once { in_seconds: 30 },
                grace: 300,
                max_retries: 1,
                backoff: 60,
            }),
            Op::Advance(120),
            Op::Claim { lease: 30 },
            finish(RunStatus::Failed, false),
            Op::Advance(60),
            Op::Claim { lease: 30 },
        ];
        run_case(Backend::Postgres, &ops).unwrap();
    }

    /// Was an open finding: a denied run's notice could be claimed while
    /// the notice announcing the wait was still being sent.
    #[test]
    fn a_run_has_one_notice_sending_at_a_time() {
        let ops = [
            Op::Create(TaskSpec {
                name: None,
                sched: SchedSpec::Interval {
                    seconds: 60,
                    anchor_in: 0,
                },
                grace: 60,
                max_retries: 0,
                backoff: 60,
            }),
            Op::Advance(60),
            Op::Claim { lease: 30 },
            finish(RunStatus::AwaitingConfirmation, true),
            Op::Deny(first()),
            Op::ClaimNotice {
                notice: first(),
                twice: false,
                deadline: 10,
            },
        ];
        run_case(Backend::Sqlite, &ops).unwrap();
    }
}
