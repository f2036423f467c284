//! The operations tested where they live, without the binary: each file
//! holds one operation's behaviours, over a real store in a temporary
//! folder (`fixture`). `cargo test --lib ops::` runs them on SQLite;
//! `AGENTCRON_TEST_STORE=postgres cargo test --lib ops::` on PostgreSQL,
//! each test in a schema of its own. The end-to-end suite (tests/cli)
//! covers what needs processes: ticks, executors, notifiers.

mod fixture;

mod access;
mod approve;
mod confirm;
mod confirm_code;
mod draft;
mod explain;
mod held_rows;
mod inside_run;
mod leases;
mod lifecycle;
mod migrate;
mod next_work;
mod plan;
mod profiles;
mod prune;
mod reads;
mod reconcile;
mod round_trips;
mod transfer;
mod trigger;
mod zones;
