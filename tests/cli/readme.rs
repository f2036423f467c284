//! The README's examples run, and those of the guides under `docs/` after
//! them (`GUIDED`): every `agentcron` line of their `sh` blocks, in order,
//! through `sh` with the built binary first on PATH, in one store, so a
//! guide may use the tasks the quick start made. `DRAFT_ID` and
//! `HASH` are filled in from the confirm line the latest draft printed,
//! `PLAN_HASH` from the apply line the latest plan printed;
//! `export` lines carry over to later lines; other lines (cargo, crontab
//! edits) are not run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{BIN, T0};

/// The documents whose examples run, in this order, one after the other.
const GUIDED: [&str; 5] = [
    "README.md",
    "docs/GUIDE.md",
    "docs/PROTOCOLS.md",
    "docs/OPERATIONS.md",
    "docs/POSTGRESQL.md",
];

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
fn every_example_of_the_readme_and_the_guides_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme: String = GUIDED
        .iter()
        .map(|doc| std::fs::read_to_string(root.join(doc)).unwrap() + "\n")
        .collect();
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
                "documented command failed: {command}\n{stdout}\n{}",
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
    assert!(ran >= 10, "only {ran} documented commands found");
    assert!(home
        .path()
        .join(".local/state/agentcron/agentcron.db")
        .is_file());
}

/// Issue 36 item 10: a newcomer's path. Install comes first and is locked,
/// the quick start follows it at once, and the line that installs the
/// crontab without an editor works as printed: run through `sh` with a
/// stand-in `crontab` that lists an existing entry and records what it is
/// given, the entry is kept and the tick's line added.
#[test]
fn the_quick_start_installs_the_crontab_without_an_editor_keeping_what_was_there() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let headings: Vec<&str> = readme.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(&headings[..2], ["## Install", "## Five-minute quick start"]);
    assert!(readme.contains("cargo install --locked --path ."));
    assert!(readme.contains("source <(COMPLETE=bash agentcron)"));
    let line = sh_blocks(&readme)
        .into_iter()
        .flatten()
        .find(|l| l.starts_with("(crontab -l"))
        .expect("the README installs the crontab without an editor");

    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let installed = dir.path().join("installed");
    std::fs::write(
        bin.join("crontab"),
        format!(
            "#!/bin/sh\nif [ \"$1\" = -l ]; then echo '0 3 * * * backup.sh'; exit 0; fi\n\
             cat > '{}'\n",
            installed.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("crontab"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        Path::new(BIN).parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .current_dir(&root)
        .env_clear()
        .env("PATH", &path)
        .env("HOME", dir.path())
        .env("AGENTCRON_DB", dir.path().join("s.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let crontab = std::fs::read_to_string(&installed).unwrap();
    let lines: Vec<&str> = crontab.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines[0], "0 3 * * * backup.sh", "{crontab}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("* * * * * ") && l.contains(" tick")),
        "{crontab}"
    );
}

/// A heading's anchor as GitHub spells it: lower case, spaces as dashes,
/// punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The targets of a document's inline links (`[text](target)`) that stay
/// inside the repository: no scheme.
fn local_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target.to_string()))
        .filter(|target| !target.contains("://") && !target.starts_with("mailto:"))
        .collect()
}

/// Issue 37 item 7 moved the README's reference into docs/: every link
/// between the README, the map and the guides names a file that exists
/// and, with `#anchor`, one of its headings.
#[test]
fn every_link_between_the_documents_leads_somewhere() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut documents = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "md") {
            documents.push(path);
        }
    }
    let mut broken = Vec::new();
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        for target in local_links(&text) {
            let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let path = match file {
                "" => document.clone(),
                file => document.parent().unwrap().join(file),
            };
            let found = match std::fs::read_to_string(&path) {
                Err(_) => path.is_dir(),
                Ok(_) if fragment.is_empty() => true,
                Ok(linked) => linked
                    .lines()
                    .filter_map(|l| l.strip_prefix('#'))
                    .any(|h| anchor(h.trim_start_matches('#')) == fragment),
            };
            if !found {
                broken.push(format!("{}: {target}", document.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links that lead nowhere: {broken:#?}");
}
