//! Soak: the clock advances 60 s per round and 8 ticks overlap each round,
//! over a mix of schedules; afterwards nothing is lost or doubled and the
//! WAL stayed bounded. 30 rounds by default; AGENTCRON_STRESS=10 gives the
//! issue's 300.
use super::{assert_invariants, seeded, spawn, stress, SettledRuns};
use crate::support::{Rig, Task, T0};

#[test]
fn soak_overlapping_ticks_over_mixed_schedules() {
    let (mut rng, _guard) = seeded("soak", 11);
    let rig = Rig::new();
    let schedules: [&[&str]; 6] = [
        &["--every", "1m"],
        &["--every", "5m"],
        &["--every", "1h"],
        &["--cron", "*/2 * * * *"],
        &["--cron", "30 * * * *"],
        &["--daily", "08:10"],
    ];
    let tasks = 40 + 20 * stress() as usize; // 200 at STRESS=8, the size
    for i in 0..tasks {
        let schedule = schedules[rng.below(schedules.len() as u64) as usize];
        Task::named(&format!("s{i}"))
            .instruction("soak")
            .schedule(schedule)
            .confirm(&rig.env);
    }
    let rounds = 30 * stress();
    let mut wal_max = 0u64;
    let mut settled = SettledRuns::read(&rig.env);
    for round in 1..=rounds {
        rig.env.set_now(T0 + 60 * round as i64);
        let ticks: Vec<_> = (0..8)
            .map(|_| spawn(&rig.env, &["tick", "--max-runs", "100", "--jobs", "2"]))
            .collect();
        for tick in ticks {
            let out = tick.wait_with_output().unwrap();
            let code = out.status.code();
            assert!(
                code == Some(0) || code == Some(75),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if !crate::support::on_postgres() {
            let wal = std::fs::metadata(rig.env.db.with_extension("db-wal"))
                .map(|m| m.len())
                .unwrap_or(0);
            wal_max = wal_max.max(wal);
        }
        if round % 10 == 0 {
            settled = settled.assert_unchanged(&rig.env);
        }
    }
    // A last tick picks up anything a busy tick left due.
    rig.tick(&["--max-runs", "1000"]).ok();
    let figures = assert_invariants(&rig.env, &rig.env.path("exec.journal"));
    settled.assert_unchanged(&rig.env);
    eprintln!(
        "soak: {tasks} tasks, {rounds} rounds × 8 ticks, WAL max {wal_max} bytes, {figures:?}"
    );
    // The automatic checkpoint (1000 pages of 4 KiB) and journal_size_limit
    // (8 MiB) keep the WAL small; overlapping readers can delay a checkpoint,
    // so allow some slack.
    assert!(wal_max < 32 << 20, "the WAL grew to {wal_max} bytes");
}
