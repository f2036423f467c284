//! Names the commit this binary is built from (`agentcron --version`), as
//! the environment variable AGENTCRON_COMMIT; "unknown" outside a git
//! checkout or without git. Writes nothing into the tree.

use std::process::Command;

fn main() {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=AGENTCRON_COMMIT={commit}");
    // Built again when HEAD moves (a commit, a checkout), not on every edit.
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
        if let Some(name) = git(&["symbolic-ref", "-q", "HEAD"]) {
            if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
                println!("cargo:rerun-if-changed={path}");
            }
        }
        if let Some(packed) = git(&["rev-parse", "--git-path", "packed-refs"]) {
            println!("cargo:rerun-if-changed={packed}");
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
