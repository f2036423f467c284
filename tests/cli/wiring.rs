//! Guards on how the code is wired. Every test file is compiled: a `.rs`
//! file under `tests/cli/` that no `mod` line names would sit there unrun,
//! its tests silently gone. And shell completion reads the store only
//! through the store's interface, never with SQL or a driver of its own.

use std::path::Path;

/// The module names `file` declares with `mod NAME;`.
fn declared(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()))
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?
                .strip_suffix(';')
        })
        .map(str::to_string)
        .collect()
}

/// The `.rs` files of `dir` other than `skip`, as module names.
fn files(dir: &Path, skip: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .filter(|name| name != skip)
        .collect();
    names.sort();
    names
}

#[test]
fn every_test_file_is_wired_into_the_test_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    // The binary's root, and every folder module below it (`mod.rs`).
    let mut places = vec![(root.clone(), root.join("main.rs"))];
    for entry in std::fs::read_dir(&root).unwrap().filter_map(Result::ok) {
        let dir = entry.path();
        if dir.join("mod.rs").is_file() {
            let parent = dir.join("mod.rs");
            places.push((dir, parent));
        }
    }
    for (dir, parent) in places {
        let skip = if parent.ends_with("main.rs") {
            "main"
        } else {
            "mod"
        };
        let wired = declared(&parent);
        let unwired: Vec<String> = files(&dir, skip)
            .into_iter()
            .filter(|name| !wired.contains(name))
            .collect();
        assert!(
            unwired.is_empty(),
            "{} does not declare {unwired:?}: their tests never run",
            parent.display()
        );
    }
}

#[test]
fn completion_reads_the_store_only_through_its_interface() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/completion");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sources in {}", dir.display());
    // A driver, or a statement: SQL keywords in capitals, as written here.
    let forbidden = ["rusqlite", "postgres::", "SELECT ", " FROM ", " WHERE "];
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for word in forbidden {
                assert!(
                    !code.contains(word),
                    "{}:{}: {word:?} in completion, which reads the store through \
                     store::CompletionTx (docs/CONTRACT.md §15): {line}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}
