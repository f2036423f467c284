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

mod graph;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{read, src};

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
