//! What `status` prints, laid out: the JSON document, the aligned lines for
//! a person, the notes under them and the warnings. The handler gathers a
//! `StatusReport` of plain values (nothing here reads the store or a
//! clock); every stored string passes through `escape`.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::model::short_id;
use crate::schedule::Tz;
use crate::store::{Expecting, Host, QueueStats, Stats, UnknownPlace};
use crate::text::{escape, human_bytes, human_duration, relative, wall_time};
use crate::tick::RunAuthority;
use crate::wire::time;

/// Above this, hosts sharing a PostgreSQL store disagree on "now" enough to
/// matter for leases and grace windows.
pub const MAX_SKEW_SECONDS: i64 = 5;

/// Everything `status` says, read once.
pub struct StatusReport {
    pub now: i64,
    pub location: String,
    pub size: Option<u64>,
    pub schema: i64,
    /// The schema this build writes.
    pub written: i64,
    pub hosts: Vec<Host>,
    pub last_tick: Option<i64>,
    pub stale: bool,
    pub gap: Option<Gap>,
    /// Server minus this host, in seconds; None on one file (one host).
    pub skew: Option<i64>,
    /// From what the last tick recorded; None before any tick.
    pub authority: Option<RunAuthority>,
    pub stats: Stats,
    pub queue: QueueStats,
    /// The --max-running the last tick ran with.
    pub limit: Option<i64>,
    pub places: Vec<UnknownPlace>,
    /// Tasks whose window of a budget is spent now, with that budget.
    pub budgets: Vec<(crate::model::Task, crate::limits::budget::BudgetState)>,
    /// Tasks no run of which succeeded within their `expect_success`,
    /// longest overdue first.
    pub overdue: Vec<Expecting>,
    /// Profiles that hold active tasks: changed or deleted since their
    /// owners confirmed them (docs/CONTRACT.md §22).
    pub held: Vec<HeldProfile>,
}

/// A profile that holds tasks, and which.
pub struct HeldProfile {
    pub tenant_key: String,
    pub profile: String,
    /// Gone, rather than changed.
    pub deleted: bool,
    pub tasks: Vec<String>,
}

impl StatusReport {
    /// On one file there is one host; several share a PostgreSQL store.
    fn shared(&self) -> bool {
        self.skew.is_some()
    }

    fn oldest_wait(&self) -> Option<i64> {
        self.queue
            .oldest_queued_due
            .map(|due| (self.now - due).max(0))
    }

    /// `status --json`.
    pub fn document(&self) -> Value {
        let (stats, queue) = (&self.stats, &self.queue);
        json!({
            "database": self.location,
            "size_bytes": self.size,
            "schema": self.schema,
            "schema_this_build_writes": self.written,
            "hosts": self.hosts.iter().map(|h| json!({"host": h.host, "build": h.build,
                "last_tick_at": time(Some(h.last_tick_at))})).collect::<Vec<_>>(),
            "last_tick_at": time(self.last_tick),
            // A clock set back leaves the last tick "in the future": age 0.
            "tick_age_seconds": self.last_tick.map(|t| (self.now - t).max(0)),
            "stale": self.stale,
            "last_gap": self.gap.as_ref().map(|g| json!({"until": time(Some(g.until)),
                "seconds": g.seconds, "due_tasks": g.due_tasks})),
            "clock_skew_seconds": self.skew,
            // From what the last tick recorded; null before any tick.
            "runs_hold_store_authority": self.authority.map(RunAuthority::runs_hold_store),
            "tasks": {"active": stats.tasks_active, "paused": stats.tasks_paused, "error": stats.tasks_error},
            "due": stats.due,
            "queue": {"due_now": stats.due, "queued": queue.queued,
                      "oldest_queued_wait_seconds": self.oldest_wait(),
                      "running": queue.running_all, "max_running": self.limit},
            "runs": {"running": stats.running, "unknown": stats.unknown, "awaiting": stats.awaiting,
                     "stuck": stats.stuck},
            "unknown_runs_by": self.places.iter().map(|p| json!({"tenant": p.tenant_key,
                "owner": p.owner_key, "count": p.count})).collect::<Vec<_>>(),
            "notices": {"pending": stats.notices_pending, "sending": stats.notices_sending,
                        "unknown": stats.notices_unknown, "undeliverable": stats.notices_undeliverable,
                        "suppressed": stats.notices_suppressed},
            "budgets_spent": self.budgets.iter().map(|(task, b)| {
                let mut spent = crate::limits::budget::state_json(b, task.zone_in_force);
                spent["task_id"] = json!(task.task_id);
                spent["name"] = json!(task.payload.name);
                spent
            }).collect::<Vec<_>>(),
            "profiles_holding_tasks": self.held.iter().map(|h| json!({"tenant": h.tenant_key,
                "profile": h.profile, "deleted": h.deleted, "task_ids": h.tasks}))
                .collect::<Vec<_>>(),
            "overdue": self.overdue.iter().map(|t| json!({"task_id": t.task_id,
                "tenant": t.tenant_key, "name": t.name,
                "overdue_since": time(t.overdue_since),
                "last_success_at": time(t.last_success_at)})).collect::<Vec<_>>(),
        })
    }

    /// `status` for a person: one aligned line per subject, the hosts of a
    /// shared store, the last gap (in `zone`) and the clock skew.
    pub fn text(&self, zone: Tz) -> String {
        let mut text: Vec<String> = self
            .subjects(zone)
            .iter()
            .map(|(k, v)| format!("{k:<10} {v}"))
            .collect();
        if self.shared() {
            for host in &self.hosts {
                text.push(format!(
                    "{:<10} {} runs {}, last tick {}",
                    "host",
                    escape(&host.host),
                    escape(&host.build),
                    wall_time(host.last_tick_at, zone)
                ));
            }
        }
        if let Some(g) = &self.gap {
            text.insert(
                3,
                format!("{:<10} {}", "last gap", g.describe(self.now, zone)),
            );
        }
        if let Some(skew) = self.skew {
            text.push(format!("{:<10} {}", "clock skew", describe_skew(skew)));
        }
        for (task, b) in &self.budgets {
            let words = crate::output::human::budget_words_in(b, zone, self.now);
            text.push(format!(
                "{:<10} {}: {words}",
                "budget",
                escape(&task.label())
            ));
        }
        for task in &self.overdue {
            text.push(format!(
                "{:<10} {}",
                "overdue",
                self.overdue_words(task, zone)
            ));
        }
        for h in &self.held {
            let tasks: Vec<&str> = h.tasks.iter().map(|t| short_id(t)).collect();
            text.push(format!(
                "{:<10} {} {} since {} task(s) were confirmed; they are held until their owners \
                 confirm again (draft --replace TASK): {}",
                "profile",
                escape(&h.profile),
                if h.deleted { "was deleted" } else { "changed" },
                h.tasks.len(),
                tasks.join(", ")
            ));
        }
        text.join("\n")
    }

    /// "digest (1a2b3c4d) since 2026-12-03 09:00 UTC (2 d ago), last success 2026-12-02 09:00 UTC".
    fn overdue_words(&self, task: &Expecting, zone: Tz) -> String {
        let label = match &task.name {
            Some(name) => format!("{} ({})", escape(name), short_id(&task.task_id)),
            None => short_id(&task.task_id).to_string(),
        };
        let since = task
            .overdue_since
            .map(|at| {
                format!(
                    " since {} ({})",
                    wall_time(at, zone),
                    relative(at, self.now)
                )
            })
            .unwrap_or_default();
        let last = match task.last_success_at {
            Some(at) => format!("last success {}", wall_time(at, zone)),
            None => "no success yet".to_string(),
        };
        format!("{label}{since}, {last}")
    }

    /// (subject, what it is) for the lines every store shows, times in
    /// `zone`.
    fn subjects(&self, zone: Tz) -> [(&'static str, String); 9] {
        let (stats, size) = (&self.stats, self.size);
        let (schema, written) = (self.schema, self.written);
        [
            (
                "database",
                format!(
                    "{} ({})",
                    self.location,
                    size.map(human_bytes).unwrap_or_else(|| "?".into())
                ),
            ),
            (
                "schema",
                if schema == written {
                    format!("{schema}, the one this build writes")
                } else {
                    format!("{schema}; this build writes {written}")
                },
            ),
            (
                "last tick",
                format!(
                    "{}{}",
                    self.tick(zone),
                    if self.stale { "  STALE" } else { "" }
                ),
            ),
            ("deployment", self.deployment_words()),
            (
                "tasks",
                format!(
                    "{} active, {} paused, {} error",
                    stats.tasks_active, stats.tasks_paused, stats.tasks_error
                ),
            ),
            ("due now", stats.due.to_string()),
            ("queue", self.queue_words()),
            ("runs", self.runs_words()),
            (
                "notices",
                format!(
                    "{} pending, {} sending, {} unknown, {} undeliverable, {} suppressed by policy",
                    stats.notices_pending,
                    stats.notices_sending,
                    stats.notices_unknown,
                    stats.notices_undeliverable,
                    stats.notices_suppressed
                ),
            ),
        ]
    }

    /// The last tick and how long ago, or that the clock went back.
    fn tick(&self, zone: Tz) -> String {
        match self.last_tick {
            Some(t) if t > self.now => format!(
                "{} (later than now: the clock went back?)",
                wall_time(t, zone)
            ),
            Some(t) => format!("{} ({})", wall_time(t, zone), relative(t, self.now)),
            None => "never".into(),
        }
    }

    /// Whether the last tick's runs hold the store's authority, said either
    /// way (the warning below says what to do when they do).
    fn deployment_words(&self) -> String {
        match self.authority {
            None => "runs hold the store's authority: not known before a tick".into(),
            Some(a) if a.runs_hold_store() => format!(
                "runs hold the store's authority: yes (the last tick ran them as uid {}, {})",
                a.runs_uid,
                if a.runs_uid == a.store_uid {
                    "the store's own user"
                } else {
                    "root"
                }
            ),
            Some(a) => format!(
                "runs hold the store's authority: no (the last tick ran them as uid {}; \
                 the store is uid {}'s)",
                a.runs_uid, a.store_uid
            ),
        }
    }

    fn queue_words(&self) -> String {
        format!(
            "{} queued{}; {} running in every tenant, {}",
            self.queue.queued,
            self.oldest_wait()
                .map(|w| format!(", the oldest waiting {}", human_duration(w)))
                .unwrap_or_default(),
            self.queue.running_all,
            self.limit
                .map(|l| format!("at most {l} (--max-running)"))
                .unwrap_or_else(|| "no --max-running limit".into())
        )
    }

    fn runs_words(&self) -> String {
        let stats = &self.stats;
        format!(
            "{} running{}, {} unknown, {} awaiting approval",
            stats.running,
            if stats.stuck > 0 {
                format!(" ({} STUCK past their lease)", stats.stuck)
            } else {
                String::new()
            },
            stats.unknown,
            stats.awaiting
        )
    }

    /// The notes under the text: what to do about stuck runs, notices that
    /// may not have arrived, and unknown runs (`place_lines`: where they
    /// are, one line each, with the command that lists them there).
    pub fn notes(&self, place_lines: &[String]) -> Vec<String> {
        let stats = &self.stats;
        let mut notes = Vec::new();
        if stats.stuck > 0 {
            notes.push(
                "runs past their lease are stuck (their tick died or hangs); the next tick freezes them as unknown"
                    .to_string(),
            );
        }
        if stats.notices_unknown > 0 || stats.notices_undeliverable > 0 {
            notes.push(notices_note(
                stats.notices_unknown,
                stats.notices_undeliverable,
            ));
        }
        if stats.unknown > 0 {
            // Where they are: `reconcile` lists only the caller's, in one tenant.
            let mut note = "unknown runs block their tasks until settled:".to_string();
            for line in place_lines {
                note.push_str(&format!("\n  {line}"));
            }
            notes.push(note);
        }
        notes
    }

    /// The warnings, in text and JSON alike: cron stopped, hosts on
    /// different builds, runs that hold the store, clocks that disagree.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.stale {
            warnings.push(self.stale_warning());
        }
        let builds: BTreeSet<&str> = self.hosts.iter().map(|h| h.build.as_str()).collect();
        if self.shared() && builds.len() > 1 {
            warnings.push(format!(
                "the hosts' last ticks ran different builds ({}): replace every host's binary with one build, then run `agentcron migrate` once if it writes a newer schema",
                builds.iter().map(|b| escape(b)).collect::<Vec<_>>().join(", ")
            ));
        }
        if let Some(authority) = self.authority.filter(|a| a.runs_hold_store()) {
            warnings.push(authority_warning(authority));
        }
        if let Some(skew) = self.skew.filter(|s| s.abs() > MAX_SKEW_SECONDS) {
            warnings.push(format!(
                "{}; run NTP on both (leases must be much longer than the skew)",
                describe_skew(skew)
            ));
        }
        warnings
    }

    fn stale_warning(&self) -> String {
        let since = match self.last_tick {
            Some(t) => format!("no tick for {}", human_duration((self.now - t).max(0))),
            None => "no tick has run yet".to_string(),
        };
        format!(
            "{since} while {} task(s) are active: is system cron running `agentcron tick`? \
             (`agentcron crontab` prints the line to install)",
            self.stats.tasks_active
        )
    }
}

/// The one line `status` and `check` warn with when runs hold the store.
pub fn authority_warning(authority: RunAuthority) -> String {
    let who = if authority.runs_uid == authority.store_uid {
        "the user who holds the store"
    } else {
        "root"
    };
    format!(
        "runs hold the store's authority: the last tick ran them as uid {} ({who}), so a run \
         could change its own schedules; run them as another user (`tick --run-as`, README \
         \"Deployment\")",
        authority.runs_uid
    )
}

/// A recorded scheduler gap: cron did not tick for `seconds` until `until`.
pub struct Gap {
    until: i64,
    seconds: i64,
    due_tasks: i64,
}

impl Gap {
    pub fn of(event: &crate::audit::Event) -> Gap {
        let number = |key: &str| event.detail.get(key).and_then(|v| v.as_i64()).unwrap_or(0);
        Gap {
            until: event.at,
            seconds: number("seconds"),
            due_tasks: number("due_tasks"),
        }
    }

    /// "no tick for 8 min until 10:39 (2 h ago), 8 tasks had occurrences due"
    fn describe(&self, now: i64, zone: Tz) -> String {
        format!(
            "no tick for {} until {} ({}), {} task(s) had occurrences due",
            human_duration(self.seconds),
            wall_time(self.until, zone),
            relative(self.until, now),
            self.due_tasks
        )
    }
}

/// `skew` (server minus this host, in seconds) in words that need no sign
/// convention: which clock is ahead, and by how much.
pub fn describe_skew(skew: i64) -> String {
    match skew {
        0 => "the database server's clock agrees with this host's".to_string(),
        s if s > 0 => format!("the database server's clock is {s} s ahead of this host's"),
        s => format!(
            "the database server's clock is {} s behind this host's",
            s.unsigned_abs()
        ),
    }
}

/// What a person does about notices that may not have reached anyone: they
/// are never resent (at most once), so the person is told where to look.
fn notices_note(unknown: i64, undeliverable: i64) -> String {
    let mut lines = Vec::new();
    if unknown > 0 {
        lines.push(format!(
            "{unknown} notice(s) unknown: the notifier did not answer by its deadline, so they \
             may or may not have reached their person and are never resent; \
             `agentcron runs` shows their runs (DELIVERY unknown): tell the person what they say"
        ));
    }
    if undeliverable > 0 {
        lines.push(format!(
            "{undeliverable} notice(s) undeliverable: the notifier kept answering \"try later\" \
             (exit 75) until the tick gave up; mend the notifier, then tell the person what \
             `agentcron runs` shows (DELIVERY undeliverable)"
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::describe_skew;

    #[test]
    fn the_skew_says_which_clock_is_ahead() {
        // The server read 12:00:30 while this host read 12:00:00.
        assert_eq!(
            describe_skew(30),
            "the database server's clock is 30 s ahead of this host's"
        );
        assert_eq!(
            describe_skew(-12),
            "the database server's clock is 12 s behind this host's"
        );
        assert_eq!(
            describe_skew(0),
            "the database server's clock agrees with this host's"
        );
    }
}
