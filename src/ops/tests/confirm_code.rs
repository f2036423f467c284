//! `ops::confirm_code` inside `confirm` (docs/CONTRACT.md §17): an agent's
//! draft opens only with its one-time code; wrong codes are counted and
//! committed, and the third voids the draft.

use super::fixture::{daily, refusal, Fixture, Person};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::ops::confirm::{confirm_in, Outcome};
use crate::ops::confirm_code::Proof;
use crate::ops::draft::{self, Agent, Request};

/// An agent's draft for alice, locked with the code 123456.
fn agent_draft(f: &mut Fixture, alice: &Person) -> draft::Made {
    let request = Request {
        caller: alice.caller(),
        now: f.now,
        default_zone: chrono_tz::UTC,
        replace: None,
        ttl: "30m",
        agent: Some(Agent {
            drafted_by: "agent:helper",
            code: "123456",
            max_per_hour: 10,
        }),
    };
    draft::make(f.store.as_mut(), request, &daily("09:00")).unwrap()
}

fn confirm_with(
    f: &mut Fixture,
    who: &Person,
    made: &draft::Made,
    proof: Proof<'_>,
) -> anyhow::Result<Outcome> {
    let caller = who.caller();
    let (id, hash) = (&made.draft.draft_id, &made.draft.payload_hash);
    confirm_in(
        f.store.as_mut(),
        &caller,
        id,
        hash,
        proof,
        who.actor(),
        f.now,
    )
}

#[test]
fn an_agents_draft_needs_its_code_and_opens_with_it() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = agent_draft(&mut f, &alice);
    let (kind, _) = refusal(confirm_with(&mut f, &alice, &made, Proof::None));
    assert_eq!(kind, ErrorKind::Denied);
    let outcome = confirm_with(&mut f, &alice, &made, Proof::Code("123456")).unwrap();
    assert!(matches!(outcome, Outcome::Confirmed(_)));
    assert_eq!(f.tasks(&alice).len(), 1);
}

#[test]
fn the_third_wrong_code_voids_the_draft_and_creates_nothing() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = agent_draft(&mut f, &alice);
    for left in ["2 more", "1 more"] {
        let Outcome::Refused(e) =
            confirm_with(&mut f, &alice, &made, Proof::Code("000000")).unwrap()
        else {
            panic!("a wrong code confirmed");
        };
        assert!(e.message.contains(left), "{}", e.message);
    }
    let Outcome::Refused(e) = confirm_with(&mut f, &alice, &made, Proof::Code("000000")).unwrap()
    else {
        panic!("a wrong code confirmed");
    };
    assert!(e.message.contains("is void"), "{}", e.message);
    assert_eq!(f.events(&alice, AuditAction::WrongCode).len(), 2);
    assert_eq!(f.events(&alice, AuditAction::Void).len(), 1);
    // Void: even the right code finds no draft now.
    let (kind, e) = refusal(confirm_with(&mut f, &alice, &made, Proof::Code("123456")));
    assert_eq!(kind, ErrorKind::NotFound);
    assert!(e.message.contains("voided"), "{}", e.message);
    assert!(f.tasks(&alice).is_empty());
}

#[test]
fn the_agent_that_drafted_cannot_confirm() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = agent_draft(&mut f, &alice);
    let agent_and_alice = Person::new("acme", &["unix:alice", "agent:helper"]);
    let (kind, e) = refusal(confirm_with(
        &mut f,
        &agent_and_alice,
        &made,
        Proof::Code("123456"),
    ));
    assert_eq!(kind, ErrorKind::Denied);
    assert!(e.message.contains("cannot confirm it"), "{}", e.message);
    assert!(f.tasks(&alice).is_empty());
}
