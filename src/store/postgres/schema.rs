//! The PostgreSQL schema, as an append-only list of migrations tracked in
//! `agentcron_schema`, applied one transaction per step under an advisory
//! lock so that two `migrate`s at once apply each step exactly once.
//!
//! Never change or reorder an entry: databases in the field applied it.

use super::client::Client;
use anyhow::{Context, Result};

use crate::store::schema::task_memory_from_runs;

/// Migration `i` takes the schema from version `i` to `i + 1`. The tables
/// mirror the SQLite schema column for column (BIGINT seconds, TEXT JSON).
pub(crate) const MIGRATIONS: &[&str] = &[
    r#"
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE drafts (
        draft_id TEXT PRIMARY KEY, tenant_key TEXT NOT NULL, payload TEXT NOT NULL,
        payload_hash TEXT NOT NULL, created_by TEXT NOT NULL, created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL);
    CREATE INDEX drafts_by_expiry ON drafts (expires_at);

    CREATE TABLE tasks (
        task_id TEXT PRIMARY KEY, tenant_key TEXT NOT NULL, name TEXT,
        owner_keys TEXT NOT NULL, target TEXT NOT NULL, instruction TEXT NOT NULL,
        schedule TEXT NOT NULL, timezone TEXT NOT NULL, policy TEXT NOT NULL,
        grace_seconds BIGINT NOT NULL, max_retries BIGINT NOT NULL,
        retry_backoff_seconds BIGINT NOT NULL, payload TEXT NOT NULL, payload_hash TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'completed', 'deleted', 'error')),
        state_reason TEXT, state_changed_at BIGINT NOT NULL, next_run_at BIGINT,
        revision BIGINT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
        consecutive_failures BIGINT NOT NULL DEFAULT 0, next_retry_at BIGINT, retry_run_id TEXT);
    CREATE UNIQUE INDEX tasks_by_name ON tasks (tenant_key, name)
        WHERE name IS NOT NULL AND state <> 'deleted';
    CREATE INDEX tasks_by_tenant ON tasks (tenant_key, created_at);
    CREATE INDEX tasks_due ON tasks (next_run_at) WHERE state = 'active';
    CREATE INDEX tasks_retry_due ON tasks (next_retry_at)
        WHERE state = 'active' AND next_retry_at IS NOT NULL;

    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks (task_id),
        tenant_key TEXT NOT NULL, scheduled_for BIGINT NOT NULL, scheduled_local TEXT NOT NULL,
        attempt BIGINT NOT NULL, due_at BIGINT NOT NULL,
        status TEXT NOT NULL CHECK (status IN (
            'running', 'succeeded', 'failed', 'delivery_failed', 'awaiting_confirmation',
            'awaiting_authorization', 'unknown', 'missed', 'skipped_overlap')),
        payload_hash TEXT NOT NULL, created_at BIGINT NOT NULL, started_at BIGINT,
        finished_at BIGINT, lease_token TEXT, lease_until BIGINT, summary TEXT, reason TEXT,
        skipped_occurrences BIGINT NOT NULL DEFAULT 0, blocked_by TEXT, wait_kind TEXT,
        wait_id TEXT, wait_deadline BIGINT,
        UNIQUE (task_id, scheduled_for, attempt));
    CREATE INDEX runs_by_task ON runs (task_id, scheduled_for DESC, attempt DESC);
    CREATE INDEX runs_by_tenant_status ON runs (tenant_key, status, scheduled_for);
    CREATE INDEX runs_leased ON runs (lease_until) WHERE status = 'running';
    CREATE INDEX runs_parked ON runs (wait_deadline)
        WHERE status IN ('awaiting_confirmation', 'awaiting_authorization');
    CREATE INDEX runs_blocking ON runs (task_id)
        WHERE status IN ('running', 'awaiting_confirmation', 'awaiting_authorization', 'unknown');

    CREATE TABLE deliveries (
        delivery_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs (run_id),
        tenant_key TEXT NOT NULL, seq BIGINT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'unknown')),
        target TEXT NOT NULL, message TEXT NOT NULL, created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL, claim_token TEXT, deadline BIGINT,
        attempts BIGINT NOT NULL DEFAULT 0, last_error TEXT, announced BIGINT NOT NULL DEFAULT 0,
        UNIQUE (run_id, seq));
    CREATE INDEX deliveries_pending ON deliveries (created_at) WHERE state = 'pending';
    CREATE INDEX deliveries_sending ON deliveries (deadline) WHERE state = 'sending';

    CREATE TABLE reconciliations (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id), tenant_key TEXT NOT NULL,
        actor TEXT NOT NULL,
        decision TEXT NOT NULL CHECK (decision IN ('confirmed_succeeded', 'confirmed_failed', 'abandoned')),
        reason TEXT NOT NULL, prior_reason TEXT, decided_at BIGINT NOT NULL);

    CREATE TABLE events (
        event_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at BIGINT NOT NULL,
        tenant_key TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
        task_id TEXT, run_id TEXT, detail TEXT NOT NULL);
    CREATE INDEX events_by_tenant ON events (tenant_key, event_id);
    CREATE INDEX events_by_task ON events (task_id, event_id);
    CREATE INDEX events_by_time ON events (at);
"#,
    r#"
    -- 2: indexes the benchmarks asked for: run history newest first per
    -- tenant, prune's "is this run a pending retry" test, and the rare
    -- states status counts.
    CREATE INDEX runs_by_tenant_time ON runs (tenant_key, scheduled_for DESC, attempt DESC);
    CREATE INDEX tasks_by_retry_run ON tasks (retry_run_id) WHERE retry_run_id IS NOT NULL;
    CREATE INDEX runs_unknown ON runs (tenant_key) WHERE status = 'unknown';
    CREATE INDEX deliveries_unknown ON deliveries (tenant_key) WHERE state = 'unknown';
"#,
    r#"
    -- 3: capacity is not lateness (docs/CONTRACT.md §6) and delivery backoff
    -- (§7); the same columns as SQLite's migration 3.
    ALTER TABLE tasks ADD COLUMN queued_for BIGINT, ADD COLUMN queued_since BIGINT,
        ADD COLUMN queued_next BIGINT;
    ALTER TABLE runs ADD COLUMN queued_seconds BIGINT;
    CREATE INDEX tasks_due_by_tenant ON tasks (tenant_key, next_run_at) WHERE state = 'active';
    CREATE INDEX tasks_retry_due_by_tenant ON tasks (tenant_key, next_retry_at)
        WHERE state = 'active' AND next_retry_at IS NOT NULL;
    CREATE INDEX tasks_queued ON tasks (queued_since) WHERE queued_for IS NOT NULL;
    ALTER TABLE deliveries DROP CONSTRAINT deliveries_state_check,
        ADD CONSTRAINT deliveries_state_check CHECK (state IN
            ('pending', 'sending', 'delivered', 'unknown', 'undeliverable')),
        ADD COLUMN next_attempt_at BIGINT;
"#,
    r#"
    -- 4: one row per write transaction, inserted just before its COMMIT, so
    -- that a commit whose acknowledgement was lost can be resolved by
    -- looking for it (docs/CONTRACT.md §12). Rows older than a day are pruned.
    CREATE TABLE commit_markers (
        marker TEXT PRIMARY KEY, at TIMESTAMPTZ NOT NULL DEFAULT now());
    CREATE INDEX commit_markers_by_age ON commit_markers (at);
"#,
    r#"
    -- 5: the end of the executor's stderr, as SQLite's migration 4.
    ALTER TABLE runs ADD COLUMN stderr_tail TEXT;
"#,
    r#"
    -- 6: day-2 operations (docs/CONTRACT.md §13); the same columns as SQLite's
    -- migration 5.
    ALTER TABLE drafts ADD COLUMN replaces_task_id TEXT, ADD COLUMN replaces_revision BIGINT;
    ALTER TABLE tasks ADD COLUMN trigger_at BIGINT, ADD COLUMN trigger_reason TEXT,
        ADD COLUMN trigger_actor TEXT;
    CREATE INDEX tasks_trigger_due ON tasks (tenant_key, trigger_at)
        WHERE state = 'active' AND trigger_at IS NOT NULL;
    ALTER TABLE runs ADD COLUMN trigger TEXT NOT NULL DEFAULT 'schedule'
        CHECK (trigger IN ('schedule', 'retry', 'manual'));
"#,
    r#"
    -- 7: declarative tasks (docs/CONTRACT.md §14), as SQLite's migration 6.
    ALTER TABLE tasks ADD COLUMN managed_by TEXT;
    CREATE INDEX tasks_managed ON tasks (tenant_key, managed_by)
        WHERE managed_by IS NOT NULL;
"#,
    r#"
    -- 8: approvals waiting for the next tick, as SQLite's migration 7.
    ALTER TABLE runs ADD COLUMN approved_at BIGINT, ADD COLUMN approved_by TEXT;
    CREATE INDEX runs_approved ON runs (approved_at) WHERE approved_at IS NOT NULL;
"#,
    r#"
    -- 9: what an `apply` declared for a task, as SQLite's migration 8.
    ALTER TABLE tasks ADD COLUMN declared_hash TEXT;
"#,
    r#"
    -- 10: `list` in its own order and `status`'s counts by state, as
    -- SQLite's migration 9 (ascending puts NULL last here, so the plain
    -- column gives the listing's order).
    CREATE INDEX tasks_listed ON tasks (tenant_key, next_run_at, created_at, task_id);
    CREATE INDEX tasks_by_state ON tasks (state, tenant_key);
    CREATE INDEX deliveries_undeliverable ON deliveries (tenant_key)
        WHERE state = 'undeliverable';
"#,
    r#"
    -- 11: the audit events two readers look for among all of them, as in
    -- SQLite's migration 10: `metrics` counts the scheduler gaps, and
    -- `explain` finds a task's last pause or resume.
    CREATE INDEX events_scheduler_gaps ON events (tenant_key) WHERE action = 'scheduler_gap';
    CREATE INDEX events_pauses ON events (task_id, event_id) WHERE action IN ('pause', 'resume');
"#,
    r#"
    -- 12: `status` reads the tasks per state and tenant, kept by a trigger,
    -- as SQLite's migration 10 (counting the active tasks took 31-147 ms at
    -- a million). A change that keeps a task's state and tenant (every claim
    -- of a recurring task) does not call the function; one that moves a
    -- task changes both rows in one statement, in key order, so that two
    -- such changes wait for each other instead of deadlocking.
    CREATE TABLE task_counts (
        state TEXT NOT NULL, tenant_key TEXT NOT NULL, n BIGINT NOT NULL,
        PRIMARY KEY (state, tenant_key));
    INSERT INTO task_counts (state, tenant_key, n)
        SELECT state, tenant_key, count(*) FROM tasks GROUP BY state, tenant_key;
    -- Its tables are found where the migration found them, whatever the
    -- search_path of the session that writes a task (psql writing
    -- `schema.tasks` from another path, say).
    CREATE FUNCTION agentcron_count_task() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO task_counts (state, tenant_key, n)
            SELECT state, tenant_key, sum(n) FROM (
                SELECT OLD.state, OLD.tenant_key, -1 WHERE TG_OP <> 'INSERT'
                UNION ALL
                SELECT NEW.state, NEW.tenant_key, 1 WHERE TG_OP <> 'DELETE'
            ) AS change (state, tenant_key, n)
            GROUP BY state, tenant_key ORDER BY state, tenant_key
        ON CONFLICT (state, tenant_key) DO UPDATE SET n = task_counts.n + excluded.n;
        RETURN NULL;
    END $$;
    CREATE TRIGGER task_counts_insert_delete AFTER INSERT OR DELETE ON tasks
        FOR EACH ROW EXECUTE FUNCTION agentcron_count_task();
    CREATE TRIGGER task_counts_update AFTER UPDATE OF state, tenant_key ON tasks
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                           OR OLD.tenant_key IS DISTINCT FROM NEW.tenant_key)
        EXECUTE FUNCTION agentcron_count_task();
"#,
    concat!(
        r#"
    -- 13: the notice policy, as SQLite's migration 11: suppressed notices
    -- with their reason, each notice's kind, the task's memory of its past
    -- and the runs-finished counters.
    ALTER TABLE deliveries DROP CONSTRAINT deliveries_state_check,
        ADD CONSTRAINT deliveries_state_check CHECK (state IN
            ('pending', 'sending', 'delivered', 'unknown', 'undeliverable', 'suppressed')),
        ADD COLUMN kind TEXT,
        ADD COLUMN suppressed_since_last BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN suppressed_reason TEXT;
    CREATE TABLE suppressed_counts (tenant_key TEXT PRIMARY KEY, n BIGINT NOT NULL);
    CREATE FUNCTION agentcron_count_suppressed() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO suppressed_counts (tenant_key, n) VALUES (NEW.tenant_key, 1)
                ON CONFLICT (tenant_key) DO UPDATE SET n = suppressed_counts.n + 1;
        ELSE
            UPDATE suppressed_counts SET n = n - 1 WHERE tenant_key = OLD.tenant_key;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER suppressed_counts_insert AFTER INSERT ON deliveries
        FOR EACH ROW WHEN (NEW.state = 'suppressed') EXECUTE FUNCTION agentcron_count_suppressed();
    CREATE TRIGGER suppressed_counts_delete AFTER DELETE ON deliveries
        FOR EACH ROW WHEN (OLD.state = 'suppressed') EXECUTE FUNCTION agentcron_count_suppressed();
    CREATE TABLE task_memory (
        task_id TEXT PRIMARY KEY,
        last_failure_reason TEXT,
        last_failure_sent_at BIGINT,
        last_success_fingerprint TEXT,
        suppressed_count BIGINT NOT NULL DEFAULT 0,
        suppressed_failures BIGINT NOT NULL DEFAULT 0,
        suppressed_since BIGINT,
        last_settled_run_id TEXT,
        last_success_at BIGINT);
"#,
        task_memory_from_runs!(),
        r#";
    CREATE TABLE run_totals (
        tenant_key TEXT NOT NULL, status TEXT NOT NULL, n BIGINT NOT NULL,
        PRIMARY KEY (tenant_key, status));
    INSERT INTO run_totals (tenant_key, status, n)
        SELECT tenant_key, status, count(*) FROM runs
        WHERE status IN ('succeeded', 'failed', 'delivery_failed', 'unknown', 'missed',
                         'skipped_overlap')
        GROUP BY tenant_key, status;
    CREATE FUNCTION agentcron_count_finished_run() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO run_totals (tenant_key, status, n) VALUES (NEW.tenant_key, NEW.status, 1)
            ON CONFLICT (tenant_key, status) DO UPDATE SET n = run_totals.n + 1;
        RETURN NULL;
    END $$;
    CREATE TRIGGER run_totals_insert AFTER INSERT ON runs
        FOR EACH ROW WHEN (NEW.status IN ('missed', 'skipped_overlap', 'succeeded', 'failed',
                                          'delivery_failed', 'unknown'))
        EXECUTE FUNCTION agentcron_count_finished_run();
    CREATE TRIGGER run_totals_finish AFTER UPDATE OF status ON runs
        FOR EACH ROW WHEN (OLD.status IN ('running', 'awaiting_confirmation',
                                          'awaiting_authorization')
                           AND NEW.status IN ('succeeded', 'failed', 'delivery_failed', 'unknown'))
        EXECUTE FUNCTION agentcron_count_finished_run();
"#
    ),
    r#"
    -- 14: zones that follow their owner (docs/CONTRACT.md §18), as SQLite's
    -- migration of the same name: the owners' current zones, the key a
    -- following task follows and its zone in force, and the indexes
    -- `zone set` and `explain` read.
    CREATE TABLE zones (
        tenant_key   TEXT NOT NULL,
        identity_key TEXT NOT NULL,
        zone         TEXT NOT NULL,
        set_at       BIGINT NOT NULL,
        set_by       TEXT NOT NULL,
        PRIMARY KEY (tenant_key, identity_key));
    ALTER TABLE tasks ADD COLUMN follow_key TEXT, ADD COLUMN zone_in_force TEXT;
    CREATE INDEX tasks_following ON tasks (tenant_key, follow_key)
        WHERE follow_key IS NOT NULL;
    CREATE INDEX events_retimes ON events (task_id, event_id) WHERE action = 'retime';
"#,
    r#"
    -- 15: an agent draft's one-time code, as SQLite's migration 13: its
    -- salted hash and the wrong codes given so far.
    ALTER TABLE drafts ADD COLUMN code_hash TEXT, ADD COLUMN code_salt TEXT,
        ADD COLUMN code_wrong_attempts BIGINT NOT NULL DEFAULT 0;
"#,
    r#"
    -- 16: the hosts that tick the store and the build each last ran, as
    -- SQLite's migration 14: `status` warns when they differ.
    CREATE TABLE hosts (
        host TEXT PRIMARY KEY, build TEXT NOT NULL, last_tick_at BIGINT NOT NULL);
"#,
    r#"
    -- 17: a due instant a tick saw but could not mark on its task's row,
    -- which another session held locked, as SQLite's migration 15: beside
    -- the row, with no key to it (a foreign key check would wait for the lock).
    CREATE TABLE seen_due (
        task_id TEXT PRIMARY KEY,
        due_at  BIGINT NOT NULL,
        seen_at BIGINT NOT NULL);
"#,
    r#"
    -- 18: who runs a running run, as SQLite's migration 16: the claiming
    -- process ("BOOT PID START"), so that commands that confirm or change
    -- schedules can tell they were started inside a run.
    ALTER TABLE runs ADD COLUMN runner TEXT;
"#,
    r#"
    -- 19: what a run may spend (docs/CONTRACT.md §6), as SQLite's migration
    -- 17: two run statuses, whether a run caught up and what it reported
    -- spending, each budget's current window per task, each usage key's
    -- total per tenant, and when a task that expects successes is overdue.
    ALTER TABLE runs DROP CONSTRAINT runs_status_check;
    ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (
        'running', 'succeeded', 'failed', 'delivery_failed', 'awaiting_confirmation',
        'awaiting_authorization', 'unknown', 'missed', 'skipped_overlap',
        'skipped_budget', 'skipped_gate')) NOT VALID;
    ALTER TABLE runs ADD COLUMN catch_up BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN usage TEXT;
    CREATE TABLE budget_windows (
        task_id TEXT NOT NULL, budget_key TEXT NOT NULL, period TEXT NOT NULL,
        window_start BIGINT NOT NULL, spent DOUBLE PRECISION NOT NULL, told_at BIGINT,
        PRIMARY KEY (task_id, budget_key, period));
    CREATE TABLE usage_totals (
        tenant_key TEXT NOT NULL, usage_key TEXT NOT NULL, total DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (tenant_key, usage_key));
    ALTER TABLE tasks ADD COLUMN success_due_at BIGINT;
    ALTER TABLE tasks ADD COLUMN overdue_since BIGINT;
    CREATE INDEX tasks_success_due ON tasks (success_due_at) WHERE success_due_at IS NOT NULL;
    CREATE INDEX tasks_overdue ON tasks (tenant_key) WHERE overdue_since IS NOT NULL;
    DROP TRIGGER run_totals_insert ON runs;
    CREATE TRIGGER run_totals_insert AFTER INSERT ON runs
        FOR EACH ROW WHEN (NEW.status IN ('missed', 'skipped_overlap', 'skipped_budget',
                                          'skipped_gate', 'succeeded', 'failed',
                                          'delivery_failed', 'unknown'))
        EXECUTE FUNCTION agentcron_count_finished_run();
    DROP TRIGGER run_totals_finish ON runs;
    CREATE TRIGGER run_totals_finish AFTER UPDATE OF status ON runs
        FOR EACH ROW WHEN (OLD.status IN ('running', 'awaiting_confirmation',
                                          'awaiting_authorization')
                           AND NEW.status IN ('succeeded', 'failed', 'delivery_failed',
                                              'unknown', 'skipped_gate'))
        EXECUTE FUNCTION agentcron_count_finished_run();
"#,
    r#"
    -- 20: counters that do not serialize outcomes (docs/CONTRACT.md §12). Every
    -- settle on every host added to one row per (tenant, status), so
    -- concurrent outcomes waited on each other's row lock until commit.
    -- Each change now goes to one of 16 rows of its key, picked at random;
    -- readers sum them (they always did). A shard may go below zero when
    -- prune removes held-back notices; only the sum means anything.
    ALTER TABLE run_totals ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0;
    ALTER TABLE run_totals DROP CONSTRAINT run_totals_pkey,
        ADD PRIMARY KEY (tenant_key, status, shard);
    ALTER TABLE suppressed_counts ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0;
    ALTER TABLE suppressed_counts DROP CONSTRAINT suppressed_counts_pkey,
        ADD PRIMARY KEY (tenant_key, shard);
    CREATE OR REPLACE FUNCTION agentcron_count_finished_run() RETURNS trigger
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO run_totals (tenant_key, status, shard, n)
            VALUES (NEW.tenant_key, NEW.status, floor(random() * 16)::smallint, 1)
            ON CONFLICT (tenant_key, status, shard) DO UPDATE SET n = run_totals.n + 1;
        RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION agentcron_count_suppressed() RETURNS trigger
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        key TEXT := CASE WHEN TG_OP = 'INSERT' THEN NEW.tenant_key ELSE OLD.tenant_key END;
        step BIGINT := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
    BEGIN
        INSERT INTO suppressed_counts (tenant_key, shard, n)
            VALUES (key, floor(random() * 16)::smallint, step)
            ON CONFLICT (tenant_key, shard) DO UPDATE SET n = suppressed_counts.n + step;
        RETURN NULL;
    END $$;
"#,
    r#"
    -- 21: profiles (docs/CONTRACT.md §22), as SQLite's migration 18: named
    -- ways to run an agent per tenant, the profile a task binds and the one
    -- a run ran under (what `--max-concurrent` counts), one run status.
    CREATE TABLE profiles (
        tenant_key TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL,
        sha256 TEXT NOT NULL, description TEXT, revision BIGINT NOT NULL,
        created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, updated_by TEXT NOT NULL,
        PRIMARY KEY (tenant_key, name));
    ALTER TABLE tasks ADD COLUMN profile TEXT;
    CREATE INDEX tasks_by_profile ON tasks (tenant_key, profile) WHERE profile IS NOT NULL;
    ALTER TABLE runs ADD COLUMN profile TEXT;
    CREATE INDEX runs_running_profile ON runs (tenant_key, profile)
        WHERE status = 'running' AND profile IS NOT NULL;
    ALTER TABLE runs DROP CONSTRAINT runs_status_check;
    ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (
        'running', 'succeeded', 'failed', 'delivery_failed', 'awaiting_confirmation',
        'awaiting_authorization', 'unknown', 'missed', 'skipped_overlap',
        'skipped_budget', 'skipped_gate', 'skipped_profile')) NOT VALID;
    DROP TRIGGER run_totals_insert ON runs;
    CREATE TRIGGER run_totals_insert AFTER INSERT ON runs
        FOR EACH ROW WHEN (NEW.status IN ('missed', 'skipped_overlap', 'skipped_budget',
                                          'skipped_gate', 'skipped_profile', 'succeeded',
                                          'failed', 'delivery_failed', 'unknown'))
        EXECUTE FUNCTION agentcron_count_finished_run();
"#,
    r#"
    -- 22: one counter row a key per transaction (issue 46). Migration 20 picked
    -- each change's row at random, so a transaction that settles several runs
    -- together (a tick's group commit) held several rows of a key, taken in
    -- no order: two hosts' transactions waited on each other and, in opposite
    -- orders, deadlocked. A transaction now adds to the row its id picks.
    CREATE OR REPLACE FUNCTION agentcron_count_finished_run() RETURNS trigger
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        INSERT INTO run_totals (tenant_key, status, shard, n)
            VALUES (NEW.tenant_key, NEW.status, (txid_current() % 16)::smallint, 1)
            ON CONFLICT (tenant_key, status, shard) DO UPDATE SET n = run_totals.n + 1;
        RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION agentcron_count_suppressed() RETURNS trigger
        LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        key TEXT := CASE WHEN TG_OP = 'INSERT' THEN NEW.tenant_key ELSE OLD.tenant_key END;
        step BIGINT := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
    BEGIN
        INSERT INTO suppressed_counts (tenant_key, shard, n)
            VALUES (key, (txid_current() % 16)::smallint, step)
            ON CONFLICT (tenant_key, shard) DO UPDATE SET n = suppressed_counts.n + step;
        RETURN NULL;
    END $$;
"#,
];

/// What each migration does, one line each, for `agentcron migrate`: entry
/// `i` describes `MIGRATIONS[i]`. Append one with each migration.
pub const DESCRIPTIONS: &[&str] = &[
    "create every table: drafts, tasks, runs, deliveries, reconciliations, events",
    "add indexes for run history, pending retries and rare states",
    "remember queued occurrences (capacity) and back off failed deliveries",
    "commit markers, to settle a commit whose acknowledgement was lost",
    "keep the end of the executor's stderr with each run",
    "day-2 operations: replacing drafts, manual triggers, why a run was due",
    "declarative tasks: the file an `apply` came from",
    "approvals handed to the next tick",
    "what an `apply` declared for each task",
    "index the task listing in its own order",
    "index the audit events `metrics` and `explain` look for",
    "count tasks per state and tenant for `status`",
    "the notice policy: held-back notices, task memory, run totals",
    "zones that follow their owner",
    "one-time codes for agent drafts",
    "record the hosts that tick the store and the build each ran",
    "note due work a tick saw on a task row another session held locked",
    "record which process runs a running run, for the speed bump inside runs",
    "what a run may spend: budget windows and usage totals, gate and budget skips, catch-up runs, overdue tasks",
    "counters of outcomes and held-back notices in 16 rows a key, so concurrent settles do not wait on one row",
    "profiles: who runs a task, with what and where; runs skipped while a profile changed",
    "counters: one row a key per transaction, so outcomes committed together do not wait across hosts",
];

const _: () = assert!(DESCRIPTIONS.len() == MIGRATIONS.len());

/// The advisory lock every migration takes: `migrate` for all its steps
/// (session), a store being created for its one transaction.
const MIGRATION_LOCK: i64 = 7415906301;

pub const LATEST: i64 = MIGRATIONS.len() as i64;

pub fn current(client: &mut Client) -> Result<i64> {
    let exists: bool = client
        .query_one("SELECT to_regclass('agentcron_schema') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = client.query_one(
        "SELECT coalesce(max(version), 0)::BIGINT FROM agentcron_schema",
        &[],
    )?;
    Ok(row.get(0))
}

/// Brings the schema up to date, one transaction per step, under the
/// migration lock held for every step (a second `migrate` waits, then finds
/// nothing left), calling `applied` with each version committed; a store
/// being created gets every step in one transaction, so that no half-made
/// store is left behind. One query and no lock when it is up to date.
pub fn migrate(client: &mut Client, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()> {
    let seen = current(client).context("reading the schema version")?;
    if seen == LATEST {
        return Ok(());
    }
    crate::store::schema::refuse_newer(seen, LATEST)?;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .context("locking for migration")?;
    let stepped = steps(client, applied);
    // A connection that broke released its session's lock with it.
    let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    stepped
}

fn steps(client: &mut Client, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()> {
    loop {
        let mut tx = client
            .transaction()
            .context("starting the schema migration")?;
        // Re-entrant for this session; a host creating the store at once
        // without `migrate` waits here.
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .context("locking for migration")?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS agentcron_schema (version BIGINT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")?;
        let version = current(&mut tx)?;
        crate::store::schema::refuse_newer(version, LATEST)?;
        if version == LATEST {
            return Ok(());
        }
        let to = if version == 0 { LATEST } else { version + 1 };
        for index in version..to {
            tx.batch_execute(MIGRATIONS[index as usize])
                .with_context(|| format!("applying schema migration {}", index + 1))?;
            tx.execute(
                "INSERT INTO agentcron_schema (version) VALUES ($1)",
                &[&(index + 1)],
            )?;
        }
        #[cfg(feature = "test-hooks")]
        crate::hooks::at("migrate_step");
        tx.commit().context("committing the schema migration")?;
        applied(to)?;
    }
}
