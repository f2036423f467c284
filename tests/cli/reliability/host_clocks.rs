//! Scenario (PostgreSQL): three hosts whose clocks are −30 s, 0 and +30 s
//! off share one schema (docs/CONTRACT.md §12: lease deadlines are written and
//! judged by the server's clock). Each host's tick claims two runs under a
//! 10 s lease, one after the other, while the earlier ones still run. No
//! host may freeze another's healthy run as `unknown`, and no occurrence may
//! run twice. `AGENTCRON_TEST_CLOCK_SKEW` plays each host's clock.
use crate::support::{assert_contains, on_postgres, Rig, Task, TestEnv, T0};
use std::process::Child;
use std::time::{Duration, Instant};

use super::{assert_invariants, executions, spawn};

const HOSTS: [Option<&str>; 3] = [Some("-30s"), None, Some("+30s")];
const TASKS: usize = 6;

/// Waits until the journal shows `n` executor starts.
fn wait_for_starts(rig: &Rig, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while executions(&rig.env.path("exec.journal")).len() < n {
        assert!(Instant::now() < deadline, "{n} executors never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn hosts_with_skewed_clocks_never_freeze_each_others_runs() {
    if !on_postgres() {
        eprintln!("skipped: runs with AGENTCRON_TEST_STORE=postgres");
        return;
    }
    let rig = Rig::new();
    rig.env.executors_sleep("3");
    for i in 0..TASKS {
        Task::new()
            .instruction(&format!("host work {i}"))
            .flags(&["--grace", "5m"])
            .confirm(&rig.env);
    }
    // Due for every host, the slow one included (it sees 30 s earlier).
    rig.env.set_now(T0 + 3600 + 30);
    let mut ticks: Vec<Child> = Vec::new();
    for (i, skew) in HOSTS.iter().enumerate() {
        match skew {
            Some(s) => rig.env.set_env("AGENTCRON_TEST_CLOCK_SKEW", s),
            None => rig.env.set_env("AGENTCRON_TEST_CLOCK_SKEW", "0s"),
        }
        ticks.push(spawn(
            &rig.env,
            &["tick", "--lease", "10s", "--jobs", "2", "--max-runs", "2"],
        ));
        // The next host starts (and runs step 1, lease expiry) while this
        // host's runs are still running.
        wait_for_starts(&rig, 2 * (i + 1));
    }
    let mut said = String::new();
    for tick in ticks {
        let out = tick.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        assert_eq!(stderr, "");
        said.push_str(&stdout);
    }
    assert!(!said.contains("lease"), "a host lost a lease:\n{said}");
    let statuses = rig
        .env
        .sql("SELECT status, count(*) FROM runs GROUP BY status ORDER BY status");
    assert_eq!(
        statuses,
        vec![vec!["succeeded".to_string(), TASKS.to_string()]],
        "{said}"
    );
    let figures = assert_invariants(&rig.env, &rig.env.path("exec.journal"));
    assert_eq!((figures.runs, figures.starts), (TASKS, TASKS));
    // Every host writes lease deadlines on the server's clock.
    let leases = rig
        .env
        .sql("SELECT count(*) FROM events WHERE action = 'lease_expired'");
    assert_eq!(leases, vec![vec!["0".to_string()]]);
    // While `status` still tells each host how far its own clock is off.
    for (skew, expected) in [("-30s", 30), ("0s", 0), ("+30s", -30)] {
        rig.env.set_env("AGENTCRON_TEST_CLOCK_SKEW", skew);
        let status = rig.env.json(&["status"]);
        let seen = status["clock_skew_seconds"].as_i64().unwrap();
        assert!(
            (seen - expected).abs() <= 1,
            "skew {skew}: status says {seen}"
        );
    }
}

// ---- 8b. status: the sign of the clock skew --------------------------------

#[test]
fn status_says_which_clock_is_ahead() {
    if !on_postgres() {
        // A SQLite file has no server clock to disagree with.
        return;
    }
    let env = TestEnv::new();
    Task::named("h").confirm(&env);
    // This host's clock 30 s behind: the server's is 30 s ahead of it.
    env.set_env("AGENTCRON_TEST_CLOCK_SKEW", "-30s");
    let out = env.run(&["status"]).ok();
    assert_contains(
        &out.stdout,
        "the database server's clock is 30 s ahead of this host's",
    );
    assert_contains(
        &out.stderr,
        "agentcron: warning: the database server's clock is 30 s ahead of this host's",
    );
    env.set_env("AGENTCRON_TEST_CLOCK_SKEW", "+30s");
    let out = env.run(&["status"]).ok();
    assert_contains(
        &out.stderr,
        "the database server's clock is 30 s behind this host's",
    );
}
