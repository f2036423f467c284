//! The clock of one invocation (docs/CONTRACT.md §2, §12): the instant it
//! started — the system's, or the one a test pins — moving on with the
//! monotonic clock, and, once a PostgreSQL store is open, corrected to the
//! server's clock, so that every host writes and judges lease and delivery
//! deadlines by one clock. `context` reads the system clock and the
//! environment and builds it; everything below reads time only through it.

use std::sync::OnceLock;

use crate::store::Store;

/// "Now" for a whole invocation: the pinned or system time at start, moving
/// on with the monotonic clock, so a long tick renews leases in real seconds
/// even when `AGENTCRON_NOW` pins its start; plus, once a PostgreSQL store
/// was opened, the server's clock minus ours.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: i64,
    started: std::time::Instant,
}

/// The server's clock minus this host's, in whole seconds, measured once per
/// process when the first PostgreSQL connection opens. One process serves
/// one store, and every copy of the `Clock` (the tick's threads hold their
/// own) must see the correction from then on: hence a process-wide value.
static SERVER_CORRECTION: OnceLock<i64> = OnceLock::new();

impl Clock {
    pub fn starting_at(base: i64) -> Clock {
        Clock {
            base,
            started: std::time::Instant::now(),
        }
    }

    pub fn now(&self) -> i64 {
        let correction = SERVER_CORRECTION.get().copied().unwrap_or(0);
        (self.base + self.started.elapsed().as_secs() as i64).saturating_add(correction)
    }
}

/// Measures, once per process, how far the store's server clock is from
/// this host's (`ours`: this host's clock in microseconds); every `Clock`
/// is corrected by it from then on. A store without a clock changes
/// nothing.
pub fn correct_by_server(store: &mut dyn Store, ours: fn() -> i64) {
    if SERVER_CORRECTION.get().is_some() {
        return;
    }
    if let Some(offset) = measure_server_offset(store, &ours) {
        let _ = SERVER_CORRECTION.set(offset);
    }
}

/// The server's clock minus ours, rounded to whole seconds, taking our
/// clock halfway through the query; None for a store without a clock.
fn measure_server_offset(store: &mut dyn Store, ours: &dyn Fn() -> i64) -> Option<i64> {
    let before = ours();
    let server = store.server_time_micros()?;
    let after = ours();
    let ours = before + (after - before) / 2;
    Some(((server - ours) as f64 / 1e6).round() as i64)
}
