//! Names the commit this binary is built from (`agentcron --version`), as
//! the environment variable AGENTCRON_COMMIT; "unknown" outside a git
//! checkout or without git. Packs the executables' relative relocations
//! where the toolchain and this host can. Writes nothing into the tree.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn main() {
    pack_relative_relocations();
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

/// Links the executables with their relative relocations packed (DT_RELR,
/// `-z pack-relative-relocs`): a position-independent executable's loader
/// applies ~20,000 of them at every start, and read from a 480 KB table they
/// cost every command ~0.3 ms of CPU; packed, the table is 6 KB (issue 46).
/// Only when a native build's linker takes the flag without a word and this
/// host's loader runs the result (binutils 2.38+ or lld, glibc 2.36+);
/// otherwise the executables are linked as before. Either way they stay
/// position-independent.
fn pack_relative_relocations() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.ends_with("-linux-gnu") || std::env::var("HOST").ok() != Some(target) {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let probe = Path::new(&out).join("relr-probe");
    let flag = "-Wl,-z,pack-relative-relocs";
    // An older GNU ld ignores an unknown `-z` flag with a warning, which
    // even --fatal-warnings lets pass: only a silent link counts.
    // The linker rustc will use: a configured one (cargo passes it as
    // RUSTC_LINKER), else cc, rustc's default.
    let linker = std::env::var_os("RUSTC_LINKER").unwrap_or_else(|| "cc".into());
    let linked = Command::new(linker)
        .args(["-x", "c", "-", "-o"])
        .arg(&probe)
        .arg(flag)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut cc| {
            cc.stdin
                .take()
                .expect("piped")
                .write_all(b"int main(void) { return 0; }\n")?;
            cc.wait_with_output()
        });
    let silent = linked.is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    let runs = || Command::new(&probe).status().is_ok_and(|s| s.success());
    if silent && runs() {
        println!("cargo:rustc-link-arg-bins={flag}");
    }
}
