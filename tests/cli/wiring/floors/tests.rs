//! The floors guard on small graphs: it reports what it must.

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
