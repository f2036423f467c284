//! The one-time code that confirms an agent's draft (docs/CONTRACT.md §17):
//! making it, locking it into the draft, and checking the confirmer's
//! proof inside `confirm`'s transaction.
//!
//! The payload hash proves *what* a person confirms; the code proves *who*:
//! it goes only to the task's target (through the notifier) or to the
//! confirming person's own terminal, never to the agent that drafted. Only a
//! salted SHA-256 of it is stored, beside the draft, so it ends with the
//! draft; three wrong codes void the draft. Six digits against three tries
//! is one chance in 333,333 for a guesser; whoever can read the store can
//! try all million offline, which is why the store file is the trust
//! boundary.

use anyhow::Result;
use serde_json::json;

use crate::audit::{AuditAction, Event};
use crate::error::{fail, CmdError};
use crate::model::{CodeLock, Draft};
use crate::payload::{hash_hex, Payload};
use crate::store::{Store, Tx};

/// How many digits a code has.
pub const CODE_DIGITS: usize = 6;

/// The wrong code that voids a draft: the third (its refusal says "third").
pub const MAX_WRONG_CODES: i64 = 3;

/// A fresh code: six decimal digits, uniformly drawn from the system's
/// random source (through a v4 UUID, whose first four bytes are random).
pub fn new_code() -> String {
    // 4,294,000,000 is the largest multiple of a million below 2^32: values
    // above it are drawn again, so every code is equally likely.
    const LIMIT: u32 = 4_294_000_000;
    loop {
        let random = uuid::Uuid::new_v4();
        let [a, b, c, d, ..] = *random.as_bytes();
        let value = u32::from_le_bytes([a, b, c, d]);
        if value < LIMIT {
            return format!("{:06}", value % 1_000_000);
        }
    }
}

/// What the store keeps of `code` for draft `draft_id`: a salted hash. The
/// salt is a v4 UUID's 32 hex digits (122 random bits).
pub fn lock(code: &str, draft_id: &str) -> CodeLock {
    let salt = uuid::Uuid::new_v4().simple().to_string();
    CodeLock {
        hash: digest(&salt, draft_id, code),
        salt,
        wrong_attempts: 0,
    }
}

/// Whether `code` is the one `lock` was made from.
pub fn opens(lock: &CodeLock, draft_id: &str, code: &str) -> bool {
    let given = digest(&lock.salt, draft_id, code);
    // Compared without stopping at the first difference: the time taken
    // says nothing of how much of the hash matched.
    given.len() == lock.hash.len()
        && given
            .bytes()
            .zip(lock.hash.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// Whether `text` looks like a code: exactly six ASCII digits.
pub fn is_well_formed(text: &str) -> bool {
    text.len() == CODE_DIGITS && text.bytes().all(|b| b.is_ascii_digit())
}

/// How the confirmer shows to be the person an agent's draft was made for
/// (docs/CONTRACT.md §17); a draft made at a shell needs nothing.
#[derive(Debug, Clone, Copy)]
pub enum Proof<'a> {
    None,
    /// `--code`: the code the notifier delivered to the task's target.
    Code(&'a str),
    /// The code an interactive `confirm` showed on the person's own
    /// terminal, and what they typed back.
    Terminal {
        shown: &'a str,
        typed: &'a str,
    },
}

/// An agent's draft opens only with its code: None when the proof holds;
/// a wrong code is counted (the third voids the draft) and comes back as
/// the refusal to report once that is committed.
pub fn check(
    tx: &mut dyn Tx,
    draft: &Draft,
    payload: &Payload,
    proof: Proof<'_>,
    actor: &str,
    now: i64,
) -> Result<Option<CmdError>> {
    let Some(agent) = &payload.drafted_by else {
        return match proof {
            Proof::Code(_) => fail(
                CmdError::usage("this draft was made at a shell and has no code")
                    .with_hint("leave out --code"),
            ),
            _ => Ok(None),
        };
    };
    let right =
        match proof {
            Proof::None => return fail(
                CmdError::denied(format!(
                    "{} drafted this; confirming it needs the one-time code sent to {}",
                    crate::text::escape(agent),
                    crate::text::escape(&payload.target)
                ))
                .with_hint(
                    "add --code NNNNNN from the message you received, or run confirm at your own \
                     terminal to be shown a code there",
                ),
            ),
            Proof::Code(code) => draft
                .code
                .as_ref()
                .is_some_and(|lock| opens(lock, &draft.draft_id, code)),
            Proof::Terminal { shown, typed } => shown == typed.trim(),
        };
    if right {
        return Ok(None);
    }
    let seen = draft.code.as_ref().map_or(0, |lock| lock.wrong_attempts);
    let wrong = seen + 1;
    let voided = wrong >= MAX_WRONG_CODES;
    if voided {
        tx.consume_draft(&draft.draft_id)?;
    } else {
        tx.count_wrong_code(&draft.draft_id, seen)?;
    }
    let action = if voided {
        AuditAction::Void
    } else {
        AuditAction::WrongCode
    };
    tx.append_event(&Event::of_tenant(
        action,
        &draft.tenant_key,
        actor,
        now,
        json!({"draft_id": draft.draft_id, "payload_hash": draft.payload_hash,
               "drafted_by": agent, "wrong_codes": wrong}),
    ))?;
    Ok(Some(if voided {
        CmdError::denied(format!(
            "the third wrong code: draft {} is void",
            draft.draft_id
        ))
        .with_hint("nothing was created; the agent can draft it again")
    } else {
        let left = MAX_WRONG_CODES - wrong;
        CmdError::denied(format!(
            "wrong code for draft {} ({left} more wrong code(s) void it)",
            draft.draft_id
        ))
        .with_hint("copy the six digits from the message you received")
    }))
}

/// Records that the code of `draft` was sent to `target` and how it went
/// (`state`: delivered, not_sent or unknown; `error`), never the code
/// itself, in its own transaction: the notifier has run by then, so no
/// transaction is held while it runs.
pub fn record_sent(
    store: &mut dyn Store,
    now: i64,
    draft: &Draft,
    target: &str,
    state: &str,
    error: Option<&str>,
) -> Result<()> {
    let event = Event::of_tenant(
        AuditAction::ConfirmCode,
        &draft.tenant_key,
        "agentcron:mcp",
        now,
        json!({"draft_id": draft.draft_id, "target": target, "state": state, "error": error}),
    );
    store.write(|tx| tx.append_event(&event))
}

/// The draft's id is hashed in, so a code hash copied onto another draft
/// does not open it.
fn digest(salt: &str, draft_id: &str, code: &str) -> String {
    hash_hex(format!("{salt}:{draft_id}:{code}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_six_digits_and_only_it_opens_its_lock() {
        let code = new_code();
        assert!(is_well_formed(&code), "{code}");
        let lock = lock(&code, "draft-1");
        assert_eq!(lock.salt.len(), 32);
        assert!(!lock.hash.contains(&code));
        assert!(opens(&lock, "draft-1", &code));
        assert!(!opens(&lock, "draft-2", &code));
        let other = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
        assert!(!opens(&lock, "draft-1", &other));
    }

    #[test]
    fn two_locks_of_one_code_differ_by_their_salt() {
        let (a, b) = (lock("123456", "d"), lock("123456", "d"));
        assert_ne!(a.hash, b.hash);
    }

    #[test]
    fn only_six_ascii_digits_are_well_formed() {
        for bad in ["12345", "1234567", "12345a", "١٢٣٤٥٦", ""] {
            assert!(!is_well_formed(bad), "{bad}");
        }
        assert!(is_well_formed("000000"));
    }
}
