//! The floors of ARCHITECTURE.md, computed: the import graph of `src/`
//! from its source text, checked against the floors block the document
//! lists, so the map and the code cannot drift apart.
//!
//! An arrow runs from a file to the file that holds what it names: every
//! `use` (groups, `self`, `as` and globs; re-exports followed to the file
//! that defines the item), every `crate::…`, `super::…` and `self::…` path
//! in code, a path through a name a `use` brought in or a child module, and
//! every `mod` declaration (a folder's `mod.rs` above its files). Comments
//! and strings are dropped first (`super::tokens`).
//!
//! Two rules. No arrow runs from a lower floor to a higher one, nor, on one
//! floor, against the order its `→` gives (`tick/ → store/`: the tick uses
//! the store, never the reverse); rooms a comma separates are peers and may
//! use each other. And no circle between files: a file's arrow up to the
//! `mod.rs` (or `lib.rs`) of a folder that encloses it does not count for
//! circles, since that face owns the file and offers it the folder's
//! interface (a child may implement the trait its `mod.rs` declares); any
//! other circle does, its files listed with the line of each arrow.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{read, shown, src, tokens, Token};

/// A file names something another file holds, on `line` of `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arrow {
    from: String,
    to: String,
    line: usize,
}

/// The files of `src/` and their arrows.
#[derive(Debug, Default)]
struct Graph {
    files: BTreeSet<String>,
    arrows: Vec<Arrow>,
    /// Every absolute path named outside its own file (for the tick's face).
    named: Vec<(String, Vec<String>)>,
}

#[test]
fn no_circle_and_no_arrow_up_between_the_floors() {
    let graph = Graph::of_src();
    let floors = Floors::of_architecture();
    // The guard must not pass by looking at nothing.
    assert!(
        graph.files.len() > 100 && graph.arrows.len() > 500,
        "{graph:?}"
    );
    let problems = problems(&graph, &floors);
    assert!(
        problems.is_empty(),
        "the floors of ARCHITECTURE.md do not hold (each floor uses only those below \
         it; on one floor, `a → b` says b never uses a; no file circle):\n{}",
        problems.join("\n")
    );
}

/// The tick shows the rest of the house one face (`tick/mod.rs`): outside
/// rooms reach into at most three of its modules.
#[test]
fn outside_rooms_name_few_tick_modules() {
    let named = tick_modules_named_outside(&Graph::of_src());
    assert!(
        named.len() <= 3,
        "rooms outside src/tick/ name {} tick modules; re-export what they need from \
         src/tick/mod.rs instead:\n{}",
        named.len(),
        named
            .iter()
            .map(|(m, by)| format!("tick::{m} named by {by}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The tick modules outside files name (`crate::tick::X` with `X` a module),
/// each with one file that names it.
fn tick_modules_named_outside(graph: &Graph) -> BTreeMap<String, String> {
    let tick = src().join("tick");
    let modules: BTreeSet<String> = std::fs::read_dir(&tick)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.is_dir() || stem != "mod").then_some(stem)
        })
        .collect();
    let mut named = BTreeMap::new();
    for (file, path) in &graph.named {
        if file.starts_with("src/tick/") || path.first().map(String::as_str) != Some("tick") {
            continue;
        }
        if let Some(m) = path.get(1).filter(|m| modules.contains(*m)) {
            named.entry(m.clone()).or_insert_with(|| file.clone());
        }
    }
    named
}

/// What breaks the floors: files on no floor, rooms that are gone, arrows
/// up, and circles.
fn problems(graph: &Graph, floors: &Floors) -> Vec<String> {
    let mut found = placement(graph, floors);
    found.extend(arrows_against(graph, floors));
    found
}

/// Rooms the floors name that hold no file, and files on no floor.
fn placement(graph: &Graph, floors: &Floors) -> Vec<String> {
    let mut found = Vec::new();
    for room in floors.rooms.keys() {
        if !graph.files.iter().any(|f| Floors::holds(room, f)) {
            found.push(format!(
                "ARCHITECTURE.md's floors name `{room}`, which holds no file of src/"
            ));
        }
    }
    for file in &graph.files {
        if floors.room_of(file).is_none() {
            found.push(format!(
                "{file} is on no floor of ARCHITECTURE.md: add its room to the floors block"
            ));
        }
    }
    found
}

/// Arrows up, and circles.
fn arrows_against(graph: &Graph, floors: &Floors) -> Vec<String> {
    let mut found = Vec::new();
    for a in &graph.arrows {
        let (Some(from), Some(to)) = (floors.room_of(&a.from), floors.room_of(&a.to)) else {
            continue;
        };
        if floors.is_above(to, from) {
            found.push(format!(
                "{}:{}: `{}` names {} of `{}`, which is above it",
                a.from, a.line, from.0, a.to, to.0
            ));
        }
    }
    for (group, circle) in circles(graph) {
        let files: Vec<&str> = group.iter().map(String::as_str).collect();
        found.push(format!(
            "a circle of {} files ({}); one way round: {}",
            files.len(),
            files.join(", "),
            show_circle(&circle)
        ));
    }
    found
}

/// `a.rs:12 → b.rs:40 → a.rs`: each file with the line of its arrow on.
fn show_circle(circle: &[Arrow]) -> String {
    let mut words: Vec<String> = circle
        .iter()
        .map(|a| format!("{}:{}", a.from, a.line))
        .collect();
    words.push(circle[0].from.clone());
    words.join(" → ")
}

/// Whether `arrow` counts for circles: not when it climbs to the face of a
/// folder that encloses its file (`x/mod.rs`, `x.rs` beside `x/`, `lib.rs`).
fn counts_for_circles(arrow: &Arrow) -> bool {
    let folder = match arrow
        .to
        .strip_suffix("mod.rs")
        .or_else(|| arrow.to.strip_suffix("lib.rs"))
    {
        Some(dir) => dir.to_string(),
        None => format!("{}/", arrow.to.trim_end_matches(".rs")),
    };
    !arrow.from.starts_with(&folder)
}

/// Each group of files that reach each other (Tarjan's strongly connected
/// components), with a shortest way round from its first file.
fn circles(graph: &Graph) -> Vec<(BTreeSet<String>, Vec<Arrow>)> {
    let mut next: BTreeMap<&str, Vec<&Arrow>> = BTreeMap::new();
    for a in graph
        .arrows
        .iter()
        .filter(|a| a.from != a.to && counts_for_circles(a))
    {
        next.entry(a.from.as_str()).or_default().push(a);
    }
    let mut found = Vec::new();
    for group in components(&graph.files, &next) {
        if group.len() < 2 {
            continue;
        }
        let start = group.iter().next().unwrap().as_str();
        let way = way_round(start, &group, &next);
        found.push((group, way));
    }
    found
}

fn components<'a>(
    files: &'a BTreeSet<String>,
    next: &BTreeMap<&str, Vec<&'a Arrow>>,
) -> Vec<BTreeSet<String>> {
    struct Walk<'a, 'b> {
        next: &'b BTreeMap<&'b str, Vec<&'a Arrow>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for a in self.next.get(v).cloned().unwrap_or_default() {
                let w = a.to.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    self.low.insert(v, self.low[v].min(self.low[w]));
                } else if self.on_stack.contains(w) {
                    self.low.insert(v, self.low[v].min(self.index[w]));
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                self.out.push(group);
            }
        }
    }
    let mut walk = Walk {
        next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for f in files {
        if !walk.index.contains_key(f.as_str()) {
            walk.visit(f.as_str());
        }
    }
    walk.out
}

/// The shortest way from `start` back to it inside `group` (breadth first).
fn way_round(
    start: &str,
    group: &BTreeSet<String>,
    next: &BTreeMap<&str, Vec<&Arrow>>,
) -> Vec<Arrow> {
    let mut came: BTreeMap<&str, &Arrow> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for a in next.get(v).into_iter().flatten() {
            if !group.contains(&a.to) || came.contains_key(a.to.as_str()) {
                continue;
            }
            came.insert(a.to.as_str(), a);
            if a.to == start {
                let mut way = vec![(*a).clone()];
                while way[0].from != start {
                    way.insert(0, came[way[0].from.as_str()].clone());
                }
                return way;
            }
            queue.push_back(a.to.as_str());
        }
    }
    unreachable!("{start} is in a group that reaches itself")
}

/// The floors block of ARCHITECTURE.md: each room (`name/` a folder of
/// `src/`, `name` a file `src/name.rs`) with its floor (0 at the top) and,
/// when a `→` chain orders it within its floor, that chain and its place.
#[derive(Debug)]
struct Floors {
    rooms: BTreeMap<String, Place>,
}

/// A room's floor, and its chain and place in that chain.
type Place = (usize, Option<(usize, usize)>);

/// A room's name and its place.
type Room<'a> = (&'a str, Place);

/// The names (None for a glob) and paths a `use` brings in.
type UseItems = Vec<(Option<String>, Vec<String>)>;

impl Floors {
    fn of_architecture() -> Floors {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
        let text = read(&file);
        let after = text
            .split_once("## The floors")
            .expect("ARCHITECTURE.md has no `## The floors` section")
            .1;
        let block = after
            .split("```")
            .nth(1)
            .expect("ARCHITECTURE.md's floors section has no ``` block");
        Floors::parse(block)
    }

    /// A line that starts at the margin opens a floor, an indented one
    /// continues it; the rooms are what comes before the first run of two
    /// spaces, separated by commas, and ordered by `→`.
    fn parse(block: &str) -> Floors {
        let mut rooms = BTreeMap::new();
        let (mut floor, mut chains) = (None::<usize>, 0);
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            if !line.starts_with(' ') {
                floor = Some(floor.map_or(0, |f| f + 1));
            }
            let floor = floor.expect("the floors block starts with a floor");
            let names = line.trim_start().split("  ").next().unwrap_or_default();
            for item in names.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let chain: Vec<&str> = item.split('→').map(str::trim).collect();
                let order = (chain.len() > 1).then(|| {
                    chains += 1;
                    chains
                });
                for (place, room) in chain.into_iter().enumerate() {
                    let previous =
                        rooms.insert(room.to_string(), (floor, order.map(|c| (c, place))));
                    assert!(previous.is_none(), "the floors block names `{room}` twice");
                }
            }
        }
        Floors { rooms }
    }

    /// Whether `room` holds `file` (`src/…`).
    fn holds(room: &str, file: &str) -> bool {
        match room.strip_suffix('/') {
            Some(dir) => file.starts_with(&format!("src/{dir}/")),
            None => file == format!("src/{room}.rs"),
        }
    }

    /// The room of `file`, the deepest that holds it, with its place.
    fn room_of(&self, file: &str) -> Option<Room<'_>> {
        self.rooms
            .iter()
            .filter(|(room, _)| Floors::holds(room, file))
            .max_by_key(|(room, _)| room.len())
            .map(|(room, place)| (room.as_str(), *place))
    }

    /// Whether `a` stands above `b`: a higher floor, or earlier in the
    /// same chain of one floor.
    fn is_above(&self, a: Room<'_>, b: Room<'_>) -> bool {
        let ((_, (fa, ca)), (_, (fb, cb))) = (a, b);
        match (ca, cb) {
            _ if fa != fb => fa < fb,
            (Some((chain_a, pa)), Some((chain_b, pb))) => chain_a == chain_b && pa < pb,
            _ => false,
        }
    }
}

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
    fn of_src() -> Graph {
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
        bins.extend(super::rust_files(&src().join("bin")));
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
    modules.push(Module {
        path,
        file: shown.clone(),
        dir,
        in_lib,
        children: BTreeMap::new(),
        uses: BTreeMap::new(),
        globs: Vec::new(),
    });
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
                modules.push(Module {
                    path,
                    file: shown.clone(),
                    dir,
                    in_lib,
                    children: BTreeMap::new(),
                    uses: BTreeMap::new(),
                    globs: Vec::new(),
                });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn arrow(from: &str, to: &str, line: usize) -> Arrow {
        Arrow {
            from: format!("src/{from}"),
            to: format!("src/{to}"),
            line,
        }
    }

    fn graph(arrows: Vec<Arrow>) -> Graph {
        let mut g = Graph::default();
        for a in &arrows {
            g.files.insert(a.from.clone());
            g.files.insert(a.to.clone());
        }
        g.arrows = arrows;
        g
    }

    const FLOORS: &str = "
main, cli                  the top
ops/                       operations
tick/ → store/             the tick over persistence
model, error,              values
  text/
clock                      the bottom
";

    #[test]
    fn a_circle_between_files_is_reported_with_its_lines() {
        let floors = Floors::parse(FLOORS);
        let g = graph(vec![
            arrow("tick/settle.rs", "tick/overdue.rs", 3),
            arrow("tick/overdue.rs", "tick/events.rs", 7),
            arrow("tick/events.rs", "tick/settle.rs", 11),
            arrow("model.rs", "error.rs", 2),
        ]);
        assert_eq!(
            arrows_against(&g, &floors),
            [
                "a circle of 3 files (src/tick/events.rs, src/tick/overdue.rs, \
                 src/tick/settle.rs); one way round: src/tick/events.rs:11 → \
                 src/tick/settle.rs:3 → src/tick/overdue.rs:7 → src/tick/events.rs"
            ]
        );
    }

    #[test]
    fn peers_on_one_floor_may_use_each_other_but_not_in_a_circle() {
        let floors = Floors::parse(FLOORS);
        let g = graph(vec![
            arrow("model.rs", "error.rs", 2),
            arrow("error.rs", "text/mod.rs", 4),
        ]);
        assert!(arrows_against(&g, &floors).is_empty());
        let g = graph(vec![
            arrow("model.rs", "error.rs", 2),
            arrow("error.rs", "model.rs", 9),
        ]);
        assert_eq!(arrows_against(&g, &floors).len(), 1);
    }

    #[test]
    fn an_arrow_up_is_reported_across_floors_and_against_a_chain() {
        let floors = Floors::parse(FLOORS);
        let g = graph(vec![
            arrow("error.rs", "store/mod.rs", 190),
            arrow("store/sqlite/fault.rs", "tick/mod.rs", 8),
            arrow("tick/claim/mod.rs", "store/mod.rs", 1),
            arrow("ops/draft.rs", "clock.rs", 1),
        ]);
        assert_eq!(
            arrows_against(&g, &floors),
            [
                "src/error.rs:190: `error` names src/store/mod.rs of `store/`, which is above it",
                "src/store/sqlite/fault.rs:8: `store/` names src/tick/mod.rs of `tick/`, which is above it",
            ]
        );
    }

    #[test]
    fn a_climb_to_the_face_of_ones_own_folder_is_no_circle() {
        let floors = Floors::parse(FLOORS);
        let g = graph(vec![
            arrow("store/mod.rs", "store/sqlite/mod.rs", 1),
            arrow("store/sqlite/mod.rs", "store/mod.rs", 5),
        ]);
        assert!(arrows_against(&g, &floors).is_empty());
        // Between two folders' faces it is one.
        let g = graph(vec![
            arrow("store/mod.rs", "store/sqlite/mod.rs", 1),
            arrow("store/sqlite/mod.rs", "store/postgres/mod.rs", 5),
            arrow("store/postgres/mod.rs", "store/sqlite/mod.rs", 6),
        ]);
        assert_eq!(arrows_against(&g, &floors).len(), 1);
    }

    #[test]
    fn files_off_the_floors_and_rooms_that_are_gone_are_reported() {
        let floors = Floors::parse(FLOORS);
        let g = graph(vec![arrow("ops/a.rs", "limits/mod.rs", 1)]);
        let found = placement(&g, &floors);
        assert!(
            found
                .iter()
                .any(|p| p.contains("src/limits/mod.rs is on no floor")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.contains("`main`, which holds no file")),
            "{found:?}"
        );
    }
}
