//! The one integration-test binary: every test drives the built `agentcron`
//! through a `TestEnv` (its own temp dir, database, cleaned environment and
//! pinned clock).

#[allow(dead_code)] // helpers shared by the suites; not every suite uses each one
mod budgets;

mod backup;
mod capacity;
mod catch_up;
mod check;
mod completion;
mod confirm;
mod continuations;
mod diagnostics;
mod draft;
mod explain;
mod gate;
mod generated;
mod growth;
mod help;
mod hooks;
mod install_lines;
mod log;
mod mcp;
mod metrics;
mod notices;
mod overdue;
mod pg_proxy;
mod plan;
mod plans;
mod postgres;
mod profiles;
mod prune;
mod quotas;
mod readme;
mod reconcile;
mod reliability;
mod replace;
mod restore;
mod run_authority;
mod run_environment;
mod run_ids;
mod runs;
mod schedule_ends;
mod shell;
mod spend_limits;
mod status;
mod supervised_runs;
mod support;
mod tables;
mod task_limits;
mod tasks;
mod tick;
mod transfer;
mod trigger;
mod upcoming;
mod upgrade;
mod upgrade_reads;
mod usage_reports;
mod visible_text;
mod wiring;
mod zones;
