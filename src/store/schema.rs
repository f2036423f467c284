//! What opening a store does with the schema it finds (docs/CONTRACT.md §21),
//! decided once for both backends: each backend reads its version (SQLite's
//! `user_version`, PostgreSQL's `agentcron_schema`) and applies what this
//! says.
//!
//! Version 0 is no store at all (a 0-byte file, a database without
//! agentcron's tables): only the commands that create stores make one. An
//! older schema is migrated only by `agentcron migrate`, or on SQLite (one
//! host, no other build left behind) by a command that writes; a command
//! that only reads, and every command but `migrate` on PostgreSQL, refuses
//! it in one line and changes nothing. A newer schema is always refused.

use anyhow::Result;

use super::OpenOptions;
use crate::error::{CmdError, ErrorKind};

/// What opening does with a store at an older schema than this build's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Upgrade {
    /// A command that writes: SQLite migrates (one host), PostgreSQL refuses
    /// with exit 78 until `agentcron migrate` runs.
    #[default]
    Writer,
    /// A command that only reads (and `agentcron mcp`): refused, exit 3.
    Never,
    /// `agentcron migrate`: opened as it is, for the command to migrate.
    Explicit,
}

/// What the backend does next.
#[derive(Debug, PartialEq, Eq)]
pub enum Opening {
    /// At this build's schema (or `migrate` opening an older one): use it.
    Ready,
    /// No store yet, and this command creates one.
    Create,
    /// An older schema that this command migrates (SQLite writers).
    Migrate,
}

/// The answer for a store found at `found`, this build writing `latest`.
/// `one_host` is true for SQLite; `shown` names the store in messages.
pub fn on_open(
    found: i64,
    latest: i64,
    options: &OpenOptions,
    one_host: bool,
    shown: &str,
) -> Result<Opening> {
    if found > latest || found < 0 {
        return Err(newer(found, latest).into());
    }
    if found == latest {
        return Ok(Opening::Ready);
    }
    let upgrade = if options.never_write {
        Upgrade::Never
    } else {
        options.upgrade
    };
    if found == 0 {
        if options.create && !options.never_write {
            return Ok(Opening::Create);
        }
        return Err(no_store(shown).into());
    }
    match upgrade {
        Upgrade::Explicit => Ok(Opening::Ready),
        Upgrade::Writer if one_host => Ok(Opening::Migrate),
        Upgrade::Writer => Err(behind(ErrorKind::SchemaBehind, found, latest).into()),
        Upgrade::Never => Err(behind(ErrorKind::NotFound, found, latest).into()),
    }
}

/// The one line an older store is refused with.
pub fn behind(kind: ErrorKind, found: i64, latest: i64) -> CmdError {
    CmdError::new(
        kind,
        format!(
            "the store is at schema {found}; this build writes schema {latest}: run `agentcron migrate`"
        ),
    )
}

/// Whether `err` is `behind`'s refusal (a store that is there, at an older
/// schema), which callers must not mistake for a store that is not there.
pub fn is_behind(err: &anyhow::Error) -> bool {
    crate::error::causes(err).any(|cause| {
        cause
            .downcast_ref::<CmdError>()
            .is_some_and(|e| e.message.starts_with("the store is at schema "))
    })
}

/// Refuses a store at a schema newer than `latest` (or a negative one).
pub fn refuse_newer(version: i64, latest: i64) -> Result<()> {
    if !(0..=latest).contains(&version) {
        return Err(newer(version, latest).into());
    }
    Ok(())
}

/// A newer store: this build cannot know what the newer one wrote.
pub fn newer(found: i64, latest: i64) -> CmdError {
    CmdError::runtime(format!(
        "the database has schema version {found}, newer than this agentcron understands ({latest})"
    ))
    .with_hint("upgrade agentcron; nothing was changed")
}

/// No agentcron schema where `--db` points: a 0-byte file, another
/// program's database, a PostgreSQL schema without agentcron's tables.
pub fn no_store(shown: &str) -> CmdError {
    CmdError::not_found(format!(
        "no agentcron store at {shown} (no agentcron schema there); `agentcron draft` creates it"
    ))
    .with_hint("check --db (or AGENTCRON_DB, and on PostgreSQL its search_path); only draft, plan/apply, import, mcp and `zone set` or `profile set` with --create-store create a store")
}

/// This build, as `--version`, `migrate`'s audit and the hosts table name
/// it: the crate version and the commit it was built from.
pub fn build() -> String {
    format!(
        "{} ({})",
        env!("CARGO_PKG_VERSION"),
        option_env!("AGENTCRON_COMMIT").unwrap_or("unknown")
    )
}

/// Each task's memory rebuilt from its runs (the last settled run, the last
/// success): the migration that added `task_memory` seeds it so on both
/// servers, and an import of an export made before memory was exported
/// rebuilds it so. A macro, not a constant, so that `concat!` keeps the
/// migrations' text what stores applied.
macro_rules! task_memory_from_runs {
    () => {
        "    INSERT INTO task_memory (task_id, last_settled_run_id, last_success_at)
    SELECT t.task_id,
        (SELECT r.run_id FROM runs r WHERE r.task_id = t.task_id AND r.finished_at IS NOT NULL
            AND r.status NOT IN ('running', 'awaiting_confirmation', 'awaiting_authorization')
            ORDER BY r.finished_at DESC, r.scheduled_for DESC LIMIT 1),
        (SELECT max(r.finished_at) FROM runs r
            WHERE r.task_id = t.task_id AND r.status = 'succeeded')
    FROM tasks t"
    };
}
pub(crate) use task_memory_from_runs;

#[cfg(test)]
mod tests {
    use super::*;

    fn options(upgrade: Upgrade, create: bool) -> OpenOptions {
        OpenOptions {
            upgrade,
            create,
            ..Default::default()
        }
    }

    #[test]
    fn only_writers_on_one_host_migrate_an_older_schema() {
        let writer = options(Upgrade::Writer, true);
        assert_eq!(on_open(3, 4, &writer, true, "s").unwrap(), Opening::Migrate);
        let pg = on_open(3, 4, &writer, false, "s").unwrap_err();
        assert_eq!(crate::error::classify(&pg).0, ErrorKind::SchemaBehind);
        assert_eq!(
            pg.to_string(),
            "the store is at schema 3; this build writes schema 4: run `agentcron migrate`"
        );
        let reader = on_open(3, 4, &options(Upgrade::Never, false), true, "s").unwrap_err();
        assert_eq!(crate::error::classify(&reader).0, ErrorKind::NotFound);
        let migrate = options(Upgrade::Explicit, false);
        assert_eq!(on_open(3, 4, &migrate, false, "s").unwrap(), Opening::Ready);
    }

    #[test]
    fn no_schema_is_no_store_unless_the_command_creates_one() {
        assert_eq!(
            on_open(0, 4, &options(Upgrade::Writer, true), false, "s").unwrap(),
            Opening::Create
        );
        for upgrade in [Upgrade::Writer, Upgrade::Never, Upgrade::Explicit] {
            let err = on_open(0, 4, &options(upgrade, false), true, "s").unwrap_err();
            assert_eq!(crate::error::classify(&err).0, ErrorKind::NotFound);
        }
        let never = OpenOptions::never_writing(std::time::Duration::ZERO);
        assert!(on_open(0, 4, &never, true, "s").is_err());
        assert!(on_open(5, 4, &options(Upgrade::Explicit, true), true, "s").is_err());
        assert_eq!(on_open(4, 4, &never, false, "s").unwrap(), Opening::Ready);
    }
}
