//! `agentcron zone set|show|unset`: the current zone of an identity key,
//! which tasks drafted with `--tz follow` run in (docs/CONTRACT.md §18).
//! A host operation: the host learned the person's zone from their profile
//! and says so; any caller with write access to the store may. Like every
//! command but `draft`, `plan`/`apply` and `import`, it never creates a
//! store: a mistyped `--db` in the host's sync job is exit 3, not a new
//! empty store holding the zone.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::CmdError;
use crate::ops::zones::{set_zone, ZoneChange};
use crate::output::human::when;
use crate::schedule::{self, Tz};
use crate::store::zones::OwnerZone;
use crate::text::{escape, wall_time};
use crate::wire::time;

/// Keep identity keys' current zones, which tasks drafted with `--tz follow` run in
///
/// A host operation: the host that learned a person's zone from their profile records
/// it, and every task following that key is re-timed in the same transaction. Any
/// caller with write access to the store may call it, as for `import`.
#[derive(Debug, Args)]
pub struct ZoneArgs {
    #[command(subcommand)]
    pub action: ZoneAction,
}

#[derive(Debug, Subcommand)]
pub enum ZoneAction {
    /// Set KEY's zone and re-time the tasks that follow it
    ///
    /// Each active following task's next run moves to the next occurrence in the new zone;
    /// an occurrence already due is left to the tick. Setting the zone KEY already has
    /// changes nothing.
    Set {
        /// The identity key (as in --as), e.g. unix:alice
        #[arg(value_name = "KEY", add = clap_complete::ArgValueCompleter::new(crate::completion::identity_keys))]
        key: String,
        /// The zone (IANA name), e.g. Europe/Berlin
        #[arg(value_name = "ZONE", add = clap_complete::ArgValueCompleter::new(crate::completion::zones))]
        zone: String,
        /// Create the store when it does not exist yet
        ///
        /// For a host that syncs profiles before anyone has drafted a task. Without it
        /// a missing store is exit 3, so a mistyped --db in the sync job never makes a
        /// new empty store that holds the zone.
        #[arg(long)]
        create_store: bool,
    },
    /// Show KEY's zone, or every key's in the tenant
    Show {
        /// The identity key; all of the tenant's when omitted
        #[arg(value_name = "KEY", add = clap_complete::ArgValueCompleter::new(crate::completion::identity_keys))]
        key: Option<String>,
    },
    /// Remove KEY's zone: the tasks that follow it go back to their own default zone
    Unset {
        /// The identity key
        #[arg(value_name = "KEY", add = clap_complete::ArgValueCompleter::new(crate::completion::identity_keys))]
        key: String,
    },
}

impl ZoneArgs {
    /// `zone show` only reads the store.
    pub fn only_reads(&self) -> bool {
        matches!(self.action, ZoneAction::Show { .. })
    }

    /// `zone set --create-store` may create a missing store.
    pub fn may_create_store(&self) -> bool {
        matches!(
            self.action,
            ZoneAction::Set {
                create_store: true,
                ..
            }
        )
    }
}

pub fn run(ctx: &mut Ctx, args: ZoneArgs) -> Result<()> {
    match args.action {
        ZoneAction::Set { key, zone, .. } => {
            crate::model::check_key("KEY", &key)?;
            let zone = schedule::parse_zone(&zone).map_err(CmdError::from)?;
            change(ctx, &key, Some(zone))
        }
        ZoneAction::Unset { key } => {
            crate::model::check_key("KEY", &key)?;
            change(ctx, &key, None)
        }
        ZoneAction::Show { key } => show(ctx, key.as_deref()),
    }
}

fn change(ctx: &mut Ctx, key: &str, zone: Option<Tz>) -> Result<()> {
    let now = ctx.clock.now();
    let (tenant, actor) = (ctx.tenant.clone(), ctx.actor().to_string());
    let result = set_zone(ctx.store()?, &tenant, key, zone, &actor, now)?;
    if ctx.out.json {
        return ctx.out.document(&document(&tenant, &result));
    }
    let name = |z: &Option<String>| z.clone().unwrap_or_else(|| "none".into());
    if !result.changed {
        return ctx.out.line(&format!(
            "{} already has zone {}; nothing changed.",
            escape(key),
            name(&result.new)
        ));
    }
    let mut text = format!(
        "Zone of {}: {} → {}; {} following task(s) re-timed.",
        escape(key),
        name(&result.old),
        name(&result.new),
        result.retimed.len()
    );
    for r in &result.retimed {
        text.push_str(&format!(
            "\n  task {} ({}): {} → {}, next run {} → {}",
            crate::model::short_id(&r.task.task_id),
            escape(&r.task.label()),
            r.from.name(),
            r.task.zone_in_force.name(),
            r.old_next_run_at
                .map_or_else(|| "-".into(), |at| wall_time(at, r.from)),
            when(r.task.next_run_at, r.task.zone_in_force, now)
        ));
    }
    ctx.out.line(&text)
}

/// `zone set --json`: the key, both zones, and each re-timed task.
fn document(tenant: &str, c: &ZoneChange) -> Value {
    json!({
        "tenant_key": tenant,
        "identity_key": c.identity_key,
        "old_zone": c.old,
        "zone": c.new,
        "changed": c.changed,
        "retimed": c.retimed.iter().map(|r| json!({
            "task_id": r.task.task_id,
            "name": r.task.payload.name,
            "from_zone": r.from.name(),
            "to_zone": r.task.zone_in_force.name(),
            "old_next_run_at": time(r.old_next_run_at),
            "next_run_at": time(r.task.next_run_at),
        })).collect::<Vec<_>>(),
    })
}

fn show(ctx: &mut Ctx, key: Option<&str>) -> Result<()> {
    let now = ctx.clock.now();
    if let Some(key) = key {
        crate::model::check_key("KEY", key)?;
    }
    let tenant = ctx.tenant.clone();
    let zones = ctx.store()?.read(|tx| match key {
        Some(key) => Ok(tx.owner_zone(&tenant, key)?.into_iter().collect()),
        None => tx.owner_zones(&tenant),
    })?;
    let value = |z: &OwnerZone| {
        json!({"identity_key": z.identity_key, "zone": z.zone,
               "set_at": time(Some(z.set_at)), "set_by": z.set_by})
    };
    match (key, zones.first()) {
        (Some(key), None) if ctx.out.json => ctx.out.document(&json!({
            "identity_key": key, "zone": null, "set_at": null, "set_by": null})),
        (Some(key), None) => ctx.out.line(&format!(
            "{} has no zone; tasks following it run in their own default zone.",
            escape(key)
        )),
        (Some(_), Some(z)) if ctx.out.json => ctx.out.document(&value(z)),
        _ if ctx.out.json => ctx
            .out
            .document(&Value::Array(zones.iter().map(value).collect())),
        _ => {
            let rows = zones
                .iter()
                .map(|z| {
                    let zone = schedule::parse_zone(&z.zone).unwrap_or(Tz::UTC);
                    vec![
                        escape(&z.identity_key),
                        escape(&z.zone),
                        when(Some(z.set_at), zone, now),
                        escape(&z.set_by),
                    ]
                })
                .collect();
            ctx.out.table(&["KEY", "ZONE", "SET", "BY"], rows)
        }
    }
}
