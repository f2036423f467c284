//! `agentcron status`: is the scheduler alive, and what is stuck.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::commands::flags::duration;
use crate::context::Ctx;
use crate::text::human_bytes;
use crate::text::relative;
use crate::wire::time;

/// Report the last tick, the due backlog, stuck runs and undelivered notices
///
/// With --max-tick-age, exit 1 when the last tick is older than that (or there was
/// none): a health check for cron or a systemd timer.
#[derive(Debug, Args)]
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
    let (now, tenant, system_now) = (ctx.now, ctx.explicit_tenant(), ctx.system_now);
    let store = ctx.store()?;
    let (stats, queue, limit, last_tick) = store.read(|tx| {
        let stats = tx.stats(now, tenant.as_deref())?;
        let queue = tx.queue_stats(tenant.as_deref())?;
        // The limit the last tick ran with (the tick's flag, not stored elsewhere).
        let limit: Option<i64> = tx.meta("max_running")?.and_then(|v| v.parse().ok());
        let last_tick: Option<i64> = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
        Ok((stats, queue, limit, last_tick))
    })?;
    let oldest_wait = queue.oldest_queued_due.map(|due| (now - due).max(0));
    let size = store.size_bytes();
    // Positive when the server's clock is ahead of this host's.
    let skew = store.server_time().map(|server| server - system_now);
    let location = store.location();
    let stale = match (max_age, last_tick) {
        (Some(max), Some(tick)) => now - tick > max.as_secs() as i64,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if ctx.out.json {
        ctx.out.document(&json!({
            "database": location,
            "size_bytes": size,
            "last_tick_at": time(last_tick),
            // A clock set back leaves the last tick "in the future": age 0.
            "tick_age_seconds": last_tick.map(|t| (now - t).max(0)),
            "stale": stale,
            "clock_skew_seconds": skew,
            "tasks": {"active": stats.tasks_active, "paused": stats.tasks_paused, "error": stats.tasks_error},
            "due": stats.due,
            "queue": {"due_now": stats.due, "queued": queue.queued,
                      "oldest_queued_wait_seconds": oldest_wait,
                      "running": queue.running_all, "max_running": limit},
            "runs": {"running": stats.running, "unknown": stats.unknown, "awaiting": stats.awaiting,
                     "stuck": stats.stuck},
            "notices": {"pending": stats.notices_pending, "sending": stats.notices_sending,
                        "unknown": stats.notices_unknown, "undeliverable": stats.notices_undeliverable},
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
                    "{} pending, {} sending, {} unknown, {} undeliverable",
                    stats.notices_pending,
                    stats.notices_sending,
                    stats.notices_unknown,
                    stats.notices_undeliverable
                ),
            ),
        ];
        let text: Vec<String> = lines.iter().map(|(k, v)| format!("{k:<10} {v}")).collect();
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
        if stats.unknown > 0 {
            ctx.out
                .note("unknown runs block their tasks: see `agentcron reconcile`");
        }
    }
    if let Some(skew) = skew.filter(|s| s.abs() > MAX_SKEW_SECONDS) {
        ctx.out.warn(&format!(
            "{}; run NTP on both (leases must be much longer than the skew)",
            describe_skew(skew)
        ));
    }
    Ok(if stale { 1 } else { 0 })
}

/// Above this, hosts sharing a PostgreSQL store disagree on "now" enough to
/// matter for leases and grace windows.
pub const MAX_SKEW_SECONDS: i64 = 5;

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
