//! Applies one operation to the store, through the same trait calls (and
//! the same library functions) the commands and the tick use, and to the
//! model; then asks `check` to compare the two.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use agentcron::audit::Event;
use agentcron::error::{classify, ErrorKind};
use agentcron::model::{DeliveryState, Draft, RunStatus, TaskState, Wait, WaitKind};
use agentcron::ops::access::Caller;
use agentcron::ops::lifecycle::{self, Request};
use agentcron::payload::{hash_hex, Payload};
use agentcron::schedule::{self, Schedule};
use agentcron::store::{
    self, Location, NoticeFinish, OpenOptions, Reconciliation, Store, TaskTransition,
};
use agentcron::tick::claim::{self, ClaimSettings, Claimed};
use agentcron::tick::settle::{self, NoticeClaim, Outcome};

use crate::check::{self, Snapshots};
use crate::model::{Conflict, MDraft, MOutcome, MTask, Model, Sched};
use crate::ops::{Guard, Op, Pick, TaskSpec, Tok};

/// 2026-12-02T08:00:00Z, as in the CLI suite.
pub const T0: i64 = 1_796_198_400;
pub const TENANT: &str = "default";
pub const OWNER: &str = "unix:alice";
const ACTOR: &str = "agentcron:tick";

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// What keeps a case's database alive, and removes it afterwards.
enum Place {
    Dir(#[allow(dead_code)] tempfile::TempDir),
    Schema { base: String, schema: String },
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Place::Schema { base, schema } = self {
            if let Ok(mut c) = postgres::Client::connect(base, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
            }
        }
    }
}

fn open(backend: Backend) -> Result<(Box<dyn Store>, Place)> {
    let options = OpenOptions {
        busy_timeout: Duration::from_secs(5),
        create: true,
        read_only: false,
        ..Default::default()
    };
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir()?;
            let location = Location::Sqlite(dir.path().join("state").join("agentcron.db"));
            Ok((store::open(&location, &options)?, Place::Dir(dir)))
        }
        Backend::Postgres => {
            let base = std::env::var("AGENTCRON_TEST_PG")
                .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_string());
            let schema = format!("m_{}", uuid::Uuid::new_v4().simple());
            let mut client = postgres::Client::connect(&base, postgres::NoTls)?;
            client.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
            let sep = if base.contains('?') { '&' } else { '?' };
            let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
            let place = Place::Schema { base, schema };
            Ok((store::open(&Location::Postgres(url), &options)?, place))
        }
    }
}

pub struct Harness {
    pub store: Box<dyn Store>,
    pub model: Model,
    pub snapshots: Snapshots,
    _place: Place,
    counter: u64,
}

/// Runs one generated sequence; the error names the step and the difference.
pub fn run_case(backend: Backend, ops: &[Op]) -> Result<(), String> {
    let (store, place) = open(backend).map_err(|e| format!("opening the store: {e:#}"))?;
    let mut h = Harness {
        store,
        model: Model::new(T0),
        snapshots: Snapshots::default(),
        _place: place,
        counter: 0,
    };
    for (step, op) in ops.iter().enumerate() {
        let result = h
            .apply(op)
            .and_then(|()| check::learn_notice_ids(&mut h))
            .and_then(|()| check::compare(&mut h));
        if let Err(e) = result {
            return Err(format!(
                "step {step} ({op:?}) at T0+{} s: {e}",
                h.model.now - T0
            ));
        }
    }
    Ok(())
}

/// The model's verdict and the store's result must agree: both succeed, or
/// the model says Conflict and the store reports a Conflict.
fn agree<T>(
    model: Result<(), Conflict>,
    store: Result<T>,
    what: &str,
) -> Result<Option<T>, String> {
    tally(what, if model.is_ok() { "ok" } else { "conflict" });
    match (model, store) {
        (Ok(()), Ok(v)) => Ok(Some(v)),
        (Err(Conflict), Err(e)) if classify(&e).0 == ErrorKind::Conflict => Ok(None),
        (Ok(()), Err(e)) => Err(format!(
            "{what}: the model expects success, the store said: {e:#}"
        )),
        (Err(Conflict), Ok(_)) => Err(format!(
            "{what}: the model expects a Conflict, the store accepted it"
        )),
        (Err(Conflict), Err(e)) => Err(format!(
            "{what}: expected a Conflict, got {:?}: {e:#}",
            classify(&e).0
        )),
    }
}

/// The index'th of the candidates, or of everything when asked or when no
/// candidate exists.
fn choose(pick: Pick, all: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
    if all == 0 {
        return None;
    }
    let fitting: Vec<usize> = (0..all).filter(|i| fits(*i)).collect();
    if pick.any || fitting.is_empty() {
        Some(pick.index.index(all))
    } else {
        Some(fitting[pick.index.index(fitting.len())])
    }
}

impl Harness {
    fn fresh(&mut self, what: &str) -> String {
        self.counter += 1;
        format!("{what}-{}", self.counter)
    }

    fn caller_keys() -> Vec<String> {
        vec![OWNER.to_string()]
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        let name = format!("{op:?}");
        let name = name.split([' ', '(']).next().unwrap_or("?").to_string();
        match self.step(op) {
            Err(e) if e == SKIP => {
                tally(&name, "nothing to act on");
                Ok(())
            }
            other => {
                tally(&name, "steps");
                other
            }
        }
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Create(spec) => self.create(spec),
            Op::Reconfirm(i) => {
                if self.model.drafts.is_empty() {
                    return Ok(());
                }
                let d = i.index(self.model.drafts.len());
                self.confirm(d)
            }
            Op::Pause { task, stale } => self.lifecycle(task.index(self.tasks()?), *stale, "pause"),
            Op::Resume { task, stale } => {
                self.lifecycle(task.index(self.tasks()?), *stale, "resume")
            }
            Op::Delete { task, stale } => {
                self.lifecycle(task.index(self.tasks()?), *stale, "delete")
            }
            Op::RawTransition { task, guard } => {
                self.raw_transition(task.index(self.tasks()?), *guard)
            }
            Op::PauseAsStranger(task) => self.stranger(task.index(self.tasks()?)),
            Op::Advance(s) => {
                self.model.now += s;
                Ok(())
            }
            Op::Claim { lease } => self.claim(*lease),
            Op::Renew { run, tok, extend } => self.renew(*run, *tok, *extend),
            Op::Finish {
                run,
                tok,
                to,
                notify,
                wait,
            } => self.finish(*run, *tok, *to, *notify, *wait),
            Op::ExpireLeases => self.expire_leases(),
            Op::Reconcile { run, succeeded } => self.reconcile(*run, *succeeded),
            Op::Approve {
                run,
                right_wait,
                lease,
            } => self.approve(*run, *right_wait, *lease),
            Op::Deny(run) => self.deny(*run),
            Op::ExpireContinuations => self.expire_continuations(),
            Op::ClaimNotice {
                notice,
                twice,
                deadline,
            } => self.claim_notice(*notice, *twice, *deadline),
            Op::FinishNotice { notice, tok, to } => self.finish_notice(*notice, *tok, *to),
            Op::ExpireNotices => self.expire_notices(),
        }
    }

    /// How many tasks there are, or SKIP when none.
    fn tasks(&self) -> Result<usize, String> {
        match self.model.tasks.len() {
            0 => Err(SKIP.to_string()),
            n => Ok(n),
        }
    }

    fn create(&mut self, spec: &TaskSpec) -> Result<(), String> {
        let now = self.model.now;
        let sched = spec.sched.at(now);
        let schedule = match sched {
            Sched::Once { run_at } => Schedule::Once { run_at },
            Sched::Interval { seconds, anchor_at } => Schedule::Interval { seconds, anchor_at },
        };
        // The canonical text a person confirms (a new optional payload
        // field leaves it as it is). No notice policy: every settled run
        // has a notice, as the model expects.
        let canonical = serde_json::json!({
            "grace_seconds": spec.grace, "instruction": "model step",
            "max_retries": spec.max_retries, "name": spec.name,
            "owner_keys": Self::caller_keys(), "policy": "read_only",
            "retry_backoff_seconds": spec.backoff, "schedule": schedule.to_json(),
            "target": "chat:1", "tenant_key": TENANT, "timezone": "UTC",
        })
        .to_string();
        // Read back as every confirm reads it: the text is in canonical form.
        Payload::from_canonical(&canonical).map_err(|e| format!("model payload: {e}"))?;
        let draft = Draft {
            draft_id: uuid::Uuid::new_v4().to_string(),
            tenant_key: TENANT.into(),
            payload_hash: hash_hex(canonical.as_bytes()),
            payload: canonical,
            created_by: OWNER.into(),
            created_at: now,
            expires_at: now + 1800,
            replaces: None,
            code: None,
        };
        self.store
            .write(|tx| {
                tx.insert_draft(&draft)?;
                tx.append_event(&event(
                    now,
                    "draft",
                    None,
                    None,
                    json!({"draft_id": draft.draft_id}),
                ))
            })
            .map_err(|e| format!("saving the draft: {e:#}"))?;
        self.model.drafts.push(MDraft {
            id: draft.draft_id.clone(),
            task: MTask {
                id: String::new(),
                name: spec.name.map(str::to_string),
                sched,
                grace: spec.grace,
                max_retries: spec.max_retries,
                backoff: spec.backoff,
                created_at: now,
                state: TaskState::Active,
                reason: None,
                revision: 1,
                next_run_at: None,
                next_retry_at: None,
                retry_run_id: None,
                failures: 0,
            },
            consumed: false,
        });
        self.confirm(self.model.drafts.len() - 1)
    }

    /// The confirm command's transaction, step by step.
    fn confirm(&mut self, d: usize) -> Result<(), String> {
        let now = self.model.now;
        let draft_id = self.model.drafts[d].id.clone();
        if self.model.drafts[d].task.sched.next_after(now).is_none() {
            return Ok(()); // confirm refuses it before the store is asked
        }
        if self.model.drafts[d].consumed {
            // Gone: the command reports NotFound; the store's own guard on
            // consuming it twice must be a Conflict.
            let result = self.store.write(|tx| {
                if tx.draft(&draft_id)?.is_some() {
                    anyhow::bail!("a confirmed draft is still stored");
                }
                tx.consume_draft(&draft_id)
            });
            return agree(Err(Conflict), result, "consuming a confirmed draft").map(drop);
        }
        let task_id = uuid::Uuid::new_v4().to_string();
        let result = self.store.write(|tx| {
            let Some(draft) = tx.draft(&draft_id)? else {
                anyhow::bail!("the draft is missing");
            };
            let payload = Payload::from_canonical(&draft.payload)?;
            anyhow::ensure!(
                hash_hex(draft.payload.as_bytes()) == draft.payload_hash,
                "hash"
            );
            let next = schedule::next_after(&payload.schedule, payload.zone.named(), now)
                .ok_or_else(|| anyhow::anyhow!("no future occurrence"))?;
            let task = payload.new_task(
                task_id.clone(),
                draft.payload_hash.clone(),
                next.at,
                payload.zone.named(),
                now,
            );
            tx.insert_task(&task)?;
            tx.consume_draft(&draft.draft_id)?;
            tx.append_event(&event(now, "confirm", Some(&task_id), None, json!({})))
        });
        self.model.drafts[d].task.id = task_id;
        agree(self.model.confirm(d), result, "confirming the draft").map(drop)
    }

    fn lifecycle(&mut self, i: usize, stale: bool, verb: &str) -> Result<(), String> {
        let keys = Self::caller_keys();
        let task = &self.model.tasks[i];
        let revision = if stale {
            task.revision - 1
        } else {
            task.revision
        };
        let task_id = task.id.clone();
        let req = Request {
            caller: Caller {
                tenant: TENANT,
                identity: &keys,
            },
            task: &task_id,
            expect_revision: Some(revision),
            now: self.model.now,
        };
        let (stored, modelled) = match verb {
            "pause" => (
                lifecycle::pause(self.store.as_mut(), &req, Some("model pause")).map(|c| c.task),
                self.model.pause(i, revision, "model pause"),
            ),
            "resume" => (
                lifecycle::resume(self.store.as_mut(), &req).map(|c| c.task),
                self.model.resume(i, revision),
            ),
            _ => (
                lifecycle::delete(self.store.as_mut(), &req),
                self.model.delete(i, revision),
            ),
        };
        let returned = agree(modelled, stored, verb)?;
        if let Some(t) = returned {
            check::same_task(&self.model.tasks[i], &t)
                .map_err(|e| format!("{verb} returned {e}"))?;
        }
        self.learn_resume_runs()
    }

    /// The missed run a resume records gets its id from the store.
    fn learn_resume_runs(&mut self) -> Result<(), String> {
        for i in 0..self.model.runs.len() {
            if self.model.runs[i].id != "(resume)" {
                continue;
            }
            let (task_id, at) = (
                self.model.runs[i].task_id.clone(),
                self.model.runs[i].scheduled_for,
            );
            let runs = self
                .store
                .read(|tx| tx.occurrence_runs(&task_id, at))
                .map_err(|e| format!("{e:#}"))?;
            let known: Vec<&str> = self.model.runs.iter().map(|r| r.id.as_str()).collect();
            let new = runs.iter().find(|r| !known.contains(&r.run_id.as_str()));
            match new {
                Some(r) => self.model.runs[i].id = r.run_id.clone(),
                None => {
                    return Err(format!(
                        "resume recorded no missed run for {task_id} at {at}"
                    ))
                }
            }
        }
        Ok(())
    }

    fn raw_transition(&mut self, i: usize, guard: Guard) -> Result<(), String> {
        let t = self.model.tasks[i].clone();
        let (from, revision) = match guard {
            Guard::StaleRevision => (t.state, t.revision + 1),
            Guard::WrongState if t.state == TaskState::Paused => (TaskState::Active, t.revision),
            Guard::WrongState => (TaskState::Paused, t.revision),
        };
        let now = self.model.now;
        let result = self.store.write(|tx| {
            tx.transition_task(&TaskTransition {
                task_id: &t.id,
                from,
                revision,
                to: TaskState::Paused,
                reason: None,
                next_run_at: None,
                now,
            })
        });
        agree(
            self.model.raw_transition(i, revision, from),
            result,
            "transition_task",
        )
        .map(drop)
    }

    fn stranger(&mut self, i: usize) -> Result<(), String> {
        let keys = vec!["unix:mallory".to_string()];
        let task_id = self.model.tasks[i].id.clone();
        let req = Request {
            caller: Caller {
                tenant: TENANT,
                identity: &keys,
            },
            task: &task_id,
            expect_revision: None,
            now: self.model.now,
        };
        match lifecycle::pause(self.store.as_mut(), &req, None) {
            Err(e) if classify(&e).0 == ErrorKind::Denied => Ok(()),
            Err(e) => Err(format!("a stranger's pause: expected Denied, got {e:#}")),
            Ok(_) => Err("a stranger paused someone else's task".into()),
        }
    }

    fn claim(&mut self, lease: i64) -> Result<(), String> {
        let now = self.model.now;
        let expected = self.model.plan_claim(lease);
        let settings = ClaimSettings {
            now,
            lease_seconds: lease,
            runner: None,
        };
        let got = self
            .store
            .write(|tx| claim::claim_next(tx, None, settings, true))
            .map_err(|e| format!("claim_next failed: {e:#}"))?;
        match (expected, got) {
            (None, None) => {
                tally("claim decided", "nothing due");
                Ok(())
            }
            (
                Some(mut plan),
                Some(Claimed::Planned {
                    task, plan: stored, ..
                }),
            ) => {
                let want = &self.model.tasks[plan.task];
                if task.task_id != want.id {
                    return Err(format!(
                        "claimed task {} but the model's earliest due is {}",
                        task.task_id, want.id
                    ));
                }
                if stored.runs.len() != plan.runs.len() {
                    return Err(format!(
                        "claim recorded {:?}, the model expects {:?}",
                        stored.runs, plan.runs
                    ));
                }
                for (m, s) in plan.runs.iter_mut().zip(&stored.runs) {
                    m.id = s.run_id.clone();
                    if m.token.is_some() {
                        m.token = s.lease().map(|l| l.token.clone());
                    }
                    check::same_run(m, None, s).map_err(|e| format!("claim decided {e}"))?;
                }
                if (stored.next_run_at, stored.state) != (plan.next_run_at, plan.state) {
                    return Err(format!(
                        "claim left next_run_at {:?} state {}, the model expects {:?} {}",
                        stored.next_run_at, stored.state, plan.next_run_at, plan.state
                    ));
                }
                for r in &plan.runs {
                    tally("claim decided", r.status.as_str());
                }
                self.model.apply_claim(plan);
                Ok(())
            }
            (expected, got) => Err(format!(
                "claim: the model expects {expected:?}, the store did {got:?}"
            )),
        }
    }

    fn token_for(&self, tok: Tok, right: Option<String>, others: Vec<String>) -> String {
        match tok {
            Tok::Right => right.unwrap_or_else(|| "never-handed-out".into()),
            Tok::Wrong => "not-a-token".into(),
            Tok::Other(i) => {
                let others: Vec<String> = others
                    .into_iter()
                    .filter(|t| Some(t) != right.as_ref())
                    .collect();
                if others.is_empty() {
                    "not-a-token".into()
                } else {
                    others[i.index(others.len())].clone()
                }
            }
        }
    }

    fn run_token(&self, run: usize, tok: Tok) -> String {
        let others = self
            .model
            .runs
            .iter()
            .filter_map(|r| r.token.clone())
            .collect();
        self.token_for(tok, self.model.runs[run].token.clone(), others)
    }

    fn pick_run(&self, pick: Pick, fits: impl Fn(RunStatus) -> bool) -> Result<usize, String> {
        let runs = &self.model.runs;
        choose(pick, runs.len(), |i| fits(runs[i].status)).ok_or_else(|| SKIP.to_string())
    }

    fn renew(&mut self, pick: Pick, tok: Tok, extend: i64) -> Result<(), String> {
        let run = self.pick_run(pick, |s| s == RunStatus::Running)?;
        let token = self.run_token(run, tok);
        let id = self.model.runs[run].id.clone();
        let until = self.model.now + extend;
        let renewed = self
            .store
            .write(|tx| tx.renew_lease(&id, &token, until, self.model.now))
            .map_err(|e| format!("{e:#}"))?;
        let expected = self.model.renew(run, &token, until);
        if renewed != expected {
            return Err(format!(
                "renew_lease returned {renewed}, the model expects {expected}"
            ));
        }
        Ok(())
    }

    fn finish(
        &mut self,
        pick: Pick,
        tok: Tok,
        to: RunStatus,
        notify: bool,
        wait: i64,
    ) -> Result<(), String> {
        let run = self.pick_run(pick, |s| s == RunStatus::Running)?;
        let token = self.run_token(run, tok);
        let now = self.model.now;
        let waiting = to.is_awaiting();
        let outcome = MOutcome {
            status: to,
            wait_id: waiting.then(|| self.fresh("wait")),
            wait_deadline: waiting.then_some(now + wait),
            retryable: true,
        };
        let stored = Outcome {
            status: to,
            summary: Some("model outcome".into()),
            reason: None,
            wait: outcome
                .wait_id
                .clone()
                .zip(outcome.wait_deadline)
                .map(|(id, deadline)| Wait {
                    kind: WaitKind::parse(to.as_str().trim_start_matches("awaiting_"))
                        .expect("an awaiting status names its kind"),
                    id,
                    deadline,
                }),
            stderr: None,
            retryable: true,
            notify: None,
            usage: Default::default(),
        };
        let claim_token = notify.then(|| uuid::Uuid::new_v4().to_string());
        let id = self.model.runs[run].id.clone();
        let result = self.store.write(|tx| {
            let r = tx
                .run(&id)?
                .ok_or_else(|| anyhow::anyhow!("run {id} is gone"))?;
            let claim = claim_token.as_deref().map(|t| NoticeClaim {
                token: t,
                deadline: now + 60,
            });
            settle::settle(
                tx,
                &r,
                RunStatus::Running,
                Some(&token),
                &stored,
                ACTOR,
                now,
                claim,
            )
        });
        let modelled = self
            .model
            .finish(run, RunStatus::Running, Some(&token), &outcome);
        if let Some(notice) = agree(modelled, result, "finishing the run")? {
            self.model
                .add_notice(&id, claim_token.map(|t| (t, now + 60)));
            self.model.notices.last_mut().expect("just added").id = Some(notice.delivery_id);
        }
        Ok(())
    }

    /// Tick step 1.
    fn expire_leases(&mut self) -> Result<(), String> {
        let now = self.model.now;
        let expired = self
            .store
            .write(|tx| {
                let runs = tx.expire_leases(now, None)?;
                for (run, _) in &runs {
                    let task = tx.task(&run.task_id)?.and_then(Result::ok);
                    tx.append_event(&event(
                        now,
                        "lease_expired",
                        Some(&run.task_id),
                        Some(&run.run_id),
                        json!({}),
                    ))?;
                    settle::add_notice(tx, run, task.as_ref(), now, None)?;
                }
                Ok(runs)
            })
            .map_err(|e| format!("{e:#}"))?;
        let mut got: Vec<String> = expired.into_iter().map(|(r, _)| r.run_id).collect();
        let mut want = self.model.expire_leases();
        got.sort();
        want.sort();
        if got != want {
            return Err(format!(
                "expire_leases changed {got:?}, the model expects {want:?}"
            ));
        }
        Ok(())
    }

    /// The reconcile command's transaction; for a run that is not unknown,
    /// the store's own guard (finish from unknown) must refuse it.
    fn reconcile(&mut self, pick: Pick, succeeded: bool) -> Result<(), String> {
        let run = self.pick_run(pick, |s| s == RunStatus::Unknown)?;
        let status = if succeeded {
            RunStatus::Succeeded
        } else {
            RunStatus::Failed
        };
        let decision = if succeeded {
            "confirmed_succeeded"
        } else {
            "abandoned"
        };
        let outcome = Outcome::final_decision(status, format!("reconciled ({decision}): model"));
        let id = self.model.runs[run].id.clone();
        let is_unknown = self.model.runs[run].status == RunStatus::Unknown;
        let now = self.model.now;
        let result = self.store.write(|tx| {
            let r = tx
                .run(&id)?
                .ok_or_else(|| anyhow::anyhow!("run {id} is gone"))?;
            if is_unknown {
                tx.insert_reconciliation(&Reconciliation {
                    run_id: r.run_id.clone(),
                    tenant_key: r.tenant_key.clone(),
                    actor: OWNER.into(),
                    decision: decision.into(),
                    reason: "model".into(),
                    prior_reason: r.reason.clone(),
                    decided_at: now,
                })?;
            }
            settle::record(tx, &r, RunStatus::Unknown, None, &outcome, OWNER, now)?;
            tx.append_event(&event(
                now,
                "reconcile",
                Some(&r.task_id),
                Some(&r.run_id),
                json!({}),
            ))
        });
        let modelled = MOutcome {
            status,
            wait_id: None,
            wait_deadline: None,
            retryable: false,
        };
        let verdict = self.model.finish(run, RunStatus::Unknown, None, &modelled);
        if verdict.is_ok() {
            self.model.reconciled.insert(id);
        }
        agree(verdict, result, "reconciling the run").map(drop)
    }

    /// approve's store step: the parked run back to running, once.
    fn approve(&mut self, pick: Pick, right_wait: bool, lease: i64) -> Result<(), String> {
        let run = self.pick_run(pick, RunStatus::is_awaiting)?;
        let r = &self.model.runs[run];
        let wait_id = match (&r.wait_id, right_wait) {
            (Some(w), true) => w.clone(),
            _ => "not-this-wait".into(),
        };
        let (id, task_id) = (r.id.clone(), r.task_id.clone());
        let token = uuid::Uuid::new_v4().to_string();
        let now = self.model.now;
        let result = self.store.write(|tx| {
            tx.reclaim_parked(&id, &wait_id, &token, now + lease, now)?;
            tx.append_event(&event(now, "approve", Some(&task_id), Some(&id), json!({})))
        });
        agree(
            self.model.reclaim(run, &wait_id, &token, now + lease),
            result,
            "reclaim_parked",
        )
        .map(drop)
    }

    fn deny(&mut self, pick: Pick) -> Result<(), String> {
        let run = self.pick_run(pick, RunStatus::is_awaiting)?;
        let status = self.model.runs[run].status;
        let from = if status.is_awaiting() {
            status
        } else {
            RunStatus::AwaitingConfirmation
        };
        let id = self.model.runs[run].id.clone();
        let now = self.model.now;
        let outcome = Outcome::final_decision(RunStatus::Failed, "denied".into());
        let result = self.store.write(|tx| {
            let r = tx
                .run(&id)?
                .ok_or_else(|| anyhow::anyhow!("run {id} is gone"))?;
            settle::settle(tx, &r, from, None, &outcome, OWNER, now, None)
        });
        let modelled = MOutcome {
            status: RunStatus::Failed,
            wait_id: None,
            wait_deadline: None,
            retryable: false,
        };
        let verdict = self.model.finish(run, from, None, &modelled);
        if let Some(notice) = agree(verdict, result, "denying the run")? {
            self.model.add_notice(&id, None);
            self.model.notices.last_mut().expect("just added").id = Some(notice.delivery_id);
        }
        Ok(())
    }

    /// Tick step 4.
    fn expire_continuations(&mut self) -> Result<(), String> {
        let now = self.model.now;
        let outcome =
            Outcome::settled(RunStatus::Failed, None, Some("continuation expired".into()));
        let settled = self
            .store
            .write(|tx| {
                let runs = tx.expired_continuations(now, None)?;
                let mut done = Vec::new();
                for run in &runs {
                    let n =
                        settle::settle(tx, run, run.status(), None, &outcome, ACTOR, now, None)?;
                    done.push((run.run_id.clone(), run.status(), n.delivery_id));
                }
                Ok(done)
            })
            .map_err(|e| format!("{e:#}"))?;
        let mut want = self.model.expired_continuations();
        let mut got: Vec<String> = settled.iter().map(|(id, ..)| id.clone()).collect();
        want.sort();
        got.sort();
        if got != want {
            return Err(format!(
                "expired_continuations settled {got:?}, the model expects {want:?}"
            ));
        }
        let modelled = MOutcome {
            status: RunStatus::Failed,
            wait_id: None,
            wait_deadline: None,
            retryable: true,
        };
        for (id, from, delivery_id) in settled {
            let i = self.model.run_index(&id);
            self.model
                .finish(i, from, None, &modelled)
                .map_err(|_| format!("the model refuses to expire {id}"))?;
            self.model.add_notice(&id, None);
            self.model.notices.last_mut().expect("just added").id = Some(delivery_id);
        }
        Ok(())
    }

    fn pick_notice(&self, pick: Pick, state: DeliveryState) -> Result<usize, String> {
        let notices = &self.model.notices;
        choose(pick, notices.len(), |i| notices[i].state == state).ok_or_else(|| SKIP.to_string())
    }

    fn claim_notice(&mut self, pick: Pick, twice: bool, deadline: i64) -> Result<(), String> {
        let n = self.pick_notice(pick, DeliveryState::Pending)?;
        let id = self.model.notices[n]
            .id
            .clone()
            .ok_or("a notice's id was never learned")?;
        let now = self.model.now;
        let claim = |h: &mut Harness| {
            let token = uuid::Uuid::new_v4().to_string();
            let result = h.store.write(|tx| {
                tx.claim_notice(&agentcron::store::NoticeClaim {
                    delivery_id: &id,
                    token: &token,
                    deadline: now + deadline,
                    now,
                })
            });
            agree(
                h.model.claim_notice(n, &token, now + deadline),
                result,
                "claim_notice",
            )
            .map(drop)
        };
        claim(self)?;
        if twice {
            claim(self)?;
        }
        Ok(())
    }

    fn finish_notice(&mut self, pick: Pick, tok: Tok, to: DeliveryState) -> Result<(), String> {
        let n = self.pick_notice(pick, DeliveryState::Sending)?;
        let others = self
            .model
            .notices
            .iter()
            .filter_map(|n| n.token.clone())
            .collect();
        let token = self.token_for(tok, self.model.notices[n].token.clone(), others);
        let id = self.model.notices[n]
            .id
            .clone()
            .ok_or("a notice's id was never learned")?;
        let run_id = self.model.notices[n].run_id.clone();
        let now = self.model.now;
        let error = (to != DeliveryState::Delivered).then_some("model notifier");
        let result = self.store.write(|tx| {
            tx.finish_notice(&NoticeFinish {
                delivery_id: &id,
                token: &token,
                to,
                error,
                retry_at: None,
                now,
            })?;
            tx.append_event(&event(
                now,
                "delivery",
                None,
                Some(&run_id),
                json!({"delivery_id": id}),
            ))
        });
        agree(
            self.model.finish_notice(n, &token, to),
            result,
            "finish_notice",
        )
        .map(drop)
    }

    /// Tick step 2.
    fn expire_notices(&mut self) -> Result<(), String> {
        let now = self.model.now;
        let expired = self
            .store
            .write(|tx| tx.expire_notices(now, None))
            .map_err(|e| format!("{e:#}"))?;
        let mut got: Vec<String> = expired.into_iter().map(|n| n.delivery_id).collect();
        let mut want = self.model.expire_notices();
        got.sort();
        want.sort();
        if got != want {
            return Err(format!(
                "expire_notices changed {got:?}, the model expects {want:?}"
            ));
        }
        Ok(())
    }
}

thread_local! {
    static TALLY: std::cell::RefCell<std::collections::BTreeMap<(String, &'static str), u64>> =
        Default::default();
}

/// Counts what the cases exercised (printed after the run, for coverage).
pub fn tally(what: &str, how: &'static str) {
    TALLY.with(|t| *t.borrow_mut().entry((what.to_string(), how)).or_default() += 1);
}

pub fn tally_report() -> String {
    TALLY.with(|t| {
        t.borrow()
            .iter()
            .map(|((what, how), n)| format!("  {what}: {how} {n}\n"))
            .collect()
    })
}

/// "Nothing to act on": the step is a no-op.
const SKIP: &str = "(skip)";

fn event(
    at: i64,
    action: &str,
    task_id: Option<&str>,
    run_id: Option<&str>,
    detail: serde_json::Value,
) -> Event {
    Event {
        at,
        tenant_key: TENANT.into(),
        actor: OWNER.into(),
        action: action.into(),
        task_id: task_id.map(str::to_string),
        run_id: run_id.map(str::to_string),
        detail,
    }
}
