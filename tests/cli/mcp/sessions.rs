//! Long sessions: every read tool after every other on the one connection
//! a server keeps for its life, with rows of every shape to read.

use serde_json::{json, Value};

use super::RawSession;
use crate::support::Rig;

/// An order of `n` items in which every ordered pair (a, b), a == b
/// included, appears once as neighbours: an Eulerian circuit of the
/// complete directed graph with loops (Hierholzer), `n * n + 1` long.
fn every_ordered_pair(n: usize) -> Vec<usize> {
    let mut unused: Vec<Vec<usize>> = (0..n).map(|_| (0..n).collect()).collect();
    let (mut stack, mut circuit) = (vec![0], Vec::new());
    while let Some(&at) = stack.last() {
        match unused[at].pop() {
            Some(next) => stack.push(next),
            None => circuit.push(stack.pop().unwrap()),
        }
    }
    circuit.reverse();
    circuit
}

#[test]
fn every_ordered_pair_of_read_tools_answers_in_one_session() {
    let rig = Rig::new();
    let env = &rig.env;
    let task = env.task(&["--instruction", "x", "--every", "1h", "--name", "hourly"]);
    env.task(&["--instruction", "y", "--daily", "09:30", "--name", "daily"]);
    for _ in 0..2 {
        env.advance(3600);
        rig.tick(&[]).ok();
    }
    let draft = env.draft(&["--instruction", "z", "--in", "2h"]);
    let calls: [(&str, Value); 8] = [
        ("draft_status", json!({"draft_id": draft["draft_id"]})),
        ("list", json!({})),
        ("show", json!({"task": "hourly"})),
        ("runs", json!({})),
        ("next", json!({"task": "hourly"})),
        ("upcoming", json!({})),
        ("explain", json!({"task": task["task_id"]})),
        ("status", json!({})),
    ];
    let order = every_ordered_pair(calls.len());
    assert_eq!(order.len(), calls.len() * calls.len() + 1);
    let mut session = RawSession::start(env, &["mcp"], "pairs");
    let mut previous = "(none)";
    for i in order {
        let (tool, arguments) = &calls[i];
        let result = session.call(tool, arguments.clone());
        assert_eq!(
            result["isError"], false,
            "{tool} after {previous}: {result}"
        );
        previous = tool;
    }
    assert_eq!(session.finish(), 0);
}
