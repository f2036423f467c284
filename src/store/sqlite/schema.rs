//! The schema, as an append-only list of migrations applied in one
//! IMMEDIATE transaction and tracked by `PRAGMA user_version`.
//!
//! Be sure to never change the order or the text of an entry here: a database
//! in the field has applied it. Add a new entry instead.

use anyhow::{Context, Result};
use rusqlite::{Connection, TransactionBehavior};

use crate::store::schema::task_memory_from_runs;

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: every table the product needs, designed up front so later features
    // fill columns instead of reshaping tables.
    r#"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;

    CREATE TABLE drafts (
        draft_id     TEXT PRIMARY KEY,
        tenant_key   TEXT NOT NULL,
        payload      TEXT NOT NULL,      -- canonical bytes, hashed as stored
        payload_hash TEXT NOT NULL,
        created_by   TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX drafts_by_expiry ON drafts (expires_at);

    CREATE TABLE tasks (
        task_id               TEXT PRIMARY KEY,
        tenant_key            TEXT NOT NULL,
        name                  TEXT,
        owner_keys            TEXT NOT NULL,   -- JSON array, sorted
        target                TEXT NOT NULL,
        instruction           TEXT NOT NULL,
        schedule              TEXT NOT NULL,   -- stored JSON of CONTRACT §2
        timezone              TEXT NOT NULL,
        policy                TEXT NOT NULL,
        grace_seconds         INTEGER NOT NULL,
        max_retries           INTEGER NOT NULL,
        retry_backoff_seconds INTEGER NOT NULL,
        payload               TEXT NOT NULL,
        payload_hash          TEXT NOT NULL,
        state                 TEXT NOT NULL
            CHECK (state IN ('active', 'paused', 'completed', 'deleted', 'error')),
        state_reason          TEXT,            -- pause reason or quarantine cause
        state_changed_at      INTEGER NOT NULL,
        next_run_at           INTEGER,
        revision              INTEGER NOT NULL,
        created_at            INTEGER NOT NULL,
        updated_at            INTEGER NOT NULL,
        consecutive_failures  INTEGER NOT NULL DEFAULT 0,
        next_retry_at         INTEGER,
        retry_run_id          TEXT
    ) STRICT;
    -- Names are unique among a tenant's live tasks; a deleted task frees its name.
    CREATE UNIQUE INDEX tasks_by_name ON tasks (tenant_key, name)
        WHERE name IS NOT NULL AND state <> 'deleted';
    CREATE INDEX tasks_by_tenant ON tasks (tenant_key, created_at);
    -- The tick's due queries read only these two small partial indexes.
    CREATE INDEX tasks_due ON tasks (next_run_at) WHERE state = 'active';
    CREATE INDEX tasks_retry_due ON tasks (next_retry_at)
        WHERE state = 'active' AND next_retry_at IS NOT NULL;

    CREATE TABLE runs (
        run_id              TEXT PRIMARY KEY,
        task_id             TEXT NOT NULL REFERENCES tasks (task_id),
        tenant_key          TEXT NOT NULL,
        scheduled_for       INTEGER NOT NULL,  -- the occurrence, UTC seconds
        scheduled_local     TEXT NOT NULL,     -- the occurrence on the task's wall clock
        attempt             INTEGER NOT NULL,  -- 1, then 2.. for retries of the occurrence
        due_at              INTEGER NOT NULL,  -- the occurrence, or when the retry was due
        status              TEXT NOT NULL CHECK (status IN (
            'running', 'succeeded', 'failed', 'delivery_failed', 'awaiting_confirmation',
            'awaiting_authorization', 'unknown', 'missed', 'skipped_overlap')),
        payload_hash        TEXT NOT NULL,
        created_at          INTEGER NOT NULL,
        started_at          INTEGER,
        finished_at         INTEGER,
        lease_token         TEXT,
        lease_until         INTEGER,
        summary             TEXT,
        reason              TEXT,
        skipped_occurrences INTEGER NOT NULL DEFAULT 0,
        blocked_by          TEXT,
        wait_kind           TEXT,
        wait_id             TEXT,
        wait_deadline       INTEGER,
        UNIQUE (task_id, scheduled_for, attempt)
    ) STRICT;
    CREATE INDEX runs_by_task ON runs (task_id, scheduled_for DESC, attempt DESC);
    CREATE INDEX runs_by_tenant_status ON runs (tenant_key, status, scheduled_for);
    CREATE INDEX runs_leased ON runs (lease_until) WHERE status = 'running';
    CREATE INDEX runs_parked ON runs (wait_deadline)
        WHERE status IN ('awaiting_confirmation', 'awaiting_authorization');
    CREATE INDEX runs_blocking ON runs (task_id)
        WHERE status IN ('running', 'awaiting_confirmation', 'awaiting_authorization', 'unknown');

    CREATE TABLE deliveries (
        delivery_id TEXT PRIMARY KEY,
        run_id      TEXT NOT NULL REFERENCES runs (run_id),
        tenant_key  TEXT NOT NULL,
        seq         INTEGER NOT NULL,   -- a run parked on a continuation has more than one notice
        state       TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'unknown')),
        target      TEXT NOT NULL,
        message     TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        claim_token TEXT,
        deadline    INTEGER,
        attempts    INTEGER NOT NULL DEFAULT 0,
        last_error  TEXT,
        announced   INTEGER NOT NULL DEFAULT 0,  -- "no notifier" said once
        UNIQUE (run_id, seq)
    ) STRICT;
    CREATE INDEX deliveries_pending ON deliveries (created_at) WHERE state = 'pending';
    CREATE INDEX deliveries_sending ON deliveries (deadline) WHERE state = 'sending';

    CREATE TABLE reconciliations (
        run_id       TEXT PRIMARY KEY REFERENCES runs (run_id),
        tenant_key   TEXT NOT NULL,
        actor        TEXT NOT NULL,
        decision     TEXT NOT NULL
            CHECK (decision IN ('confirmed_succeeded', 'confirmed_failed', 'abandoned')),
        reason       TEXT NOT NULL,
        prior_reason TEXT,
        decided_at   INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE events (
        event_id   INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,
        tenant_key TEXT NOT NULL,
        actor      TEXT NOT NULL,
        action     TEXT NOT NULL,
        task_id    TEXT,                -- no foreign key: the trail outlives pruned rows
        run_id     TEXT,
        detail     TEXT NOT NULL        -- JSON object
    ) STRICT;
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
    -- (§7). A task remembers the due instant a tick saw within grace
    -- but could not start (`queued_for`), when it first saw it, and the
    -- task's next due instant after it: once that comes, the queued one is
    -- superseded.
    ALTER TABLE tasks ADD COLUMN queued_for INTEGER;
    ALTER TABLE tasks ADD COLUMN queued_since INTEGER;
    ALTER TABLE tasks ADD COLUMN queued_next INTEGER;
    ALTER TABLE runs ADD COLUMN queued_seconds INTEGER;  -- start - due instant
    -- Round-robin claims look up the earliest due task of one tenant.
    CREATE INDEX tasks_due_by_tenant ON tasks (tenant_key, next_run_at) WHERE state = 'active';
    CREATE INDEX tasks_retry_due_by_tenant ON tasks (tenant_key, next_retry_at)
        WHERE state = 'active' AND next_retry_at IS NOT NULL;
    CREATE INDEX tasks_queued ON tasks (queued_since) WHERE queued_for IS NOT NULL;

    -- A CHECK cannot be altered in SQLite: the ledger is rebuilt with the
    -- new state 'undeliverable' and the time of the next attempt.
    CREATE TABLE deliveries_v3 (
        delivery_id     TEXT PRIMARY KEY,
        run_id          TEXT NOT NULL REFERENCES runs (run_id),
        tenant_key      TEXT NOT NULL,
        seq             INTEGER NOT NULL,
        state           TEXT NOT NULL CHECK (state IN
            ('pending', 'sending', 'delivered', 'unknown', 'undeliverable')),
        target          TEXT NOT NULL,
        message         TEXT NOT NULL,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        claim_token     TEXT,
        deadline        INTEGER,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        announced       INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER,          -- a pending notice is not tried before this
        UNIQUE (run_id, seq)
    ) STRICT;
    INSERT INTO deliveries_v3 (delivery_id, run_id, tenant_key, seq, state, target, message,
        created_at, updated_at, claim_token, deadline, attempts, last_error, announced)
    SELECT delivery_id, run_id, tenant_key, seq, state, target, message,
        created_at, updated_at, claim_token, deadline, attempts, last_error, announced
    FROM deliveries;
    DROP TABLE deliveries;
    ALTER TABLE deliveries_v3 RENAME TO deliveries;
    CREATE INDEX deliveries_pending ON deliveries (created_at) WHERE state = 'pending';
    CREATE INDEX deliveries_sending ON deliveries (deadline) WHERE state = 'sending';
    CREATE INDEX deliveries_unknown ON deliveries (tenant_key) WHERE state = 'unknown';
    "#,
    r#"
    -- 4: the end of the executor's stderr (at most 2000 characters), so that
    -- a failed run says why in `show`, `runs` and `explain`.
    ALTER TABLE runs ADD COLUMN stderr_tail TEXT;
"#,
    // 5: day-2 operations (docs/CONTRACT.md §13). A replacing draft names the
    // task and the revision it was drafted against; a task holds at most one
    // pending manual trigger; a run says what made it due.
    r#"
    ALTER TABLE drafts ADD COLUMN replaces_task_id TEXT;
    ALTER TABLE drafts ADD COLUMN replaces_revision INTEGER;
    ALTER TABLE tasks ADD COLUMN trigger_at INTEGER;
    ALTER TABLE tasks ADD COLUMN trigger_reason TEXT;
    ALTER TABLE tasks ADD COLUMN trigger_actor TEXT;
    CREATE INDEX tasks_trigger_due ON tasks (tenant_key, trigger_at)
        WHERE state = 'active' AND trigger_at IS NOT NULL;
    ALTER TABLE runs ADD COLUMN trigger TEXT NOT NULL DEFAULT 'schedule'
        CHECK (trigger IN ('schedule', 'retry', 'manual'));
    "#,
    // 6: declarative tasks (docs/CONTRACT.md §14). The file name whose `apply`
    // created a task, so `plan --prune` deletes only what that file made.
    r#"
    ALTER TABLE tasks ADD COLUMN managed_by TEXT;
    CREATE INDEX tasks_managed ON tasks (tenant_key, managed_by)
        WHERE managed_by IS NOT NULL;
    "#,
    // 7: `approve` hands a parked run to the next tick (which has cron's
    // executor and environment) instead of running it in the operator's
    // shell: the approval waits on the run until a tick claims it.
    r#"
    ALTER TABLE runs ADD COLUMN approved_at INTEGER;
    ALTER TABLE runs ADD COLUMN approved_by TEXT;
    CREATE INDEX runs_approved ON runs (approved_at) WHERE approved_at IS NOT NULL;
    "#,
    // 8: what an `apply` declared for a task, so that a file applied once
    // plans as "no changes" later although `count` resolves from "now".
    r#"
    ALTER TABLE tasks ADD COLUMN declared_hash TEXT;
    "#,
    // 9: `list` walks the tenant's tasks in its own order (the next to run
    // first, those that will not run again last), so it can print them as
    // it reads them instead of sorting all of them first; `status` counts
    // tasks by state without reading every row.
    r#"
    CREATE INDEX tasks_listed ON tasks
        (tenant_key, next_run_at IS NULL, next_run_at, created_at, task_id);
    -- `status` counts tasks per state, over one tenant or all of them.
    CREATE INDEX tasks_by_state ON tasks (state, tenant_key);
    -- and the notices given up on, which no index held (every other state
    -- status counts has its partial index).
    CREATE INDEX deliveries_undeliverable ON deliveries (tenant_key)
        WHERE state = 'undeliverable';
    "#,
    // 10: `status` reads how many tasks each tenant has in each state
    // instead of counting them: at a million tasks, counting along
    // tasks_by_state took 31 ms, 16x `--version`; `metrics` counted
    // scheduler gaps by reading every event, `explain` a task's pauses by
    // reading every event of the task. Triggers keep the counts,
    // so every statement that writes a task (insert, a change of state or
    // tenant, delete) keeps them in its own transaction; `check` compares
    // them with the tasks.
    r#"
    CREATE TABLE task_counts (
        state      TEXT NOT NULL,
        tenant_key TEXT NOT NULL,
        n          INTEGER NOT NULL,
        PRIMARY KEY (state, tenant_key)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO task_counts (state, tenant_key, n)
        SELECT state, tenant_key, count(*) FROM tasks GROUP BY state, tenant_key;
    CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO task_counts (state, tenant_key, n) VALUES (new.state, new.tenant_key, 1)
            ON CONFLICT (state, tenant_key) DO UPDATE SET n = n + 1;
    END;
    -- One statement, not an UPDATE and an INSERT: every process parses
    -- every trigger when it opens the store (40k instructions fewer).
    CREATE TRIGGER task_counts_update AFTER UPDATE OF state, tenant_key ON tasks
        WHEN old.state IS NOT new.state OR old.tenant_key IS NOT new.tenant_key BEGIN
        INSERT INTO task_counts (state, tenant_key, n)
            VALUES (old.state, old.tenant_key, -1), (new.state, new.tenant_key, 1)
            ON CONFLICT (state, tenant_key) DO UPDATE SET n = n + excluded.n;
    END;
    CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks BEGIN
        UPDATE task_counts SET n = n - 1 WHERE state = old.state AND tenant_key = old.tenant_key;
    END;
    -- Its only reader was status.
    DROP INDEX tasks_by_state;
    -- Two readers look for a few kinds of event among all of them: `metrics`
    -- counts the scheduler gaps, `explain` finds a task's last pause or
    -- resume (it walked every event of a task never paused).
    CREATE INDEX events_scheduler_gaps ON events (tenant_key) WHERE action = 'scheduler_gap';
    CREATE INDEX events_pauses ON events (task_id, event_id) WHERE action IN ('pause', 'resume');
    "#,
    // 11: the notice policy (docs/CONTRACT.md §16). A notice the policy
    // holds back is still a ledger row, `suppressed`, with its reason; each
    // notice knows its kind and, when sent, how many were held back before
    // it. The CHECK cannot be altered in SQLite, so the ledger is rebuilt.
    concat!(
        r#"
    CREATE TABLE deliveries_v11 (
        delivery_id           TEXT PRIMARY KEY,
        run_id                TEXT NOT NULL REFERENCES runs (run_id),
        tenant_key            TEXT NOT NULL,
        seq                   INTEGER NOT NULL,
        state                 TEXT NOT NULL CHECK (state IN
            ('pending', 'sending', 'delivered', 'unknown', 'undeliverable', 'suppressed')),
        target                TEXT NOT NULL,
        message               TEXT NOT NULL,
        created_at            INTEGER NOT NULL,
        updated_at            INTEGER NOT NULL,
        claim_token           TEXT,
        deadline              INTEGER,
        attempts              INTEGER NOT NULL DEFAULT 0,
        last_error            TEXT,
        announced             INTEGER NOT NULL DEFAULT 0,
        next_attempt_at       INTEGER,
        kind                  TEXT,        -- NULL on notices older than the policy
        suppressed_since_last INTEGER NOT NULL DEFAULT 0,
        suppressed_reason     TEXT,
        UNIQUE (run_id, seq)
    ) STRICT;
    INSERT INTO deliveries_v11 (delivery_id, run_id, tenant_key, seq, state, target, message,
        created_at, updated_at, claim_token, deadline, attempts, last_error, announced,
        next_attempt_at)
    SELECT delivery_id, run_id, tenant_key, seq, state, target, message,
        created_at, updated_at, claim_token, deadline, attempts, last_error, announced,
        next_attempt_at
    FROM deliveries;
    DROP TABLE deliveries;
    ALTER TABLE deliveries_v11 RENAME TO deliveries;
    CREATE INDEX deliveries_pending ON deliveries (created_at) WHERE state = 'pending';
    CREATE INDEX deliveries_sending ON deliveries (deadline) WHERE state = 'sending';
    CREATE INDEX deliveries_unknown ON deliveries (tenant_key) WHERE state = 'unknown';
    CREATE INDEX deliveries_undeliverable ON deliveries (tenant_key)
        WHERE state = 'undeliverable';
    -- Held-back notices grow with the history (one per quiet run): `status`
    -- reads their number per tenant, kept by triggers, instead of counting
    -- them. A suppressed notice never changes state; prune deletes it.
    CREATE TABLE suppressed_counts (
        tenant_key TEXT PRIMARY KEY,
        n          INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE TRIGGER suppressed_counts_insert AFTER INSERT ON deliveries
        WHEN new.state = 'suppressed' BEGIN
        INSERT INTO suppressed_counts (tenant_key, n) VALUES (new.tenant_key, 1)
            ON CONFLICT (tenant_key) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER suppressed_counts_delete AFTER DELETE ON deliveries
        WHEN old.state = 'suppressed' BEGIN
        UPDATE suppressed_counts SET n = n - 1 WHERE tenant_key = old.tenant_key;
    END;

    -- What the policy and the executor need of a task's past, one row a
    -- task, written in the transaction that settles each run: reading it is
    -- one lookup, however many runs the task has had.
    CREATE TABLE task_memory (
        task_id                  TEXT PRIMARY KEY,
        last_failure_reason      TEXT,     -- of the last failure notice sent
        last_failure_sent_at     INTEGER,
        last_success_fingerprint TEXT,     -- SHA-256 of the last sent success's summary
        suppressed_count         INTEGER NOT NULL DEFAULT 0,  -- since the last notice sent
        suppressed_failures      INTEGER NOT NULL DEFAULT 0,
        suppressed_since         INTEGER,
        last_settled_run_id      TEXT,
        last_success_at          INTEGER
    ) STRICT, WITHOUT ROWID;
"#,
        task_memory_from_runs!(),
        r#";

    -- Runs finished, by tenant and status, counted as they finish and never
    -- decremented (prune deletes runs, not these): Prometheus counters on
    -- which rate() works. A run counts once, when it first leaves running
    -- or a continuation for an outcome, or is recorded missed or skipped;
    -- a reconciled unknown run is not counted again. Seeded from the runs
    -- the store still has.
    CREATE TABLE run_totals (
        tenant_key TEXT NOT NULL,
        status     TEXT NOT NULL,
        n          INTEGER NOT NULL,
        PRIMARY KEY (tenant_key, status)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO run_totals (tenant_key, status, n)
        SELECT tenant_key, status, count(*) FROM runs
        WHERE status IN ('succeeded', 'failed', 'delivery_failed', 'unknown', 'missed',
                         'skipped_overlap')
        GROUP BY tenant_key, status;
    CREATE TRIGGER run_totals_insert AFTER INSERT ON runs
        WHEN new.status IN ('missed', 'skipped_overlap', 'succeeded', 'failed',
                            'delivery_failed', 'unknown') BEGIN
        INSERT INTO run_totals (tenant_key, status, n) VALUES (new.tenant_key, new.status, 1)
            ON CONFLICT (tenant_key, status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER run_totals_finish AFTER UPDATE OF status ON runs
        WHEN old.status IN ('running', 'awaiting_confirmation', 'awaiting_authorization')
         AND new.status IN ('succeeded', 'failed', 'delivery_failed', 'unknown') BEGIN
        INSERT INTO run_totals (tenant_key, status, n) VALUES (new.tenant_key, new.status, 1)
            ON CONFLICT (tenant_key, status) DO UPDATE SET n = n + 1;
    END;
    "#
    ),
    // 12: zones that follow their owner (docs/CONTRACT.md §18): one current zone
    // per identity key and tenant, set by the host; a following task names
    // the key it follows (its first owner key) and the zone in force, which
    // `zone set` re-times in the same transaction. The partial index is how
    // `zone set` finds an owner's following tasks without reading the others;
    // `explain` finds a task's re-times as it finds its pauses.
    r#"
    CREATE TABLE zones (
        tenant_key   TEXT NOT NULL,
        identity_key TEXT NOT NULL,
        zone         TEXT NOT NULL,     -- IANA name
        set_at       INTEGER NOT NULL,
        set_by       TEXT NOT NULL,
        PRIMARY KEY (tenant_key, identity_key)
    ) STRICT, WITHOUT ROWID;
    ALTER TABLE tasks ADD COLUMN follow_key TEXT;
    ALTER TABLE tasks ADD COLUMN zone_in_force TEXT;
    CREATE INDEX tasks_following ON tasks (tenant_key, follow_key)
        WHERE follow_key IS NOT NULL;
    CREATE INDEX events_retimes ON events (task_id, event_id) WHERE action = 'retime';
    "#,
    // 13: an agent's draft (`agentcron mcp`, docs/CONTRACT.md §17) is
    // confirmed with a one-time code sent to the person: only its salted
    // hash is kept, with the wrong codes given so far (the third voids it).
    r#"
    ALTER TABLE drafts ADD COLUMN code_hash TEXT;
    ALTER TABLE drafts ADD COLUMN code_salt TEXT;
    ALTER TABLE drafts ADD COLUMN code_wrong_attempts INTEGER NOT NULL DEFAULT 0;
    "#,
    // 14: the hosts that tick the store and the build each last ran, which
    // `status` compares (docs/CONTRACT.md §21).
    r#"
    CREATE TABLE hosts (
        host         TEXT PRIMARY KEY,
        build        TEXT NOT NULL,     -- "0.2.0 (commit)"
        last_tick_at INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    "#,
    // 15: a due instant a tick saw but could not mark on its task's row
    // because another session held that row locked (PostgreSQL's SKIP
    // LOCKED; docs/CONTRACT.md §6, "Capacity is not lateness"): kept beside
    // the row, one per task, with no key to it (a foreign key would wait for
    // that very lock). Stale rows are harmless: a claim heeds one only for
    // an instant it is deciding. SQLite has no row locks; the table is here
    // so both stores have one schema.
    r#"
    CREATE TABLE seen_due (
        task_id TEXT PRIMARY KEY,
        due_at  INTEGER NOT NULL,
        seen_at INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    "#,
    // 16: who runs a running run (docs/CONTRACT.md §19): the process that
    // claimed it, "BOOT PID START" (this machine's boot id, its pid and
    // start time). Commands that confirm or change schedules refuse when
    // they descend from the runner of a running run: read along
    // runs_leased, the few running rows.
    r#"
    ALTER TABLE runs ADD COLUMN runner TEXT;
    "#,
    // 17: what a run may spend (docs/CONTRACT.md §6). Two run statuses
    // (`skipped_budget`, `skipped_gate`: the CHECK is widened by
    // `widen_run_statuses` after this text, since SQLite cannot alter it
    // and rebuilding `runs` would rewrite every run); a run says whether it
    // caught up and what its executor reported spending; each task keeps the
    // sum of each budget's current window (read by key at every claim, never
    // summed from history), each tenant the total of each usage key
    // (`metrics`, never lowered by prune); a task that expects successes
    // keeps when it is overdue and since when it is, each read along its own
    // partial index.
    r#"
    ALTER TABLE runs ADD COLUMN catch_up INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN usage TEXT;     -- JSON object, as recorded
    CREATE TABLE budget_windows (
        task_id      TEXT NOT NULL,
        budget_key   TEXT NOT NULL,
        period       TEXT NOT NULL,
        window_start INTEGER NOT NULL,   -- the window's start, UTC seconds
        spent        REAL NOT NULL,
        told_at      INTEGER,            -- when its `budget` notice was made
        PRIMARY KEY (task_id, budget_key, period)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE usage_totals (
        tenant_key TEXT NOT NULL,
        usage_key  TEXT NOT NULL,
        total      REAL NOT NULL,
        PRIMARY KEY (tenant_key, usage_key)
    ) STRICT, WITHOUT ROWID;
    ALTER TABLE tasks ADD COLUMN success_due_at INTEGER;
    ALTER TABLE tasks ADD COLUMN overdue_since INTEGER;
    CREATE INDEX tasks_success_due ON tasks (success_due_at) WHERE success_due_at IS NOT NULL;
    CREATE INDEX tasks_overdue ON tasks (tenant_key) WHERE overdue_since IS NOT NULL;
    DROP TRIGGER run_totals_insert;
    CREATE TRIGGER run_totals_insert AFTER INSERT ON runs
        WHEN new.status IN ('missed', 'skipped_overlap', 'skipped_budget', 'skipped_gate',
                            'succeeded', 'failed', 'delivery_failed', 'unknown') BEGIN
        INSERT INTO run_totals (tenant_key, status, n) VALUES (new.tenant_key, new.status, 1)
            ON CONFLICT (tenant_key, status) DO UPDATE SET n = n + 1;
    END;
    DROP TRIGGER run_totals_finish;
    CREATE TRIGGER run_totals_finish AFTER UPDATE OF status ON runs
        WHEN old.status IN ('running', 'awaiting_confirmation', 'awaiting_authorization')
         AND new.status IN ('succeeded', 'failed', 'delivery_failed', 'unknown',
                            'skipped_gate') BEGIN
        INSERT INTO run_totals (tenant_key, status, n) VALUES (new.tenant_key, new.status, 1)
            ON CONFLICT (tenant_key, status) DO UPDATE SET n = n + 1;
    END;
    "#,
    // 18: profiles (docs/CONTRACT.md §22): an operator's named ways to run
    // an agent, per tenant, each with its definition's hash and a revision
    // that guards its changes. A task keeps its profile's name beside the
    // payload that binds it (for `status`'s held profiles), a run the name
    // it ran under (its running runs are what `--max-concurrent` counts,
    // along their own partial index). One run status (`skipped_profile`:
    // the CHECK is widened by `widen_run_statuses` after this text).
    r#"
    CREATE TABLE profiles (
        tenant_key  TEXT NOT NULL,
        name        TEXT NOT NULL,
        definition  TEXT NOT NULL,      -- canonical JSON, what runs
        sha256      TEXT NOT NULL,      -- of the definition
        description TEXT,
        revision    INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        updated_by  TEXT NOT NULL,
        PRIMARY KEY (tenant_key, name)
    ) STRICT, WITHOUT ROWID;
    ALTER TABLE tasks ADD COLUMN profile TEXT;
    CREATE INDEX tasks_by_profile ON tasks (tenant_key, profile) WHERE profile IS NOT NULL;
    ALTER TABLE runs ADD COLUMN profile TEXT;
    CREATE INDEX runs_running_profile ON runs (tenant_key, profile)
        WHERE status = 'running' AND profile IS NOT NULL;
    DROP TRIGGER run_totals_insert;
    CREATE TRIGGER run_totals_insert AFTER INSERT ON runs
        WHEN new.status IN ('missed', 'skipped_overlap', 'skipped_budget', 'skipped_gate',
                            'skipped_profile', 'succeeded', 'failed', 'delivery_failed',
                            'unknown') BEGIN
        INSERT INTO run_totals (tenant_key, status, n) VALUES (new.tenant_key, new.status, 1)
            ON CONFLICT (tenant_key, status) DO UPDATE SET n = n + 1;
    END;
    "#,
];

/// The run statuses migration 17 adds to the CHECK of `runs.status`.
const STATUSES_OF_17: &str = "'skipped_overlap', 'skipped_budget', 'skipped_gate'";

/// Steps a SQL text cannot take alone, run after migration `version`'s text
/// in its transaction.
fn finish_step(tx: &Connection, version: i64) -> Result<()> {
    match version {
        17 => widen_run_statuses(
            tx,
            "'missed', 'skipped_overlap')",
            &format!("'missed', {STATUSES_OF_17})"),
        ),
        18 => widen_run_statuses(tx, "'skipped_gate')", "'skipped_gate', 'skipped_profile')"),
        _ => Ok(()),
    }
}

/// Widens the CHECK of `runs.status` (its text `old` becomes `new`) where
/// the table's text is kept: SQLite's documented way to loosen a CHECK
/// without rewriting the table ("Making Other Kinds Of Table Schema
/// Changes": edit `sqlite_schema` under `writable_schema`, then bump
/// `schema_version` so that every connection reads the schema again). The
/// rows on disk do not change: every row the old CHECK let in, the new one
/// does.
fn widen_run_statuses(tx: &Connection, old: &str, new: &str) -> Result<()> {
    let sql: String = tx.query_row(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'runs'",
        [],
        |row| row.get(0),
    )?;
    anyhow::ensure!(
        sql.matches(old).count() == 1,
        "the runs table is not as the migration before left it"
    );
    let widened = sql.replace(old, new);
    let version: i64 = tx.query_row("PRAGMA schema_version", [], |row| row.get(0))?;
    tx.execute_batch("PRAGMA writable_schema = ON")?;
    let updated = tx.execute(
        "UPDATE sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = 'runs'",
        [&widened],
    );
    let bumped = tx.execute_batch(&format!("PRAGMA schema_version = {}", version + 1));
    tx.execute_batch("PRAGMA writable_schema = OFF")?;
    updated.context("widening the run statuses")?;
    bumped.context("reloading the schema")?;
    Ok(())
}

/// What each migration does, one line each, for `agentcron migrate`: entry
/// `i` describes `MIGRATIONS[i]`. Append one with each migration.
pub const DESCRIPTIONS: &[&str] = &[
    "create every table: drafts, tasks, runs, deliveries, reconciliations, events",
    "add indexes for run history, pending retries and rare states",
    "remember queued occurrences (capacity) and back off failed deliveries",
    "keep the end of the executor's stderr with each run",
    "day-2 operations: replacing drafts, manual triggers, why a run was due",
    "declarative tasks: the file an `apply` came from",
    "approvals handed to the next tick",
    "what an `apply` declared for each task",
    "index the task listing in its own order",
    "count tasks per state and tenant for `status`",
    "the notice policy: held-back notices, task memory, run totals",
    "zones that follow their owner",
    "one-time codes for agent drafts",
    "record the hosts that tick the store and the build each ran",
    "note due work a tick saw on a task row another session held locked",
    "record which process runs a running run, for the speed bump inside runs",
    "what a run may spend: budget windows and usage totals, gate and budget skips, catch-up runs, overdue tasks",
    "profiles: who runs a task, with what and where; runs skipped while a profile changed",
];

const _: () = assert!(DESCRIPTIONS.len() == MIGRATIONS.len());

/// The schema version this binary writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// The schema the store is at: 0 for a file without agentcron's schema.
pub fn user_version(conn: &Connection) -> Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
        .context("reading the schema version")
}

/// Brings the schema up to date, one IMMEDIATE transaction per step (the
/// write lock is the migration lock), calling `applied` with each version
/// committed; a store being created gets every step in one transaction, so
/// that no half-made store is left behind. A no-op read of `user_version`
/// when it is up to date. Says whether it committed anything.
pub fn migrate(conn: &mut Connection, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<bool> {
    let seen = user_version(conn)?;
    if seen == LATEST {
        return Ok(false);
    }
    crate::store::schema::refuse_newer(seen, LATEST)?;
    let mut changed = false;
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .context("starting the schema migration")?;
        // Another process may have migrated while we waited for the lock.
        let current = user_version(&tx)?;
        crate::store::schema::refuse_newer(current, LATEST)?;
        if current == LATEST {
            return Ok(changed);
        }
        let to = if current == 0 { LATEST } else { current + 1 };
        for index in current..to {
            tx.execute_batch(MIGRATIONS[index as usize])
                .with_context(|| format!("applying schema migration {}", index + 1))?;
            finish_step(&tx, index + 1)
                .with_context(|| format!("applying schema migration {}", index + 1))?;
        }
        tx.pragma_update(None, "user_version", to)
            .context("recording the schema version")?;
        #[cfg(feature = "test-hooks")]
        crate::hooks::at("migrate_step");
        tx.commit().context("committing the schema migration")?;
        changed = true;
        applied(to)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_an_empty_database_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, &mut |_| Ok(())).unwrap();
        assert_eq!(user_version(&conn).unwrap(), LATEST);
        migrate(&mut conn, &mut |_| Ok(())).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(tables >= 7);
    }

    #[test]
    fn the_task_counts_start_from_the_tasks_a_store_already_has() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..9] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 9).unwrap();
        for (id, tenant, state) in [
            ("a", "t1", "active"),
            ("b", "t1", "active"),
            ("c", "t1", "paused"),
            ("d", "t2", "active"),
        ] {
            conn.execute(
                "INSERT INTO tasks (task_id, tenant_key, owner_keys, target, instruction, schedule,
                   timezone, policy, grace_seconds, max_retries, retry_backoff_seconds, payload,
                   payload_hash, state, state_changed_at, revision, created_at, updated_at)
                 VALUES (?1, ?2, '[]', 't', 'i', '{}', 'UTC', 'read_only', 0, 0, 0, '{}', 'h',
                   ?3, 0, 1, 0, 0)",
                rusqlite::params![id, tenant, state],
            )
            .unwrap();
        }
        migrate(&mut conn, &mut |_| Ok(())).unwrap();
        let counts = |conn: &Connection| -> Vec<(String, String, i64)> {
            let mut stmt = conn
                .prepare("SELECT state, tenant_key, n FROM task_counts WHERE n <> 0")
                .unwrap();
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
            rows.unwrap().map(Result::unwrap).collect()
        };
        let row = |s: &str, t: &str, n| (s.to_string(), t.to_string(), n);
        assert_eq!(
            counts(&conn),
            [
                row("active", "t1", 2),
                row("active", "t2", 1),
                row("paused", "t1", 1)
            ]
        );
        // And the triggers keep them from there.
        conn.execute_batch(
            "UPDATE tasks SET state = 'deleted' WHERE task_id = 'a';
             UPDATE tasks SET revision = 2 WHERE task_id = 'b';
             DELETE FROM tasks WHERE task_id = 'c';",
        )
        .unwrap();
        assert_eq!(
            counts(&conn),
            [
                row("active", "t1", 1),
                row("active", "t2", 1),
                row("deleted", "t1", 1)
            ]
        );
    }

    #[test]
    fn migration_17_widens_the_run_statuses_and_keeps_the_runs() {
        let path = std::env::temp_dir().join(format!("agentcron-17-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut conn = Connection::open(&path).unwrap();
        // The runs name no task here.
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        for sql in &MIGRATIONS[..16] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 16).unwrap();
        let insert = |conn: &Connection, id: &str, status: &str| {
            conn.execute(
                "INSERT INTO runs (run_id, task_id, tenant_key, scheduled_for, scheduled_local,
                   attempt, due_at, status, payload_hash, created_at)
                 VALUES (?1, ?1, 'default', 0, '', 1, 0, ?2, 'h', 0)",
                rusqlite::params![id, status],
            )
        };
        insert(&conn, "old", "missed").unwrap();
        assert!(insert(&conn, "early", "skipped_budget").is_err());
        migrate(&mut conn, &mut |_| Ok(())).unwrap();
        for (id, status) in [("b", "skipped_budget"), ("g", "skipped_gate")] {
            insert(&conn, id, status).unwrap();
        }
        assert!(insert(&conn, "x", "skipped_whim").is_err());
        // Another connection reads the widened CHECK too, and the counters
        // count the new statuses.
        let other = Connection::open(&path).unwrap();
        other.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        insert(&other, "b2", "skipped_budget").unwrap();
        assert!(insert(&other, "y", "bogus").is_err());
        let n: i64 = other
            .query_row(
                "SELECT n FROM run_totals WHERE status = 'skipped_budget'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 2);
        let check: String = other
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn refuses_a_newer_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", LATEST + 1)
            .unwrap();
        let err = migrate(&mut conn, &mut |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("newer"), "{err}");
    }
}
