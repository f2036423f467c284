//! `agentcron upcoming`: the tenant's coming occurrences across tasks, in
//! time order, with each task's last run (docs/CONTRACT.md §13), the way
//! `systemctl list-timers` shows timers.

use std::collections::HashMap;
use std::ops::ControlFlow::{Break, Continue};
use std::rc::Rc;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use crate::context::Ctx;
use crate::error::{fail, CmdError};
use crate::model::{Run, Task, TaskState};
use crate::output::upcoming_report::{self, Coming};
use crate::schedule;
use crate::store::{TaskFilter, Tx};
use crate::text::escape;

/// Show coming occurrences of all your tasks, merged in time order
///
/// One row per occurrence: NEXT (in the task's zone), LEFT (how long until it),
/// LAST (when the task's latest run was due) and RESULT (its status), and TASK.
/// Only active tasks have occurrences; a pending retry is listed at its time,
/// marked "(retry)". When the tasks run in more than one zone, a UTC column
/// shows the order the rows are in.
#[derive(Debug, Args, schemars::JsonSchema)]
pub struct UpcomingArgs {
    /// Only occurrences within DUR from now
    #[arg(long, value_name = "DUR", default_value = "1d")]
    pub within: String,

    /// At most N rows
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub limit: u32,
}

/// What `upcoming` read: the coming rows in time order and each row's
/// task's latest run, as of `now`, up to `within` seconds ahead.
pub struct Ahead {
    pub rows: Vec<Coming>,
    pub last_runs: HashMap<String, Run>,
    pub now: i64,
    pub within: i64,
}

impl Ahead {
    /// `upcoming --json`.
    pub fn document(&self) -> Value {
        upcoming_report::document(&self.rows, &self.last_runs, self.now)
    }
}

/// The caller's coming occurrences in the tenant that `args` select.
pub fn ahead(ctx: &mut Ctx, args: &UpcomingArgs) -> Result<Ahead> {
    let within = schedule::parse_duration(&args.within)
        .map_err(|e| CmdError::usage(format!("--within: {}", e.message)))?;
    if within <= 0 {
        return fail(CmdError::usage("--within must be positive"));
    }
    let (owner_keys, tenant, now) = (ctx.identity.clone(), ctx.tenant.clone(), ctx.clock.now());
    let filter = TaskFilter {
        tenant_key: &tenant,
        owner_keys: &owner_keys,
        include_deleted: false,
        state: Some(TaskState::Active),
    };
    let limit = args.limit as usize;
    let end = now.saturating_add(within);
    let (rows, last_runs) = ctx.store()?.read(|tx| {
        let rows = coming(tx, &filter, end, limit)?;
        let last_runs = last_runs(tx, &rows)?;
        Ok((rows, last_runs))
    })?;
    Ok(Ahead {
        rows,
        last_runs,
        now,
        within,
    })
}

pub fn run(ctx: &mut Ctx, args: UpcomingArgs) -> Result<()> {
    let ahead = ahead(ctx, &args)?;
    if ctx.out.json {
        return ctx.out.document(&ahead.document());
    }
    if ahead.rows.is_empty() {
        ctx.out.note(&format!(
            "Nothing due within {} in tenant '{}'",
            crate::text::human_duration(ahead.within),
            escape(&ctx.tenant)
        ));
        return Ok(());
    }
    let (header, table) = upcoming_report::table(&ahead.rows, &ahead.last_runs, ahead.now);
    ctx.out.table(header, table)
}

/// The first `limit` occurrences and pending retries up to `end`, in time
/// order (at one time, a retry first).
fn coming(tx: &mut dyn Tx, filter: &TaskFilter<'_>, end: i64, limit: usize) -> Result<Vec<Coming>> {
    let mut rows: Vec<Coming> = earliest_occurrences(tx, filter, end, limit)?
        .into_iter()
        .map(|(at, task)| (at, task, false))
        .collect();
    // A pending retry runs before the schedule's next occurrence: it is
    // the task's next run, and a person looking ahead must see it.
    for task in tx.pending_retries(filter, end, limit as i64)? {
        let Ok(task) = task else { continue };
        if let Some(at) = task.next_retry_at {
            rows.push((at, Rc::new(task), true));
        }
    }
    rows.sort_by_key(|(at, _, retry)| (*at, !*retry));
    rows.truncate(limit);
    Ok(rows)
}

/// The latest run of each task among `rows`, by task id.
fn last_runs(tx: &mut dyn Tx, rows: &[Coming]) -> Result<HashMap<String, Run>> {
    let mut last_runs = HashMap::new();
    for (_, task, _) in rows {
        if !last_runs.contains_key(&task.task_id) {
            if let Some(run) = tx.task_runs(&task.task_id, 1)?.pop() {
                last_runs.insert(task.task_id.clone(), run);
            }
        }
    }
    Ok(last_runs)
}

/// The first `limit` occurrences up to `end` of the tasks `filter` selects,
/// in time order; at one time, in the order tasks are listed (the task that
/// runs next first, then the older, then by id). Tasks are read in that
/// order (`each_listed_task`), so the read stops at the first task whose
/// next run is at or after the `limit`-th occurrence found so far: none of
/// its occurrences, nor any later task's, can come before that one. However
/// many tasks there are, and however many share 09:00, it reads those that
/// can still make the list.
fn earliest_occurrences(
    tx: &mut dyn Tx,
    filter: &TaskFilter<'_>,
    end: i64,
    limit: usize,
) -> Result<Vec<(i64, Rc<Task>)>> {
    let mut rows: Vec<(i64, Rc<Task>)> = Vec::new();
    // Nothing later than this can make the list: `end`, then the
    // `limit`-th occurrence once that many are held (`full`).
    let (mut cutoff, mut full) = (end, false);
    let keep_first = |rows: &mut Vec<(i64, Rc<Task>)>| {
        rows.sort_by(|(a_at, a), (b_at, b)| {
            (a_at, a.next_run_at, a.created_at, &a.task_id).cmp(&(
                b_at,
                b.next_run_at,
                b.created_at,
                &b.task_id,
            ))
        });
        rows.truncate(limit);
    };
    tx.each_listed_task(filter, &mut |_, row| {
        // An unreadable task has no schedule to show; `list` reports it.
        let Ok(task) = row else {
            return Ok(Continue(()));
        };
        // Listed in order of next run, those that will not run again last.
        let Some(first) = task.next_run_at else {
            return Ok(Break(()));
        };
        if first > cutoff || (full && first == cutoff) {
            return Ok(Break(()));
        }
        let task = Rc::new(task);
        let (mut at, mut taken) = (first, 0);
        while at <= cutoff && taken < limit {
            rows.push((at, Rc::clone(&task)));
            taken += 1;
            match schedule::next_after(&task.payload.schedule, task.zone_in_force, at) {
                Some(next) => at = next.at,
                None => break,
            }
        }
        // Trimmed in rounds, so sorting stays proportional to what is read.
        if rows.len() >= 2 * limit {
            keep_first(&mut rows);
            cutoff = cutoff.min(rows[limit - 1].0);
            full = true;
        }
        Ok(Continue(()))
    })?;
    keep_first(&mut rows);
    Ok(rows)
}
