//! The clock of one invocation (docs/CONTRACT.md §2, §12): the instant it
//! started — the system's, or the one a test pins — moving on with the
//! monotonic clock, and, once a PostgreSQL store is open, corrected to the
//! server's clock, so that every host writes and judges lease and delivery
//! deadlines by one clock. This is the one place that reads the system
//! clock; `context` reads the environment (the pin, the test skew) and
//! builds the one `Clock` a command asks, and everything below reads time
//! only through it.
//!
//! Two readings, never mixed: `now` is the invocation's time (pinned in
//! tests, on the server's clock once a PostgreSQL store is open), for
//! everything a command writes and judges; `host_now` is this host's own
//! clock as it is at the call, for comparing this host with another
//! machine (`status`'s clock skew), where a pin or a correction would
//! compare a clock with itself.

use std::sync::OnceLock;

/// "Now" for a whole invocation: the pinned or system time at start, moving
/// on with the monotonic clock, so a long tick renews leases in real seconds
/// even when `AGENTCRON_NOW` pins its start; plus, once a PostgreSQL store
/// was opened, the server's clock minus ours.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: i64,
    started: std::time::Instant,
    /// How far this host's clock is off, in seconds: 0 but when a test
    /// plays a host with a wrong clock (`AGENTCRON_TEST_CLOCK_SKEW`).
    host_skew: i64,
}

/// The server's clock minus this host's, in whole seconds, measured once per
/// process when the first PostgreSQL connection opens. One process serves
/// one store, and every copy of the `Clock` (the tick's threads hold their
/// own) must see the correction from then on: hence a process-wide value.
static SERVER_CORRECTION: OnceLock<i64> = OnceLock::new();

impl Clock {
    /// The clock of an invocation starting now: at `pinned` when a test
    /// pins the start (read, like everything on this host, `host_skew`
    /// off), else at this host's clock.
    pub fn start(pinned: Option<i64>, host_skew: i64) -> Clock {
        let mut clock = Clock {
            base: 0,
            started: std::time::Instant::now(),
            host_skew,
        };
        clock.base = match pinned {
            Some(at) => at.saturating_add(host_skew),
            None => clock.host_now(),
        };
        clock
    }

    /// The invocation's "now": what a command writes and judges by.
    pub fn now(&self) -> i64 {
        let correction = SERVER_CORRECTION.get().copied().unwrap_or(0);
        (self.base + self.started.elapsed().as_secs() as i64).saturating_add(correction)
    }

    /// This host's own clock at this moment, never pinned nor corrected by
    /// the server's: for comparing this host with another machine.
    pub fn host_now(&self) -> i64 {
        self.host_now_micros().div_euclid(1_000_000)
    }

    /// This host's clock in microseconds (skewed as a test asks).
    #[allow(clippy::disallowed_methods)] // the one sanctioned clock read
    fn host_now_micros(&self) -> i64 {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        micros + self.host_skew * 1_000_000
    }
}

/// Measures, once per process, how far a server's clock is from this
/// host's (`clock`'s host clock); every `Clock` is corrected by it from
/// then on. `server_micros` reads the server's clock (the store's, passed
/// in by the caller, so that the clock stays below the store); None, a
/// store without a clock, changes nothing.
pub fn correct_by_server(server_micros: &mut dyn FnMut() -> Option<i64>, clock: &Clock) {
    if SERVER_CORRECTION.get().is_some() {
        return;
    }
    if let Some(offset) = measure_server_offset(server_micros, &|| clock.host_now_micros()) {
        let _ = SERVER_CORRECTION.set(offset);
    }
}

/// The server's clock minus ours, rounded to whole seconds, taking our
/// clock halfway through the reading; None for a store without a clock.
fn measure_server_offset(
    server_micros: &mut dyn FnMut() -> Option<i64>,
    ours: &dyn Fn() -> i64,
) -> Option<i64> {
    let before = ours();
    let server = server_micros()?;
    let after = ours();
    let ours = before + (after - before) / 2;
    Some(((server - ours) as f64 / 1e6).round() as i64)
}
