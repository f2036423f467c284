//! `agentcron status`: is the scheduler alive, and what is stuck.

use anyhow::Result;
use clap::Args;

use crate::commands::flags::duration;
use crate::context::Ctx;
use crate::output::status_report::HeldProfile;
use crate::output::status_report::{Gap, StatusReport};
use crate::store::{Expecting, Host, QueueStats, Stats, Tx, UnknownPlace};
use crate::tick::{self, RunAuthority};

pub use crate::output::status_report::authority_warning;

/// Report the last tick, the due backlog, stuck runs, undelivered notices and overdue tasks
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
    let max_age = max_age(&args)?;
    let report = report(ctx, max_age)?;
    if ctx.out.json {
        ctx.out.document(&report.document())?;
    } else {
        ctx.out.line(&report.text(ctx.default_zone))?;
        let places: Vec<String> = (report.places.iter())
            .map(|place| super::unknown_place_line(ctx, place))
            .collect();
        for note in report.notes(&places) {
            ctx.out.note(&note);
        }
    }
    for warning in report.warnings() {
        ctx.out.warn(&warning);
    }
    // Only a health check asks for an exit code: plain `status` informs.
    Ok(if report.stale && max_age.is_some() {
        1
    } else {
        0
    })
}

/// `--max-tick-age`, read.
pub fn max_age(args: &StatusArgs) -> Result<Option<std::time::Duration>> {
    args.max_tick_age
        .as_deref()
        .map(|d| duration("--max-tick-age", d))
        .transpose()
}

/// Everything `status` says, read now; stale past `max_age` when given.
pub fn report(ctx: &mut Ctx, max_age: Option<std::time::Duration>) -> Result<StatusReport> {
    let (now, tenant, clock) = (ctx.clock.now(), ctx.explicit_tenant(), ctx.clock);
    let store = ctx.store()?;
    let schema = store.schema_version()?;
    let written = store.migrations().len() as i64;
    let mut read = store.read(|tx| Recorded::read(tx, now, tenant.as_deref()))?;
    read.hear_idle_ticks(store.idle_note());
    let size = store.size_bytes();
    // Positive when the server's clock is ahead of this host's.
    let skew = store.server_time().map(|server| server - clock.host_now());
    let location = store.location();
    let stale = is_stale(&read, max_age, now);
    Ok(StatusReport {
        now,
        location,
        size,
        schema,
        written,
        hosts: read.hosts,
        last_tick: read.last_tick,
        stale,
        gap: read.gap,
        skew,
        authority: read.authority,
        stats: read.stats,
        queue: read.queue,
        limit: read.limit,
        places: read.places,
        budgets: read.budgets,
        overdue: read.overdue,
        held: read.held,
    })
}

/// The profiles that hold tasks (docs/CONTRACT.md §22): changed or deleted
/// since the tasks bound to them were confirmed. Read along the tasks'
/// profile index: a store without profiles reads nothing more.
fn held_profiles(tx: &mut dyn Tx, tenant: Option<&str>) -> Result<Vec<HeldProfile>> {
    let bound = tx.tasks_with_profiles(tenant)?;
    if bound.is_empty() {
        return Ok(Vec::new());
    }
    let profiles = tx.profiles(tenant)?;
    let mut held: Vec<HeldProfile> = Vec::new();
    for task in bound.iter().filter(|t| t.state == "active") {
        let current = profiles
            .iter()
            .find(|p| p.tenant_key == task.tenant_key && p.name == task.profile);
        if current.is_some_and(|p| p.sha256 == task.sha256) {
            continue;
        }
        match held
            .iter_mut()
            .find(|h| h.tenant_key == task.tenant_key && h.profile == task.profile)
        {
            Some(h) => h.tasks.push(task.task_id.clone()),
            None => held.push(HeldProfile {
                tenant_key: task.tenant_key.clone(),
                profile: task.profile.clone(),
                deleted: current.is_none(),
                tasks: vec![task.task_id.clone()],
            }),
        }
    }
    Ok(held)
}

/// What `status` reads in one transaction.
struct Recorded {
    stats: Stats,
    queue: QueueStats,
    /// The limit the last tick ran with (the tick's flag, not stored elsewhere).
    limit: Option<i64>,
    last_tick: Option<i64>,
    gap: Option<Gap>,
    places: Vec<UnknownPlace>,
    hosts: Vec<Host>,
    authority: Option<RunAuthority>,
    budgets: Vec<(crate::model::Task, crate::limits::budget::BudgetState)>,
    overdue: Vec<Expecting>,
    held: Vec<HeldProfile>,
}

impl Recorded {
    /// Ticks that ended at the idle note (`store::idle`) recorded
    /// themselves there: the last tick, and its host's, is the later.
    fn hear_idle_ticks(&mut self, note: Option<crate::store::idle::IdleNote>) {
        let Some(note) = note else {
            return;
        };
        self.last_tick = crate::store::idle::last_tick(self.last_tick, Some(&note));
        let noted = &note.deployment;
        if let Some(host) = self
            .hosts
            .iter_mut()
            .find(|h| h.host == noted.host && h.build == noted.build)
        {
            host.last_tick_at = host.last_tick_at.max(note.at);
        }
        // As `hosts()` orders them: the latest first.
        self.hosts.sort_by(|a, b| {
            b.last_tick_at
                .cmp(&a.last_tick_at)
                .then_with(|| a.host.cmp(&b.host))
        });
    }

    fn read(tx: &mut dyn Tx, now: i64, tenant: Option<&str>) -> Result<Recorded> {
        let stats = tx.stats(now, tenant)?;
        let queue = tx.queue_stats(tenant)?;
        let limit: Option<i64> = tx.meta("max_running")?.and_then(|v| v.parse().ok());
        let last_tick: Option<i64> = tx.meta("last_tick_at")?.and_then(|v| v.parse().ok());
        let gap = tx
            .last_scheduler_gap(tenant, now - GAP_SHOWN_FOR)?
            .map(|e| Gap::of(&e.event));
        let places = match stats.unknown {
            0 => Vec::new(),
            _ => tx.unknown_places(tenant, PLACES_SHOWN)?,
        };
        let hosts = tx.hosts()?;
        let authority = recorded_authority(tx)?;
        let budgets = crate::tick::spent_budgets(tx, tenant, now)?;
        // Along tasks_overdue: only the tasks that are overdue.
        let overdue = tx.overdue_tasks(tenant)?;
        let held = held_profiles(tx, tenant)?;
        Ok(Recorded {
            budgets,
            stats,
            queue,
            limit,
            last_tick,
            gap,
            places,
            hosts,
            authority,
            overdue,
            held,
        })
    }
}

/// Whether the last tick is too old: past --max-tick-age when given, else
/// no tick for a while while something should run (cron stopped).
fn is_stale(read: &Recorded, max_age: Option<std::time::Duration>, now: i64) -> bool {
    let silent = read.stats.tasks_active > 0
        && read
            .last_tick
            .is_none_or(|tick| now - tick > DEFAULT_STALE_SECONDS);
    match (max_age, read.last_tick) {
        (Some(max), Some(tick)) => now - tick > max.as_secs() as i64,
        (Some(_), None) => true,
        (None, _) => silent,
    }
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

/// Without --max-tick-age, ticks are stale past this while a task is active:
/// cron ticks every minute, so two minutes is one missed tick and a late one.
const DEFAULT_STALE_SECONDS: i64 = 120;

/// Places of unknown runs `status` names at most.
const PLACES_SHOWN: u32 = 10;

/// How long the last scheduler gap stays in `status`.
const GAP_SHOWN_FOR: i64 = 86400;
