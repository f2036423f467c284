//! One connection for every thread of a tick.
//!
//! A tick's main loop, its executor workers, its lease renewals and its
//! pending-notice lane all write to the store, each a few short
//! transactions per run, and none holds a transaction while a child runs.
//! Giving each thread a connection of its own cost a PostgreSQL connection
//! per worker (five for a four-job tick) and, on SQLite, made the threads
//! queue for the file's write lock through SQLite's busy handler, which
//! sleeps 1–15 ms between tries. Sharing one connection behind a mutex
//! turns that hand-off into a wake-up and keeps a tick to one connection.
//!
//! Each `Store` call is one transaction and holds the mutex for exactly
//! that long, so transactions from different threads never interleave on
//! the connection. A transaction that fails because the connection itself
//! was lost (a database server restarting) has the connection replaced by
//! a new one before the next transaction, for every thread at once.

use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Result;

use super::{Location, OpenOptions, Store, Tx};

/// A handle on one connection; clones share it.
#[derive(Clone)]
pub struct SharedStore {
    connection: Arc<Mutex<Connection>>,
}

struct Connection {
    store: Box<dyn Store>,
    /// The last transaction lost the connection (how, in the server's
    /// words): open a new one first.
    lost: Option<String>,
    location: Location,
    options: OpenOptions,
}

impl SharedStore {
    /// Shares `store`, which was opened at `location` with `options` (to
    /// open it again after a lost connection).
    pub fn new(store: Box<dyn Store>, location: Location, options: OpenOptions) -> SharedStore {
        SharedStore {
            connection: Arc::new(Mutex::new(Connection {
                store,
                lost: None,
                location,
                options,
            })),
        }
    }

    /// A handle to give a thread that expects a store of its own.
    pub fn handle(&self) -> Box<dyn Store> {
        Box::new(self.clone())
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A thread that panicked inside a transaction dropped it, which
        // rolls it back: the connection is still fit for the others.
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// One transaction on the connection, reconnecting first when the last
    /// one lost it.
    fn transaction(&self, f: impl FnOnce(&mut dyn Store) -> Result<()>) -> Result<()> {
        let mut connection = self.lock();
        if let Some(how) = &connection.lost {
            let still = crate::error::StillDisconnected(how.clone());
            connection.store = super::open(&connection.location, &connection.options)
                .map_err(|e| super::faulted(e).context(still))?;
            connection.lost = None;
        }
        // A boundary of the store: its errors carry their faults.
        let result = f(connection.store.as_mut()).map_err(super::faulted);
        if let Err(e) = &result {
            connection.lost =
                crate::error::is_connection_lost(e).then(|| crate::error::connection_loss(e));
        }
        result
    }
}

impl Store for SharedStore {
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.transaction(|store| store.write_dyn(f))
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.transaction(|store| store.read_dyn(f))
    }

    fn write_relaxed_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.transaction(|store| store.write_relaxed_dyn(f))
    }

    fn location(&self) -> String {
        self.lock().store.location()
    }

    fn size_bytes(&mut self) -> Option<u64> {
        self.lock().store.size_bytes()
    }

    fn server_time(&mut self) -> Option<i64> {
        self.lock().store.server_time()
    }

    fn server_time_micros(&mut self) -> Option<i64> {
        self.lock().store.server_time_micros()
    }

    fn skips_locked_rows(&self) -> bool {
        self.lock().store.skips_locked_rows()
    }

    fn compact(&mut self) -> Result<()> {
        self.lock().store.compact()
    }

    fn backup_to(&mut self, path: &std::path::Path) -> Result<()> {
        self.lock().store.backup_to(path)
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.lock().store.schema_version()
    }

    fn migrations(&self) -> &'static [&'static str] {
        self.lock().store.migrations()
    }

    fn migrate(&mut self, applied: &mut dyn FnMut(i64) -> Result<()>) -> Result<()> {
        self.lock().store.migrate(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{sqlite::SqliteStore, OpenOptions};

    /// Many threads writing through one connection, durable and relaxed
    /// writes mixed: every write lands (no transaction of one thread runs
    /// inside another's).
    #[test]
    fn threads_take_turns_on_one_connection() {
        let dir = tempfile::tempdir().unwrap();
        let options = OpenOptions {
            busy_timeout: std::time::Duration::from_secs(5),
            create: true,
            read_only: false,
            ..Default::default()
        };
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path, &options).unwrap();
        let shared = SharedStore::new(Box::new(store), Location::Sqlite(path), options);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let mut store = shared.handle();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        let key = format!("k{t}_{i}");
                        if i % 2 == 0 {
                            store.write_relaxed(|tx| tx.set_meta(&key, "v")).unwrap();
                        } else {
                            store.write(|tx| tx.set_meta(&key, "v")).unwrap();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut store = shared.handle();
        for t in 0..8 {
            for i in 0..25 {
                let key = format!("k{t}_{i}");
                let value = store.read(|tx| tx.meta(&key)).unwrap();
                assert_eq!(value.as_deref(), Some("v"), "{key}");
            }
        }
    }
}
