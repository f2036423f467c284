//! `agentcron tick`: what system cron runs every minute.

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use crate::commands::flags::{command_argv, duration, notifier_from, LaunchArgs};
use crate::context::Ctx;
use crate::error::BusyStep;
use crate::model::{short_id, RunStatus};
use crate::output::logfile::LogFile;
use crate::schedule;
use crate::store::Location;
use crate::text::{escape, wall_time};
use crate::tick::execute::Finished;
use crate::tick::{self, Executor, Notifier, RunAuthority, TaskRef, TickEvent, TickOptions};
use crate::wire::{run as run_json, time};

/// Run what is due: claim occurrences atomically, execute them under a lease, deliver notices
///
/// Meant to be run by system cron every minute (see `agentcron crontab`). Quiet
/// under cron: stdout gets only what needs a person (a run failed with no retry
/// left, an unknown outcome, a task paused after its failures, a quarantined task,
/// a notice that cannot be delivered); --verbose prints the whole narrative, --log
/// FILE appends it with timestamps. Several ticks may run at once: each occurrence is
/// claimed by exactly one of them. Exits 0 when it did its job, whatever the runs'
/// outcomes, also when the database was busy after it had changed something (the
/// warning says what it did; a later tick does the rest); 1 when an executor or
/// notifier could not be started, or the database failed otherwise; 2 when runs are
/// due and no executor is
/// configured (nothing is claimed); 75 when the database was busy before the tick
/// changed anything. SIGTERM, SIGINT or SIGHUP: the tick stops claiming, kills its
/// executors and notifiers, settles their runs `unknown` ("tick interrupted") and
/// exits 128 + the signal. Nothing a run starts outlives it: the tick is the child
/// subreaper, and kills (TERM, then KILL) what a run `setsid`s or double-forks away
/// when that run ends, at the latest when the tick exits. Each tick records the uid
/// its runs ran as, for `status`.
#[derive(Debug, Args)]
pub struct TickArgs {
    /// The executor command, split by shell word rules (no shell is run)
    #[arg(long, env = "AGENTCRON_EXECUTOR", value_name = "CMD")]
    pub executor: Option<String>,

    /// The notifier command, split by shell word rules (no shell is run)
    #[arg(long, env = "AGENTCRON_NOTIFIER", value_name = "CMD")]
    pub notifier: Option<String>,

    /// Start at most N runs in this tick
    ///
    /// Bounds how long one tick lives: with runs of minutes, a tick that
    /// started N runs ends after its last one; the next cron tick goes on.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub max_runs: u32,

    /// Run up to N executors at once in this tick
    ///
    /// A run is claimed only when a slot is free, and its executor starts at
    /// once; due runs waiting for a slot keep their place (waiting is not
    /// lateness).
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,

    /// At most N runs running at once in the whole store, across every tick
    ///
    /// Counted inside each claim's transaction, so the limit holds however
    /// many ticks overlap (on PostgreSQL, across hosts). Default: no limit.
    #[arg(long, env = "AGENTCRON_MAX_RUNNING", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1000000))]
    pub max_running: Option<u64>,

    /// Give up on a notice the notifier keeps refusing (exit 75) after this long
    ///
    /// It becomes `undeliverable`: never sent, counted by `status`.
    #[arg(long, value_name = "DUR", default_value = "24h")]
    pub delivery_give_up: String,

    /// Lease length; the lease is renewed every third of it while the executor runs
    #[arg(long, value_name = "DUR", default_value = "60s")]
    pub lease: String,

    /// Kill the executor's process group after this long; the run becomes unknown
    #[arg(long, value_name = "DUR", default_value = "30m")]
    pub timeout: String,

    /// Print what this tick would do, changing nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Print the whole narrative (every claim, run and notice), not only what needs a person
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Append the whole narrative to FILE, one timestamped line per event with its tenant
    #[arg(long, value_name = "FILE")]
    pub log: Option<std::path::PathBuf>,

    /// Time between SIGTERM and SIGKILL when a child is stopped
    #[arg(long, value_name = "DUR", default_value = "5s", hide = true)]
    pub kill_grace: String,

    /// How long the notifier may take before its notice becomes unknown
    #[arg(long, value_name = "DUR", default_value = "60s", hide = true)]
    pub notify_timeout: String,

    #[command(flatten)]
    pub launch: LaunchArgs,
}

pub fn executor(args: &TickArgs, launch: &crate::process::Launch) -> Result<Executor> {
    Ok(Executor {
        argv: args
            .executor
            .as_deref()
            .map(|c| command_argv("--executor", c))
            .transpose()?,
        timeout: duration("--timeout", &args.timeout)?,
        kill_grace: duration("--kill-grace", &args.kill_grace)?,
        lease: duration("--lease", &args.lease)?,
        jobs: args.jobs as usize,
        output_cap: 1 << 20,
        launch: launch.clone(),
    })
}

pub fn notifier(args: &TickArgs, launch: &crate::process::Launch) -> Result<Option<Notifier>> {
    notifier_from(
        args.notifier.as_deref(),
        duration("--notify-timeout", &args.notify_timeout)?,
        duration("--kill-grace", &args.kill_grace)?,
        launch,
    )
}

/// Who runs the runs (`runs_uid`: this tick's uid, or the one `--run-as`
/// names) against who holds the store at `location`.
pub fn authority(location: &Location, runs_uid: u32) -> RunAuthority {
    use std::os::unix::fs::MetadataExt;
    let own = crate::process::own_uid();
    let store_uid = match location {
        // The tick opens the file, so it exists; were it unreadable, the
        // tick's own uid is the owner it would have checked.
        Location::Sqlite(path) => std::fs::metadata(path).map_or(own, |m| m.uid()),
        // The tick's environment and files hold the credentials.
        Location::Postgres(_) => own,
    };
    RunAuthority {
        runs_uid,
        store_uid,
    }
}

/// The uid executor and notifier run as: the `--run-as` user's, else this
/// tick's own.
fn runs_uid(launch: &crate::process::Launch) -> u32 {
    launch
        .run_as
        .as_ref()
        .map_or_else(crate::process::own_uid, |user| user.uid)
}

pub fn run(ctx: &mut Ctx, args: TickArgs) -> Result<i32> {
    let launch = args.launch.launch()?;
    let options = TickOptions {
        tenant: ctx.explicit_tenant(),
        executor: executor(&args, &launch)?,
        notifier: notifier(&args, &launch)?,
        max_runs: args.max_runs as usize,
        max_running: args.max_running,
        delivery_give_up: duration("--delivery-give-up", &args.delivery_give_up)?,
        dry_run: args.dry_run,
        host: crate::context::host_name(),
        authority: authority(&ctx.location()?, runs_uid(&launch)),
    };
    let clock = ctx.clock;
    // Whatever a run leaves behind is reparented to this tick, and killed
    // at the run's end or, at the latest, when the guard drops at the
    // tick's (docs/CONTRACT.md §19).
    let mut _subreaper = None;
    if !options.dry_run {
        crate::interrupt::catch_stop_signals()
            .map_err(|e| anyhow::anyhow!("cannot catch stop signals: {e}"))?;
        _subreaper = Some(
            crate::process::become_subreaper(options.executor.kill_grace)
                .map_err(|e| anyhow::anyhow!("cannot become the child subreaper: {e}"))?,
        );
    }
    let mut log = args.log.as_deref().map(LogFile::open).transpose()?;
    let store = ctx.shared_store().busy_during("opening the database")?;
    let out = &ctx.out;
    let mode = Mode {
        json: out.json,
        // A dry run is asked for by a person at a terminal: all of it.
        verbose: args.verbose || options.dry_run,
    };
    // The task of each run this tick claimed, for its `finished` event.
    let mut claimed = std::collections::HashMap::new();
    // The store as the reconcile command a tick prints must reach it.
    let db_flag: Vec<String> = ctx
        .flags_for_followup()
        .into_iter()
        .filter(|(flag, _)| *flag == "--db")
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect();
    let mut reported = 0;
    let summary = tick::run(&store, &options, clock, &mut |event| {
        if let TickEvent::Decided { task, run } | TickEvent::Continued { task, run } = event {
            claimed.insert(run.run_id.clone(), ClaimedTask::of(task));
        }
        reported += 1;
        if let (Some(log), Some(line)) = (log.as_mut(), event_line(event, &claimed, &db_flag)) {
            let tenant = event_tenant(event);
            if let Some(warning) = log.line(clock.now(), tenant.as_deref(), &line) {
                out.warn(&warning);
            }
        }
        report(out, mode, event, &claimed, &db_flag)
    })?;
    // A real tick with nothing to do stays silent (cron mails any output).
    if options.dry_run && !mode.json && reported == 0 {
        out.line("Nothing to do: no run is due, no lease or notice has expired.")?;
    }
    let did = format!(
        "this tick started {} run(s) and decided {} without running them",
        summary.started, summary.decided
    );
    let code = if summary.start_failures > 0 { 1 } else { 0 };
    // A busy database is only a warning once the tick has done something:
    // the next tick carries on. Another failure is the tick's error (the
    // narrative above said what it did); any further ones are warnings.
    let mut failure = None;
    for problem in summary.problems {
        let busy = crate::error::classify(&problem).0 == crate::error::ErrorKind::Busy;
        if busy || failure.is_some() || summary.interrupted.is_some() {
            out.warn(&format!("{}; {did}", problem_line(&problem)));
        } else {
            failure = Some(problem);
        }
    }
    if let Some(signal) = summary.interrupted {
        out.warn(&format!(
            "interrupted by {}: {did}; runs still running were stopped and are unknown \
             (`agentcron reconcile` lists them), their notices wait for the next tick; \
             runs claimed but not yet started were taken back and are due again",
            crate::interrupt::name(signal)
        ));
        return Ok(crate::interrupt::exit_code(signal));
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// One line for a write that failed after the tick had done some work.
fn problem_line(problem: &anyhow::Error) -> String {
    use crate::error::{classify, ErrorKind, Step};
    let busy = classify(problem).0 == ErrorKind::Busy;
    let text = match problem.downcast_ref::<Step>() {
        // The step is all the error says: say it the way a busy error is said.
        Some(step) if busy && problem.to_string() == step.0 => format!(
            "the database was busy while {step} (another agentcron held it past busy_timeout); \
             that step changed nothing and a later tick does it"
        ),
        _ if busy => format!("{problem} (the database was busy past busy_timeout)"),
        // The causes too: "recording an outcome" alone names no reason (a
        // lost connection's is the server's words, StillDisconnected).
        _ => crate::error::sentence(problem),
    };
    escape(&text)
}

/// How much of the narrative goes to stdout.
#[derive(Clone, Copy)]
struct Mode {
    json: bool,
    verbose: bool,
}

/// What the report needs of a claimed run's task.
struct ClaimedTask {
    task: TaskRef,
    max_retries: i64,
}

impl ClaimedTask {
    fn of(task: &crate::model::Task) -> ClaimedTask {
        ClaimedTask {
            task: TaskRef::of(task),
            max_retries: task.payload.max_retries,
        }
    }
}

type ClaimedRuns = std::collections::HashMap<String, ClaimedTask>;

/// Whether an event needs a person (docs/CONTRACT.md §6, quiet under cron):
/// a run that failed for good, an unknown outcome, a task that paused
/// itself or was quarantined, a notice that cannot be delivered or may
/// not have been. The rest is narrative, for --verbose and --log.
fn needs_a_person(event: &TickEvent, claimed: &ClaimedRuns) -> bool {
    use crate::model::{DeliveryState, NoticeKind};
    match event {
        TickEvent::LeaseExpired { .. }
        | TickEvent::NoticeUndeliverable { .. }
        | TickEvent::NoticeExpired { .. }
        | TickEvent::NoticesUndelivered { .. }
        | TickEvent::ContinuationExpired { .. }
        | TickEvent::Quarantined { .. } => true,
        TickEvent::Delivered(d) => d.state == DeliveryState::Unknown,
        TickEvent::Finished(f) => match f.as_ref() {
            Finished::Recorded {
                run,
                outcome,
                notice,
            } => {
                let retries = claimed.get(&run.run_id).map_or(0, |c| c.max_retries);
                let no_retry_left = !outcome.retryable || run.attempt > retries;
                match outcome.status {
                    RunStatus::Unknown => true,
                    _ if notice.kind == Some(NoticeKind::Paused) => true,
                    RunStatus::Failed => no_retry_left,
                    RunStatus::DeliveryFailed => true,
                    _ => false,
                }
            }
            Finished::LeaseLost { .. } | Finished::NotStarted { .. } => true,
            Finished::Released { .. } => false,
        },
        TickEvent::SchedulerGap { .. }
        | TickEvent::Queued { .. }
        | TickEvent::Decided { .. }
        | TickEvent::Continued { .. }
        | TickEvent::WouldExpireLease { .. }
        | TickEvent::WouldContinue { .. }
        | TickEvent::WouldDecide { .. } => false,
    }
}

/// The tenant an event concerns, for the log; None when it is the tick's.
fn event_tenant(event: &TickEvent) -> Option<String> {
    match event {
        TickEvent::LeaseExpired { run, .. }
        | TickEvent::WouldExpireLease { run, .. }
        | TickEvent::ContinuationExpired { run, .. }
        | TickEvent::Decided { run, .. }
        | TickEvent::Continued { run, .. }
        | TickEvent::WouldContinue { run, .. }
        | TickEvent::WouldDecide { run, .. } => Some(run.tenant_key.clone()),
        TickEvent::NoticeExpired { notice, .. } | TickEvent::NoticeUndeliverable { notice, .. } => {
            Some(notice.tenant_key.clone())
        }
        TickEvent::Delivered(d) => Some(d.notice.tenant_key.clone()),
        TickEvent::Finished(f) => match f.as_ref() {
            Finished::Recorded { run, .. }
            | Finished::LeaseLost { run, .. }
            | Finished::NotStarted { run, .. }
            | Finished::Released { run } => Some(run.tenant_key.clone()),
        },
        TickEvent::SchedulerGap { .. }
        | TickEvent::NoticesUndelivered { .. }
        | TickEvent::Queued { .. }
        | TickEvent::Quarantined { .. } => None,
    }
}

fn report(
    out: &crate::output::Output,
    mode: Mode,
    event: &TickEvent,
    claimed: &ClaimedRuns,
    db_flag: &[String],
) -> Result<()> {
    if let TickEvent::SchedulerGap {
        previous,
        now,
        due_tasks,
    } = event
    {
        out.warn(&format!(
            "the previous tick was {} s ago (at {}): system cron was not running; {due_tasks} task(s) had occurrences due",
            now - previous,
            schedule::format_utc(*previous)
        ));
    }
    if mode.json {
        let name_of = |run_id: &str| claimed.get(run_id).and_then(|c| c.task.name.clone());
        return out.json_line(&event_json(event, &name_of));
    }
    if !mode.verbose && !needs_a_person(event, claimed) {
        return Ok(());
    }
    if let Some(line) = event_line(event, claimed, db_flag) {
        out.line(&line)?;
    }
    Ok(())
}

/// One JSON Lines event. `name_of` gives the task name of a run this tick
/// claimed (events about its outcome carry no task).
fn event_json(event: &TickEvent, name_of: &dyn Fn(&str) -> Option<String>) -> Value {
    match event {
        TickEvent::SchedulerGap {
            previous,
            now,
            due_tasks,
        } => json!({"event": "scheduler_gap",
            "previous_tick": time(Some(*previous)), "now": time(Some(*now)), "due_tasks": due_tasks}),
        TickEvent::LeaseExpired { run, task } => json!({"event": "lease_expired",
            "task_name": task.as_ref().and_then(|t| t.payload.name.clone()), "run": run_json(run)}),
        TickEvent::WouldExpireLease { run, task } => json!({"event": "would_expire_lease",
            "task_name": task.as_ref().and_then(|t| t.payload.name.clone()), "run": run_json(run)}),
        TickEvent::NoticeUndeliverable { notice, task } => {
            json!({"event": "delivery_undeliverable",
            "delivery_id": notice.delivery_id, "run_id": notice.run_id,
            "task_id": task.as_ref().map(|t| &t.task_id), "task_name": task.as_ref().and_then(|t| t.name.as_ref()),
            "attempts": notice.attempts, "error": notice.last_error})
        }
        TickEvent::Queued { count, reason } => json!({"event": "queued", "count": count,
            "reason": reason}),
        TickEvent::NoticeExpired { notice, task } => json!({"event": "delivery_unknown",
            "delivery_id": notice.delivery_id, "run_id": notice.run_id,
            "task_id": task.as_ref().map(|t| &t.task_id), "task_name": task.as_ref().and_then(|t| t.name.as_ref())}),
        TickEvent::Delivered(d) => json!({"event": "delivery", "delivery_id": d.notice.delivery_id,
            "run_id": d.notice.run_id, "task_id": d.task.as_ref().map(|t| &t.task_id),
            "task_name": d.task.as_ref().and_then(|t| t.name.as_ref()),
            "state": d.state.as_str(), "error": d.error}),
        TickEvent::NoticesUndelivered { count } => {
            json!({"event": "notices_pending", "count": count,
            "reason": "no notifier configured"})
        }
        TickEvent::ContinuationExpired { run, task } => {
            json!({"event": "continuation_expired",
                "task_name": task.as_ref().and_then(|t| t.name.as_ref()), "run": run_json(run)})
        }
        TickEvent::Decided { task, run } => {
            json!({"event": "claimed", "task_name": task.payload.name,
            "decision": run.status.as_str(), "run": run_json(run)})
        }
        TickEvent::Continued { task, run } => json!({"event": "continued",
            "task_name": task.payload.name, "run": run_json(run)}),
        TickEvent::WouldContinue { task, run } => json!({"event": "would_continue",
            "task_name": task.payload.name, "run": run_json(run)}),
        TickEvent::WouldDecide { task, run } => {
            // A dry run records nothing: the id it drew for the run is never used.
            let mut run = run_json(run);
            run["run_id"] = Value::Null;
            json!({"event": "would_claim", "task_name": task.payload.name,
                   "decision": run["status"], "run": run})
        }
        TickEvent::Quarantined { task_id, problem } => {
            json!({"event": "quarantined", "task_id": task_id, "problem": problem})
        }
        TickEvent::Finished(f) => match f.as_ref() {
            Finished::Recorded { run, .. } => json!({"event": "finished",
                "task_name": name_of(&run.run_id), "run": run_json(run)}),
            Finished::LeaseLost { run, claimed } => {
                json!({"event": "outcome_discarded", "task_name": name_of(&run.run_id),
                "run": run_json(run), "reason": "lease lost",
                "executor_said": format!("{:?}", claimed.status)})
            }
            Finished::NotStarted { run, error, .. } => json!({"event": "executor_not_started",
                "task_name": name_of(&run.run_id), "run": run_json(run), "error": error}),
            Finished::Released { run } => json!({"event": "released",
                "task_name": name_of(&run.run_id), "run": run_json(run),
                "reason": crate::tick::release::NOT_STARTED}),
        },
    }
}

fn delivery_line(d: &crate::tick::deliver::Delivery) -> String {
    let run = run_of(&d.notice.run_id, d.task.as_ref());
    match &d.error {
        None => format!("notice for {run} delivered to {}", escape(&d.notice.target)),
        Some(e) => format!("notice for {run}: {} ({})", d.state, escape(e)),
    }
}

/// "run 5e6f7a8b of task digest (1a2b3c4d)": what cron mails names both.
fn run_of(run_id: &str, task: Option<&TaskRef>) -> String {
    match task {
        Some(task) => format!("run {} of task {}", short_id(run_id), escape(&task.label())),
        None => format!("run {}", short_id(run_id)),
    }
}

/// The reconcile command for an unknown run, with the store, tenant and
/// owner key that reach it (as `status` prints it), ready to paste.
fn reconcile_command(run: &crate::model::Run, owner: Option<&str>, db_flag: &[String]) -> String {
    let mut words = vec!["agentcron".to_string()];
    words.extend(db_flag.iter().cloned());
    if run.tenant_key != "default" {
        words.extend(["--tenant".into(), run.tenant_key.clone()]);
    }
    if let Some(owner) = owner {
        words.extend(["--as".into(), owner.to_string()]);
    }
    words.extend(["reconcile".into(), run.run_id.clone(), "--decision".into()]);
    format!(
        "{} confirmed_succeeded|confirmed_failed|abandoned --reason TEXT",
        escape(&shell_words::join(&words))
    )
}

fn event_line(event: &TickEvent, claimed: &ClaimedRuns, db_flag: &[String]) -> Option<String> {
    let task_of = |run_id: &str| claimed.get(run_id).map(|c| &c.task);
    let line = match event {
        TickEvent::SchedulerGap { .. } => return None,
        TickEvent::LeaseExpired { run, task } => {
            let owner = task.as_ref().and_then(|t| t.payload.owner_keys.first());
            let task = task.as_deref().map(TaskRef::of).unwrap_or(TaskRef {
                task_id: run.task_id.clone(),
                name: None,
            });
            format!(
                "{}: lease expired, outcome unknown; once you know what happened, settle it with `{}`",
                run_of(&run.run_id, Some(&task)),
                reconcile_command(run, owner.map(String::as_str), db_flag)
            )
        }
        TickEvent::WouldExpireLease { run, task } => format!(
            "would freeze {}: lease expired, outcome unknown (`agentcron reconcile` settles it once you know what happened)",
            run_of(
                &run.run_id,
                Some(&task.as_deref().map(TaskRef::of).unwrap_or(TaskRef {
                    task_id: run.task_id.clone(),
                    name: None,
                }))
            ),
        ),
        TickEvent::NoticeUndeliverable { notice, task } => format!(
            "notice for {}: undeliverable after {} attempt(s); the notifier kept answering \"try later\" (exit 75)",
            run_of(&notice.run_id, task.as_ref()), notice.attempts
        ),
        TickEvent::Queued { count, reason } => format!(
            "{count} due run(s) queued: {reason}; they keep their place and run when {}",
            if *reason == crate::tick::queue::LOCKED_ROWS { "their rows are free" } else { "a slot frees" }
        ),
        TickEvent::NoticeExpired { notice, task } => format!(
            "notice for {}: delivery deadline passed; it may or may not have been sent, and will not be resent",
            run_of(&notice.run_id, task.as_ref())
        ),
        TickEvent::Delivered(d) => delivery_line(d),
        TickEvent::NoticesUndelivered { count } => format!(
            "{count} notice(s) pending: no notifier configured (pass --notifier or set AGENTCRON_NOTIFIER)"
        ),
        TickEvent::ContinuationExpired { run, task } => format!(
            "{}: continuation expired, now failed", run_of(&run.run_id, task.as_ref())
        ),
        TickEvent::Decided { task, run } | TickEvent::WouldDecide { task, run } => {
            let verb = if matches!(event, TickEvent::WouldDecide { .. }) { "would " } else { "" };
            let when = wall_time(run.scheduled_for, task.zone_in_force);
            let label = escape(&task.label());
            match run.status {
                // A dry run's run id is never used: it is not shown.
                RunStatus::Running if !verb.is_empty() => format!("{verb}run {label} for {when} (attempt {})", run.attempt),
                RunStatus::Running => format!("{verb}run {label} for {when} (run {}, attempt {})", short_id(&run.run_id), run.attempt),
                RunStatus::Missed => format!("{verb}record {label} for {when} missed: {}",
                    escape(run.reason.as_deref().unwrap_or(""))),
                RunStatus::SkippedOverlap => format!("{verb}skip {label} for {when}: {}",
                    escape(run.reason.as_deref().unwrap_or(""))),
                other => format!("{verb}record {label} for {when}: {other}"),
            }
        }
        TickEvent::Continued { task, run } | TickEvent::WouldContinue { task, run } => format!(
            "{} run {} of {} again: approved by {}, continuing wait {}",
            if matches!(event, TickEvent::WouldContinue { .. }) { "would" } else { "running" },
            short_id(&run.run_id),
            escape(&task.label()),
            escape(run.approved_by.as_deref().unwrap_or("an owner")),
            escape(run.wait_id.as_deref().unwrap_or(""))
        ),
        TickEvent::Quarantined { task_id, problem } => format!(
            "task {} quarantined (state error): {}", short_id(task_id), escape(problem)
        ),
        TickEvent::Finished(f) => match f.as_ref() {
            Finished::Recorded { run, outcome, .. } => {
                let mut line = format!("{} {}", run_of(&run.run_id, task_of(&run.run_id)), outcome.status);
                if let Some(text) = outcome.summary.as_deref().or(outcome.reason.as_deref()) {
                    line.push_str(": ");
                    line.push_str(&crate::text::clip(&escape(text), 120));
                }
                line
            }
            Finished::LeaseLost { run, .. } => format!(
                "{}: lease lost; its outcome was not recorded (the run is or will be unknown)",
                run_of(&run.run_id, task_of(&run.run_id))
            ),
            Finished::NotStarted { run, error, .. } => format!(
                "{} failed: executor could not start: {}", run_of(&run.run_id, task_of(&run.run_id)), escape(error)
            ),
            Finished::Released { run } => format!(
                "run {} taken back: {}; it is due again", short_id(&run.run_id), crate::tick::release::NOT_STARTED
            ),
        },
    };
    Some(line)
}
