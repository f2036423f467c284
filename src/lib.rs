//! agentcron: explicitly confirmed schedules for agent tasks, run at most once.
//!
//! Modules in dependency order: `schedule` (pure time) and `model` (domain
//! values) know nothing of storage; `payload` fixes what a person confirms;
//! `store` persists it behind an interface; `context` reads the environment
//! and the clock once; `output` is the one place that prints; `commands` turn
//! arguments into store calls and values to print.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod commands;
pub mod completion;
pub mod context;
pub mod error;
pub mod executor_result;
pub mod explain;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "test-hooks")]
pub mod hooks;
pub mod interrupt;
pub mod lifecycle;
pub mod model;
pub mod output;
pub mod payload;
pub mod process;
pub mod schedule;
pub mod store;
pub mod tick;

/// Runs one parsed command line; returns the exit code on success.
pub fn run(cli: cli::Cli) -> anyhow::Result<i32> {
    let mut ctx = context::Ctx::from_args(&cli.global)?;
    commands::dispatch(&mut ctx, cli.command)
}
