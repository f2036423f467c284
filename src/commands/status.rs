//! `agentcron status`: is the scheduler alive, and what is stuck.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::flags::duration;
use crate::context::Ctx;
use crate::store::Tx;
use crate::text::human_bytes;
use crate::text::relative;
use crate::tick::{self, RunAuthority};
use crate::wire::time;

/// Report the last tick, the due backlog, stuck runs and undelivered notices
///
/// Warns when no tick ran for more than 2 minutes while a task is active (cron
/// stopped?), and names the last scheduler gap of the past day. Warns, one line,
/// when the last tick ran its runs as the unix user who holds the store (the
/// SQLite file's owner; on PostgreSQL the tick's own user, who has the
/// credentials) or as root: a run could then change its own schedules
/// (`runs_hold_store_authority` in the JSON output; null before any tick). With
/// --max-tick-age, exit 1 when the last tick is older than that (or there was
/// none): a health check for cron or a systemd timer.
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct StatusArgs {
    /// Exit 1 when the last tick is older than DUR
    #[arg(long, value_name = "DUR")]
    pub max_tick_age: Option<String>,
}

pub fn run(ctx: &mut Ctx, args: StatusArgs) -> Result<i32> {
    let max_age = args
        .max_tick_age
        .as_deref()
        .map(|d| duration("--max-tick-age", d))
        .transpose()?;
    let (now, tenant, clock) = (ctx.clock.now(), ctx.explicit_tenant(), ctx.clock);
    let store = ctx.store()?;
    let schema = store.schema_version()?;
    let written = store.migrations().len() as i64;
    let (stats, queue, limit, last_tick, gap, places, hosts, authority) = store.read(|tx| {
        let stats = tx.stats(now, tenant.as_deref())?;
        let queue = tx.queue_stats(tenant.as_deref())?;
        // The limit the last tick ran with (the tick's flag, not stored elsewhere).
        let limit: Option<i64> = tx.meta("max_running")?.and_then(|v| v.parse().ok());
        let last_tick: Option<i64> = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
        let gap = tx
            .last_scheduler_gap(tenant.as_deref(), now - GAP_SHOWN_FOR)?
            .map(|e| Gap::of(&e.event));
        let places = match stats.unknown {
            0 => Vec::new(),
            _ => tx.unknown_places(tenant.as_deref(), PLACES_SHOWN)?,
        };
        let hosts = tx.hosts()?;
        let authority = recorded_authority(tx)?;
        Ok((
            stats, queue, limit, last_tick, gap, places, hosts, authority,
        ))
    })?;
    let holds = authority.map(RunAuthority::runs_hold_store);
    let oldest_wait = queue.oldest_queued_due.map(|due| (now - due).max(0));
    let size = store.size_bytes();
    // Positive when the server's clock is ahead of this host's.
    let skew = store.server_time().map(|server| server - clock.host_now());
    let location = store.location();
    // On one file there is one host; several share a PostgreSQL store.
    let shared = skew.is_some();
    let builds: std::collections::BTreeSet<&str> = hosts.iter().map(|h| h.build.as_str()).collect();
    // No tick for a while while something should run: cron stopped.
    let silent =
        stats.tasks_active > 0 && last_tick.is_none_or(|tick| now - tick > DEFAULT_STALE_SECONDS);
    let stale = match (max_age, last_tick) {
        (Some(max), Some(tick)) => now - tick > max.as_secs() as i64,
        (Some(_), None) => true,
        (None, _) => silent,
    };
    if ctx.out.json {
        ctx.out.document(&json!({
            "database": location,
            "size_bytes": size,
            "schema": schema,
            "schema_this_build_writes": written,
            "hosts": hosts.iter().map(|h| json!({"host": h.host, "build": h.build,
                "last_tick_at": time(Some(h.last_tick_at))})).collect::<Vec<_>>(),
            "last_tick_at": time(last_tick),
            // A clock set back leaves the last tick "in the future": age 0.
            "tick_age_seconds": last_tick.map(|t| (now - t).max(0)),
            "stale": stale,
            "last_gap": gap.as_ref().map(|g| json!({"until": time(Some(g.until)),
                "seconds": g.seconds, "due_tasks": g.due_tasks})),
            "clock_skew_seconds": skew,
            // From what the last tick recorded; null before any tick.
            "runs_hold_store_authority": holds,
            "tasks": {"active": stats.tasks_active, "paused": stats.tasks_paused, "error": stats.tasks_error},
            "due": stats.due,
            "queue": {"due_now": stats.due, "queued": queue.queued,
                      "oldest_queued_wait_seconds": oldest_wait,
                      "running": queue.running_all, "max_running": limit},
            "runs": {"running": stats.running, "unknown": stats.unknown, "awaiting": stats.awaiting,
                     "stuck": stats.stuck},
            "unknown_runs_by": places.iter().map(|p| json!({"tenant": p.tenant_key,
                "owner": p.owner_key, "count": p.count})).collect::<Vec<_>>(),
            "notices": {"pending": stats.notices_pending, "sending": stats.notices_sending,
                        "unknown": stats.notices_unknown, "undeliverable": stats.notices_undeliverable,
                        "suppressed": stats.notices_suppressed},
        }))?;
    } else {
        let tick = match last_tick {
            Some(t) if t > now => format!(
                "{} (later than now: the clock went back?)",
                crate::schedule::format_utc(t)
            ),
            Some(t) => format!("{} ({})", crate::schedule::format_utc(t), relative(t, now)),
            None => "never".into(),
        };
        let lines = [
            (
                "database",
                format!(
                    "{location} ({})",
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
                format!("{tick}{}", if stale { "  STALE" } else { "" }),
            ),
            (
                "tasks",
                format!(
                    "{} active, {} paused, {} error",
                    stats.tasks_active, stats.tasks_paused, stats.tasks_error
                ),
            ),
            ("due now", stats.due.to_string()),
            (
                "queue",
                format!(
                    "{} queued{}; {} running in every tenant, {}",
                    queue.queued,
                    oldest_wait
                        .map(|w| format!(", the oldest waiting {}", crate::text::human_duration(w)))
                        .unwrap_or_default(),
                    queue.running_all,
                    limit
                        .map(|l| format!("at most {l} (--max-running)"))
                        .unwrap_or_else(|| "no --max-running limit".into())
                ),
            ),
            (
                "runs",
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
                ),
            ),
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
        ];
        let mut text: Vec<String> = lines.iter().map(|(k, v)| format!("{k:<10} {v}")).collect();
        if shared {
            for host in &hosts {
                text.push(format!(
                    "{:<10} {} runs {}, last tick {}",
                    "host",
                    crate::text::escape(&host.host),
                    crate::text::escape(&host.build),
                    crate::schedule::format_utc(host.last_tick_at)
                ));
            }
        }
        if let Some(g) = &gap {
            text.insert(
                3,
                format!("{:<10} {}", "last gap", g.describe(now, ctx.default_zone)),
            );
        }
        ctx.out.line(&text.join("\n"))?;
        if let Some(skew) = skew {
            ctx.out
                .line(&format!("{:<10} {}", "clock skew", describe_skew(skew)))?;
        }
        if stats.stuck > 0 {
            ctx.out.note(
                "runs past their lease are stuck (their tick died or hangs); the next tick freezes them as unknown",
            );
        }
        if stats.notices_unknown > 0 || stats.notices_undeliverable > 0 {
            ctx.out.note(&notices_note(
                stats.notices_unknown,
                stats.notices_undeliverable,
            ));
        }
        if stats.unknown > 0 {
            // Where they are: `reconcile` lists only the caller's, in one tenant.
            let mut note = "unknown runs block their tasks until settled:".to_string();
            for place in &places {
                note.push_str(&format!("\n  {}", super::unknown_place_line(ctx, place)));
            }
            ctx.out.note(&note);
        }
    }
    if stale {
        let since = match last_tick {
            Some(t) => format!(
                "no tick for {}",
                crate::text::human_duration((now - t).max(0))
            ),
            None => "no tick has run yet".to_string(),
        };
        ctx.out.warn(&format!(
            "{since} while {} task(s) are active: is system cron running `agentcron tick`? \
             (`agentcron crontab` prints the line to install)",
            stats.tasks_active
        ));
    }
    if shared && builds.len() > 1 {
        ctx.out.warn(&format!(
            "the hosts' last ticks ran different builds ({}): replace every host's binary with one build, then run `agentcron migrate` once if it writes a newer schema",
            builds.iter().map(|b| crate::text::escape(b)).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(authority) = authority.filter(|a| a.runs_hold_store()) {
        ctx.out.warn(&authority_warning(authority));
    }
    if let Some(skew) = skew.filter(|s| s.abs() > MAX_SKEW_SECONDS) {
        ctx.out.warn(&format!(
            "{}; run NTP on both (leases must be much longer than the skew)",
            describe_skew(skew)
        ));
    }
    // Only a health check asks for an exit code: plain `status` informs.
    Ok(if stale && max_age.is_some() { 1 } else { 0 })
}

/// The uids the last tick recorded: its runs' and the store's holder's.
pub fn recorded_authority(tx: &mut dyn Tx) -> Result<Option<RunAuthority>> {
    let uid = |tx: &mut dyn Tx, key| -> Result<Option<u32>> {
        Ok(tx.meta(key)?.and_then(|v| v.parse().ok()))
    };
    let runs_uid = uid(tx, tick::RUNS_UID)?;
    let store_uid = uid(tx, tick::STORE_UID)?;
    Ok(runs_uid
        .zip(store_uid)
        .map(|(runs_uid, store_uid)| RunAuthority {
            runs_uid,
            store_uid,
        }))
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

/// Above this, hosts sharing a PostgreSQL store disagree on "now" enough to
/// matter for leases and grace windows.
pub const MAX_SKEW_SECONDS: i64 = 5;

/// Without --max-tick-age, ticks are stale past this while a task is active:
/// cron ticks every minute, so two minutes is one missed tick and a late one.
const DEFAULT_STALE_SECONDS: i64 = 120;

/// Places of unknown runs `status` names at most.
const PLACES_SHOWN: u32 = 10;

/// How long the last scheduler gap stays in `status`.
const GAP_SHOWN_FOR: i64 = 86400;

/// A recorded scheduler gap: cron did not tick for `seconds` until `until`.
struct Gap {
    until: i64,
    seconds: i64,
    due_tasks: i64,
}

impl Gap {
    fn of(event: &crate::model::Event) -> Gap {
        let number = |key: &str| event.detail.get(key).and_then(|v| v.as_i64()).unwrap_or(0);
        Gap {
            until: event.at,
            seconds: number("seconds"),
            due_tasks: number("due_tasks"),
        }
    }

    /// "no tick for 8 min until 10:39 (2 h ago), 8 tasks had occurrences due"
    fn describe(&self, now: i64, zone: crate::schedule::Tz) -> String {
        format!(
            "no tick for {} until {} ({}), {} task(s) had occurrences due",
            crate::text::human_duration(self.seconds),
            crate::text::wall_time(self.until, zone),
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
