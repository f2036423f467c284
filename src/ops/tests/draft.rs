//! `ops::draft` (docs/CONTRACT.md §3, §13, §17): what a draft accepts and
//! refuses before anything is stored, a replacement's changes (step-ups
//! first) over the task as it is, and an agent's quotas.

use super::fixture::{daily, named, refusal, Fixture, Person, T0};
use crate::audit::AuditAction;
use crate::error::ErrorKind;
use crate::ops::draft::{self, Agent, DraftSpec, Request, MAX_WAITING_AGENT_DRAFTS};

/// Drafts `spec` as an agent working for `who` that may draft `per_hour` an hour.
fn agent_draft(f: &mut Fixture, who: &Person, per_hour: u32) -> anyhow::Result<draft::Made> {
    let request = Request {
        caller: who.caller(),
        now: f.now,
        default_zone: chrono_tz::UTC,
        replace: None,
        ttl: "30m",
        agent: Some(Agent {
            drafted_by: "agent:helper",
            code: "123456",
            max_per_hour: per_hour,
        }),
    };
    draft::make(f.store.as_mut(), request, &daily("09:00"))
}

#[test]
fn a_draft_is_stored_waiting_with_its_hash_and_next_runs() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = f.draft(&alice, &daily("09:00")).unwrap();
    let stored = f.store.read(|tx| tx.draft(&made.draft.draft_id)).unwrap();
    let stored = stored.expect("the draft is stored");
    assert_eq!(stored.payload_hash, made.draft.payload_hash);
    assert_eq!(stored.expires_at, T0 + 30 * 60);
    assert_eq!(made.payload.owner_keys, vec!["unix:alice".to_string()]);
    let upcoming: Vec<i64> = made.upcoming.iter().map(|o| o.at).collect();
    assert_eq!(
        upcoming,
        vec![T0 + 3600, T0 + 3600 + 86400, T0 + 3600 + 2 * 86400]
    );
    assert!(
        f.tasks(&alice).is_empty(),
        "nothing runs until it is confirmed"
    );
    assert_eq!(f.events(&alice, AuditAction::Draft).len(), 1);
}

#[test]
fn a_bad_schedule_is_rejected_and_nothing_is_stored() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    for spec in [
        daily("25:00"),
        DraftSpec {
            daily: None,
            cron: Some("61 * * * *".into()),
            ..daily("09:00")
        },
        DraftSpec {
            daily: None,
            ..daily("09:00")
        },
    ] {
        let (kind, _) = refusal(f.draft(&alice, &spec));
        assert_eq!(kind, ErrorKind::Usage, "{spec:?}");
    }
    assert!(f.events(&alice, AuditAction::Draft).is_empty());
}

#[test]
fn a_time_in_the_past_is_refused() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let passed = DraftSpec {
        instruction: Some("once".into()),
        at: Some("2026-12-01T09:00:00Z".into()),
        ..DraftSpec::default()
    };
    let (kind, e) = refusal(f.draft(&alice, &passed));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(e.message.contains("is in the past"), "{}", e.message);
    assert!(f.events(&alice, AuditAction::Draft).is_empty());
}

#[test]
fn the_values_limits_are_refused_naming_the_flag() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let cases = [
        (
            DraftSpec {
                max_retries: Some(101),
                ..daily("09:00")
            },
            "--max-retries",
        ),
        (
            DraftSpec {
                timeout: Some("25h".into()),
                ..daily("09:00")
            },
            "--timeout",
        ),
        (
            DraftSpec {
                name: Some("no spaces".into()),
                ..daily("09:00")
            },
            "--name",
        ),
        (
            DraftSpec {
                instruction: Some(" \n".into()),
                ..daily("09:00")
            },
            "instruction is empty",
        ),
        (
            DraftSpec {
                until: Some("2027-01-01".into()),
                count: Some(3),
                ..daily("09:00")
            },
            "--count",
        ),
    ];
    for (spec, named) in cases {
        let (kind, e) = refusal(f.draft(&alice, &spec));
        assert_eq!(kind, ErrorKind::Usage, "{named}");
        assert!(e.message.contains(named), "{named}: {}", e.message);
    }
    assert!(f.events(&alice, AuditAction::Draft).is_empty());
}

#[test]
fn a_name_another_task_of_the_tenant_holds_is_a_conflict() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    f.task(&alice, &named("digest", "09:00"));
    let (kind, e) = refusal(f.draft(&alice, &named("digest", "10:00")));
    assert_eq!(kind, ErrorKind::Conflict);
    assert!(
        e.message.contains("'digest' already exists"),
        "{}",
        e.message
    );
    // Another tenant may use the name.
    f.draft(&Person::alice_elsewhere(), &named("digest", "10:00"))
        .unwrap();
}

#[test]
fn a_replacements_changes_name_only_what_changed() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let change = DraftSpec {
        daily: Some("10:00".into()),
        policy: Some("confirm_writes".into()),
        ..DraftSpec::default()
    };
    let made = f.draft_replacing(&alice, &task.task_id, &change).unwrap();
    let old = made.replacing.as_ref().expect("the task it replaces");
    assert_eq!(old.task_id, task.task_id);
    // The fields that changed; how a person reads them (step-ups first) is
    // output::confirmed's, tested there.
    let changed = crate::payload::changes(&old.payload, &made.payload);
    let fields: Vec<&str> = changed.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, vec!["policy", "schedule"]);
    assert_eq!(made.draft.replaces.as_ref().map(|r| r.revision), Some(1));
}

#[test]
fn a_replacement_keeps_the_limits_it_does_not_name_and_none_removes_one() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let limited = DraftSpec {
        timeout: Some("10m".into()),
        budget: Some(vec!["runs=3/day".into()]),
        ..daily("09:00")
    };
    let task = f.task(&alice, &limited);
    let moved = DraftSpec {
        daily: Some("10:00".into()),
        ..DraftSpec::default()
    };
    let kept = f.draft_replacing(&alice, &task.task_id, &moved).unwrap();
    assert_eq!(kept.payload.timeout_seconds, Some(600));
    assert_eq!(kept.payload.budgets.len(), 1);
    let unlimited = DraftSpec {
        timeout: Some("none".into()),
        ..DraftSpec::default()
    };
    let made = f
        .draft_replacing(&alice, &task.task_id, &unlimited)
        .unwrap();
    assert_eq!(made.payload.timeout_seconds, None);
    let old = made.replacing.as_ref().unwrap();
    let changed = crate::payload::changes(&old.payload, &made.payload);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].field, "timeout_seconds");
}

#[test]
fn a_replacement_that_changes_nothing_is_refused() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let same = DraftSpec {
        daily: Some("09:00".into()),
        ..DraftSpec::default()
    };
    let (kind, e) = refusal(f.draft_replacing(&alice, &task.task_id, &same));
    assert_eq!(kind, ErrorKind::Usage);
    assert!(e.message.contains("unchanged"), "{}", e.message);
}

#[test]
fn only_an_owner_drafts_a_replacement() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let task = f.task(&alice, &daily("09:00"));
    let (kind, _) = refusal(f.draft_replacing(&Person::bob(), &task.task_id, &daily("10:00")));
    assert_eq!(kind, ErrorKind::Denied);
    assert!(f.events(&Person::bob(), AuditAction::Draft).is_empty());
}

#[test]
fn an_agent_drafts_at_most_its_hourly_quota_for_a_person() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    agent_draft(&mut f, &alice, 2).unwrap();
    f.now += 60;
    agent_draft(&mut f, &alice, 2).unwrap();
    f.now += 60;
    let (kind, e) = refusal(agent_draft(&mut f, &alice, 2));
    assert_eq!(kind, ErrorKind::Busy);
    assert!(e.message.contains("--max-drafts 2"), "{}", e.message);
    // The first draft leaves the hour at T0 + 3600: one more fits then.
    let hint = e.hint.unwrap_or_default();
    assert!(hint.contains("2026-12-02T09:00:00Z"), "{hint}");
    f.now = T0 + 3600;
    agent_draft(&mut f, &alice, 2).unwrap();
}

#[test]
fn an_agents_drafts_record_the_agent_and_lock_a_code() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let made = agent_draft(&mut f, &alice, 10).unwrap();
    assert_eq!(made.payload.drafted_by.as_deref(), Some("agent:helper"));
    assert_eq!(
        made.draft.created_by, "unix:alice",
        "drafted for the person"
    );
    let stored = f.store.read(|tx| tx.draft(&made.draft.draft_id)).unwrap();
    let lock = stored.and_then(|d| d.code).expect("a code lock");
    assert!(crate::ops::confirm_code::opens(
        &lock,
        &made.draft.draft_id,
        "123456"
    ));
}

#[test]
fn at_most_twenty_of_an_agents_drafts_wait_for_a_person() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let waiting: Vec<draft::Made> = (0..MAX_WAITING_AGENT_DRAFTS)
        .map(|_| agent_draft(&mut f, &alice, 100).unwrap())
        .collect();
    let (kind, e) = refusal(agent_draft(&mut f, &alice, 100));
    assert_eq!(kind, ErrorKind::Busy);
    assert!(e.message.contains("wait for confirmation"), "{}", e.message);
    // One confirmed with its code: one more may wait.
    let first = &waiting[0].draft;
    let confirmed = crate::ops::confirm::confirm_in(
        f.store.as_mut(),
        &alice.caller(),
        &first.draft_id,
        &first.payload_hash,
        crate::ops::confirm_code::Proof::Code("123456"),
        alice.actor(),
        f.now,
    )
    .unwrap();
    assert!(matches!(
        confirmed,
        crate::ops::confirm::Outcome::Confirmed(_)
    ));
    agent_draft(&mut f, &alice, 100).unwrap();
}
