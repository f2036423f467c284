//! agentcron: explicitly confirmed schedules for agent tasks, run at most once.
//!
//! Modules, from the bottom up: `schedule` (pure time), `model` (domain
//! values), `audit` (the audit trail's actions and events) and `error`
//! (typed errors, exit codes) know nothing of storage,
//! nor does `accounts` (unix accounts by name and uid);
//! `payload` fixes what a person confirms; `executor_result` is a pure
//! reading of a child's answer; `process` runs one child safely and
//! `interrupt` notes the stop signals; `store` persists behind one
//! interface (SQLite, PostgreSQL); `clock`, `text` and `wire` are the time,
//! the words and the JSON shapes every layer above shares; `output` is the
//! one place that prints; `context` reads the environment and the system
//! clock into a `Ctx`; `ops` (access, lifecycle, explain, draft, confirm,
//! confirm_code, plan) and `tick` are the operations; `completion` answers
//! the shell; `commands` turn arguments into those calls and values to
//! print (`commands::mcp` serves the same commands to an agent over MCP),
//! and `cli` gathers their clap definitions.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod accounts;
pub mod audit;
pub mod budget_window;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod completion;
pub mod context;
pub mod error;
pub mod executor_result;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "test-hooks")]
pub mod hooks;
pub mod interrupt;
pub mod limits;
pub mod model;
pub mod ops;
pub mod output;
pub mod payload;
pub mod process;
pub mod schedule;
pub mod store;
pub mod text;
pub mod tick;
pub mod vocabulary;
pub mod wire;

/// Runs one parsed command line; returns the exit code on success.
pub fn run(cli: cli::Cli) -> anyhow::Result<i32> {
    let mut ctx = context::Ctx::from_args(&cli.global)?;
    commands::dispatch(&mut ctx, cli.command)
}
