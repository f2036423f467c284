//! The one integration-test binary: every test drives the built `agentcron`
//! through a `TestEnv` (its own temp dir, database, cleaned environment and
//! pinned clock).

#[allow(dead_code)] // helpers shared by the suites; not every suite uses each one
mod budgets;

mod capacity;
mod catch_up;
mod completion;
mod confirm;
mod continuations;
mod day2;
mod diagnostics;
mod draft;
mod empty_outputs_and_help;
mod gate;
mod generated;
mod growth;
mod hooks;
mod install_lines;
mod mcp;
mod metrics;
mod notices;
mod operator;
mod operator_truth;
mod overdue;
mod panel;
mod pg_proxy;
mod plan;
mod plans;
mod postgres;
mod quotas;
mod races;
mod read_truth;
mod readme;
mod reliability;
mod restore;
mod run_authority;
mod run_environment;
mod shell;
mod small_lies;
mod spend_limits;
mod supervised_runs;
mod support;
mod tables;
mod task_limits;
mod tasks;
mod tick;
mod transfer;
mod upgrade;
mod upgrade_reads;
mod usage_edges;
mod usage_reports;
mod visible_text;
mod wiring;
mod zones;
