//! The notifier (docs/CONTRACT.md §7): how it is run, and the one place it
//! is spawned, for the tick's run notices (tick/deliver.rs) and for an
//! agent draft's confirmation code (commands/mcp/code_notice.rs) alike.
//!
//! Both get the same treatment: the JSON document on stdin, the caller's
//! variables on top of `Notifier::launch`'s environment, at most 64 KiB of
//! output kept, the notifier's timeout and kill grace, and a stop signal
//! (`crate::interrupt`) killing its process group at the next heartbeat.
//! What the exit means is classified here once (`NotifierExit`); each
//! caller words it for its own record.

use std::time::Duration;

use serde_json::Value;

use super::{ChildExit, ChildSpec, Heartbeat, Launch, SpawnError};

/// EX_TEMPFAIL: the notifier says nothing was sent.
pub const EX_TEMPFAIL: i32 = 75;

/// Output a notifier may write that is kept (the rest is drained).
const OUTPUT_CAP: usize = 64 * 1024;

/// How often the notifier's run looks for a stop signal.
const HEARTBEAT: Duration = Duration::from_millis(100);

/// How to run the notifier.
#[derive(Debug, Clone)]
pub struct Notifier {
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    /// The environment it starts from, and as whom it runs (§19).
    pub launch: Launch,
}

/// How one run of the notifier ended.
#[derive(Debug)]
pub enum NotifierExit {
    /// Exit 0: sent.
    Sent,
    /// Exit 75 (`EX_TEMPFAIL`): nothing was sent.
    NothingSent,
    /// Any other exit status: maybe sent.
    Exited(i32),
    /// Killed by a signal this process did not send.
    Signaled(i32),
    /// Killed because its timeout passed.
    TimedOut,
    /// Killed because this process was told to stop.
    Interrupted,
    /// It started, but how it ended could not be observed.
    Lost(String),
    /// It never started: nothing was sent.
    NotStarted(SpawnError),
}

impl Notifier {
    /// Runs the notifier with `stdin` (one JSON line) and `env`, to its end.
    pub fn notify(&self, stdin: &Value, env: Vec<(String, String)>) -> NotifierExit {
        let spec = ChildSpec {
            argv: self.argv.clone(),
            stdin: format!("{stdin}\n").into_bytes(),
            env,
            launch: self.launch.clone(),
            timeout: self.timeout,
            kill_grace: self.kill_grace,
            output_cap: OUTPUT_CAP,
            lease_root: None,
        };
        let mut stop = || match crate::interrupt::received() {
            Some(_) => Heartbeat::Abort,
            None => Heartbeat::Continue,
        };
        match super::run_child(&spec, HEARTBEAT, &mut stop) {
            Ok(out) => match out.exit {
                ChildExit::Exited(0) => NotifierExit::Sent,
                ChildExit::Exited(EX_TEMPFAIL) => NotifierExit::NothingSent,
                ChildExit::Exited(code) => NotifierExit::Exited(code),
                ChildExit::Signaled(sig) => NotifierExit::Signaled(sig),
                ChildExit::TimedOut => NotifierExit::TimedOut,
                ChildExit::Aborted => NotifierExit::Interrupted,
            },
            Err(SpawnError::Lost(e)) => NotifierExit::Lost(e),
            Err(e) => NotifierExit::NotStarted(e),
        }
    }
}
