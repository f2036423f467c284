//! Commits whose acknowledgement was lost (docs/CONTRACT.md §12).
//!
//! Every write transaction inserts a unique marker row just before COMMIT.
//! When COMMIT fails because the connection dropped, the server may have
//! committed or not. A new connection first makes sure the session that
//! sent COMMIT is gone (until then a COMMIT still in flight could land after
//! we looked), then looks for the marker: present, the transaction
//! committed and the write succeeded; absent, nothing changed.

use anyhow::{bail, Context, Result};
use tokio_postgres::SimpleQueryMessage;

use super::client::Client;

/// Inserted last in every write transaction, with the rows it held back
/// (`PgTx::send_later`), whose parameters come first: the marker's
/// placeholder follows this.
pub const MARK_INTO: &str = "INSERT INTO commit_markers (marker) VALUES ";

/// Markers are only ever looked up seconds after their commit; a day is
/// ample. At most 1000 a time, skipping rows another host is pruning.
pub const PRUNE: &str = "DELETE FROM commit_markers WHERE marker IN (
    SELECT marker FROM commit_markers WHERE at < now() - interval '1 day'
    ORDER BY at LIMIT 1000 FOR UPDATE SKIP LOCKED)";

/// A connection prunes in its first write transaction and every this many
/// after: one indexed probe, free when there is nothing to delete.
pub const PRUNE_EVERY: u64 = 256;

/// How long to wait for the lost session to end before giving up.
const SESSION_END_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The server session behind a connection: its process id and start time
/// (together unique, even when the server reuses a pid).
#[derive(Debug, Clone)]
pub struct Session {
    pid: String,
    started: String,
}

/// Configures a new connection (`setup`, run in the same round trip) and
/// says which session it is.
pub fn start_session(client: &mut Client, setup: &str) -> Result<Session> {
    let messages = client
        .simple_query(&format!(
            "{setup} SELECT pid::text, backend_start::text FROM pg_stat_activity
             WHERE pid = pg_backend_pid()"
        ))
        .context("configuring the PostgreSQL session")?;
    for message in messages {
        if let SimpleQueryMessage::Row(row) = message {
            if let (Some(pid), Some(started)) = (row.get(0), row.get(1)) {
                return Ok(Session {
                    pid: pid.to_string(),
                    started: started.to_string(),
                });
            }
        }
    }
    bail!("the server does not list this session in pg_stat_activity")
}

/// Whether the transaction that inserted `marker` on the lost session
/// `old` committed, asked on the new connection `client`.
pub fn committed(client: &mut Client, old: &Session, marker: &str) -> Result<bool> {
    // Ending it ourselves (a role may end its own sessions) makes its fate
    // final now rather than when the server notices the dropped socket.
    let _ = client.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE pid::text = $1 AND backend_start::text = $2",
        &[&old.pid, &old.started],
    );
    let deadline = std::time::Instant::now() + SESSION_END_WAIT;
    loop {
        let alive: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE pid::text = $1 AND backend_start::text = $2",
                &[&old.pid, &old.started],
            )
            .context("looking for the lost session")?
            .try_get(0)?;
        if alive == 0 {
            break;
        }
        if std::time::Instant::now() >= deadline {
            bail!("the session that sent COMMIT is still running");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let found = client
        .query_opt("SELECT 1 FROM commit_markers WHERE marker = $1", &[&marker])
        .context("looking for the commit marker")?;
    Ok(found.is_some())
}
