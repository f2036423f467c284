#!/usr/bin/env python3
"""Seeds an agentcron SQLite database fast, straight into the schema.

Used by scripts/bench. The file must already exist and be migrated: run
`agentcron --db FILE list` once first (bench does), so that agentcron, not this
script, owns the schema. Rows carry exactly the columns agentcron writes:

  tasks       confirmed interval tasks (every hour, UTC, read_only, owner
              unix:bench), canonical payload and its sha256 as confirm stores
              them; `due` of them have next_run_at = now, the others are due
              30+ days later.
  following   (seed_following) daily tasks drafted with `--tz follow`, with
              their owner's zone, for `zone set` (issue 27).
  runs        settled history (`runs_per_task` succeeded runs per task, all at
              least two days old), each with its delivered notice and the three
              audit events a real tick writes for it (claim, finish, delivery).

stdlib only. Usage:
  bench_seed.py DB --tasks N [--due K] [--runs-per-task R] --now UNIX
"""

import argparse
import hashlib
import json
import sqlite3
import sys
import uuid

OWNER = "unix:bench"
TENANT = "default"
TARGET = "chat:bench"
HOUR = 3600
DAY = 86400


def canonical(value):
    # payload.rs: keys sorted, "," and ":" separators, UTF-8, integers.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def local(at):
    # schedule::format_local for UTC: RFC 3339 seconds with +00:00.
    import datetime

    return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S+00:00"
    )


def task_row(i, now, due, grace):
    if due:
        anchor = now  # the occurrence at `now` is due and within grace
        next_run = now
    else:
        anchor = now + 30 * DAY + (i % DAY)
        next_run = anchor + HOUR
    schedule = {"kind": "interval", "seconds": HOUR, "anchor_at": anchor}
    name = f"bench-{i:07d}"
    instruction = f"benchmark task {i}: summarize the channel and report"
    payload = canonical(
        {
            "grace_seconds": grace,
            "instruction": instruction,
            "max_retries": 3,
            "name": name,
            "owner_keys": [OWNER],
            "policy": "read_only",
            "retry_backoff_seconds": 60,
            "schedule": schedule,
            "target": TARGET,
            "tenant_key": TENANT,
            "timezone": "UTC",
        }
    )
    created = now - 90 * DAY + i  # distinct, ordered creation times
    return (
        str(uuid.uuid4()),
        TENANT,
        name,
        json.dumps([OWNER], separators=(",", ":")),
        TARGET,
        instruction,
        canonical(schedule),
        "UTC",
        "read_only",
        grace,
        3,
        60,
        payload,
        hashlib.sha256(payload.encode()).hexdigest(),
        "active",
        None,
        created,
        next_run,
        1,
        created,
        created,
        0,
        None,
        None,
    )


TASK_SQL = """INSERT INTO tasks (task_id, tenant_key, name, owner_keys, target, instruction,
    schedule, timezone, policy, grace_seconds, max_retries, retry_backoff_seconds, payload,
    payload_hash, state, state_reason, state_changed_at, next_run_at, revision, created_at,
    updated_at, consecutive_failures, next_retry_at, retry_run_id)
    VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"""

RUN_SQL = """INSERT INTO runs (run_id, task_id, tenant_key, scheduled_for, scheduled_local,
    attempt, due_at, status, payload_hash, created_at, started_at, finished_at, lease_token,
    lease_until, summary, reason, skipped_occurrences, blocked_by, wait_kind, wait_id,
    wait_deadline) VALUES (?,?,?,?,?,1,?,'succeeded',?,?,?,?,?,NULL,NULL,NULL,0,NULL,NULL,NULL,NULL)"""

NOTICE_SQL = """INSERT INTO deliveries (delivery_id, run_id, tenant_key, seq, state, target,
    message, created_at, updated_at, claim_token, deadline, attempts, last_error, announced)
    VALUES (?,?,?,1,'delivered',?,?,?,?,?,?,1,NULL,0)"""

EVENT_SQL = """INSERT INTO events (at, tenant_key, actor, action, task_id, run_id, detail)
    VALUES (?,?,'agentcron:tick',?,?,?,?)"""


def seed(db, tasks, now, due=0, runs_per_task=0, grace=60, batch=20000):
    conn = sqlite3.connect(db, isolation_level=None)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version < 1:
        sys.exit(f"{db}: not migrated (run `agentcron --db {db} list` first)")
    # Only this connection: speed, not durability. agentcron reopens with FULL.
    # No journal while seeding: with the WAL agentcron set, a 10M-run seed in
    # one transaction spills every evicted page into the WAL (2 GB of WAL
    # and a 4 KiB file two minutes in). WAL is switched back on at the end.
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA cache_size = -2097152")
    conn.execute("BEGIN IMMEDIATE")
    rows = []
    hashes = {}
    for i in range(tasks):
        row = task_row(i, now, i < due, grace)
        rows.append(row)
        if runs_per_task:
            hashes[i] = (row[0], row[13], row[2])
        if len(rows) >= batch:
            conn.executemany(TASK_SQL, rows)
            rows.clear()
    conn.executemany(TASK_SQL, rows)
    rows.clear()
    if runs_per_task:
        runs, notices, events = [], [], []

        def flush():
            conn.executemany(RUN_SQL, runs)
            conn.executemany(NOTICE_SQL, notices)
            conn.executemany(EVENT_SQL, events)
            runs.clear(), notices.clear(), events.clear()

        for i in range(tasks):
            task_id, phash, name = hashes[i]
            for k in range(runs_per_task):
                at = now - (2 + k) * DAY - (i % DAY)
                run_id = str(uuid.uuid4())
                delivery_id = str(uuid.uuid4())
                runs.append(
                    (run_id, task_id, TENANT, at, local(at), at, phash, at, at, at,
                     str(uuid.uuid4()))
                )
                notices.append(
                    (delivery_id, run_id, TENANT, TARGET,
                     f"{name} ({local(at)[:16].replace('T', ' ')} UTC) succeeded",
                     at, at, str(uuid.uuid4()), at + 70)
                )
                events.append((at, TENANT, "claim", task_id, run_id, canonical(
                    {"attempt": 1, "decision": "running", "reason": None,
                     "scheduled_for": at, "skipped_occurrences": 0})))
                events.append((at, TENANT, "finish", task_id, run_id, canonical(
                    {"attempt": 1, "from": "running", "reason": None, "status": "succeeded"})))
                events.append((at, TENANT, "delivery", task_id, run_id, canonical(
                    {"delivery_id": delivery_id, "error": None, "state": "delivered"})))
            if len(runs) >= batch:
                flush()
        flush()
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()


FOLLOW_SQL = """INSERT INTO tasks (task_id, tenant_key, name, owner_keys, target, instruction,
    schedule, timezone, policy, grace_seconds, max_retries, retry_backoff_seconds, payload,
    payload_hash, state, state_reason, state_changed_at, next_run_at, revision, created_at,
    updated_at, consecutive_failures, next_retry_at, retry_run_id, follow_key, zone_in_force)
    VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"""


def next_daily(now, hour, minute, zone):
    """The next hour:minute on zone's wall clock after now (no DST gap on
    the bench's dates: mid-January in Asia and Europe)."""
    import datetime
    import zoneinfo

    tz = zoneinfo.ZoneInfo(zone)
    local_now = datetime.datetime.fromtimestamp(now, tz)
    at = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at.timestamp() <= now:
        at = (local_now + datetime.timedelta(days=1)).replace(
            hour=hour, minute=minute, second=0, microsecond=0)
    return int(at.timestamp())


def seed_following(db, tasks, now, zone, owner=OWNER):
    """`tasks` daily tasks drafted with `--tz follow` by `owner` (issue 27),
    whose zone is `zone`: the zones row and the tasks re-timed into it, as
    `zone set` leaves them."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO zones (tenant_key, identity_key, zone, set_at, set_by) VALUES (?,?,?,?,?)",
        (TENANT, owner, zone, now - DAY, "host:bench"))
    rows = []
    for i in range(tasks):
        hour, minute = i % 24, (i // 24) % 60
        schedule = {"hour": hour, "kind": "calendar", "minute": minute, "weekdays": []}
        name = f"follow-{i:07d}"
        instruction = f"benchmark task {i}: summarize my day"
        payload = canonical({
            "follow_default": "UTC", "grace_seconds": 90, "instruction": instruction,
            "max_retries": 3, "name": name, "owner_keys": [owner], "policy": "read_only",
            "retry_backoff_seconds": 60, "schedule": schedule, "target": TARGET,
            "tenant_key": TENANT, "timezone": "follow"})
        created = now - 90 * DAY + i
        rows.append((str(uuid.uuid4()), TENANT, name, json.dumps([owner], separators=(",", ":")),
                     TARGET, instruction, canonical(schedule), "follow", "read_only", 90, 3, 60,
                     payload, hashlib.sha256(payload.encode()).hexdigest(), "active", None,
                     created, next_daily(now, hour, minute, zone), 1, created, created, 0, None,
                     None, owner, zone))
    conn.executemany(FOLLOW_SQL, rows)
    conn.execute("COMMIT")
    conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db")
    p.add_argument("--tasks", type=int, required=True)
    p.add_argument("--due", type=int, default=0)
    p.add_argument("--runs-per-task", type=int, default=0)
    p.add_argument("--grace", type=int, default=60)
    p.add_argument("--now", type=int, required=True)
    a = p.parse_args()
    seed(a.db, a.tasks, a.now, a.due, a.runs_per_task, a.grace)


if __name__ == "__main__":
    main()
