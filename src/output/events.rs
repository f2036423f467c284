//! Audit events in words: one short sentence per action for `log`, built
//! from the event's JSON detail. A field that is missing is left out rather
//! than guessed. `sentence` matches every `AuditAction`, so an action added
//! without words does not compile; one this binary does not know (`Other`,
//! a newer writer's) falls back to its detail as `key=value` pairs, so a
//! newer writer never breaks `log`.

use serde_json::Value;

use crate::audit::AuditAction;
use crate::model::short_id;
use crate::text::escape;

/// "confirmed draft 1a2b3c4d (hash 9f86d081…), next run 2026-12-02T09:00:00Z".
pub fn sentence(action: &AuditAction, detail: &Value) -> String {
    use AuditAction as A;
    let d = &Detail(detail);
    let mut words = match action {
        // Drafts and what becomes of them.
        A::Draft => drafted(d),
        A::Confirm => confirmed("confirmed", d),
        A::Replace => confirmed("replaced with", d),
        A::ConfirmCode => code_sent(d),
        A::WrongCode => wrong_code(d, false),
        A::Void => wrong_code(d, true),
        // A task's life.
        A::Trigger => vec![because("triggered a run", d)],
        A::Pause => vec![because("paused", d)],
        A::Resume => resumed(d),
        A::Delete => deleted(d),
        A::Quarantine => quarantined(d),
        A::ZoneSet => zone_changed(d, true),
        A::ZoneUnset => zone_changed(d, false),
        A::Retime => retimed(d),
        A::Overdue => overdue(d),
        A::ProfileSet => profile_changed(d, true),
        A::ProfileDelete => profile_changed(d, false),
        // A run's life.
        A::Claim => claimed(d),
        A::Continue => continued(d),
        A::Finish => finished(d),
        A::LeaseExpired => {
            vec!["lease expired: outcome unknown, the task waits for reconcile".into()]
        }
        A::Release => released(d),
        A::OutcomeDiscarded => discarded(d),
        A::Approve => approved(d),
        A::Deny => denied(d),
        A::Reconcile => reconciled(d),
        // The store's own.
        A::Delivery => delivered(d),
        A::SchedulerGap => gap(d),
        A::Migrate => migrated(d),
        A::Other(_) => return pairs(detail),
    };
    words.retain(|w| !w.is_empty());
    words.join(", ")
}

/// An event's detail, read field by field; each text escaped.
struct Detail<'a>(&'a Value);

impl Detail<'_> {
    fn text(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(Value::as_str).map(escape)
    }

    fn number(&self, key: &str) -> Option<i64> {
        self.0.get(key).and_then(Value::as_i64)
    }

    /// An id, short as a shell addresses it.
    fn id(&self, key: &str) -> Option<String> {
        self.text(key).map(|s| short_id(&s).to_string())
    }

    /// A hash's first eight characters.
    fn hash(&self, key: &str) -> Option<String> {
        self.text(key)
            .map(|s| format!("{}…", s.get(..8).unwrap_or(&s)))
    }
}

/// "paused: vacation", or "paused" without a reason.
fn because(what: &str, d: &Detail) -> String {
    match d.text("reason") {
        Some(reason) => format!("{what}: {reason}"),
        None => what.to_string(),
    }
}

fn drafted(d: &Detail) -> Vec<String> {
    let mut words = vec![format!("drafted {}", d.id("draft_id").unwrap_or_default())];
    words.extend(d.hash("payload_hash").map(|h| format!("hash {h}")));
    words.extend(d.text("expires_at").map(|t| format!("expires {t}")));
    words.extend(d.text("drafted_by").map(|agent| format!("by {agent}")));
    words
}

/// A draft confirmed by a person, or a file's plan applied.
fn confirmed(verb: &str, d: &Detail) -> Vec<String> {
    let mut words = vec![
        match (d.id("draft_id"), d.text("file"), d.hash("plan_hash")) {
            (Some(draft), _, _) => format!("{verb} draft {draft}"),
            (None, Some(file), plan) => format!(
                "{verb} by apply of {file}{}",
                plan.map(|p| format!(" (plan {p})")).unwrap_or_default()
            ),
            (None, None, _) => verb.to_string(),
        },
    ];
    words.extend(match (d.hash("old_payload_hash"), d.hash("payload_hash")) {
        (Some(old), Some(new)) => Some(format!("hash {old} → {new}")),
        (_, new) => new.map(|h| format!("hash {h}")),
    });
    words.extend(d.text("next_run_at").map(|t| format!("next run {t}")));
    words.extend(
        d.text("drafted_by")
            .map(|agent| format!("drafted by {agent}")),
    );
    words
}

fn code_sent(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "one-time code for draft {} to {}: {}",
        d.id("draft_id").unwrap_or_default(),
        d.text("target").unwrap_or_default(),
        d.text("state").unwrap_or_default()
    )];
    words.extend(d.text("error"));
    words
}

fn wrong_code(d: &Detail, void: bool) -> Vec<String> {
    let mut words = vec![format!(
        "wrong code for draft {} ({} so far)",
        d.id("draft_id").unwrap_or_default(),
        d.number("wrong_codes").unwrap_or_default()
    )];
    if void {
        words.push("the draft is void".into());
    }
    words
}

fn resumed(d: &Detail) -> Vec<String> {
    let mut words = vec!["resumed".to_string()];
    words.extend(d.text("next_run_at").map(|t| format!("next run {t}")));
    words.extend(
        d.id("missed_run_id")
            .map(|r| format!("its time had passed: run {r} missed")),
    );
    words
}

fn deleted(d: &Detail) -> Vec<String> {
    let mut words = vec![match d.text("from") {
        Some(from) => format!("deleted (was {from})"),
        None => "deleted".into(),
    }];
    words.extend(
        d.text("file")
            .map(|file| format!("by apply of {file} --prune")),
    );
    words
}

fn quarantined(d: &Detail) -> Vec<String> {
    let mut words = vec!["quarantined".to_string()];
    words.extend(d.text("problem"));
    words
}

/// `zone_set` / `zone_unset` (docs/CONTRACT.md §18): the key, the old zone
/// and the new.
fn zone_changed(d: &Detail, set: bool) -> Vec<String> {
    let key = d.text("identity_key").unwrap_or_default();
    let old = d.text("old_zone").unwrap_or_else(|| "none".into());
    vec![match d.text("new_zone") {
        Some(new) if set => format!("set {key}'s zone: {old} → {new}"),
        _ => format!("unset {key}'s zone (was {old})"),
    }]
}

/// `profile_set` / `profile_delete` (docs/CONTRACT.md §22): the profile,
/// its hash before and after, and what it runs now.
fn profile_changed(d: &Detail, set: bool) -> Vec<String> {
    let name = d.text("profile").unwrap_or_default();
    let short = |key: &str| d.text(key).map(|h| short_id(&h).to_string());
    let mut words = vec![match (set, short("old_sha256"), short("sha256")) {
        (true, None, Some(new)) => format!("added profile {name} ({new})"),
        (true, Some(old), Some(new)) if old == new => {
            format!("changed profile {name}'s description")
        }
        (true, Some(old), Some(new)) => format!("changed profile {name}: {old} → {new}"),
        _ => format!("deleted profile {name}"),
    }];
    words.extend(d.text("command").map(|c| format!("command `{c}`")));
    words
}

fn retimed(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "re-timed from {} to {}",
        d.text("from_zone").unwrap_or_default(),
        d.text("to_zone").unwrap_or_default()
    )];
    words.extend(d.text("follows").map(|key| format!("following {key}")));
    words.extend(d.text("next_run_at").map(|t| format!("next run {t}")));
    words
}

/// "overdue: no success since 2026-12-01T09:00:00Z, expected within 1 d".
fn overdue(d: &Detail) -> Vec<String> {
    let since = match d.text("last_success_at") {
        Some(at) => format!("no success since {at}"),
        None => "no success since it was confirmed".to_string(),
    };
    let mut words = vec![format!("overdue: {since}")];
    words.extend(
        d.number("expect_success_seconds")
            .map(|s| format!("expected within {}", crate::text::human_duration(s))),
    );
    words.extend(d.text("notice").map(|n| format!("notice {n}")));
    words
}

fn claimed(d: &Detail) -> Vec<String> {
    let mut words = vec![match d.text("decision").unwrap_or_default().as_str() {
        "running" => "claimed the run".to_string(),
        other => format!("recorded the occurrence as {other}"),
    }];
    if let Some(n) = d.number("attempt").filter(|n| *n > 1) {
        words.push(format!("attempt {n}"));
    }
    if let Some(n) = d.number("skipped_occurrences").filter(|n| *n > 1) {
        words.push(format!("{n} occurrences"));
    }
    words.extend(d.text("reason"));
    words
}

fn continued(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "ran the approved continuation (wait {})",
        d.text("wait_id").unwrap_or_default()
    )];
    words.extend(d.text("approved_by").map(|by| format!("approved by {by}")));
    words
}

fn finished(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "{} → {}",
        d.text("from").unwrap_or_default(),
        d.text("status").unwrap_or_default()
    )];
    words.extend(d.text("reason"));
    words
}

fn released(d: &Detail) -> Vec<String> {
    let mut words =
        vec!["took back the run it had claimed: its executor never started".to_string()];
    words.extend(d.text("reason"));
    words
}

fn discarded(d: &Detail) -> Vec<String> {
    let mut words = vec!["lease lost: the executor's result was discarded".to_string()];
    words.extend(d.text("summary"));
    words
}

fn approved(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "approved wait {}",
        d.text("wait_id").unwrap_or_default()
    )];
    if d.text("ran").as_deref() == Some("next_tick") {
        words.push("the next tick runs it".into());
    }
    words
}

fn denied(d: &Detail) -> Vec<String> {
    vec![format!(
        "denied wait {}: the run is failed",
        d.text("wait_id").unwrap_or_default()
    )]
}

fn reconciled(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "reconciled as {}",
        d.text("decision").unwrap_or_default()
    )];
    words.extend(d.text("reason").map(|r| format!("because: {r}")));
    words
}

fn delivered(d: &Detail) -> Vec<String> {
    let mut words = vec![format!("notice {}", d.text("state").unwrap_or_default())];
    words.extend(d.text("error"));
    words
}

fn gap(d: &Detail) -> Vec<String> {
    let gap = d
        .number("seconds")
        .map(crate::schedule::describe::duration_words);
    let mut words = vec![format!("no tick for {}", gap.unwrap_or_default())];
    if let Some(n) = d.number("due_tasks") {
        words.push(format!("{n} tasks due"));
    }
    words
}

fn migrated(d: &Detail) -> Vec<String> {
    let mut words = vec![format!(
        "migrated the schema from {} to {}",
        d.number("from").unwrap_or_default(),
        d.number("to").unwrap_or_default()
    )];
    words.extend(d.text("build").map(|b| format!("build {b}")));
    words
}

/// `key=value` for an action without a sentence.
fn pairs(detail: &Value) -> String {
    match detail.as_object() {
        Some(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={}", escape(s)),
                other => format!("{k}={}", escape(&other.to_string())),
            })
            .collect::<Vec<_>>()
            .join(" "),
        None => escape(&detail.to_string()),
    }
}

#[cfg(test)]
mod tests;
