//! What runs a task that has a profile (docs/CONTRACT.md §22): the
//! profile's command, in its folder, as its user, with the base allowlist
//! and the profile's own passed variables — not the tick's `--pass-env`,
//! so one profile's key never reaches another's runs. Its definition is
//! the one the person confirmed (the payload's copy): the claim ran the
//! task only because the store's profile still hashes to it.
//! The claim's side (held, or waiting for capacity) is `claim/profile.rs`.

use crate::model::Task;
use crate::process::{environment, Launch, RunAs};

/// The command and launch of a job's child: the tick's executor, or the
/// task's profile's. An error is why the run could not start (a user that
/// does not exist here, sudo that refuses), recorded as its failure.
/// `profile_env` is what a profile's run may be given of the tick's
/// environment (`Executor::profile_env`).
pub(super) fn runner(
    argv: &Option<Vec<String>>,
    launch: &Launch,
    profile_env: &[(String, String)],
    task: &Task,
) -> Result<(Option<Vec<String>>, Launch), String> {
    let Some(bound) = &task.payload.profile else {
        return Ok((argv.clone(), launch.clone()));
    };
    let profile = &bound.definition;
    let argv = profile.argv()?;
    let run_as = match &profile.run_as {
        Some(user) => {
            Some(RunAs::lookup(user).map_err(|e| format!("profile {}: {e}", bound.name))?)
        }
        None => launch.run_as.clone(),
    };
    let vars = profile_env.iter().map(|(k, v)| (k.into(), v.into()));
    let launch = Launch {
        env: environment::select(vars, &profile.pass_env),
        run_as,
        cwd: profile.cwd.clone(),
    };
    if profile.run_as.is_some() {
        launch
            .preflight()
            .map_err(|e| format!("profile {}: {e}", bound.name))?;
    }
    Ok((Some(argv), launch))
}
