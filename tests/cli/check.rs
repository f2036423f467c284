//! `check`: the store's invariants, each violation named.
use crate::support::{assert_contains, Rig, Task, T0};

const HOUR: i64 = 3600;

#[test]
fn check_names_each_violation() {
    let rig = Rig::new();
    Task::named("k").confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&[]).ok();
    assert_eq!(
        rig.env.run(&["check"]).ok().stdout.trim(),
        "ok: every invariant holds"
    );
    rig.env
        .sql("UPDATE runs SET status = 'running', lease_until = 1 RETURNING 1");
    let out = rig.env.run(&["check"]);
    assert_eq!(out.code, 1);
    assert_contains(&out.stdout, "lease that expired");
}
