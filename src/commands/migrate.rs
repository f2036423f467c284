//! `agentcron migrate`: the one explicit step that upgrades a store's schema
//! (docs/CONTRACT.md §21). Nothing else migrates a PostgreSQL store, and no
//! command that only reads migrates either store.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::context::Ctx;
use crate::ops::migrate::{migrate, Migration};
use crate::store::schema::build;

/// Upgrade the store's schema to the one this build writes
///
/// Lists the steps from the store's schema to this build's and applies them,
/// one transaction per step, under the migration lock (a second `migrate`
/// waits, then finds nothing to do); a step interrupted (kill -9, a lost
/// connection) leaves the store at the last whole step. The migration is
/// audited with both versions and this build. Commands that only read never
/// migrate; on PostgreSQL nothing but `migrate` does, and until it runs the
/// ticks and writing commands of a newer build exit 78. On SQLite (one host)
/// a writing command migrates too. Back the store up first (`agentcron
/// backup FILE`, or pg_dump): an older build refuses the migrated store.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// List the steps and what each does; change nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(ctx: &mut Ctx, args: MigrateArgs) -> Result<()> {
    let now = ctx.clock.now();
    let actor = ctx.actor().to_string();
    let store = ctx.store()?;
    let location = store.location();
    let Migration {
        found,
        latest,
        pending,
        applied,
    } = migrate(store, args.dry_run, &actor, now)?;
    if ctx.out.json {
        return ctx.out.document(&json!({
            "database": location,
            "from": found,
            "to": latest,
            "build": build(),
            "dry_run": args.dry_run,
            "steps": pending.iter().map(|(v, d)| json!({"version": v, "description": d}))
                .collect::<Vec<_>>(),
            "applied": applied,
        }));
    }
    if pending.is_empty() {
        return ctx.out.line(&format!(
            "The store {location} is at schema {latest}, the one this build writes: nothing to migrate."
        ));
    }
    let mut text = format!(
        "The store {location} is at schema {found}; this build ({}) writes schema {latest}. Steps:",
        build()
    );
    for (version, description) in &pending {
        text.push_str(&format!("\n  {version:>3}  {description}"));
    }
    if args.dry_run {
        text.push_str("\nDry run: nothing changed; `agentcron migrate` applies them.");
        return ctx.out.line(&text);
    }
    if applied.is_empty() {
        text.push_str(&format!(
            "\nAnother `agentcron migrate` applied them meanwhile: the store is at schema {latest}."
        ));
        return ctx.out.line(&text);
    }
    text.push_str(&format!(
        "\nMigrated to schema {latest}. Builds that write an older schema now refuse this store \
         (\"the database has schema version {latest}, newer than this agentcron understands\", exit 1) \
         and their ticks run nothing: replace them with this build."
    ));
    ctx.out.line(&text)
}
