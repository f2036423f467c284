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
//! - `zones`: owners' current zones and re-timing the tasks that follow them.

pub mod access;
pub mod confirm;
pub mod confirm_code;
pub mod draft;
pub mod explain;
pub mod inside_run;
pub mod lifecycle;
pub mod plan;
pub mod zones;
