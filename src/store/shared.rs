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
//!
//! Writes that finish together may also commit together
//! (`write_together`): a thread that finds the connection busy leaves its
//! write in a queue, and whichever thread takes the connection next runs
//! every queued write in one transaction and one durable commit (group
//! commit). Each caller returns only once its write is committed, so what
//! it does next (deliver a notice) still follows its committed outcome.
//! A write nothing waits on soon (a delivered notice's result) may wait a
//! few milliseconds for another thread's write to carry it
//! (`write_soon`): the claim that fills the slot its run freed, say.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::Result;

use super::{Location, OpenOptions, Store, Tx};

/// A handle on one connection; clones share it.
#[derive(Clone)]
pub struct SharedStore {
    connection: Arc<Mutex<Connection>>,
    /// Writes waiting for the next transaction (`write_together`).
    waiting: Arc<Mutex<Vec<Waiting>>>,
}

/// A queued write and where its result goes.
struct Waiting {
    job: super::SharedJob,
    done: Arc<Done>,
}

/// A queued write's result, and the wake-up of its thread when another
/// thread ran it.
#[derive(Default)]
struct Done {
    result: Mutex<Option<Result<()>>>,
    ready: Condvar,
}

impl Done {
    fn set(&self, result: Result<()>) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        self.ready.notify_all();
    }

    fn take(&self) -> Option<Result<()>> {
        self.result.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The result, once another thread has run the write, waiting up to
    /// `within` for that.
    fn wait(&self, within: Duration) -> Option<Result<()>> {
        let result = self.result.lock().unwrap_or_else(|p| p.into_inner());
        let (mut result, _) = self
            .ready
            .wait_timeout_while(result, within, |r| r.is_none())
            .unwrap_or_else(|p| p.into_inner());
        result.take()
    }
}

/// Writes one shared transaction takes at most: a failing write reruns the
/// rest of its group alone, so a group is kept to what one commit gains.
const GROUP_LIMIT: usize = 64;

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
            waiting: Arc::default(),
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
        transaction_on(&mut self.lock(), f)
    }

    /// Runs `job` in a write transaction it may share with other threads'
    /// writes made meanwhile, one commit for all; returns once its own
    /// write is committed (or failed). `job` may run twice: when another
    /// write of its group fails, the group rolls back and each write runs
    /// again in a transaction of its own.
    fn together(&self, job: super::SharedJob) -> Result<()> {
        let done = self.enqueue(job);
        self.run_until(&done)
    }

    /// `together` for a write nothing waits on soon: it waits up to
    /// `within` for another thread's write to take it into its group, and
    /// runs it (with whatever else is queued then) after that.
    fn soon(&self, job: super::SharedJob, within: Duration) -> Result<()> {
        let done = self.enqueue(job);
        match done.wait(within) {
            Some(result) => result,
            None => self.run_until(&done),
        }
    }

    fn enqueue(&self, job: super::SharedJob) -> Arc<Done> {
        let done = Arc::new(Done::default());
        self.queue().push(Waiting {
            job,
            done: Arc::clone(&done),
        });
        done
    }

    /// Runs the queued groups until `done`'s write has run.
    fn run_until(&self, done: &Done) -> Result<()> {
        // Whoever holds the connection now may take this write into its
        // group; once we hold it, that group has ended and said so.
        let mut connection = self.lock();
        loop {
            if let Some(result) = done.take() {
                return result;
            }
            // Ours is still queued: the oldest group first, until ours ran.
            let group = self.take_group();
            if group.is_empty() {
                return Err(anyhow::anyhow!("a shared write left the queue unrun"));
            }
            run_group(&mut connection, group);
        }
    }

    fn queue(&self) -> MutexGuard<'_, Vec<Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The writes queued now, oldest first, at most `GROUP_LIMIT` (the rest
    /// wait for the next group: their threads each take the connection in
    /// turn and find them).
    fn take_group(&self) -> Vec<Waiting> {
        let mut queue = self.queue();
        let n = queue.len().min(GROUP_LIMIT);
        queue.drain(..n).collect()
    }
}

/// Runs `group` in one write transaction and tells each its result; when
/// one write fails, nothing of the group is kept and each runs again alone,
/// so a write's failure is its own.
fn run_group(connection: &mut Connection, mut group: Vec<Waiting>) {
    if group.len() > 1 {
        let together = transaction_on(connection, |store| {
            store.write_dyn(&mut |tx| {
                for waiting in group.iter_mut() {
                    (waiting.job)(tx)?;
                }
                Ok(())
            })
        });
        if together.is_ok() {
            for waiting in &group {
                waiting.done.set(Ok(()));
            }
            return;
        }
    }
    for waiting in group.iter_mut() {
        let job = &mut waiting.job;
        let result = transaction_on(connection, |store| store.write_dyn(&mut |tx| job(tx)));
        waiting.done.set(result);
    }
}

/// One transaction on `connection`, reconnecting first when the last one
/// lost it.
fn transaction_on(
    connection: &mut Connection,
    f: impl FnOnce(&mut dyn Store) -> Result<()>,
) -> Result<()> {
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

impl Store for SharedStore {
    fn write_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.transaction(|store| store.write_dyn(f))
    }

    fn read_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.transaction(|store| store.read_dyn(f))
    }

    fn write_together_dyn(&mut self, job: super::SharedJob) -> Result<()> {
        self.together(job)
    }

    fn write_soon_dyn(&mut self, job: super::SharedJob, within: Duration) -> Result<()> {
        self.soon(job, within)
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

    fn idle_note(&self) -> Option<crate::store::idle::IdleNote> {
        self.lock().store.idle_note()
    }

    fn note_idle(&mut self, note: crate::store::idle::IdleNote) -> Result<()> {
        self.transaction(|store| store.note_idle(note))
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

    fn shared_store(dir: &std::path::Path) -> SharedStore {
        let options = OpenOptions {
            busy_timeout: std::time::Duration::from_secs(5),
            create: true,
            read_only: false,
            ..Default::default()
        };
        let path = dir.join("s.db");
        let store = SqliteStore::open(&path, &options).unwrap();
        SharedStore::new(Box::new(store), Location::Sqlite(path), options)
    }

    /// Queues `n` writes while another transaction holds the connection,
    /// so that they run as one group; write `fail` (if any) fails after
    /// writing its key. Returns how many times each write ran.
    fn group_of(shared: &SharedStore, n: usize, fail: Option<usize>) -> Vec<usize> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
        let mut holder = shared.handle();
        let watcher = shared.clone();
        let mut threads = Vec::new();
        holder
            .read(|_| {
                for i in 0..n {
                    let mut store = shared.handle();
                    let runs = Arc::clone(&runs);
                    threads.push(std::thread::spawn(move || {
                        store.write_together(move |tx| {
                            runs[i].fetch_add(1, Ordering::SeqCst);
                            tx.set_meta(&format!("k{i}"), "v")?;
                            if fail == Some(i) {
                                anyhow::bail!("write {i} fails");
                            }
                            Ok(i)
                        })
                    }));
                }
                // Every write waits in the queue before the connection is free.
                while watcher.queue().len() < n {
                    std::thread::yield_now();
                }
                Ok(())
            })
            .unwrap();
        for (i, t) in threads.into_iter().enumerate() {
            let result = t.join().unwrap();
            match fail {
                Some(f) if f == i => assert!(result.is_err(), "write {i} should fail"),
                _ => assert_eq!(result.unwrap(), i),
            }
        }
        runs.iter().map(|r| r.load(Ordering::SeqCst)).collect()
    }

    fn has(shared: &SharedStore, key: &str) -> bool {
        let mut store = shared.handle();
        let key = key.to_string();
        store.read(|tx| tx.meta(&key)).unwrap().is_some()
    }

    /// Writes queued together run once each in one transaction and all land.
    #[test]
    fn writes_queued_together_share_one_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_store(dir.path());
        let runs = group_of(&shared, 6, None);
        assert_eq!(runs, vec![1; 6]);
        for i in 0..6 {
            assert!(has(&shared, &format!("k{i}")), "k{i}");
        }
    }

    /// More writes queued than one group takes: the write at the back runs
    /// groups in turn, oldest first, until its own ran.
    #[test]
    fn a_write_behind_more_than_one_group_waits_for_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_store(dir.path());
        let ahead = GROUP_LIMIT + 6;
        let mut dones = Vec::new();
        for i in 0..ahead {
            let done = Arc::new(Done::default());
            let key = format!("k{i}");
            shared.queue().push(Waiting {
                job: Box::new(move |tx| tx.set_meta(&key, "v")),
                done: Arc::clone(&done),
            });
            dones.push(done);
        }
        let mut store = shared.handle();
        let last = store.write_together(|tx| tx.set_meta("last", "v").map(|()| 7));
        assert_eq!(last.unwrap(), 7);
        for (i, done) in dones.iter().enumerate() {
            let result = done.take();
            assert!(matches!(result, Some(Ok(()))), "write {i}: {result:?}");
            assert!(has(&shared, &format!("k{i}")), "k{i}");
        }
        assert!(has(&shared, "last"));
    }

    /// A write that may wait (`write_soon`) is carried by the next write
    /// another thread makes: it returns once that shared commit lands, long
    /// before its own wait would have ended.
    #[test]
    fn a_write_that_may_wait_rides_with_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_store(dir.path());
        let mut waiting = shared.handle();
        let began = std::time::Instant::now();
        let soon = std::thread::spawn(move || {
            let written =
                waiting.write_soon(Duration::from_secs(60), |tx| tx.set_meta("soon", "v"));
            (written, began.elapsed())
        });
        // Queued, and still waiting for company a while later.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(shared.queue().len(), 1, "it waits in the queue");
        assert!(!has(&shared, "soon"), "it waits for company");
        let mut other = shared.handle();
        assert_eq!(
            other
                .write_together(|tx| tx.set_meta("other", "v").map(|()| 1))
                .unwrap(),
            1
        );
        let (written, took) = soon.join().unwrap();
        written.unwrap();
        assert!(
            took < Duration::from_secs(30),
            "it waited out its time: {took:?}"
        );
        assert!(has(&shared, "soon") && has(&shared, "other"));
    }

    /// A write that waits for company and needs its value (a tick's claim
    /// while other runs are in flight, `write_within`) gets the value of
    /// the group that carried it.
    #[test]
    fn a_write_within_returns_its_value_from_the_group_that_carried_it() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_store(dir.path());
        let mut waiting = shared.handle();
        let claim = std::thread::spawn(move || {
            waiting.write_within(Duration::from_secs(60), |tx| {
                tx.set_meta("claimed", "v")?;
                Ok(std::thread::current().id())
            })
        });
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(shared.queue().len(), 1, "it waits in the queue");
        let mut other = shared.handle();
        other
            .write_together(|tx| tx.set_meta("outcome", "v"))
            .unwrap();
        let ran_on = claim.join().unwrap().unwrap();
        assert_eq!(
            ran_on,
            std::thread::current().id(),
            "the other write's thread ran it, in its group"
        );
        assert!(has(&shared, "claimed") && has(&shared, "outcome"));
        // With no company, it runs itself once its wait ends.
        let mut alone = shared.handle();
        let ran_on = alone
            .write_within(Duration::from_millis(20), |tx| {
                tx.set_meta("alone", "v")?;
                Ok(std::thread::current().id())
            })
            .unwrap();
        assert_eq!(ran_on, std::thread::current().id());
        assert!(has(&shared, "alone"));
    }

    /// With no other write coming, it commits alone when its wait ends.
    #[test]
    fn a_write_that_may_wait_commits_alone_when_no_write_comes() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_store(dir.path());
        let mut store = shared.handle();
        let began = std::time::Instant::now();
        store
            .write_soon(Duration::from_millis(50), |tx| tx.set_meta("soon", "v"))
            .unwrap();
        assert!(began.elapsed() >= Duration::from_millis(50));
        assert!(has(&shared, "soon"));
        assert!(shared.queue().is_empty());
    }

    /// One write of a group fails: nothing of it is kept, and every other
    /// write of the group runs again alone and lands.
    #[test]
    fn a_failing_write_of_a_group_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_store(dir.path());
        let runs = group_of(&shared, 5, Some(2));
        // It ran in the group, then alone; so did those the group ran before
        // it, and those after it ran alone only.
        assert_eq!(runs[2], 2, "{runs:?}");
        assert!(runs.iter().all(|&n| n == 1 || n == 2), "{runs:?}");
        for i in 0..5 {
            assert_eq!(has(&shared, &format!("k{i}")), i != 2, "k{i}");
        }
    }
}
