//! The policy's decisions, run after run, with the memory carried between
//! them as the store carries it: the ten cases of docs/CONTRACT.md §16.

use super::*;
use crate::model::{Parking, Run, RunEnd, RunState, RunStatus, Start, Task, Wait, WaitKind};
use crate::payload::Payload;
use crate::schedule::Schedule;

/// A run settled as `status` at `at` (a skipped overlap names a blocker,
/// a parked run a wait).
fn ended(status: RunStatus, at: i64) -> RunState {
    let kind = match status {
        RunStatus::AwaitingConfirmation => Some(WaitKind::Confirmation),
        RunStatus::AwaitingAuthorization => Some(WaitKind::Authorization),
        _ => None,
    };
    let start = Start {
        at,
        queued_seconds: Some(0),
    };
    if let Some(kind) = kind {
        let wait = Wait {
            kind,
            id: "w1".into(),
            deadline: at + 3600,
        };
        return RunState::Awaiting {
            start,
            parking: Parking {
                wait,
                approval: None,
            },
        };
    }
    let end = match status {
        RunStatus::SkippedOverlap => RunEnd::SkippedOverlap {
            blocked_by: "r1".into(),
        },
        status => RunEnd::of(status).expect("a status that ends a run"),
    };
    RunState::Ended {
        end,
        start: Some(start),
        finished_at: at,
    }
}

const HOUR: i64 = 3600;

fn task(mode: NotifyMode) -> Task {
    // Written as the canonical text a person confirms, so that a new
    // optional field of the payload leaves this test as it is.
    let schedule = Schedule::Interval {
        seconds: 60,
        anchor_at: 0,
    };
    let canonical = serde_json::json!({
        "grace_seconds": 90, "instruction": "check the backups", "max_retries": 0,
        "name": "backups", "notify": mode.as_str(), "owner_keys": ["unix:alice"],
        "policy": "read_only", "realert_seconds": HOUR, "retry_backoff_seconds": 60,
        "schedule": schedule.to_json(), "target": "chat:1", "tenant_key": "default",
        "timezone": "UTC",
    });
    let payload = Payload::from_canonical(&canonical.to_string()).unwrap();
    let zone = payload.zone.named();
    payload.new_task("t1".into(), "h".into(), 60, zone, 0)
}

/// Plays runs through the policy as the tick would, keeping the memory.
struct Player {
    task: Task,
    memory: TaskMemory,
    /// The ledger's last skip notice sent, as `last_skip_sent` reads it.
    skip_sent: Option<(String, i64)>,
    /// The reason the next skipped run gives.
    blocked_by: &'static str,
}

impl Player {
    fn new(mode: NotifyMode) -> Player {
        Player {
            task: task(mode),
            memory: TaskMemory::new("t1"),
            skip_sent: None,
            blocked_by: "run r1 is still unknown",
        }
    }

    fn settle(
        &mut self,
        at: i64,
        status: RunStatus,
        summary: &str,
        says: Option<bool>,
    ) -> Decision {
        let reason = (status == RunStatus::SkippedOverlap).then_some(self.blocked_by);
        self.play(at, status, reason, summary, says, false)
    }

    /// A failure that ended as `reason` says ("exit status 1", "error
    /// kind: quota"), saying `summary`.
    fn fail(&mut self, at: i64, reason: &str, summary: &str) -> Decision {
        self.play(at, RunStatus::Failed, Some(reason), summary, None, false)
    }

    fn play(
        &mut self,
        at: i64,
        status: RunStatus,
        reason: Option<&str>,
        summary: &str,
        says: Option<bool>,
        caught_up: bool,
    ) -> Decision {
        let run = Run::new(&self.task, at, at, 1, ended(status, at), at, |r| {
            r.summary = (!summary.is_empty()).then(|| summary.to_string());
            r.reason = reason.map(str::to_string);
        });
        let decision = decide(
            &Facts {
                run: &run,
                policy: self.task.payload.notice,
                executor_says: says,
                paused_task: false,
                last_skip_sent: self.skip_sent.clone(),
                already_told: false,
                caught_up,
                in_gap: InGap::Alone,
                now: at,
            },
            self.memory.clone(),
        );
        self.memory = decision.memory.clone();
        if status == RunStatus::SkippedOverlap && decision.suppressed.is_none() {
            self.skip_sent = Some((skip_key(&run), at));
        }
        decision
    }
}

fn sent(d: &Decision) -> bool {
    d.suppressed.is_none()
}

#[test]
fn a_first_failure_is_sent() {
    let mut p = Player::new(NotifyMode::Attention);
    let d = p.settle(60, RunStatus::Failed, "timeout", None);
    assert_eq!((d.kind, d.suppressed), (NoticeKind::Failure, None));
}

#[test]
fn the_same_failure_within_the_window_is_held_back() {
    let mut p = Player::new(NotifyMode::Attention);
    p.settle(60, RunStatus::Failed, "timeout", None);
    let d = p.settle(120, RunStatus::Failed, "timeout", None);
    assert_eq!(d.suppressed, Some(DUPLICATE_FAILURE));
    assert_eq!(p.memory.suppressed_count, 1);
}

#[test]
fn a_failure_of_another_class_is_sent_at_once() {
    let mut p = Player::new(NotifyMode::Attention);
    p.fail(60, "exit status 1", "boom");
    // Another exit status, a timeout, an error kind: each a new state.
    for (at, reason) in [
        (120, "exit status 2"),
        (180, "timed out after 5 s; process group killed"),
        (240, "error kind: rate_limited"),
        (300, "error kind: auth"),
    ] {
        let d = p.fail(at, reason, "boom");
        assert!(sent(&d), "{reason}");
        assert!(!d.reminder, "{reason}");
    }
}

#[test]
fn a_failure_whose_summary_alone_differs_is_the_same_state() {
    // An agent's summary carries a varying token count: not news.
    let mut p = Player::new(NotifyMode::Attention);
    assert!(sent(&p.fail(60, "error kind: quota", "used 1200 tokens")));
    for i in 2..=59 {
        let d = p.fail(i * 60, "error kind: quota", &format!("used {i}00 tokens"));
        assert_eq!(d.suppressed, Some(DUPLICATE_FAILURE), "minute {i}");
    }
    // Without a kind the exit status is the class; the summary never is.
    let mut p = Player::new(NotifyMode::Failures);
    assert!(sent(&p.settle(60, RunStatus::Failed, "HTTP 500", None)));
    assert!(!sent(&p.settle(120, RunStatus::Failed, "HTTP 502", None)));
}

#[test]
fn a_reminder_past_the_window_covers_the_runs_held_back() {
    let mut p = Player::new(NotifyMode::Attention);
    p.fail(60, "exit status 1", "a");
    for i in 2..=60 {
        assert!(!sent(&p.fail(i * 60, "exit status 1", "b")));
    }
    let d = p.fail(61 * 60, "exit status 1", "c");
    assert!(sent(&d) && d.reminder);
    assert_eq!(d.kind, NoticeKind::Failure);
    assert_eq!(d.suppressed_since_last, 59);
    // The first of a new class is no reminder.
    assert!(!p.fail(62 * 60, "exit status 3", "d").reminder);
}

#[test]
fn the_class_of_a_failure_is_its_kind_or_how_it_ended() {
    for (reason, class) in [
        (None, "reported"),
        (Some("exit status 1"), "exit status 1"),
        (Some("error kind: rate_limited"), "error_kind rate_limited"),
        (Some("timed out after 5 s; process group killed"), "timeout"),
        (
            Some("executor could not start: No such file"),
            "executor could not start",
        ),
        (
            Some("malformed executor reply: the last line is longer"),
            "malformed executor reply",
        ),
    ] {
        assert_eq!(failure_class(reason), class, "{reason:?}");
    }
}

#[test]
fn designed_outcomes_are_quiet_under_attention_and_told_under_always() {
    for (mode, expected) in [(NotifyMode::Attention, false), (NotifyMode::Always, true)] {
        let mut p = Player::new(mode);
        // The gate said there is nothing to do.
        let gate = p.play(
            60,
            RunStatus::SkippedGate,
            Some("gate"),
            "nothing new",
            None,
            false,
        );
        assert_eq!(sent(&gate), expected, "{mode:?}");
        // A coalesced missed run whose catch-up ran.
        let missed = p.play(120, RunStatus::Missed, Some("late"), "", None, true);
        assert_eq!(sent(&missed), expected, "{mode:?}");
    }
    // Missed occurrences with no catch-up are still news.
    let mut p = Player::new(NotifyMode::Attention);
    assert!(sent(&p.play(
        60,
        RunStatus::Missed,
        Some("late"),
        "",
        None,
        false
    )));
}

#[test]
fn every_kind_has_a_state() {
    assert_eq!(state_of(NoticeKind::Failure), "failing");
    assert_eq!(state_of(NoticeKind::Recovery), "healthy");
    assert_eq!(state_of(NoticeKind::Budget), "budget_spent");
    assert_eq!(state_of(NoticeKind::Overdue), "overdue");
}

#[test]
fn after_the_window_a_failure_is_sent_with_the_count_held_back() {
    let mut p = Player::new(NotifyMode::Attention);
    p.settle(60, RunStatus::Failed, "timeout", None);
    for i in 1..=3 {
        assert!(!sent(&p.settle(
            60 + i * 60,
            RunStatus::Failed,
            "timeout",
            None
        )));
    }
    let d = p.settle(60 + HOUR, RunStatus::Failed, "timeout", None);
    assert!(sent(&d));
    assert_eq!(d.suppressed_since_last, 3);
    assert_eq!(p.memory.suppressed_count, 0);
    // And the window starts again from that notice.
    assert!(!sent(&p.settle(
        120 + HOUR,
        RunStatus::Failed,
        "timeout",
        None
    )));
}

#[test]
fn the_recovery_is_sent_once() {
    let mut p = Player::new(NotifyMode::Attention);
    p.settle(60, RunStatus::Failed, "timeout", None);
    p.settle(120, RunStatus::Failed, "timeout", None);
    let d = p.settle(180, RunStatus::Succeeded, "all good", None);
    assert_eq!((d.kind, d.suppressed), (NoticeKind::Recovery, None));
    assert_eq!(d.suppressed_since_last, 1);
    let d = p.settle(240, RunStatus::Succeeded, "all good", None);
    assert_eq!(
        (d.kind, d.suppressed),
        (NoticeKind::Success, Some(UNCHANGED_CONTENT))
    );
}

#[test]
fn an_unchanged_success_is_silent_and_a_changed_one_is_sent() {
    let mut p = Player::new(NotifyMode::Attention);
    assert!(sent(&p.settle(
        60,
        RunStatus::Succeeded,
        "3 new tickets",
        None
    )));
    assert_eq!(
        p.settle(120, RunStatus::Succeeded, "3 new tickets", None)
            .suppressed,
        Some(UNCHANGED_CONTENT)
    );
    assert!(sent(&p.settle(
        180,
        RunStatus::Succeeded,
        "4 new tickets",
        None
    )));
    // An empty summary is never new content.
    assert!(!sent(&p.settle(240, RunStatus::Succeeded, "", None)));
}

#[test]
fn the_executor_cannot_silence_a_failure_but_may_a_success() {
    let mut p = Player::new(NotifyMode::Always);
    assert!(sent(&p.settle(60, RunStatus::Failed, "boom", Some(false))));
    assert!(sent(&p.settle(120, RunStatus::Unknown, "", Some(false))));
    let d = p.settle(180, RunStatus::Succeeded, "fine", Some(false));
    assert_eq!(d.suppressed, Some(EXECUTOR));
    let mut p = Player::new(NotifyMode::Failures);
    assert!(sent(&p.settle(
        60,
        RunStatus::Succeeded,
        "forced",
        Some(true)
    )));
}

#[test]
fn missed_and_skipped_runs_are_sent_under_attention_only_and_always() {
    for (mode, expected) in [
        (NotifyMode::Always, true),
        (NotifyMode::Attention, true),
        (NotifyMode::Failures, false),
        (NotifyMode::Never, false),
    ] {
        let mut p = Player::new(mode);
        assert_eq!(sent(&p.settle(60, RunStatus::Missed, "", None)), expected);
        assert_eq!(
            sent(&p.settle(120, RunStatus::SkippedOverlap, "", None)),
            expected
        );
    }
}

#[test]
fn unknown_and_parked_runs_are_sent_whatever_the_mode() {
    let mut p = Player::new(NotifyMode::Never);
    assert!(sent(&p.settle(60, RunStatus::Unknown, "", None)));
    assert!(sent(&p.settle(
        120,
        RunStatus::AwaitingConfirmation,
        "",
        None
    )));
    assert_eq!(
        p.settle(180, RunStatus::Failed, "x", None).suppressed,
        Some(POLICY)
    );
}

#[test]
fn always_sends_every_repeat_of_a_failure() {
    let mut p = Player::new(NotifyMode::Always);
    for i in 1..=5 {
        assert!(sent(&p.settle(i * 60, RunStatus::Failed, "timeout", None)));
    }
}

#[test]
fn a_decision_depends_only_on_the_memory_it_is_given() {
    // What a restart does: the next decision from a memory read back.
    let mut a = Player::new(NotifyMode::Attention);
    a.settle(60, RunStatus::Failed, "timeout", None);
    let stored = a.memory.clone();
    let mut b = Player::new(NotifyMode::Attention);
    b.memory = stored;
    let (x, y) = (
        a.settle(120, RunStatus::Failed, "timeout", None),
        b.settle(120, RunStatus::Failed, "timeout", None),
    );
    assert_eq!((x.kind, x.suppressed), (y.kind, y.suppressed));
    assert_eq!(x.suppressed_since_last, y.suppressed_since_last);
    let forget_run = |m: &TaskMemory| TaskMemory {
        last_settled_run_id: None,
        ..m.clone()
    };
    assert_eq!(forget_run(&x.memory), forget_run(&y.memory));
}

#[test]
fn the_held_back_note_counts_failures_on_a_failure_only() {
    let mut m = TaskMemory::new("t");
    assert_eq!(held_back_note(&m, NoticeKind::Failure, "09:00"), None);
    m.suppressed_count = 3;
    m.suppressed_failures = 3;
    assert_eq!(
        held_back_note(&m, NoticeKind::Failure, "09:00").unwrap(),
        "3 similar failures since 09:00 were not sent"
    );
    m.suppressed_failures = 1;
    assert_eq!(
        held_back_note(&m, NoticeKind::Paused, "09:00").unwrap(),
        "1 similar failure since 09:00 was not sent"
    );
    // A budget, a recovery or a success never reports held-back notices
    // as if something were lost.
    for kind in [
        NoticeKind::Budget,
        NoticeKind::Recovery,
        NoticeKind::Success,
    ] {
        assert_eq!(held_back_note(&m, kind, "09:00"), None, "{kind:?}");
    }
}

#[test]
fn skips_behind_the_same_unknown_run_are_one_piece_of_news_per_window() {
    let mut p = Player::new(NotifyMode::Attention);
    // The first skip behind run r1 is news; the next ones within the hour
    // are held back, counted into the next notice sent.
    assert!(sent(&p.settle(60, RunStatus::SkippedOverlap, "", None)));
    for minute in 2..=5 {
        let d = p.settle(minute * 60, RunStatus::SkippedOverlap, "", None);
        assert_eq!(d.suppressed, Some(DUPLICATE_SKIP), "minute {minute}");
    }
    // Another blocking run is other news.
    p.blocked_by = "run r2 is still unknown";
    let d = p.settle(6 * 60, RunStatus::SkippedOverlap, "", None);
    assert!(sent(&d));
    assert_eq!(d.suppressed_since_last, 4);
    // Past the window the same skip is sent again.
    let d = p.settle(6 * 60 + HOUR, RunStatus::SkippedOverlap, "", None);
    assert!(sent(&d));
    // Under `always` every skip is sent.
    let mut p = Player::new(NotifyMode::Always);
    assert!(sent(&p.settle(60, RunStatus::SkippedOverlap, "", None)));
    assert!(sent(&p.settle(120, RunStatus::SkippedOverlap, "", None)));
}

#[test]
fn a_failure_before_the_last_sent_one_is_new() {
    // The clock was 10 h ahead when a failure was sent, then set right:
    // the same failure, now "earlier" than the one sent, is sent again
    // and starts the window from its own time.
    let mut p = Player::new(NotifyMode::Attention);
    let ahead = 10 * HOUR;
    assert!(sent(&p.settle(ahead, RunStatus::Failed, "timeout", None)));
    assert!(sent(&p.settle(60, RunStatus::Failed, "timeout", None)));
    assert_eq!(p.memory.last_failure_sent_at, Some(60));
    assert_eq!(
        p.settle(120, RunStatus::Failed, "timeout", None).suppressed,
        Some(DUPLICATE_FAILURE)
    );
    // A failure at the very time of the last sent one is a duplicate.
    let mut p = Player::new(NotifyMode::Attention);
    p.settle(60, RunStatus::Failed, "timeout", None);
    assert!(!sent(&p.settle(60, RunStatus::Failed, "timeout", None)));
}

#[test]
fn a_reconciled_success_is_the_last_success_and_ends_the_streak() {
    let mut p = Player::new(NotifyMode::Attention);
    p.settle(60, RunStatus::Succeeded, "fine", None);
    p.settle(120, RunStatus::Failed, "timeout", None);
    p.settle(180, RunStatus::Unknown, "", None);
    let decided = |status| Run::new(&p.task, 180, 180, 1, ended(status, 300), 180, |_| {});
    let failed = reconciled(p.memory.clone(), &decided(RunStatus::Failed), 300);
    assert_eq!(failed.last_success_at, Some(60));
    assert!(failed.last_failure_reason.is_some());
    let run = decided(RunStatus::Succeeded);
    let m = reconciled(p.memory.clone(), &run, 300);
    assert_eq!(m.last_success_at, Some(300));
    assert_eq!(m.last_settled_run_id, Some(run.run_id.clone()));
    assert_eq!(m.last_failure_reason, None);
    // The next failure is the first of a new streak: sent.
    p.memory = m;
    assert!(sent(&p.settle(360, RunStatus::Failed, "timeout", None)));
}

#[test]
fn a_task_held_for_its_profile_is_told_once_under_every_mode_but_never() {
    for mode in [
        NotifyMode::Always,
        NotifyMode::Attention,
        NotifyMode::Failures,
        NotifyMode::Never,
    ] {
        let task = task(mode);
        let run = Run::new(
            &task,
            60,
            60,
            1,
            ended(RunStatus::SkippedProfile, 60),
            60,
            |r| {
                r.reason = Some("profile coder changed since you confirmed it".into());
            },
        );
        let decide_told = |already_told| {
            decide(
                &Facts {
                    run: &run,
                    policy: task.payload.notice,
                    executor_says: None,
                    paused_task: false,
                    last_skip_sent: None,
                    already_told,
                    caught_up: false,
                    in_gap: InGap::Alone,
                    now: 60,
                },
                TaskMemory::new("t1"),
            )
        };
        let first = decide_told(false);
        assert_eq!(first.kind, NoticeKind::Profile, "{mode:?}");
        let expected = match mode {
            NotifyMode::Never => Some(POLICY),
            _ => None,
        };
        assert_eq!(first.suppressed, expected, "{mode:?}");
        let again = decide_told(true);
        let expected = match mode {
            NotifyMode::Never => Some(POLICY),
            _ => Some(PROFILE_TOLD),
        };
        assert_eq!(again.suppressed, expected, "{mode:?}");
    }
    assert_eq!(state_of(NoticeKind::Profile), "held");
}
