//! Guards on how the code is wired. Every test file is compiled: a `.rs`
//! file under `tests/cli/` that no `mod` line names would sit there unrun,
//! its tests silently gone. Shell completion reads the store only through
//! the store's interface, never with SQL or a driver of its own. And the
//! floors hold (commands → ops → tick → store → model/payload → limits →
//! process/clock → schedule/text): no handler under `src/commands/` opens
//! a writing transaction (that is an operation's job, in `src/ops/`),
//! nothing below the commands names `commands`, `cli`, `context` or
//! `output`, and the whole import graph keeps to ARCHITECTURE.md's floors
//! without a circle (`floors`).
//!
//! The floor guards read the sources as tokens (comments, strings and
//! character literals dropped), so that a path split over lines, a
//! `use crate::{a, b::{c}}` group or a method chain is seen as the compiler
//! sees it, and a comment that mentions one is not.

use std::path::{Path, PathBuf};

mod floors;

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

/// The Store's entry points that begin a writing transaction (or rewrite
/// the store), as methods: `src/store/mod.rs`'s `Store` trait and its
/// typed wrappers on `dyn Store`.
const WRITING: [&str; 12] = [
    "write",
    "write_relaxed",
    "write_together",
    "write_within",
    "write_soon",
    "write_dyn",
    "write_relaxed_dyn",
    "write_together_dyn",
    "write_soon_dyn",
    "migrate",
    // VACUUM: rewrites the whole store.
    "compact",
    // Takes the write lock to read what is due with the files (writes
    // only the note beside the store).
    "note_idle",
];

/// The Store's other entry points: they read, describe, or copy the store
/// elsewhere.
const NOT_WRITING: [&str; 11] = [
    "read",
    "idle_note",
    "read_dyn",
    "location",
    "size_bytes",
    "server_time",
    "server_time_micros",
    "skips_locked_rows",
    "backup_to",
    "schema_version",
    "migrations",
];

/// The rooms above the operations: they may name each other and anything
/// below. Every other file under `src/` is below them and must not.
const UPPER_ROOMS: [&str; 7] = [
    "main.rs",
    "lib.rs",
    "cli.rs",
    "context.rs",
    "commands",
    "output",
    // Answers the shell beside the commands: reads the same `--db` flag.
    "completion",
];

/// What the lower floors must not name, as `crate::NAME`.
const UPPER_MODULES: [&str; 4] = ["commands", "cli", "context", "output"];

#[test]
fn every_entry_point_of_the_store_is_known_as_writing_or_not() {
    let file = src().join("store/mod.rs");
    let tokens = tokens(&read(&file));
    let mut unknown = Vec::new();
    for (block, i) in blocks_named(&tokens, &["trait Store", "impl dyn Store"]) {
        for (name, line) in fns_in(&tokens, i) {
            if !WRITING.contains(&name.as_str()) && !NOT_WRITING.contains(&name.as_str()) {
                unknown.push(format!("{}:{line}: {block}::{name}", shown(&file)));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "entry points of the store that the floor guard does not know; add each to \
         WRITING (it begins a writing transaction or rewrites the store) or NOT_WRITING \
         in tests/cli/wiring/mod.rs:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn no_handler_opens_a_writing_transaction() {
    let mut found = Vec::new();
    for file in rust_files(&src().join("commands")) {
        let tokens = tokens(&read(&file));
        for (i, t) in tokens.iter().enumerate() {
            if let Some(why) = opens_a_write(&tokens, i) {
                found.push(format!("{}:{}: {why}", shown(&file), t.line));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a handler under src/commands/ opens a writing transaction; move the \
         transaction into an operation under src/ops/ (plain values in, a value out) \
         and call that:\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_below_the_commands_names_them() {
    let files: Vec<PathBuf> = rust_files(&src())
        .into_iter()
        .filter(|f| {
            !UPPER_ROOMS
                .iter()
                .any(|room| f.starts_with(src().join(room)))
        })
        .collect();
    // The guard must not pass by looking at nothing.
    for floor in ["ops", "tick", "store", "model.rs", "payload.rs", "schedule"] {
        let floor = src().join(floor);
        assert!(
            files.iter().any(|f| f.starts_with(&floor)),
            "{} is not checked",
            floor.display()
        );
    }
    let mut found = Vec::new();
    for file in files {
        let tokens = tokens(&read(&file));
        for (name, line) in crate_names(&tokens, module_depth(&file)) {
            if UPPER_MODULES.contains(&name.as_str()) {
                found.push(format!("{}:{line}: names crate::{name}", shown(&file)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a file below the commands names a room above it (the floors: commands → ops → \
         tick/store → model/payload/schedule → process/clock; only {UPPER_ROOMS:?} may \
         name {UPPER_MODULES:?}); take the value as a parameter instead:\n{}",
        found.join("\n")
    );
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()))
}

/// `file` as the repository names it.
fn shown(file: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for path in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// How many `super`s lead from `file`'s module to the crate's root:
/// `src/ops/approve.rs` is `ops::approve` (2), `src/ops/mod.rs` is `ops` (1).
fn module_depth(file: &Path) -> usize {
    let relative = file.strip_prefix(src()).unwrap();
    let parts = relative.components().count();
    if file.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// One token of Rust source and the line it starts on.
#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, text: &str) -> bool {
        self.text == text
    }

    fn is_ident(&self) -> bool {
        self.text
            .starts_with(|c: char| c.is_alphabetic() || c == '_')
    }
}

/// The tokens of `source` that name things: identifiers (keywords among
/// them), `::`, and single punctuation characters. Comments, string,
/// byte-string, raw-string and character literals are dropped, so what they
/// say is never taken for code. Numbers come out as identifier-like words.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        let start_line = line;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&chars, i, &mut line);
        } else if c == '"' {
            i = skip_string(&chars, i + 1, &mut line);
        } else if c == '\'' {
            i = skip_char_or_lifetime(&chars, i, &mut out, line);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A raw or byte string's prefix: r"", r#""#, b"", br"", c"".
            if let Some(end) = literal_after_prefix(&chars, &word, i, &mut line) {
                i = end;
            } else {
                out.push(Token {
                    text: word,
                    line: start_line,
                });
            }
        } else if c == ':' && next == Some(':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// Past the block comment opening at `i` (they nest).
fn skip_block_comment(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
            ('*', Some('/')) => {
                (depth, i) = (depth - 1, i + 2);
                if depth == 0 {
                    return i;
                }
            }
            ('\n', _) => (*line, i) = (*line + 1, i + 1),
            _ => i += 1,
        }
    }
    i
}

/// Past the end of a string whose body starts at `i`, escapes honoured.
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                // A line-continuation escape still ends a line.
                *line += usize::from(chars.get(i + 1) == Some(&'\n'));
                i += 2;
            }
            '"' => return i + 1,
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// A character literal ('a', '\n', '\u{1F600}') is skipped; a lifetime or
/// a label ('a, 'static) leaves its quote as a token and its name to be
/// read as an identifier.
fn skip_char_or_lifetime(chars: &[char], i: usize, out: &mut Vec<Token>, line: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        // Past the backslash and the character it escapes, to the quote.
        (Some('\\'), _) => {
            let mut j = i + 3;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        (Some(_), Some('\'')) => i + 3,
        _ => {
            out.push(Token {
                text: "'".into(),
                line,
            });
            i + 1
        }
    }
}

/// When `word` (just read, ending before `i`) prefixes a literal, the index
/// past that literal.
fn literal_after_prefix(chars: &[char], word: &str, i: usize, line: &mut usize) -> Option<usize> {
    match (word, chars.get(i)) {
        ("b" | "c", Some('"')) => Some(skip_string(chars, i + 1, line)),
        ("r" | "br" | "cr", Some('"' | '#')) => {
            let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
            if chars.get(i + hashes) != Some(&'"') {
                return None;
            }
            let mut j = i + hashes + 1;
            while j < chars.len() {
                if chars[j] == '"'
                    && chars[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == '#')
                        .count()
                        == hashes
                {
                    return Some(j + 1 + hashes);
                }
                *line += usize::from(chars[j] == '\n');
                j += 1;
            }
            Some(j)
        }
        _ => None,
    }
}

/// Why the call at `tokens[i]` opens a writing transaction, if it does: a
/// writing entry point called as a method (`store.write(|tx| …)`,
/// `.migrate(…)`) or through its trait (`Store::write_dyn(store, …)`).
/// `write(true)` (a file's `OpenOptions`) and `write(&bytes)` (`io::Write`)
/// are not the store's.
fn opens_a_write(tokens: &[Token], i: usize) -> Option<String> {
    let name = tokens[i].text.as_str();
    if !WRITING.contains(&name) || !tokens.get(i + 1)?.is("(") || i == 0 {
        return None;
    }
    let before = &tokens[i - 1];
    let through_trait =
        before.is("::") && i >= 2 && (tokens[i - 2].is("Store") || tokens[i - 2].is(">"));
    if !before.is(".") && !through_trait {
        return None;
    }
    let argument = tokens.get(i + 2)?;
    if matches!(name, "write" | "write_relaxed")
        && ["true", "false", "&", ")"].iter().any(|t| argument.is(t))
    {
        return None;
    }
    Some(format!("calls the store's `{name}(`"))
}

/// The positions of the items named `heads` ("trait Store": the words
/// before the item's `{`), each with its head.
fn blocks_named<'a>(tokens: &[Token], heads: &[&'a str]) -> Vec<(&'a str, usize)> {
    let mut found = Vec::new();
    for head in heads {
        let words: Vec<&str> = head.split(' ').collect();
        for i in 0..tokens.len().saturating_sub(words.len()) {
            let here = words.iter().enumerate().all(|(k, w)| tokens[i + k].is(w));
            // `trait Store:` (its supertraits), `impl dyn Store + '_ {`.
            if here
                && ["{", ":", "+", "<"]
                    .iter()
                    .any(|t| tokens[i + words.len()].is(t))
            {
                found.push((*head, i + words.len()));
            }
        }
        assert!(
            found.iter().any(|(h, _)| h == head),
            "no `{head}` in src/store/mod.rs: the floor guard's list of its entry points needs a look"
        );
    }
    found
}

/// The functions the item whose body opens at or after `start` declares
/// directly (not inside their bodies), with their lines.
fn fns_in(tokens: &[Token], start: usize) -> Vec<(String, usize)> {
    let open = start + tokens[start..].iter().position(|t| t.is("{")).unwrap();
    let (mut depth, mut found) = (0, Vec::new());
    for i in open..tokens.len() {
        match tokens[i].text.as_str() {
            "{" => depth += 1,
            "}" if depth == 1 => break,
            "}" => depth -= 1,
            "fn" if depth == 1 => found.push((tokens[i + 1].text.clone(), tokens[i + 1].line)),
            _ => {}
        }
    }
    found
}

/// Every name a file uses at the crate's root, with its line: the first
/// segment after `crate::` (or `$crate::`, or as many `super::`s as lead to
/// the root from a module `depth` deep, inline `mod x { … }` counted), and
/// each first segment of a `crate::{a, b::{c}}` group (`a` and `b`, not `c`).
fn crate_names(tokens: &[Token], depth: usize) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    // The brace depth at which each enclosing inline module opened.
    let (mut braces, mut inline_modules) = (0usize, Vec::new());
    for i in 0..tokens.len() {
        match tokens[i].text.as_str() {
            "{" => {
                if i >= 2 && tokens[i - 2].is("mod") {
                    inline_modules.push(braces);
                }
                braces += 1;
            }
            "}" => {
                braces -= 1;
                if inline_modules.last() == Some(&braces) {
                    inline_modules.pop();
                }
            }
            _ => {}
        }
        let at_root = if tokens[i].is("crate") && !(i > 0 && tokens[i - 1].is("::")) {
            Some(i + 1)
        } else if tokens[i].is("super") && !(i > 0 && tokens[i - 1].is("::")) {
            let (mut j, mut supers) = (i, 0);
            while tokens.get(j).is_some_and(|t| t.is("super"))
                && tokens.get(j + 1).is_some_and(|t| t.is("::"))
            {
                (j, supers) = (j + 2, supers + 1);
            }
            (supers > 0 && supers >= depth + inline_modules.len()).then(|| j - 1)
        } else {
            None
        };
        if let Some(colons) = at_root.filter(|&c| tokens.get(c).is_some_and(|t| t.is("::"))) {
            found.extend(first_segments(tokens, colons + 1));
        }
    }
    found
}

/// The first segment of the path at `tokens[i]`, or of each path of the
/// group `{…}` there.
fn first_segments(tokens: &[Token], i: usize) -> Vec<(String, usize)> {
    let Some(first) = tokens.get(i) else {
        return Vec::new();
    };
    if !first.is("{") {
        return first
            .is_ident()
            .then(|| (first.text.clone(), first.line))
            .into_iter()
            .collect();
    }
    let (mut depth, mut starts_item, mut found) = (0, true, Vec::new());
    for t in &tokens[i..] {
        match t.text.as_str() {
            "{" => {
                depth += 1;
                starts_item = depth == 1;
                continue;
            }
            "}" if depth == 1 => break,
            "}" => depth -= 1,
            "," if depth == 1 => {
                starts_item = true;
                continue;
            }
            _ if depth == 1 && starts_item && t.is_ident() => found.push((t.text.clone(), t.line)),
            _ => {}
        }
        starts_item = false;
    }
    found
}

#[test]
fn the_token_reader_keeps_every_word_on_its_line() {
    for file in rust_files(&src()) {
        let text = read(&file);
        let lines: Vec<&str> = text.lines().collect();
        for t in tokens(&text).iter().filter(|t| t.is_ident()) {
            assert!(
                lines[t.line - 1].contains(&t.text),
                "{}:{}: the floor guards read `{}` on a line without it",
                shown(&file),
                t.line,
                t.text
            );
        }
    }
}
