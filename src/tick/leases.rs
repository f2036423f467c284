//! The leases one tick holds, in memory: the slot each run's lease
//! endpoint answers `lease check` from (held, lost, settled), and their
//! renewal every lease/3 in one transaction (docs/CONTRACT.md §6). A lease
//! once answered lost stays lost; a busy database is not a lost lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::clock::Clock;
use crate::limits::Usage;
use crate::store::Store;

use super::usage_reports;

/// One lease this tick holds, as its lease endpoint answers it.
pub struct Slot {
    pub(super) token: String,
    /// Lost, or settled: `lease check` answers 5 from then on.
    pub(super) lost: bool,
    /// When the lease expires unless renewed, on the monotonic clock (never
    /// later than the stored `lease_until`).
    pub(super) until: Instant,
    /// The run's usage as it reported it through `lease check --usage`
    /// (its totals so far, the highest of each key), and the part of it
    /// recorded in the store (`usage_reports.rs`).
    pub(super) reported: Usage,
    pub(super) recorded: Usage,
    /// A budget the run took past its limit while it ran: `lease check`
    /// answers 5 from then on, and the run is stopped.
    pub(super) spent: Option<String>,
}

impl Slot {
    /// The endpoint's answer. A lease past its deadline is lost for good
    /// once it was answered so, whatever a late renewal would say: a lease
    /// check never answers 0 after a 5 (docs/CONTRACT.md §6).
    pub(super) fn answer(&mut self, token: &str) -> bool {
        !self.expire_if_past() && self.token == token && self.spent.is_none()
    }

    /// A new slot for a run claimed with `token`, its lease until `until`.
    pub(super) fn new(token: String, until: Instant) -> Slot {
        Slot {
            token,
            lost: false,
            until,
            reported: Usage::default(),
            recorded: Usage::default(),
            spent: None,
        }
    }

    /// Notes what the run reported it spent so far (with a token that
    /// holds).
    pub(super) fn report(&mut self, usage: &Usage) {
        usage_reports::note(&mut self.reported, usage);
    }

    /// Whether the lease is over; one past its deadline is over for good.
    fn expire_if_past(&mut self) -> bool {
        if !self.lost && Instant::now() > self.until {
            self.lost = true;
        }
        self.lost
    }
}

/// The leases this tick holds, by run id.
pub type Leases = Arc<Mutex<HashMap<String, Slot>>>;

/// Lease renewal on schedule, every lease/3, even while results keep
/// arriving: a stream of short runs must not starve the lease of a long one.
pub struct Renewals {
    period: Duration,
    lease_seconds: i64,
    next: Instant,
}

impl Renewals {
    pub fn new(lease: Duration) -> Renewals {
        let period = (lease / 3).max(Duration::from_millis(200));
        Renewals {
            period,
            lease_seconds: lease.as_secs().max(1) as i64,
            next: Instant::now() + period,
        }
    }

    /// How long until the next renewal is due.
    pub fn wait(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Renews when due.
    pub fn renew_if_due(&mut self, store: &mut dyn Store, leases: &Leases, clock: &Clock) {
        if Instant::now() < self.next {
            return;
        }
        renew_all(store, leases, clock, self.lease_seconds);
        self.next = Instant::now() + self.period;
    }
}

/// Renews every live lease in one transaction; marks the ones lost. A busy
/// database or a lost connection is not a lost lease: it is tried again next
/// period (the shared store reconnects first).
fn renew_all(store: &mut dyn Store, leases: &Leases, clock: &Clock, lease_seconds: i64) {
    let held: Vec<(String, String)> = match leases.lock() {
        Ok(l) => l
            .iter()
            .filter(|(_, s)| !s.lost)
            .map(|(id, s)| (id.clone(), s.token.clone()))
            .collect(),
        Err(_) => return,
    };
    if held.is_empty() {
        return;
    }
    // Before the write: a renewal's `now` is never earlier than this.
    let started = Instant::now();
    let renewed = store.write(|tx| {
        // Read once the write lock is held: a renewal that waited for it
        // must not revive a lease that expired meanwhile.
        let now = clock.now();
        held.iter()
            .map(|(id, token)| {
                Ok((
                    id.clone(),
                    tx.renew_lease(id, token, now + lease_seconds, now)?,
                ))
            })
            .collect::<Result<Vec<_>>>()
    });
    if let (Ok(renewed), Ok(mut l)) = (renewed, leases.lock()) {
        for (id, ok) in renewed {
            if let Some(slot) = l.get_mut(&id) {
                match ok {
                    true => slot.until = started + Duration::from_secs(lease_seconds as u64),
                    false => slot.lost = true,
                }
            }
        }
    }
}

/// Marks the run's lease over in memory: settled, or lost.
pub(super) fn end_lease(leases: &Leases, run_id: &str) {
    if let Ok(mut l) = leases.lock() {
        if let Some(slot) = l.get_mut(run_id) {
            slot.lost = true;
        }
    }
}

/// Whether the run's lease is over (lost, settled, or past its deadline).
/// The deadline counts without a `lease check` asking: the executor's
/// heartbeat stops a run whose renewals could not reach the store before
/// another tick may find the stored lease expired (docs/CONTRACT.md §6).
pub(super) fn lease_lost(leases: &Leases, run_id: &str) -> bool {
    leases
        .lock()
        .map(|mut l| l.get_mut(run_id).is_some_and(Slot::expire_if_past))
        .unwrap_or(true)
}

/// What the run reported beyond what was recorded of it, or the budget it
/// already took past its limit.
pub(super) fn unrecorded(leases: &Leases, run_id: &str) -> Result<Usage, String> {
    match leases.lock() {
        Ok(l) => match l.get(run_id) {
            Some(slot) => match &slot.spent {
                Some(reason) => Err(reason.clone()),
                None => Ok(usage_reports::beyond(&slot.reported, &slot.recorded)),
            },
            None => Ok(Usage::default()),
        },
        Err(_) => Ok(Usage::default()),
    }
}

/// `new` was recorded (and took a budget past its limit, when `spent`).
pub(super) fn recorded(leases: &Leases, run_id: &str, new: &Usage, spent: Option<String>) {
    if let Ok(mut l) = leases.lock() {
        if let Some(slot) = l.get_mut(run_id) {
            slot.recorded = usage_reports::plus(&slot.recorded, new);
            slot.spent = spent;
        }
    }
}

/// What is left to count of the run's usage at settle
/// (`usage_reports::left_to_count`).
pub(super) fn left_to_count(leases: &Leases, run_id: &str, final_reply: Usage) -> Usage {
    match leases.lock() {
        Ok(l) => match l.get(run_id) {
            Some(slot) => usage_reports::left_to_count(final_reply, &slot.reported, &slot.recorded),
            None => final_reply,
        },
        Err(_) => final_reply,
    }
}
