//! Issue 42 items 2 and 4, issue 43 item 5: what `sudoers`, `crontab` and
//! `systemd` print, and the tick's `--env-file`. The sudo rule names only
//! the supervisor (`sudoers.rs`); no printed line carries a secret
//! (`lines.rs`); the store's password reaches the tick through a private
//! file (`env_file.rs`) and never a run (`proc_scan.rs`).

mod env_file;
mod lines;
mod proc_scan;
mod sudoers;

use std::os::unix::fs::PermissionsExt;

use crate::support::TestEnv;

/// A private file of this user holding `lines`.
pub(super) fn private_file(env: &TestEnv, name: &str, lines: &str) -> std::path::PathBuf {
    let file = env.path(name);
    std::fs::write(&file, lines).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}
