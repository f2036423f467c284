//! What every tick records of itself, for `status` and `metrics`
//! (docs/CONTRACT.md §19, §21): its time, this host and build, its
//! `--max-running`, the uids its runs ran as and that hold the store, and
//! the duration of an idle tick; a gap since the previous tick becomes a
//! `scheduler_gap` event. One relaxed write (no fsync of its own).

use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::store::idle::{self, Asked, Deployment, IdleNote, NoticeRules};
use crate::store::{Location, Store, Tx};

use super::events::{TickEvent, ACTOR};
use super::TickOptions;

/// Meta keys: the uid the last tick's runs ran as, and the uid that held
/// the store then (`RunAuthority`).
pub const RUNS_UID: &str = "runs_uid";
pub const STORE_UID: &str = "store_uid";

/// Ticks further apart than this mean system cron was not running.
pub const SCHEDULER_GAP_SECONDS: i64 = 300;

/// How long after the store's own record of a tick the ticks after it may
/// end at the idle note: a minute short of a gap, so that a note lost (or
/// unreadable to a later build) never makes the store's record look like
/// one, and the store is opened, its folders checked and the deployment
/// recorded at least every 5 minutes.
pub const REST_AT_MOST_SECONDS: i64 = SCHEDULER_GAP_SECONDS - 60;

/// What `record_tick` found and wrote.
pub struct Recorded {
    /// Notices wait to be sent.
    pub notices_waiting: bool,
    /// The tick's duration is stored too: it was idle.
    pub duration: bool,
}

/// `last_tick_seconds`, as `metrics` reports it.
pub fn tick_seconds(elapsed: Duration) -> String {
    format!("{:.3}", elapsed.as_secs_f64())
}

/// Stores this tick's time (and its `--max-running`, for `status`);
/// reports a gap when the previous tick is old. A tick with nothing to do
/// (`idle_for`: how long it took to find that) stores its duration as well,
/// unless notices wait to be sent.
pub fn record_tick(
    store: &mut dyn Store,
    options: &TickOptions,
    now: i64,
    idle_for: Option<Duration>,
    report: &mut dyn FnMut(&TickEvent) -> Result<()>,
) -> Result<Recorded> {
    let tenant = options.tenant.as_deref();
    // Ticks that ended at the idle note recorded themselves there only.
    let noted = store.idle_note();
    // The heartbeat needs no fsync of its own: a power cut that loses it
    // loses nothing that matters, and the tick's first durable commit (a
    // claim, an outcome) syncs these frames too.
    let (gap, recorded) = store.write_relaxed(|tx| {
        let recorded = tx.meta("last_tick_at")?.and_then(|v| v.parse::<i64>().ok());
        let previous = idle::last_tick(recorded, noted.as_ref());
        // A clock that went backwards must not move the record back.
        if previous.is_none_or(|p| now > p) {
            tx.set_meta("last_tick_at", &now.to_string())?;
        }
        record_deployment(tx, options, now)?;
        let waiting = options.notifier.is_some() && !tx.notices_to_send(now, tenant, 1)?.is_empty();
        let duration = match idle_for {
            Some(elapsed) if !waiting => {
                tx.set_meta("last_tick_seconds", &tick_seconds(elapsed))?;
                true
            }
            _ => false,
        };
        let gap = match previous {
            Some(previous) if now - previous > SCHEDULER_GAP_SECONDS => {
                Some((previous, record_gap(tx, tenant, previous, now)?))
            }
            _ => None,
        };
        Ok((
            gap,
            Recorded {
                notices_waiting: waiting,
                duration,
            },
        ))
    })?;
    if let Some((previous, due_tasks)) = gap {
        report(&TickEvent::SchedulerGap {
            previous,
            now,
            due_tasks,
        })?;
    }
    Ok(recorded)
}

/// This host and build, the `--max-running` limit, and the uids behind
/// the runs and the store: what `status` says of the deployment.
pub fn deployment(options: &TickOptions) -> Deployment {
    Deployment {
        host: options.host.clone(),
        build: crate::store::schema::build(),
        max_running: options
            .max_running
            .map(|n| n.to_string())
            .unwrap_or_default(),
        runs_uid: options.authority.runs_uid,
        store_uid: options.authority.store_uid,
    }
}

/// Records `deployment(options)`. The meta values are written when they
/// change only.
fn record_deployment(tx: &mut dyn Tx, options: &TickOptions, now: i64) -> Result<()> {
    let deployment = deployment(options);
    tx.record_host(&deployment.host, &deployment.build, now)?;
    if tx.meta("max_running")?.unwrap_or_default() != deployment.max_running {
        tx.set_meta("max_running", &deployment.max_running)?;
    }
    for (key, uid) in [
        (RUNS_UID, deployment.runs_uid),
        (STORE_UID, deployment.store_uid),
    ] {
        let uid = uid.to_string();
        if tx.meta(key)?.as_deref() != Some(uid.as_str()) {
            tx.set_meta(key, &uid)?;
        }
    }
    Ok(())
}

/// The `scheduler_gap` event: system cron did not run the tick from
/// `previous` to `now`. How many tasks are due now.
fn record_gap(tx: &mut dyn Tx, tenant: Option<&str>, previous: i64, now: i64) -> Result<i64> {
    let due_tasks = tx.due_count(now, tenant)?;
    tx.append_event(&Event::of_tenant(
        AuditAction::SchedulerGap,
        tenant.unwrap_or("*"),
        ACTOR,
        now,
        json!({"previous_tick": crate::wire::time(Some(previous)),
               "seconds": now - previous, "due_tasks": due_tasks}),
    ))?;
    Ok(due_tasks)
}

/// An idle tick after an idle tick (docs/CONTRACT.md §6, "An idle tick
/// reads no table"): when the note the last one left says nothing is due
/// before `now` and the store is as it was then (`store::idle`), this tick
/// records itself in the note and ends, without opening the store. False
/// when it must open the store: no such note, or the note could not be
/// replaced (the tick then records itself in the store).
pub fn rest(location: &Location, options: &TickOptions, now: i64, started: Instant) -> bool {
    if options.dry_run {
        return false;
    }
    let deployment = deployment(options);
    let asked = Asked {
        deployment: &deployment,
        notices: notice_rules(options),
    };
    let Some(mut note) = crate::store::glance_idle(location, now, &asked, REST_AT_MOST_SECONDS)
    else {
        return false;
    };
    note.at = now;
    note.seconds = tick_seconds(started.elapsed());
    crate::store::keep_idle_note(location, &note).is_ok()
}

/// Leaves the note for the next tick of a tick that found nothing to do
/// and changed nothing but its own record (`store::idle`). Only a hint for
/// the next tick: a failure to leave it costs that tick the store's open.
pub fn leave_note(store: &mut dyn Store, options: &TickOptions, now: i64, idle_for: Duration) {
    let note = IdleNote {
        at: now,
        recorded_at: now,
        seconds: tick_seconds(idle_for),
        deployment: deployment(options),
        notices: notice_rules(options),
        until: None,
        files: String::new(),
    };
    let _ = store.note_idle(note);
}

/// When this tick treats a waiting notice as its work (`NoticeRules`).
fn notice_rules(options: &TickOptions) -> NoticeRules {
    NoticeRules {
        notifier: options.notifier.is_some(),
        give_up_seconds: options.delivery_give_up.as_secs() as i64,
    }
}
