//! Building a draft's payload from plain values (docs/CONTRACT.md §2, §3):
//! a `DraftSpec` becomes the canonical payload a person confirms and its
//! next runs, with every check a draft makes. No clap here: `draft` turns
//! its flags into a spec, `plan` its TOML tables.

use anyhow::Result;

use super::spec::{
    self, check_instruction, check_name, duration_flag, DraftSpec, DEFAULT_GRACE_SECONDS,
};
use super::when::{
    base_of, keep_end, keep_spread, schedule_from, set_offset, spread_of, with_end, with_spread,
};
use crate::error::{fail, CmdError};
use crate::limits::{Budget, CatchUp};
use crate::model::{NoticePolicy, Policy};
use crate::ops::access::Caller;
use crate::payload::{Payload, Zone};
use crate::profile::{self, Bound, Profile};
use crate::schedule::{self, Occurrence, Schedule, Tz};

/// Who drafts, where and when: what a new payload takes from the caller.
pub struct Drafter<'a> {
    pub now: i64,
    /// The zone of a task that names none.
    pub default_zone: Tz,
    pub tenant: &'a str,
    /// The caller's identity keys, sorted: a new task's owners.
    pub owner_keys: Vec<String>,
    /// The first identity key: the default target.
    pub actor: &'a str,
    /// The current zone (docs/CONTRACT.md §18) of the key the payload would
    /// follow: its first owner key (a replacement's, else the caller's).
    pub owner_zone: Option<Tz>,
    /// `agent:<client name>` when an agent drafts through `agentcron mcp`:
    /// recorded in the payload, whatever an older payload said.
    pub drafted_by: Option<String>,
    /// The tenant's profiles as they are now (docs/CONTRACT.md §22): a
    /// draft binds the current version of the one it names, or of the one
    /// the replaced payload had. The caller reads them (`Drafter::of`
    /// leaves none).
    pub profiles: Vec<Profile>,
}

impl<'a> Drafter<'a> {
    /// A person drafting as `caller` (`drafted_by` is set for an agent).
    pub fn of(caller: &Caller<'a>, now: i64, default_zone: Tz, owner_zone: Option<Tz>) -> Self {
        Drafter {
            now,
            default_zone,
            tenant: caller.tenant,
            owner_keys: Drafter::owner_keys_of(caller),
            actor: &caller.identity[0],
            owner_zone,
            drafted_by: None,
            profiles: Vec::new(),
        }
    }

    /// The caller's keys, sorted, as a new task's owner_keys.
    pub fn owner_keys_of(caller: &Caller<'_>) -> Vec<String> {
        let mut keys = caller.identity.to_vec();
        keys.sort();
        keys
    }
}

/// `--tz ZONE`, `--tz follow`, or nothing (a replacement keeps its old
/// choice). A new following payload's fallback is the owner's current zone,
/// else the zone the draft would have without `--tz`; a replacement that
/// keeps following keeps its fallback (nothing about it changed).
fn zone_choice(who: &Drafter<'_>, args: &DraftSpec, old: Option<&Payload>) -> Result<Zone> {
    let without_tz = old.map_or(who.default_zone, |o| o.zone.named());
    Ok(match (args.tz.as_deref(), old) {
        (Some(crate::payload::FOLLOW), Some(old)) if old.zone.follows() => old.zone,
        (Some(crate::payload::FOLLOW), _) => Zone::Follows {
            fallback: who.owner_zone.unwrap_or(without_tz),
        },
        (Some(name), _) => Zone::Fixed(schedule::parse_zone(name).map_err(CmdError::from)?),
        (None, Some(old)) => old.zone,
        (None, None) => Zone::Fixed(who.default_zone),
    })
}

/// The canonical payload `spec` describes, over the confirmed payload `old`
/// when replacing, and its next three runs: every check a draft makes on
/// its values. `draft` and `plan` (each task of a file) build with it.
pub fn build_payload(
    who: &Drafter<'_>,
    args: &DraftSpec,
    old: Option<&Payload>,
) -> Result<(Payload, Vec<Occurrence>)> {
    spec::check_flag_limits(args)?;
    let zone_choice = zone_choice(who, args, old)?;
    // Times are read, and the preview computed, in the zone in force now.
    let zone = zone_choice.in_force(who.owner_zone);
    let schedule = schedule_of(who, args, old, zone_choice, zone)?;
    let mut payload = payload_of(who, args, old, schedule, zone_choice)?;
    place_spread(&mut payload, zone, who.now);
    let upcoming = schedule::upcoming(&payload.schedule, zone, who.now, 3);
    if upcoming.is_empty() {
        return fail(CmdError::usage("the schedule has no occurrence after now"));
    }
    Ok((payload, upcoming))
}

/// The schedule the values describe over the replaced one, with its spread
/// (offset 0 still) and end, once it has an occurrence after now in `zone`.
fn schedule_of(
    who: &Drafter<'_>,
    args: &DraftSpec,
    old: Option<&Payload>,
    zone_choice: Zone,
    zone: Tz,
) -> Result<Schedule> {
    let old_base = old.map(|o| base_of(&o.schedule));
    let schedule = match (schedule_from(args, zone, who.now, old_base)?, old) {
        (Some(schedule), Some(old)) => {
            keep_end(keep_spread(schedule, &old.schedule), &old.schedule)
        }
        (Some(schedule), None) => schedule,
        (None, Some(old)) => old.schedule.clone(),
        (None, None) => {
            return fail(
                CmdError::usage("a schedule is required")
                    .with_hint("use one of --at, --in, --every, --daily or --cron"),
            )
        }
    };
    if zone_choice.follows() && !crate::payload::follows_a_wall_clock(&schedule) {
        return fail(
            CmdError::usage(format!(
                "--tz follow needs a --daily or --cron schedule, not {}",
                schedule.kind()
            ))
            .with_hint("a once or interval schedule is fixed instants; give --tz ZONE"),
        );
    }
    let schedule = with_spread(args, schedule, zone, who.now)?;
    let schedule = with_end(args, schedule, zone, who.now)?;
    let upcoming = schedule::upcoming(&schedule, zone, who.now, 3);
    if upcoming.is_empty() {
        return fail(
            CmdError::usage(format!(
                "the schedule {} has no occurrence after now",
                schedule.describe(zone)
            ))
            .with_hint("pick a time in the future"),
        );
    }
    Ok(schedule)
}

/// The payload's fields: each value given, else the replaced payload's,
/// else a new draft's default.
fn payload_of(
    who: &Drafter<'_>,
    args: &DraftSpec,
    old: Option<&Payload>,
    schedule: Schedule,
    zone: Zone,
) -> Result<Payload> {
    let limits = spend_limits(args, old)?;
    Ok(Payload {
        budgets: limits.budgets,
        catch_up: limits.catch_up,
        drafted_by: who.drafted_by.clone(),
        expect_success_seconds: limits.expect_success_seconds,
        gate: limits.gate,
        grace_seconds: match (&args.grace, old) {
            (Some(g), _) => duration_flag("--grace", g, true)?,
            (None, Some(old)) => old.grace_seconds,
            (None, None) => DEFAULT_GRACE_SECONDS,
        },
        instruction: match (&args.instruction, old) {
            (Some(text), _) => {
                check_instruction(text)?;
                text.clone()
            }
            (None, Some(old)) => old.instruction.clone(),
            (None, None) => return fail(CmdError::usage("--instruction is required")),
        },
        max_retries: match (args.max_retries, old) {
            (Some(n), _) => i64::from(n),
            (None, Some(old)) => old.max_retries,
            (None, None) => spec::DEFAULT_MAX_RETRIES,
        },
        name: match (&args.name, old) {
            (Some(name), _) => Some(check_name(name)?),
            (None, Some(old)) => old.name.clone(),
            (None, None) => None,
        },
        notice: notice_policy(args, old.map(|o| o.notice))?,
        // A replacement never changes who owns the task, nor its tenant.
        owner_keys: match old {
            Some(old) => old.owner_keys.clone(),
            None => who.owner_keys.clone(),
        },
        policy: match (&args.policy, old) {
            (Some(p), _) => spec::policy(p)?,
            (None, Some(old)) => old.policy,
            (None, None) => Policy::ReadOnly,
        },
        profile: profile_of(who, args.profile.as_deref(), old)?.map(Box::new),
        retry_backoff_seconds: match (&args.retry_backoff, old) {
            (Some(b), _) => duration_flag("--retry-backoff", b, false)?,
            (None, Some(old)) => old.retry_backoff_seconds,
            (None, None) => spec::DEFAULT_RETRY_BACKOFF_SECONDS,
        },
        schedule,
        target: match (&args.target, old) {
            (Some(t), _) => {
                crate::model::check_key("--target", t)?;
                t.clone()
            }
            (None, Some(old)) => old.target.clone(),
            (None, None) => who.actor.to_string(),
        },
        tenant_key: match old {
            Some(old) => old.tenant_key.clone(),
            None => who.tenant.to_string(),
        },
        // Its range was checked with the other limits (`spec::check_limits`).
        timeout_seconds: match (&args.timeout, old) {
            (Some(text), _) if spec::is_none(text) => None,
            (Some(text), _) => Some(spec::timeout_seconds(text).map_err(CmdError::usage)?),
            (None, Some(old)) => old.timeout_seconds,
            (None, None) => None,
        },
        zone,
    })
}

/// The profile the payload binds (docs/CONTRACT.md §22), at its current
/// version: the one `--profile` names (`none`: none), else the replaced
/// payload's, rebound (so `draft --replace TASK` alone confirms a profile's
/// change), else none.
fn profile_of(
    who: &Drafter<'_>,
    named: Option<&str>,
    old: Option<&Payload>,
) -> Result<Option<Bound>> {
    let current = |name: &str| {
        who.profiles
            .iter()
            .find(|p| p.name == name)
            .map(Profile::bound)
    };
    match (named, old.and_then(|o| o.profile.as_ref())) {
        (Some(text), _) if spec::is_none(text) => Ok(None),
        (Some(name), _) => {
            profile::check_name(name).map_err(|e| CmdError::usage(format!("--profile: {e}")))?;
            match current(name) {
                Some(bound) => Ok(Some(bound)),
                None => fail(
                    CmdError::not_found(format!(
                        "--profile: no profile named '{}' in tenant {}",
                        crate::text::escape(name),
                        crate::text::escape(who.tenant)
                    ))
                    .with_hint("`agentcron profile list` shows them; an operator adds one with `agentcron profile set`"),
                ),
            }
        }
        (None, Some(bound)) => match current(&bound.name) {
            Some(now) => Ok(Some(now)),
            None => fail(
                CmdError::usage(format!(
                    "the task's profile '{}' no longer exists",
                    crate::text::escape(&bound.name)
                ))
                .with_hint("give --profile NAME for another one, or --profile none for the tick's executor"),
            ),
        },
        (None, None) => Ok(None),
    }
}

/// A payload's spending limits (docs/CONTRACT.md §6) as a draft sets them.
struct SpendLimits {
    budgets: Vec<Budget>,
    catch_up: CatchUp,
    expect_success_seconds: Option<i64>,
    gate: Option<String>,
}

/// The spending limits: what the flags say (`none` removes one), over the
/// replaced payload's, over none. Their ranges were checked with the other
/// limits (`spec::check_limits`); the errors here name the flag all the same.
fn spend_limits(args: &DraftSpec, old: Option<&Payload>) -> Result<SpendLimits> {
    let usage = |flag: &str, message: String| CmdError::usage(format!("--{flag}: {message}"));
    let mut limits = match old {
        Some(old) => SpendLimits {
            budgets: old.budgets.clone(),
            catch_up: old.catch_up,
            expect_success_seconds: old.expect_success_seconds,
            gate: old.gate.clone(),
        },
        None => SpendLimits {
            budgets: Vec::new(),
            catch_up: CatchUp::None,
            expect_success_seconds: None,
            gate: None,
        },
    };
    if let Some(list) = &args.budget {
        limits.budgets = spec::budgets(list).map_err(|m| usage("budget", m))?;
    }
    if let Some(text) = &args.catch_up {
        limits.catch_up = spec::catch_up(text).map_err(|m| usage("catch-up", m))?;
    }
    if let Some(text) = &args.expect_success {
        limits.expect_success_seconds = match spec::is_none(text) {
            true => None,
            false => {
                Some(spec::expect_success_seconds(text).map_err(|m| usage("expect-success", m))?)
            }
        };
    }
    if let Some(gate) = &args.gate {
        limits.gate = (!spec::is_none(gate)).then(|| gate.clone());
    }
    Ok(limits)
}

/// The spread's offset comes from the payload's SHA-256 taken with the
/// offset at 0, so anyone can recompute it; then the occurrences move, and
/// `--count N` ends at the Nth occurrence as moved.
fn place_spread(payload: &mut Payload, zone: Tz, now: i64) {
    let Some(spread) = spread_of(&payload.schedule) else {
        return;
    };
    let seed = <sha2::Sha256 as sha2::Digest>::digest(payload.canonical().as_bytes());
    set_offset(
        &mut payload.schedule,
        schedule::spread_offset(&seed, spread),
    );
    if let Schedule::Ends {
        inner,
        until,
        count: Some(n),
    } = &mut payload.schedule
    {
        if let Some(last) = schedule::upcoming(inner, zone, now, *n as usize).last() {
            *until = last.at;
        }
    }
}

/// The notice settings (docs/CONTRACT.md §16): what the flags say, over the
/// replaced payload's, over a new draft's defaults. A replacement that says
/// nothing keeps the old settings, absent ones included, so its hash moves
/// only for what the person changed.
fn notice_policy(args: &DraftSpec, old: Option<NoticePolicy>) -> Result<NoticePolicy> {
    let base = old.unwrap_or_else(NoticePolicy::for_new_draft);
    let realert_seconds = match &args.realert {
        Some(text) => Some(duration_flag("--realert", text, false)?),
        None => base.realert_seconds,
    };
    // Its range is checked with the other limits (`spec::check_limits`).
    let pause_after = args.pause_after.map(i64::from).or(base.pause_after);
    Ok(NoticePolicy {
        notify: match &args.notify {
            Some(text) => Some(spec::notify_mode(text)?),
            None => base.notify,
        },
        realert_seconds,
        pause_after,
    })
}
