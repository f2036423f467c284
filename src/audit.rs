//! The audit trail's record (docs/CONTRACT.md §8): every action this build
//! writes, spelled once in `AuditAction`, and the `Event` that carries one,
//! built for what it is about (a tenant, a task, a run).
//!
//! An action read back that this build does not know (a newer build wrote
//! it, or an import carried it) is kept as `AuditAction::Other`: it reads,
//! `log` prints its detail, and it is never an error. `output::events` says
//! each known action in words through one exhaustive match, so a new action
//! without a sentence does not compile.

use serde_json::Value;

use crate::model::{Run, Task};

/// `string_enum!` for a vocabulary that stays open to spellings it does not
/// know: they read as `Other`.
macro_rules! open_string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$doc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$doc])* $variant,)+
            /// A spelling this build does not know, as stored.
            Other(String),
        }

        impl $name {
            /// Every spelling this build knows (and writes).
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(&self) -> &str {
                match self { $($name::$variant => $text,)+ $name::Other(text) => text }
            }

            /// Never fails: an unknown spelling is `Other`.
            pub fn parse(text: &str) -> $name {
                match text { $($text => $name::$variant,)+ other => $name::Other(other.to_string()) }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> $name {
                $name::parse(text)
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> $name {
                $name::parse(&text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

open_string_enum!(
    /// What an audit event records, as stored in `events.action`.
    AuditAction {
        // Drafts and what becomes of them (§3, §17).
        Draft = "draft",
        Confirm = "confirm",
        Replace = "replace",
        /// An agent draft's one-time code handed to the notifier.
        ConfirmCode = "confirm_code",
        WrongCode = "wrong_code",
        /// The third wrong code: the draft can no longer be confirmed.
        Void = "void",
        // A task's life (§4, §18).
        Trigger = "trigger",
        Pause = "pause",
        Resume = "resume",
        Delete = "delete",
        Quarantine = "quarantine",
        ZoneSet = "zone_set",
        ZoneUnset = "zone_unset",
        /// A following task moved to its owner's new zone.
        Retime = "retime",
        /// No run of the task succeeded within its `expect_success`.
        Overdue = "overdue",
        // An operator's profiles (§22).
        ProfileSet = "profile_set",
        ProfileDelete = "profile_delete",
        // A run's life (§5, §6, §8).
        Claim = "claim",
        /// An approved continuation claimed back to running.
        Continue = "continue",
        Finish = "finish",
        LeaseExpired = "lease_expired",
        /// A claimed run taken back before its executor started.
        Release = "release",
        OutcomeDiscarded = "outcome_discarded",
        Approve = "approve",
        Deny = "deny",
        Reconcile = "reconcile",
        // The store's own (§7, §6, §21).
        Delivery = "delivery",
        SchedulerGap = "scheduler_gap",
        Migrate = "migrate",
    }
);

/// One audit event (docs/CONTRACT.md §8).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: i64,
    pub tenant_key: String,
    pub actor: String,
    pub action: AuditAction,
    pub task_id: Option<String>,
    pub run_id: Option<String>,
    pub detail: Value,
}

/// A stored audit event with its sequence number.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub event_id: i64,
    pub event: Event,
}

impl Event {
    /// An event of the tenant as a whole, or of what is no task yet: a
    /// draft, a zone, a gap between ticks, a migration (tenant `*`).
    pub fn of_tenant(
        action: AuditAction,
        tenant_key: &str,
        actor: &str,
        at: i64,
        detail: Value,
    ) -> Event {
        Event {
            at,
            tenant_key: tenant_key.to_string(),
            actor: actor.to_string(),
            action,
            task_id: None,
            run_id: None,
            detail,
        }
    }

    /// An event of one task (none of its runs): in the task's tenant.
    pub fn of_task(action: AuditAction, task: &Task, actor: &str, at: i64, detail: Value) -> Event {
        Event {
            task_id: Some(task.task_id.clone()),
            ..Event::of_tenant(action, &task.payload.tenant_key, actor, at, detail)
        }
    }

    /// An event of one run: in its tenant, naming its task and itself.
    pub fn of_run(action: AuditAction, run: &Run, actor: &str, at: i64, detail: Value) -> Event {
        Event {
            task_id: Some(run.task_id.clone()),
            run_id: Some(run.run_id.clone()),
            ..Event::of_tenant(action, &run.tenant_key, actor, at, detail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_action_reads_back_as_itself_and_others_are_kept() {
        for action in AuditAction::KNOWN {
            assert_eq!(&AuditAction::parse(action.as_str()), action);
        }
        let newer = AuditAction::parse("budget_exceeded");
        assert_eq!(newer, AuditAction::Other("budget_exceeded".into()));
        assert_eq!(newer.as_str(), "budget_exceeded");
    }
}
