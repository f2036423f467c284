//! Scenario (PostgreSQL): a COMMIT reaches the server and commits, but its
//! acknowledgement is lost with the connection (docs/CONTRACT.md §12). A proxy
//! (`pg_proxy`) drops the connection instead of relaying the answer to the
//! COMMIT of a chosen transaction: the claim of a run, the outcome of a run
//! (with its notice claimed in the same transaction), and the claim of a
//! pending notice. Each time the tick must settle the commit by reading
//! back what it wrote and carry on as if the answer had arrived: the
//! executor runs exactly once, the run ends `succeeded`, the notice is
//! delivered exactly once, and the tick exits 0 saying nothing alarming.
use crate::support::{assert_contains, on_postgres, Rig, Task, T0};

use super::notifier_calls;
use crate::pg_proxy::Proxy;

/// Statements that pick the transaction whose acknowledgement is lost.
const CLAIM: &str = "INSERT INTO runs";
const OUTCOME: &str = "lease_until = NULL";
const NOTICE_CLAIM: &str = "SET state = 'sending'";

/// A rig with one task due and a notifier.
fn due_task() -> Option<Rig> {
    if !on_postgres() {
        eprintln!("skipped: runs with AGENTCRON_TEST_STORE=postgres");
        return None;
    }
    let rig = Rig::new();
    Task::named("a").instruction("once").confirm(&rig.env);
    rig.env.set_now(T0 + 3600);
    Some(rig)
}

/// One tick through the proxy, losing the acknowledgement of the first
/// commit of a transaction that ran `statement`; its output.
fn tick_losing_ack(rig: &Rig, statement: &str) -> String {
    tick_through_proxy(rig, |proxy| proxy.lose_commit_ack_of(statement))
}

fn tick_through_proxy(rig: &Rig, arm: impl FnOnce(&Proxy)) -> String {
    let proxy = Proxy::start();
    let direct = rig.env.db_arg();
    rig.env.set_env("AGENTCRON_DB", &proxy.url(&direct));
    arm(&proxy);
    // The narrative, to see that the run was reported succeeded.
    let out = rig.tick(&["--verbose"]);
    rig.env.set_env("AGENTCRON_DB", &direct);
    assert_eq!(proxy.fired(), 1, "the proxy lost no acknowledgement");
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, ""),
        "stdout: {}",
        out.stdout
    );
    assert!(!out.stdout.contains("lease lost"), "{}", out.stdout);
    out.stdout
}

/// Ran once, succeeded, notified once and delivered.
fn assert_settled_once(rig: &Rig) {
    assert_eq!(rig.starts().len(), 1, "the executor ran once");
    assert_eq!(
        rig.env.sql("SELECT status FROM runs"),
        vec![vec!["succeeded".to_string()]]
    );
    assert_eq!(
        notifier_calls(&rig.env.path("notify.calls")).len(),
        1,
        "the notice was sent once"
    );
    assert_eq!(
        rig.env.sql("SELECT state FROM deliveries"),
        vec![vec!["delivered".to_string()]]
    );
    assert_eq!(rig.env.json(&["check"])["ok"], true);
}

/// A due task ticked with a notifier while the commit at `point` loses its
/// acknowledgement: the tick says the run succeeded, and it settled once.
fn succeeds_once_losing_the_ack_of(point: &str) {
    let Some(rig) = due_task() else { return };
    rig.with_notifier(0);
    let said = tick_losing_ack(&rig, point);
    assert_contains(&said, "succeeded");
    assert_settled_once(&rig);
}

#[test]
fn a_claim_whose_commit_ack_was_lost_is_executed() {
    succeeds_once_losing_the_ack_of(CLAIM);
}

#[test]
fn an_outcome_whose_commit_ack_was_lost_is_reported_and_its_notice_sent() {
    succeeds_once_losing_the_ack_of(OUTCOME);
}

#[test]
fn a_notice_claim_whose_commit_ack_was_lost_is_delivered() {
    let Some(rig) = due_task() else { return };
    // Without a notifier the notice waits, pending.
    rig.tick(&[]).ok();
    assert_eq!(
        rig.env.sql("SELECT state FROM deliveries"),
        vec![vec!["pending".to_string()]]
    );
    rig.with_notifier(0);
    rig.env.advance(60);
    tick_losing_ack(&rig, NOTICE_CLAIM);
    assert_settled_once(&rig);
}

/// The other side of the ambiguity: the COMMIT never reached the server,
/// whose session waits idle in its transaction, holding the run's row. The
/// tick ends that session, finds no marker, and records the outcome again.
#[test]
fn an_outcome_whose_commit_never_arrived_is_recorded_again() {
    let Some(rig) = due_task() else { return };
    rig.with_notifier(0);
    let said = tick_through_proxy(&rig, |proxy| proxy.lose_commit_of(OUTCOME));
    assert_contains(&said, "succeeded");
    assert_settled_once(&rig);
}
