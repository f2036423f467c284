//! The operations: what the commands do to the store, as functions of plain
//! values, below the command line (as cargo's `ops` sit below its
//! `commands`). A handler in `commands/` parses its flags, calls one of
//! these, and hands the result to `output`; the MCP server and the tests can
//! call the same operations without clap.
//!
//! - `access`: who may act on which task or run (tenant, owner, revision);
//! - `lifecycle`: pause, resume, delete;
//! - `explain`: why an occurrence did or did not run;
//! - `inside_run`: the commands that change schedules refuse inside a run;
//! - `draft`: a draft made: its values and their limits, its payload, its transaction;
//! - `confirm`: a draft becomes a task, or replaces a task's payload;
//! - `confirm_code`: the one-time code that confirms an agent's draft;
//! - `plan`: what a tasks file would change, and applying exactly that;
//! - `zones`: owners' current zones and re-timing the tasks that follow them;
//! - `approve`: approving (next tick or here) or denying a parked run;
//! - `trigger`: one extra run of a task, due now;
//! - `reconcile`: settling an unknown run with a person's decision;
//! - `transfer`: an export loaded into an empty store, whole or not at all;
//! - `prune`: old settled history deleted in short batches;
//! - `migrate`: a store's schema brought to this build's, audited.

pub mod access;
pub mod approve;
pub mod confirm;
pub mod confirm_code;
pub mod draft;
pub mod explain;
pub mod inside_run;
pub mod lifecycle;
pub mod migrate;
pub mod plan;
pub mod profiles;
pub mod prune;
pub mod reconcile;
pub mod transfer;
pub mod trigger;
pub mod zones;

#[cfg(test)]
mod tests;
