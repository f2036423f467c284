//! agentcron: explicitly confirmed schedules for agent tasks, run at most once.
//!
//! Modules, from the bottom up (ARCHITECTURE.md's floors, which
//! tests/cli/wiring/floors.rs checks): `schedule` (pure time), `text`
//! (words for people) and `vocabulary` (spellings); `process` runs one
//! child safely, `clock` is the invocation's time, `interrupt` notes the
//! stop signals and `accounts` reads unix accounts; `limits` is what a run
//! may spend and when it is late, pure; `model` (domain values), `payload`
//! (what a person confirms), `audit` (the audit trail), `wire` (the JSON
//! shapes), `error` (typed errors, exit codes; it names no store: a store
//! puts a `Fault` on its errors) and `executor_result` (a pure reading of a
//! child's answer) are the values every floor shares; `store` persists
//! behind one interface (SQLite, PostgreSQL) and `tick` runs due work over
//! it; `ops` (access, lifecycle, explain, draft, confirm, confirm_code,
//! plan, …) are the operations a person asks; `output` is the one place
//! that prints; `context` reads the environment and the system clock into
//! a `Ctx`; `completion` answers the shell; `commands` turn arguments into
//! those calls and values to print (`commands::mcp` serves the same
//! commands to an agent over MCP), and `cli` gathers their clap
//! definitions.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod accounts;
pub mod audit;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod completion;
pub mod context;
pub mod digest;
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
pub mod profile;
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
