//! The reliability suite (issue #6): claim storms, random kills, clock
//! faults, bad input, corrupted databases and the security checklist of
//! docs/CONTRACT.md §11, each scenario followed by one shared invariant check.
//!
//! Randomness comes from a tiny xorshift generator seeded from a printed
//! constant or `AGENTCRON_SEED`; the seed is printed whenever a scenario
//! fails. `AGENTCRON_STRESS=N` multiplies every iteration count by N.

mod ambiguous_commit;
pub mod bad_input;
mod bounded_input;
mod claim_storm;
mod clock_faults;
mod confirmed;
mod corruption;
mod fencing_revival;
mod host_clocks;
mod kills;
mod power_loss;
mod security;
mod soak;
pub mod store_files;
mod unsafe_files;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::support::TestEnv;

/// xorshift64*: small, fast and reproducible from one integer.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Zero is xorshift's one fixed point; any other constant will do.
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The seed of a scenario: `AGENTCRON_SEED` when set, else its constant.
/// The returned guard prints it if the test fails, so a failure can be
/// replayed exactly; `scenario` is a unique part of the test's name, used
/// as the cargo test filter in the replay line.
pub fn seeded(scenario: &str, default: u64) -> (Rng, SeedGuard) {
    let seed = std::env::var("AGENTCRON_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default);
    eprintln!("{scenario}: seed {seed}, stress {}", stress());
    (
        Rng::new(seed),
        SeedGuard {
            scenario: scenario.to_string(),
            seed,
        },
    )
}

pub struct SeedGuard {
    scenario: String,
    seed: u64,
}

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "\n*** {} failed with seed {}: reproduce with AGENTCRON_SEED={} AGENTCRON_STRESS={} \
                 cargo test --test cli {} -- --nocapture\n",
                self.scenario,
                self.seed,
                self.seed,
                stress(),
                self.scenario
            );
        }
    }
}

/// `AGENTCRON_STRESS`, default 1.
pub fn stress() -> u64 {
    std::env::var("AGENTCRON_STRESS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1)
}

pub const LEGAL_STATUSES: &[&str] = &[
    "running",
    "succeeded",
    "failed",
    "delivery_failed",
    "awaiting_confirmation",
    "awaiting_authorization",
    "unknown",
    "missed",
    "skipped_overlap",
    "skipped_budget",
    "skipped_gate",
    "skipped_profile",
];

/// `start <run_id> <token> <pid> ...` lines of the executor fixture's journal.
pub fn journal_starts(path: &Path) -> Vec<(String, String, i32)> {
    executions(path)
        .into_iter()
        .map(|e| (e.run, e.token, e.pid))
        .collect()
}

/// One executor invocation as the fixture journaled it.
pub struct Execution {
    pub run: String,
    pub token: String,
    pub pid: i32,
    pub task: String,
    /// Unix seconds of the occurrence from the run on stdin, when present.
    pub occurrence: Option<i64>,
    pub attempt: Option<i64>,
    pub started_ns: Option<i128>,
    pub ended_ns: Option<i128>,
}

/// Every executor invocation in the journal, with its end when it ended.
pub fn executions(path: &Path) -> Vec<Execution> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut ends: HashMap<&str, i128> = HashMap::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        if parts.next() == Some("end") {
            if let (Some(run), Some(at)) = (parts.next(), parts.next()) {
                if let Ok(at) = at.parse() {
                    ends.insert(run, at);
                }
            }
        }
    }
    text.lines()
        .filter_map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            if parts.first() != Some(&"start") || parts.len() < 4 {
                return None;
            }
            let field = |i: usize| parts.get(i).copied().filter(|f| *f != "-");
            Some(Execution {
                run: parts[1].to_string(),
                token: parts[2].to_string(),
                pid: parts[3].parse().ok()?,
                task: field(4).unwrap_or_default().to_string(),
                occurrence: field(5).map(|t| {
                    chrono::DateTime::parse_from_rfc3339(t)
                        .unwrap_or_else(|e| panic!("journal occurrence {t}: {e}"))
                        .timestamp()
                }),
                attempt: field(6).and_then(|a| a.parse().ok()),
                started_ns: field(7).and_then(|a| a.parse().ok()),
                ended_ns: ends.get(parts[1]).copied(),
            })
        })
        .collect()
}

/// What the invariant check measured, for the figures in RELIABILITY.md.
#[derive(Debug, Default)]
pub struct Figures {
    pub runs: usize,
    pub starts: usize,
    pub occurrences: i64,
}

/// The invariants every scenario ends with:
/// - `agentcron check` exits 0 and `PRAGMA integrity_check` is ok;
/// - one run per (task, occurrence, attempt), every status legal;
/// - the journal has at most one start per run id and per (task,
///   occurrence, attempt), and names only runs that exist;
/// - no occurrence of an interval task was lost: its first-attempt runs
///   (a coalesced missed run counting `skipped_occurrences`) cover every
///   occurrence from its creation up to its `next_run_at`.
///
/// (That no process exited 101 is asserted by `TestEnv::run` itself.)
pub fn assert_invariants(env: &TestEnv, journal: &Path) -> Figures {
    let check = env.run(&["check"]);
    assert_eq!(
        check.code, 0,
        "agentcron check: {}{}",
        check.stdout, check.stderr
    );
    // (`agentcron check` runs the server-side checks on PostgreSQL.)
    if !crate::support::on_postgres() {
        assert_eq!(env.sql("PRAGMA integrity_check")[0][0], "ok");
    }
    let dupes = env.sql(
        "SELECT task_id, scheduled_for, attempt, count(*) FROM runs
         GROUP BY task_id, scheduled_for, attempt HAVING count(*) > 1",
    );
    assert!(dupes.is_empty(), "duplicate runs: {dupes:?}");
    let runs = env.sql("SELECT run_id, task_id, scheduled_for, attempt, status FROM runs");
    let mut by_id: HashMap<&str, (&str, &str, &str)> = HashMap::new();
    for r in &runs {
        assert!(
            LEGAL_STATUSES.contains(&r[4].as_str()),
            "illegal status {r:?}"
        );
        by_id.insert(&r[0], (&r[1], &r[2], &r[3]));
    }
    let starts = executions(journal);
    let mut seen_runs = HashSet::new();
    let mut seen_occurrences = HashSet::new();
    let mut journaled_occurrences = HashSet::new();
    for e in &starts {
        let run = &e.run;
        assert!(seen_runs.insert(run.as_str()), "run {run} started twice");
        let stored = by_id
            .get(run.as_str())
            .unwrap_or_else(|| panic!("journal names run {run}, which the store does not have"));
        assert!(
            seen_occurrences.insert(*stored),
            "occurrence {stored:?} started twice"
        );
        // The journal's own account, not only the store's: what the
        // executor was told it is running.
        if let (Some(at), Some(attempt)) = (e.occurrence, e.attempt) {
            assert_eq!(
                (e.task.as_str(), at.to_string(), attempt.to_string()),
                (stored.0, stored.1.to_string(), stored.2.to_string()),
                "run {run}: the executor was given another occurrence than the store has"
            );
            assert!(
                journaled_occurrences.insert((e.task.clone(), at, attempt)),
                "the journal shows occurrence {at} attempt {attempt} of {} twice",
                e.task
            );
        }
        if let (Some(start), Some(end)) = (e.started_ns, e.ended_ns) {
            assert!(end >= start, "run {run} ended before it started");
        }
    }
    let occurrences = assert_no_interval_occurrence_lost(env);
    Figures {
        runs: runs.len(),
        starts: starts.len(),
        occurrences,
    }
}

/// After a crash: two ticks, the first `past` seconds later (beyond every
/// lease and delivery deadline the dead tick held); then no run may be left
/// `running`.
pub fn recover(rig: &crate::support::Rig, past: i64, context: &str) {
    rig.env.advance(past);
    rig.tick(&["--lease", "2s"]).ok();
    rig.env.advance(1);
    rig.tick(&["--lease", "2s"]).ok();
    assert_eq!(
        rig.env
            .count("SELECT count(*) FROM runs WHERE status = 'running'"),
        0,
        "{context}: a run is still running after recovery"
    );
}

/// The operator settles every `unknown` run (cycling the three decisions)
/// so later occurrences can run; returns how many there were.
pub fn reconcile_unknown(env: &TestEnv, reason: &str) -> usize {
    let open = env.sql("SELECT run_id FROM runs WHERE status = 'unknown'");
    for (n, run) in open.iter().enumerate() {
        let decision = ["abandoned", "confirmed_failed", "confirmed_succeeded"][n % 3];
        env.run(&[
            "reconcile",
            &run[0],
            "--decision",
            decision,
            "--reason",
            reason,
        ])
        .ok();
    }
    open.len()
}

/// Every settled run (docs/CONTRACT.md: settled runs never change again; `unknown` ones
/// only through reconcile, after which they are settled too), all columns.
#[derive(Default)]
pub struct SettledRuns(HashMap<String, Vec<String>>);

impl SettledRuns {
    pub fn read(env: &TestEnv) -> SettledRuns {
        let rows = env.sql(
            "SELECT * FROM runs WHERE status IN
               ('succeeded', 'failed', 'delivery_failed', 'missed', 'skipped_overlap')",
        );
        SettledRuns(rows.into_iter().map(|r| (r[0].clone(), r)).collect())
    }

    /// Asserts that every run settled in `self` is still in the store,
    /// column for column; returns the store's settled runs now.
    pub fn assert_unchanged(&self, env: &TestEnv) -> SettledRuns {
        let now = SettledRuns::read(env);
        for (run, row) in &self.0 {
            assert_eq!(
                now.0.get(run),
                Some(row),
                "settled run {run} changed (before: {row:?})"
            );
        }
        now
    }
}

/// `<pid> <run id> <delivery id>` lines the notifier fixture writes first
/// thing on every call (`NOTIFIER_CALLS`).
pub fn notifier_calls(path: &Path) -> Vec<(i32, String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut parts = l.split(' ');
            let pid = parts.next()?.parse().ok()?;
            Some((pid, parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect()
}

/// Every notifier call (the fixture's `NOTIFIER_CALLS` ledger) was claimed
/// in the store before it began: its delivery exists and is no longer
/// `pending`, so no tick can send it again; and no delivery was sent twice.
/// Returns how many calls there were.
pub fn assert_notified_at_most_once(env: &TestEnv, calls: &Path) -> usize {
    let calls = notifier_calls(calls);
    let mut seen = HashSet::new();
    for (_, run, delivery) in &calls {
        assert!(
            seen.insert(delivery),
            "delivery {delivery} of run {run} sent twice"
        );
        let state = env.sql(&format!(
            "SELECT state FROM deliveries WHERE delivery_id = '{delivery}' AND run_id = '{run}'"
        ));
        assert!(
            state.len() == 1 && state[0][0] != "pending",
            "run {run} was notified but its delivery {delivery} is {state:?}"
        );
    }
    calls.len()
}

/// Returns how many interval occurrences were accounted for.
fn assert_no_interval_occurrence_lost(env: &TestEnv) -> i64 {
    let field = |name: &str| {
        if crate::support::on_postgres() {
            format!("(schedule::jsonb->>'{name}')")
        } else {
            format!("json_extract(schedule, '$.{name}')")
        }
    };
    let tasks = env.sql(&format!(
        "SELECT task_id, {}, {}, created_at, coalesce(next_run_at, 253402300799 + 1), state
         FROM tasks WHERE {} = 'interval'",
        field("seconds"),
        field("anchor_at"),
        field("kind")
    ));
    let mut total = 0;
    for t in tasks {
        let [id, seconds, anchor, created, next, state] = &t[..] else {
            unreachable!()
        };
        let (seconds, anchor, created, next): (i64, i64, i64, i64) = (
            seconds.parse().unwrap(),
            anchor.parse().unwrap(),
            created.parse().unwrap(),
            next.parse().unwrap(),
        );
        if next <= 253_402_300_799 {
            assert_eq!(
                (next - anchor) % seconds,
                0,
                "task {id}: next_run_at {next} is not an occurrence"
            );
        }
        // Occurrences strictly after creation and strictly before next_run_at.
        let first_k = (created - anchor).div_euclid(seconds) + 1;
        let last_k = (next - 1 - anchor).div_euclid(seconds);
        let last_k = last_k.min((253_402_300_799 - anchor).div_euclid(seconds));
        let expected = (last_k - first_k + 1).max(0);
        let covered: i64 = env.count(&format!(
            "SELECT coalesce(sum(CASE WHEN status = 'missed' THEN CASE WHEN skipped_occurrences > 1 THEN skipped_occurrences ELSE 1 END ELSE 1 END), 0)
             FROM runs WHERE task_id = '{id}' AND attempt = 1"
        ));
        assert_eq!(
            covered, expected,
            "task {id} ({state}): runs cover {covered} occurrences, {expected} were due before next_run_at {next}"
        );
        total += expected;
    }
    total
}

/// Spawns `agentcron` with the env's settings and `args`, output piped.
pub fn spawn(env: &TestEnv, args: &[&str]) -> std::process::Child {
    env.command(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentcron")
}

pub fn kill(pid: i32, signal: i32) {
    // SAFETY: sending a signal has no memory effects on this process.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Raw control characters that must never reach a terminal unescaped.
pub fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            matches!(c, '\u{1b}' | '\u{9b}' | '\u{7}' | '\u{8}' | '\u{0}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}
