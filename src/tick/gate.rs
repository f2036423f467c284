//! The task's gate (docs/CONTRACT.md §6): a command the person confirmed
//! with the schedule, run before the executor of a claimed run to ask
//! whether there is anything to do, so an agent is not woken to find
//! nothing.
//!
//! It runs as the executor would: the command split into words (no shell),
//! the executor's stdin and environment (the allowlist, the run's own
//! variables, `--run-as`; never the store's location), in its own process
//! group, under the run's lease: a lost lease or a stop signal kills its
//! group as it would the executor's. It runs for at most
//! `limits::GATE_TIMEOUT_SECONDS` (the tick's `--gate-timeout`).
//!
//! What its end means is `limits::gate` (pure). A task without a gate pays
//! nothing: no spawn, no query.

use std::time::Duration;

use crate::limits::gate::{decide, Gate};
use crate::process::{self, ChildSpec, Heartbeat};

use super::leases::{lease_lost, Leases};

/// Runs `command` as `spec` says (its argv replaced by the command's
/// words, its timeout the gate's), watching the lease of `run_id`.
pub fn run(command: &str, mut spec: ChildSpec, leases: &Leases, run_id: &str) -> Gate {
    spec.argv = match process::split_command(command) {
        Ok(words) => words,
        Err(e) => return Gate::FailedOpen(format!("cannot start: {e}")),
    };
    if crate::interrupt::received().is_some() {
        return Gate::Stopped { interrupted: true };
    }
    let mut interrupted = false;
    let mut heartbeat = || {
        if lease_lost(leases, run_id) {
            Heartbeat::Abort
        } else if crate::interrupt::received().is_some() {
            interrupted = true;
            Heartbeat::Abort
        } else {
            Heartbeat::Continue
        }
    };
    let ran = process::run_child(&spec, Duration::from_millis(100), &mut heartbeat);
    decide(ran, spec.timeout, interrupted)
}
