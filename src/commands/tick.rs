//! `agentcron tick`: what system cron runs every minute.

use anyhow::Result;
use clap::Args;

use crate::commands::flags::{command_argv, duration, notifier_from, LaunchArgs};
use crate::context::Ctx;
use crate::error::BusyStep;
use crate::model::RunStatus;
use crate::output::logfile::LogFile;
use crate::output::tick_report::{event_json, event_line, ClaimedRuns, ClaimedTask};
use crate::store::Location;
use crate::text::escape;
use crate::tick::{self, Executor, Finished, Notifier, RunAuthority, TickEvent, TickOptions};

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

    /// Start at most N runs in this tick [default: no count; --claim-for bounds it]
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=tick::MAX_RUNS as i64))]
    pub max_runs: Option<u32>,

    /// Claim new runs only during the first DUR of this tick
    ///
    /// Then the tick lets the runs it started finish and exits: with cron
    /// starting a tick every minute, the next tick goes on, so one tick
    /// never outlives its runs by more than this. Due work it leaves keeps
    /// its place (queued, not late).
    #[arg(long, value_name = "DUR", default_value = "50s")]
    pub claim_for: String,

    /// Run up to N executors at once in this tick
    ///
    /// A run is claimed only when a slot is free, and its executor starts at
    /// once; due runs waiting for a slot keep their place (waiting is not
    /// lateness). A burst of B runs of S seconds takes about B × S / N
    /// seconds to start; size N for what this host and the agents' own
    /// limits bear, and hold overlapping ticks with --host-jobs.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,

    /// At most N runs running at once on this host, across every tick here
    ///
    /// Ticks overlap when runs outlast a minute; each would start up to
    /// --jobs more. Counted inside each claim's transaction, among the runs
    /// that ticks of this boot started. Default: no limit.
    #[arg(long, env = "AGENTCRON_HOST_JOBS", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=100000))]
    pub host_jobs: Option<u64>,

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

    /// Stop a task's gate after this long (at most 30s); the executor then runs anyway
    ///
    /// A gate (`draft --gate CMD`) asks whether there is anything to do
    /// before the executor runs; one that hangs past this fails open: the
    /// executor runs and the run's summary says "gate failed: timed out".
    #[arg(long, value_name = "DUR", default_value = "30s")]
    pub gate_timeout: String,

    /// Print what this tick would do, changing nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Print the whole narrative (every claim, run and notice), not only what needs a person
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Append the whole narrative to FILE, one timestamped line per event with its tenant
    #[arg(long, value_name = "FILE")]
    pub log: Option<std::path::PathBuf>,

    /// Read the store's password from FILE: `PGPASSWORD=…` (or `PGPASSFILE=…`) lines
    ///
    /// For the tick alone: no run receives these values, and no printed
    /// line or unit file carries them (`crontab --env-file` puts only the
    /// path in the line). FILE must be a regular file of the tick's user
    /// with no permission for group or others (0600); blank lines and `#` comments
    /// aside, every line is one of those two names, else the tick exits 2
    /// before it opens the store.
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<std::path::PathBuf>,

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
        gate_timeout: gate_timeout(&args.gate_timeout)?,
        kill_grace: duration("--kill-grace", &args.kill_grace)?,
        lease: duration("--lease", &args.lease)?,
        jobs: args.jobs as usize,
        output_cap: 1 << 20,
        launch: launch.clone(),
        profile_env: crate::context::profile_environment(),
    })
}

/// `--gate-timeout`: from 1 s to the gate's limit.
fn gate_timeout(text: &str) -> Result<std::time::Duration> {
    let limit = crate::limits::GATE_TIMEOUT_SECONDS;
    let value = duration("--gate-timeout", text)?;
    if !(1..=limit).contains(&value.as_secs()) {
        return Err(crate::error::CmdError::usage(format!(
            "--gate-timeout: must be from 1 s to {limit} s"
        ))
        .into());
    }
    Ok(value)
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
    let started = std::time::Instant::now();
    ctx.plan_for_a_burst();
    if let Some(file) = &args.env_file {
        let found = crate::commands::env_file::read(file, crate::process::own_uid())?;
        ctx.use_store_credentials(found.password, found.password_file);
    }
    let launch = args.launch.launch()?;
    let options = TickOptions {
        tenant: ctx.explicit_tenant(),
        executor: executor(&args, &launch)?,
        notifier: notifier(&args, &launch)?,
        max_runs: args.max_runs.map_or(tick::MAX_RUNS, |n| n as usize),
        max_running: args.max_running,
        host_jobs: args.host_jobs,
        claim_for: duration("--claim-for", &args.claim_for)?,
        delivery_give_up: duration("--delivery-give-up", &args.delivery_give_up)?,
        dry_run: args.dry_run,
        host: crate::context::host_name(),
        authority: authority(&ctx.location()?, runs_uid(&launch)),
    };
    let clock = ctx.clock;
    let _subreaper = take_charge(&options)?;
    let mut log = args.log.as_deref().map(LogFile::open).transpose()?;
    // Most ticks find nothing to do: after one that found nothing, the
    // next learns it from the note beside the store, without opening it.
    if tick::rest_if_idle(&ctx.location()?, &options, clock.now(), started) {
        return Ok(0);
    }
    let store = ctx.shared_store().busy_during("opening the database")?;
    let out = &ctx.out;
    let mode = Mode {
        json: out.json,
        // A dry run is asked for by a person at a terminal: all of it.
        verbose: args.verbose || options.dry_run,
        notifier: options.notifier.is_some(),
    };
    // The task of each run this tick claimed, for its `finished` event.
    let mut claimed = std::collections::HashMap::new();
    // How the reconcile command a tick prints begins: behind the prefix
    // every command handed to a person carries, reaching this store.
    let mut db_flag: Vec<String> = ctx.confirm_prefix().to_vec();
    db_flag.push("agentcron".into());
    db_flag.extend(
        ctx.flags_for_followup()
            .into_iter()
            .filter(|(flag, _)| *flag == "--db")
            .flat_map(|(flag, value)| [flag.to_string(), value]),
    );
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
    verdict(out, summary)
}

/// A real tick catches the stop signals and becomes the child subreaper:
/// whatever a run leaves behind is reparented to this tick, and killed at
/// the run's end or, at the latest, when the guard drops at the tick's
/// (docs/CONTRACT.md §19).
fn take_charge(options: &TickOptions) -> Result<Option<crate::process::Subreaper>> {
    if options.dry_run {
        return Ok(None);
    }
    crate::interrupt::catch_stop_signals()
        .map_err(|e| anyhow::anyhow!("cannot catch stop signals: {e}"))?;
    let subreaper = crate::process::become_subreaper(options.executor.kill_grace)
        .map_err(|e| anyhow::anyhow!("cannot become the child subreaper: {e}"))?;
    Ok(Some(subreaper))
}

/// The tick's exit status, with a warning for each problem it carried on
/// past.
fn verdict(out: &crate::output::Output, summary: tick::TickSummary) -> Result<i32> {
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
    /// A notifier is configured: what it delivers is not printed again.
    notifier: bool,
}

impl Mode {
    /// The event's notice goes to the notifier (it was not held back), so
    /// cron's mail need not repeat it; a delivery that fails is printed.
    fn notifier_tells(self, event: &TickEvent) -> bool {
        use crate::model::DeliveryState;
        let sent = |n: &crate::model::Notice| n.state != DeliveryState::Suppressed;
        self.notifier
            && match event {
                TickEvent::Finished(f) => {
                    matches!(f.as_ref(), Finished::Recorded { notice, .. } if sent(notice))
                }
                TickEvent::Overdue { notice, .. } => notice.as_ref().is_some_and(sent),
                _ => false,
            }
    }
}

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
        | TickEvent::Quarantined { .. }
        | TickEvent::Overdue { .. } => true,
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
        TickEvent::Overdue { tenant_key, .. } => Some(tenant_key.clone()),
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
        out.warn(&crate::output::tick_report::gap_warning(
            *previous, *now, *due_tasks,
        ));
    }
    if mode.json {
        let name_of = |run_id: &str| claimed.get(run_id).and_then(|c| c.task.name.clone());
        return out.json_line(&event_json(event, &name_of));
    }
    if !mode.verbose && (!needs_a_person(event, claimed) || mode.notifier_tells(event)) {
        return Ok(());
    }
    if let Some(line) = event_line(event, claimed, db_flag) {
        out.line(&line)?;
    }
    Ok(())
}
