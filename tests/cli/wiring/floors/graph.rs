//! The import graph of `src/`, read from its source text: the modules
//! (`mod` declarations from `lib.rs` and the binaries' roots), the names
//! each `use` brings in, and every path written, resolved to the file
//! that defines what it names (re-exports followed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::super::{read, rust_files, shown, src, tokens, Token};
use super::{Arrow, Graph};

/// The names (None for a glob) and paths a `use` brings in.
type UseItems = Vec<(Option<String>, Vec<String>)>;

/// A module of the crate, where it is written and the names it brings in.
struct Module {
    path: Vec<String>,
    file: String,
    /// Where the files of its `mod x;` children are.
    dir: PathBuf,
    /// False for a binary's root (`main.rs`, `bin/*`): its `agentcron::`
    /// is the library's root, its `crate::` its own.
    in_lib: bool,
    children: BTreeMap<String, usize>,
    /// A name a `use` brings in, and the path it stands for.
    uses: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
}

impl Module {
    /// A module as its declaration opens it: no children or names yet.
    fn new(path: Vec<String>, file: String, dir: PathBuf, in_lib: bool) -> Module {
        Module {
            path,
            file,
            dir,
            in_lib,
            children: BTreeMap::new(),
            uses: BTreeMap::new(),
            globs: Vec::new(),
        }
    }
}

/// A path as written, in the module it is written in.
struct Written {
    module: usize,
    path: Vec<String>,
    line: usize,
    /// From a `use`: its name (None for a glob).
    bound: Option<Option<String>>,
}

/// What an absolute path reaches.
enum Reach {
    Module(usize),
    Item(usize),
}

impl Graph {
    pub(super) fn of_src() -> Graph {
        let mut modules = Vec::new();
        let mut written = Vec::new();
        load(
            &mut modules,
            &mut written,
            &src().join("lib.rs"),
            Vec::new(),
            true,
        );
        let mut bins = vec![src().join("main.rs")];
        bins.extend(rust_files(&src().join("bin")));
        for bin in bins {
            load(
                &mut modules,
                &mut written,
                &bin,
                vec!["<bin>".into()],
                false,
            );
        }
        // The names each `use` brings in, first: paths in code go through them.
        for w in &written {
            if let Some(bound) = &w.bound {
                if let Some(abs) = absolute(&modules, w.module, &w.path) {
                    match bound {
                        Some(name) => {
                            modules[w.module].uses.insert(name.clone(), abs);
                        }
                        None => modules[w.module].globs.push(abs),
                    }
                }
            }
        }
        let mut graph = Graph::default();
        for m in &modules {
            graph.files.insert(m.file.clone());
        }
        for w in &written {
            let from = &modules[w.module].file;
            let Some(abs) = absolute(&modules, w.module, &w.path) else {
                continue;
            };
            let to = match (reach(&modules, &abs, 0), &w.bound) {
                // A module brought in by name: the paths through it count.
                (Reach::Module(_), Some(Some(_))) => continue,
                (Reach::Module(m) | Reach::Item(m), _) => &modules[m].file,
            };
            if to != from {
                graph.named.push((from.clone(), abs.clone()));
                graph.arrows.push(Arrow {
                    from: from.clone(),
                    to: to.clone(),
                    line: w.line,
                });
            }
        }
        for m in &modules {
            for &c in m.children.values() {
                if modules[c].file != m.file {
                    graph.arrows.push(Arrow {
                        from: m.file.clone(),
                        to: modules[c].file.clone(),
                        line: 1,
                    });
                }
            }
        }
        graph
    }
}

/// Reads `file` as the module `path`, then the files its `mod x;` declare.
fn load(
    modules: &mut Vec<Module>,
    written: &mut Vec<Written>,
    file: &Path,
    path: Vec<String>,
    in_lib: bool,
) {
    let text = read(file);
    let tokens = tokens(&text);
    let dir = match file.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "main" | "mod") => file.parent().unwrap().to_path_buf(),
        Some(stem) => file.parent().unwrap().join(stem),
        None => unreachable!(),
    };
    let shown = shown(file);
    let top = modules.len();
    modules.push(Module::new(path, shown.clone(), dir, in_lib));
    // The modules open at each point: (module, brace depth it opened at).
    let mut open = vec![(top, 0usize)];
    let (mut depth, mut declared) = (0usize, Vec::new());
    let mut i = 0;
    while i < tokens.len() {
        let here = open.last().unwrap().0;
        let t = &tokens[i];
        let after_colons = i > 0 && (tokens[i - 1].is("::") || tokens[i - 1].is("."));
        if t.is("{") {
            depth += 1;
        } else if t.is("}") {
            depth = depth.saturating_sub(1);
            if open.len() > 1 && open.last().unwrap().1 == depth {
                open.pop();
            }
        } else if t.is("mod") && tokens.get(i + 1).is_some_and(Token::is_ident) {
            let name = tokens[i + 1].text.clone();
            if tokens.get(i + 2).is_some_and(|t| t.is(";")) {
                declared.push((here, name));
            } else if tokens.get(i + 2).is_some_and(|t| t.is("{")) {
                let mut path = modules[here].path.clone();
                path.push(name.clone());
                let inner = modules.len();
                let dir = modules[here].dir.join(&name);
                modules.push(Module::new(path, shown.clone(), dir, in_lib));
                modules[here].children.insert(name, inner);
                open.push((inner, depth));
                depth += 1;
                i += 3;
                continue;
            }
        } else if t.is("use") && !after_colons {
            let (items, end) = use_tree(&tokens, i + 1, Vec::new());
            for (name, path) in items {
                written.push(Written {
                    module: here,
                    path,
                    line: t.line,
                    bound: Some(name),
                });
            }
            i = end;
            continue;
        } else if t.is_ident() && !after_colons && tokens.get(i + 1).is_some_and(|n| n.is("::")) {
            let mut path = vec![t.text.clone()];
            let mut j = i;
            while tokens.get(j + 1).is_some_and(|n| n.is("::"))
                && tokens.get(j + 2).is_some_and(Token::is_ident)
            {
                path.push(tokens[j + 2].text.clone());
                j += 2;
            }
            written.push(Written {
                module: here,
                path,
                line: t.line,
                bound: None,
            });
            i = j + 1;
            continue;
        }
        i += 1;
    }
    for (module, name) in declared {
        let dir = modules[module].dir.clone();
        let child = [
            dir.join(format!("{name}.rs")),
            dir.join(&name).join("mod.rs"),
        ]
        .into_iter()
        .find(|f| f.is_file())
        .unwrap_or_else(|| panic!("{shown} declares `mod {name};` and no file holds it"));
        let mut path = modules[module].path.clone();
        path.push(name.clone());
        let index = modules.len();
        modules[module].children.insert(name, index);
        load(modules, written, &child, path, in_lib);
    }
}

/// The names and paths of the `use` tree at `tokens[i]`, under `prefix`
/// (a glob's name is None), and where the tree ends.
fn use_tree(tokens: &[Token], mut i: usize, mut prefix: Vec<String>) -> (UseItems, usize) {
    let mut out = Vec::new();
    while let Some(t) = tokens.get(i) {
        if t.is("::") {
            i += 1;
        } else if t.is("{") {
            i += 1;
            while tokens.get(i).is_some_and(|t| !t.is("}")) {
                let (items, end) = use_tree(tokens, i, prefix.clone());
                out.extend(items);
                i = end + usize::from(tokens.get(end).is_some_and(|t| t.is(",")));
            }
            return (out, i + 1);
        } else if t.is("*") {
            out.push((None, prefix));
            return (out, i + 1);
        } else if t.is_ident() {
            prefix.push(t.text.clone());
            i += 1;
            if tokens.get(i).is_some_and(|t| t.is("::")) {
                continue;
            }
            if prefix.last().is_some_and(|s| s == "self") {
                prefix.pop();
            }
            let mut name = prefix.last().cloned().unwrap_or_default();
            if tokens.get(i).is_some_and(|t| t.is("as")) {
                name = tokens
                    .get(i + 1)
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                i += 2;
            }
            out.push((Some(name), prefix));
            return (out, i);
        } else {
            return (out, i);
        }
    }
    (out, i)
}

/// The path from the library's root that `path`, written in `module`,
/// stands for; None when it leaves the library (std, a dependency, a
/// local name).
fn absolute(modules: &[Module], module: usize, path: &[String]) -> Option<Vec<String>> {
    let m = &modules[module];
    let (first, rest) = path.split_first()?;
    let joined = |base: &[String]| -> Vec<String> { base.iter().chain(rest).cloned().collect() };
    match first.as_str() {
        "crate" => m.in_lib.then(|| rest.to_vec()),
        "agentcron" if !m.in_lib => Some(rest.to_vec()),
        _ if !m.in_lib => None,
        "self" => Some(joined(&m.path)),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = m.path.len().checked_sub(ups)?;
            Some(m.path[..base].iter().chain(&path[ups..]).cloned().collect())
        }
        _ if !m.in_lib => None,
        _ if m.children.contains_key(first) => Some(m.path.iter().chain(path).cloned().collect()),
        _ => {
            if let Some(to) = m.uses.get(first) {
                return Some(to.iter().chain(rest).cloned().collect());
            }
            // A glob (`use super::*` in a test module) brings in its names.
            m.globs.iter().find_map(|g| {
                let Reach::Module(gm) = reach(modules, g, 0) else {
                    return None;
                };
                let gm = &modules[gm];
                if gm.children.contains_key(first) {
                    Some(gm.path.iter().chain(path).cloned().collect())
                } else {
                    gm.uses
                        .get(first)
                        .map(|to| to.iter().chain(rest).cloned().collect())
                }
            })
        }
    }
}

/// The module or the file of the item an absolute path reaches, re-exports
/// followed to where the item is defined.
fn reach(modules: &[Module], path: &[String], hops: usize) -> Reach {
    let mut m = 0;
    for (k, segment) in path.iter().enumerate() {
        if let Some(&child) = modules[m].children.get(segment) {
            m = child;
            continue;
        }
        if hops < 8 {
            if let Some(to) = modules[m].uses.get(segment) {
                let through: Vec<String> = to.iter().chain(&path[k + 1..]).cloned().collect();
                return reach(modules, &through, hops + 1);
            }
        }
        return Reach::Item(m);
    }
    Reach::Module(m)
}
