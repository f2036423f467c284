//! Usage an executor reports while it runs (docs/CONTRACT.md §20):
//! `agentcron lease check RUN --token T --usage KEY=N …` tells the tick the
//! run's total so far, through the run's own lease channel. The endpoint
//! only notes the highest total of each key in the run's slot (`Slot::
//! report`); the run's worker records what is new at its next heartbeat, in
//! one short transaction guarded by the lease: on the run, in its budget
//! windows and in the tenant's totals. So a tick killed with -9 loses at
//! most what was not reported yet, and a reconcile counts only the rest.
//!
//! Counted once: what was recorded while the run went is taken off its
//! final reply's usage at settle (`beyond_recorded`), key by key, never
//! below zero.
//!
//! When a report takes a window of the task's budgets past its limit, the
//! lease check answers 5 from then on and the run is stopped as a timeout
//! is (TERM, then KILL): a `read_only` run ends `failed`, a
//! `confirm_writes` run `unknown`, saying which budget (`stopped`).

use crate::executor_result::{ExecResult, ExecStatus};
use crate::limits::Usage;
use crate::model::Policy;

/// Parses the words after a lease request's token: `KEY=N` pairs read as a
/// reply's `usage` object is (bad entries dropped).
pub fn parse(words: &[&str]) -> Usage {
    let mut object = serde_json::Map::new();
    for word in words {
        let Some((key, amount)) = word.split_once('=') else {
            continue;
        };
        if let Ok(amount) = amount.parse::<f64>() {
            if let Some(number) = serde_json::Number::from_f64(amount) {
                object.insert(key.to_string(), serde_json::Value::Number(number));
            }
        }
    }
    Usage::read(&serde_json::Value::Object(object)).0
}

/// What is left to count at settle: the run's total (the larger of its
/// final reply's and its last report's, key by key) less what was recorded
/// while it went.
pub fn left_to_count(final_reply: Usage, reported: &Usage, recorded: &Usage) -> Usage {
    let mut total = final_reply;
    note(&mut total, reported);
    beyond(&total, recorded)
}

/// Notes a report in `reported`: the highest total of each key.
pub fn note(reported: &mut Usage, report: &Usage) {
    for (key, amount) in &report.amounts {
        match reported.amounts.iter_mut().find(|(k, _)| k == key) {
            Some(held) => held.1 = held.1.max(*amount),
            None => reported.amounts.push((key.clone(), *amount)),
        }
    }
}

/// What `total` holds beyond `recorded`, key by key (none below zero).
pub fn beyond(total: &Usage, recorded: &Usage) -> Usage {
    let amounts = total
        .amounts
        .iter()
        .filter_map(|(key, amount)| {
            let before = recorded
                .amounts
                .iter()
                .find(|(k, _)| k == key)
                .map_or(0.0, |(_, a)| *a);
            (*amount > before).then(|| (key.clone(), amount - before))
        })
        .collect();
    Usage { amounts }
}

pub fn plus(a: &Usage, b: &Usage) -> Usage {
    let mut sum = a.clone();
    for (key, amount) in &b.amounts {
        match sum.amounts.iter_mut().find(|(k, _)| k == key) {
            Some(held) => held.1 += amount,
            None => sum.amounts.push((key.clone(), *amount)),
        }
    }
    sum
}

/// What a run stopped for its budget comes to: `failed` (read_only) or
/// `unknown` (confirm_writes, its writes may be half done), saying why.
pub fn stopped(policy: Policy, result: ExecResult, reason: &str) -> ExecResult {
    match policy {
        Policy::ReadOnly => ExecResult {
            status: ExecStatus::Failed,
            summary: Some(reason.to_string()),
            reason: Some(format!("{reason}; process group killed")),
            ..result
        },
        Policy::ConfirmWrites => ExecResult {
            status: ExecStatus::Unknown,
            reason: Some(format!("{reason}; process group killed")),
            ..result
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_pairs_are_read_as_a_replys_usage() {
        let usage = parse(&[
            "usd=0.05",
            "tokens=1200",
            "bad",
            "runs=3",
            "neg=-1",
            "x=NaN",
        ]);
        assert_eq!(
            usage.amounts,
            vec![("tokens".to_string(), 1200.0), ("usd".to_string(), 0.05)]
        );
        assert!(parse(&[]).is_empty());
    }

    fn usage(pairs: &[(&str, f64)]) -> Usage {
        Usage {
            amounts: pairs.iter().map(|(k, a)| (k.to_string(), *a)).collect(),
        }
    }

    #[test]
    fn reports_are_totals_and_only_what_is_new_is_recorded_or_settled() {
        let mut reported = Usage::default();
        note(&mut reported, &usage(&[("usd", 0.02)]));
        note(&mut reported, &usage(&[("usd", 0.01), ("tokens", 10.0)]));
        assert_eq!(reported, usage(&[("usd", 0.02), ("tokens", 10.0)]));
        let recorded = usage(&[("usd", 0.02)]);
        assert_eq!(beyond(&reported, &recorded), usage(&[("tokens", 10.0)]));
        // The final reply says 0.05 in all: 0.03 is left to count.
        let left = beyond(&usage(&[("usd", 0.05)]), &recorded);
        assert_eq!(left.amounts.len(), 1);
        assert!((left.amounts[0].1 - 0.03).abs() < 1e-12);
        // A final reply below what was reported counts nothing more.
        assert!(beyond(&usage(&[("usd", 0.01)]), &recorded).is_empty());
        assert_eq!(
            plus(&recorded, &usage(&[("usd", 0.01), ("t", 1.0)]))
                .amounts
                .len(),
            2
        );
    }
}
