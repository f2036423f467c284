//! Scenario 5: copies of a small valid database with random byte flips,
//! overwritten blocks or truncation, and files that are not SQLite at all.
//! `list`, `tick` and `check` finish within 10 s, never panic or die by a
//! signal, print one error line or succeed, and never modify a file they
//! reported as not a database.
use crate::support::{Rig, Task, T0};

use std::time::Duration;

use super::bad_input::run_bounded;
use super::{seeded, stress, Rng};

const HOUR: i64 = 3600;

/// A small database with tasks, runs, notices and events, checkpointed so
/// the one file holds everything.
fn template(rig: &Rig) -> Vec<u8> {
    for i in 0..3 {
        Task::named(&format!("c{i}"))
            .instruction(&format!("corrupt me {i}"))
            .confirm(&rig.env);
    }
    rig.env.set_now(T0 + HOUR);
    rig.tick(&["--max-runs", "10"]).ok();
    rig.env.set_now(T0 + 2 * HOUR);
    {
        let conn = rusqlite::Connection::open(&rig.env.db).unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    std::fs::read(&rig.env.db).unwrap()
}

fn damage(original: &[u8], rng: &mut Rng) -> (String, Vec<u8>) {
    let mut bytes = original.to_vec();
    let len = bytes.len() as u64;
    match rng.below(5) {
        0 => {
            let n = 1 + rng.below(4);
            for _ in 0..n {
                let at = rng.below(len) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
            (format!("{n} bit flips"), bytes)
        }
        1 => {
            let at = rng.below(100) as usize;
            bytes[at] = rng.next() as u8;
            (format!("header byte {at} replaced"), bytes)
        }
        2 => {
            let at = rng.below(len) as usize;
            bytes.truncate(at);
            (format!("truncated to {at} bytes"), bytes)
        }
        3 => {
            let at = rng.below(len.saturating_sub(512)) as usize;
            for b in &mut bytes[at..at + 512] {
                *b = rng.next() as u8;
            }
            (format!("512 random bytes at {at}"), bytes)
        }
        _ => {
            let page = 4096;
            let pages = (bytes.len() / page).max(1);
            let at = (rng.below(pages as u64) as usize) * page;
            let end = (at + page).min(bytes.len());
            bytes[at..end].fill(0);
            (format!("page at {at} zeroed"), bytes)
        }
    }
}

fn not_sqlite(rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let mut random = vec![0u8; 8192];
    random.iter_mut().for_each(|b| *b = rng.next() as u8);
    let mut fake_header = b"SQLite format 3\0".to_vec();
    fake_header.extend_from_slice(&random[..4096]);
    vec![
        (
            "text".into(),
            b"these are my notes, not a database; please keep them\n".repeat(100),
        ),
        ("random bytes".into(), random),
        ("SQLite magic, then garbage".into(), fake_header),
        (
            "gzip header".into(),
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00".repeat(600),
        ),
    ]
}

#[derive(Debug, Default)]
struct Tally {
    opened: usize,
    refused_not_a_db: usize,
    other_errors: usize,
    check_violations: usize,
}

#[test]
fn corrupted_databases_are_refused_or_used_but_never_crash() {
    if crate::support::on_postgres() {
        return; // about the SQLite file itself
    }
    let (mut rng, _guard) = seeded("corrupted_databases", 5);
    let rig = Rig::new();
    let original = template(&rig);
    let mut samples: Vec<(String, Vec<u8>)> = (0..500 * stress())
        .map(|_| damage(&original, &mut rng))
        .collect();
    samples.extend(not_sqlite(&mut rng));
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let mut messages = std::collections::BTreeMap::new();
    for (i, (what, bytes)) in samples.iter().enumerate() {
        let dir = rig.env.path(&format!("copy{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("agentcron.db");
        std::fs::write(&copy, bytes).unwrap();
        let mut refused = false;
        for args in [&["list"][..], &["tick"], &["check"]] {
            let before = std::fs::read(&copy).unwrap();
            let mut cmd = rig.env.command(&[]);
            cmd.arg("--db").arg(&copy).args(args);
            let ran = run_bounded(cmd, Duration::from_secs(10));
            let context = format!("copy {i} ({what}), {args:?}");
            let errors = ran
                .stderr
                .lines()
                .filter(|l| l.starts_with("agentcron: error:"))
                .count();
            let allowed: &[i32] = if args == ["check"] { &[0, 1] } else { &[0] };
            match ran.code {
                None => failures.push(format!("{context}: still running after 10 s")),
                Some(code) if code < 0 => {
                    failures.push(format!("{context}: killed by signal {}", -code))
                }
                Some(101) => failures.push(format!("{context}: panicked: {}", ran.stderr)),
                Some(code) if allowed.contains(&code) && errors == 0 => {}
                Some(code) if code != 0 && errors == 1 => {}
                Some(code) => failures.push(format!(
                    "{context}: exit {code} with {errors} error lines: {}",
                    ran.stderr
                )),
            }
            if let Some(line) = ran
                .stderr
                .lines()
                .find(|l| l.starts_with("agentcron: error:"))
            {
                let line = line.replace(copy.to_str().unwrap(), "COPY");
                *messages.entry(line).or_insert(0) += 1;
            }
            if ran.stderr.contains("panicked") {
                failures.push(format!("{context}: panic message: {}", ran.stderr));
            }
            if ran.stderr.contains("not an agentcron database") {
                refused = true;
                if std::fs::read(&copy).unwrap() != before {
                    failures.push(format!(
                        "{context}: reported not a database, but the file changed"
                    ));
                }
            }
            if args == ["check"] && ran.code == Some(1) && ran.stdout.contains("violation") {
                tally.check_violations += 1;
            }
            if args == ["list"] {
                match ran.code {
                    Some(0) => tally.opened += 1,
                    _ if refused => tally.refused_not_a_db += 1,
                    _ => tally.other_errors += 1,
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
    eprintln!(
        "corrupted databases: {} copies; list opened {}, refused as not a database {}, \
         other errors {}; check found violations in {}",
        samples.len(),
        tally.opened,
        tally.refused_not_a_db,
        tally.other_errors,
        tally.check_violations
    );
    for (line, n) in &messages {
        eprintln!("  {n:4} × {line}");
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
