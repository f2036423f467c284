//! Property checks shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`)
//! and the corpus replay test below, so both hold inputs to the same rules.
//!
//! Each check takes raw bytes in a plain line format (documented on the
//! check), builds its values from them, and panics when a property fails;
//! it never panics on input the library rejects. Not part of the CLI: the
//! module is public only so that the fuzz crate, which depends on this
//! library by path, can reach it.

mod executor_result;
mod schedule;
mod stored_row;

pub use executor_result::check_executor_result;
pub use schedule::check_schedule;
pub use stored_row::check_stored_row;

/// One property check: panics when `data` breaks a property.
pub type Check = fn(&[u8]);

/// The checks by fuzz target name, in the order `scripts/fuzz` runs them.
pub const TARGETS: [(&str, Check); 3] = [
    ("schedule", check_schedule),
    ("executor_result", check_executor_result),
    ("stored_row", check_stored_row),
];

/// Splits input into lines, each decoded lossily: the parsers under test
/// take `&str`, and a replacement character is as good a probe as any.
fn lines(data: &[u8]) -> Vec<String> {
    data.split(|&b| b == b'\n')
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect()
}

/// A cheap, stable spread of bytes over `0..n`, for picking a fallback.
fn pick(data: &[u8], n: usize) -> usize {
    let hash = data.iter().fold(0usize, |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    hash % n
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::TARGETS;

    /// Every committed corpus file still satisfies its target's properties,
    /// so a regression shows up in `cargo test` on stable, without nightly.
    #[test]
    fn every_committed_corpus_input_holds_its_properties() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        for (target, check) in TARGETS {
            let dir = root.join(target);
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
                .map(|entry| entry.expect("a directory entry").path())
                .collect();
            files.sort();
            assert!(files.len() >= 10, "{target}: only {} seeds", files.len());
            for path in files {
                let data = std::fs::read(&path).expect("a readable corpus file");
                let outcome = std::panic::catch_unwind(|| check(&data));
                assert!(outcome.is_ok(), "{} breaks a property", path.display());
            }
        }
    }
}
