//! The README's examples run: every `agentcron` line of its `sh` blocks, in
//! order, through `sh` with the built binary first on PATH. `DRAFT_ID` and
//! `HASH` are filled in from the confirm line the latest draft printed,
//! `PLAN_HASH` from the apply line the latest plan printed;
//! `export` lines carry over to later lines; other lines (cargo, crontab
//! edits) are not run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{BIN, T0};

fn sh_blocks(readme: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```sh") => current = Some(Vec::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(lines), text) => {
                // Join backslash continuations into one command.
                match lines.last_mut() {
                    Some(last) if last.ends_with('\\') => {
                        last.pop();
                        last.push_str(text);
                    }
                    _ => lines.push(text.to_string()),
                }
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn every_readme_example_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut exports: Vec<String> = Vec::new();
    let (mut draft_id, mut hash) = (String::new(), String::new());
    let mut plan_hash = String::new();
    let mut ran = 0;
    for block in sh_blocks(&readme) {
        for line in block {
            if line.starts_with("export ") {
                exports.push(line);
                continue;
            }
            if !line.starts_with("agentcron ") {
                continue;
            }
            let command = line
                .replace("PLAN_HASH", &plan_hash)
                .replace("DRAFT_ID", &draft_id)
                .replace("HASH", &hash);
            let script = format!("{}\n{command}", exports.join("\n"));
            let out = Command::new("sh")
                .arg("-c")
                .arg(&script)
                .current_dir(&root)
                .env_clear()
                .env("PATH", &path)
                .env("HOME", home.path())
                .env("LOGNAME", "reader")
                .env("AGENTCRON_NOW", T0.to_string())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "README command failed: {command}\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            if let Some(confirm) = stdout
                .lines()
                .find(|l| l.trim_start().starts_with("agentcron confirm "))
            {
                let words: Vec<&str> = confirm.split_whitespace().collect();
                draft_id = words[2].to_string();
                hash = words[4].to_string();
            }
            if let Some(apply) = stdout
                .lines()
                .find(|l| l.trim_start().starts_with("agentcron apply "))
            {
                plan_hash = apply.split_whitespace().nth(4).unwrap_or("").to_string();
            }
            ran += 1;
        }
    }
    assert!(ran >= 10, "only {ran} README commands found");
    assert!(home
        .path()
        .join(".local/state/agentcron/agentcron.db")
        .is_file());
}
