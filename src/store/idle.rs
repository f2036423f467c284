//! What an idle tick leaves beside a SQLite store, so that the next idle
//! tick need not open it (docs/CONTRACT.md §6, "An idle tick reads no
//! table"): when it ran, how long it took, which deployment ran it, and
//! until when nothing is due — valid only while the store's files are
//! exactly as they were when that was read.
//!
//! Most ticks find nothing to do, and opening the store to learn it (SQLite
//! parses the whole schema at a connection's first statement) was most of
//! their cost. The note makes that answer last from one idle tick to the
//! next: `until` is the first instant at which the agenda (`QueueTx::agenda`)
//! could find anything without a write, read under the write lock together
//! with the store's files (`files`, `sqlite::idle::files_now`: the `.db`'s
//! identity, the `-wal`'s, and the WAL index's committed state). Every
//! commit, by agentcron or anything else, moves the WAL index's last frame
//! and checksum, so a note whose files no longer match says nothing, and
//! the tick opens the store as before. A chain of resting ticks ends at
//! most 4 minutes after the store's own record (`recorded_at`).

use serde::{Deserialize, Serialize};

/// The suffix of the note's file beside the `.db`.
pub const NOTE_SUFFIX: &str = "-idle";

/// What a tick records of its deployment (`recording::record_deployment`):
/// a tick whose deployment differs from the note's opens the store, so
/// that `status` says what runs the runs now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deployment {
    pub host: String,
    pub build: String,
    /// `--max-running`, as the meta row holds it ("" for none).
    pub max_running: String,
    pub runs_uid: u32,
    pub store_uid: u32,
}

/// What decides when a waiting notice is a tick's work: with a notifier,
/// when its backoff ends; without one, at once until it was announced;
/// either way when it is given up (`--delivery-give-up`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoticeRules {
    pub notifier: bool,
    pub give_up_seconds: i64,
}

/// The last idle tick's note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleNote {
    /// When the last idle tick ran (unix seconds, the tick's clock).
    pub at: i64,
    /// When the tick that wrote the note, the last to open the store,
    /// recorded itself there (`last_tick_at`).
    pub recorded_at: i64,
    /// How long it took, as `metrics` reports `last_tick_seconds`.
    pub seconds: String,
    pub deployment: Deployment,
    /// The rules `until` was read under: a tick under others opens the store.
    pub notices: NoticeRules,
    /// Nothing is due before this instant, while `files` holds.
    pub until: Option<i64>,
    /// The store's files when `until` was read.
    pub files: String,
}

impl IdleNote {
    /// Whether a tick at `now` `asked` may end here: the note says nothing
    /// is due yet, the store recorded a tick at most `rest_for` seconds ago
    /// (so that its own record, its checks and `status`'s deployment are
    /// never older than that, whatever becomes of the note), the clock did
    /// not go back, and the deployment and notice rules are the same. The
    /// files are the caller's to compare.
    pub fn lets_tick_rest(&self, now: i64, asked: &Asked<'_>, rest_for: i64) -> bool {
        self.until.is_some_and(|until| now < until)
            && (0..=rest_for).contains(&(now - self.recorded_at))
            && now >= self.at
            && &self.deployment == asked.deployment
            && self.notices == asked.notices
    }
}

/// What a tick compares with the note before it rests.
pub struct Asked<'a> {
    pub deployment: &'a Deployment,
    pub notices: NoticeRules,
}

/// The last tick's time: what the store recorded (`last_tick_at`), or the
/// note's, whichever is later.
pub fn last_tick(recorded: Option<i64>, note: Option<&IdleNote>) -> Option<i64> {
    recorded.max(note.map(|n| n.at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Deployment {
        Deployment {
            host: "h".into(),
            build: "b".into(),
            max_running: String::new(),
            runs_uid: 1000,
            store_uid: 1000,
        }
    }

    const RULES: NoticeRules = NoticeRules {
        notifier: true,
        give_up_seconds: 86400,
    };

    fn note(at: i64, until: Option<i64>) -> IdleNote {
        IdleNote {
            at,
            recorded_at: at,
            seconds: "0.001".into(),
            deployment: deployment(),
            notices: RULES,
            until,
            files: "f".into(),
        }
    }

    #[test]
    fn a_tick_rests_only_before_the_next_work_within_the_gap_of_the_same_deployment() {
        let same = deployment();
        let asked = Asked {
            deployment: &same,
            notices: RULES,
        };
        let n = note(1000, Some(1200));
        assert!(n.lets_tick_rest(1060, &asked, 240));
        assert!(n.lets_tick_rest(1199, &asked, 240));
        // Due at 1200: the tick at 1200 works.
        assert!(!n.lets_tick_rest(1200, &asked, 240));
        assert!(!note(1000, None).lets_tick_rest(1060, &asked, 240));
        // The store's own record is never older than `rest_for`, however
        // recent the last resting tick.
        let mut rested = note(1000, Some(5000));
        rested.at = 1240;
        assert!(rested.lets_tick_rest(1240, &asked, 240));
        assert!(!rested.lets_tick_rest(1241, &asked, 240));
        // A clock gone back opens the store.
        assert!(!rested.lets_tick_rest(1239, &asked, 240));
        assert!(!n.lets_tick_rest(999, &asked, 240));
        let mut other = deployment();
        other.max_running = "4".into();
        let elsewhere = Asked {
            deployment: &other,
            notices: RULES,
        };
        assert!(!n.lets_tick_rest(1060, &elsewhere, 240));
        let without_notifier = Asked {
            deployment: &same,
            notices: NoticeRules {
                notifier: false,
                ..RULES
            },
        };
        assert!(!n.lets_tick_rest(1060, &without_notifier, 240));
    }

    #[test]
    fn the_last_tick_is_the_later_of_the_store_and_the_note() {
        assert_eq!(last_tick(Some(5), Some(&note(9, None))), Some(9));
        assert_eq!(last_tick(Some(9), Some(&note(5, None))), Some(9));
        assert_eq!(last_tick(None, Some(&note(5, None))), Some(5));
        assert_eq!(last_tick(Some(5), None), Some(5));
    }
}
