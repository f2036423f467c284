//! The speed bump at the same user (docs/CONTRACT.md §19): the commands that
//! confirm or change schedules refuse inside a run, so that an agent an
//! executor runs cannot confirm its own schedules by calling agentcron.
//!
//! Threat model, said plainly: at the same unix user this is a speed bump,
//! not a wall. A run holds the user's files, the store's included, and can
//! write to it without agentcron (or unset its marker and daemonize through
//! a service that is not its tick's descendant). The wall is a different
//! unix user for the runs (`tick --run-as`, or PostgreSQL credentials the
//! runs never see). What the bump catches is the honest mistake and the
//! agent that merely follows instructions: it calls agentcron from inside
//! its run, as issue 32's executor did.
//!
//! A process is inside a run when
//! - a run's supervisor is among its ancestors (`agentcron supervise`, under
//!   which every executor, gate and notifier starts, and which is the
//!   subreaper of all they start: nothing of a run escapes it); or
//! - its environment holds the run's marker, `AGENTCRON_RUN_ID` (the tick
//!   sets it for executor, gate and notifier; no person's shell has it); or
//! - it descends from the process that runs a running run, as the tick
//!   recorded itself on the run (`process::descends_from`): every process
//!   of a run does, whatever it did to its session or process group, since
//!   the tick is the child subreaper. One indexed read of the running runs;
//!   /proc is walked only when one of them exists.

use anyhow::Result;

use crate::error::CmdError;
use crate::model::short_id;
use crate::store::Store;

/// Refuses (exit 4) when `marker`, `AGENTCRON_RUN_ID` from the
/// environment, says this process is inside a run.
pub fn refuse_marked(marker: Option<&str>) -> Result<()> {
    match marker {
        Some(run_id) => Err(refused(run_id)),
        None => Ok(()),
    }
}

/// The refusal (exit 4) of a process that has a run's supervisor among
/// its ancestors (`process::under_supervisor`) but whose run no running
/// run names: the executor, the gate and the notifier (which runs after its
/// run settled) alike, and whatever they left running, with or without the
/// marker in their environment.
pub fn refuse_supervised() -> Result<()> {
    Err(CmdError::denied(
        "refused inside a run (a process started under agentcron's run supervisor): \
         a run, its gate or its notifier cannot confirm or change schedules; \
         confirm from your own shell",
    )
    .into())
}

/// Refuses (exit 4) when this process descends from the process running a
/// running run of `store`.
pub fn refuse_by_ancestry(store: &mut dyn Store) -> Result<()> {
    let runners = store.read(|tx| tx.running_runners())?;
    if runners.is_empty() {
        return Ok(());
    }
    let found = crate::process::descends_from(runners.iter().map(|(_, runner)| runner.as_str()));
    match found.and_then(|index| runners.get(index)) {
        Some((run_id, _)) => Err(refused(run_id)),
        None => Ok(()),
    }
}

fn refused(run_id: &str) -> anyhow::Error {
    CmdError::denied(format!(
        "refused inside run {}: a run cannot confirm or change schedules; \
         confirm from your own shell",
        crate::text::escape(short_id(run_id))
    ))
    .into()
}
