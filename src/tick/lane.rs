//! The pending-notice lane: one thread per tick, started the first time a
//! notice waits, that sends the notices no worker took (tick/execute.rs
//! delivers its own run's notice when a delivery lane is free) one at a
//! time, each at most once per tick, while the executors run and for at
//! most `DELIVERY_TAIL` after. It tells the main loop through the workers'
//! channel (`execute::Message`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::clock::Clock;
use crate::error::BusyStep;
use crate::model::Notice;
use crate::store::{shared::SharedStore, Store};

use super::deliver::{deliver_pending, Notifier};
use super::execute::Message;
use super::TickOptions;

/// Notices one tick's pending lane sends at most.
pub const MAX_DELIVERIES: usize = 200;

/// Once the tick's executors are done, how long the pending lane may go on
/// starting deliveries before the tick ends (a notifier hung on every
/// notice must not keep a tick alive for hours).
const DELIVERY_TAIL: Duration = Duration::from_secs(60);

/// How often an idle pending lane looks for new notices while executors run.
const LANE_POLL: Duration = Duration::from_millis(100);

/// The pending-notice lane of one tick, started the first time something
/// waits (never without a notifier).
pub struct Lane<'a> {
    shared: &'a SharedStore,
    options: &'a TickOptions,
    clock: Clock,
    started: Option<PendingLane>,
    /// The lane's thread has not said it is done.
    pub running: bool,
    sender: mpsc::Sender<Message>,
}

impl<'a> Lane<'a> {
    pub fn new(
        shared: &'a SharedStore,
        options: &'a TickOptions,
        clock: Clock,
        sender: mpsc::Sender<Message>,
    ) -> Lane<'a> {
        Lane {
            shared,
            options,
            clock,
            started: None,
            running: false,
            sender,
        }
    }

    /// Starts the lane, unless it was started already or there is no notifier.
    pub fn start(&mut self) {
        let Some(notifier) = self.options.notifier.as_ref() else {
            return;
        };
        if self.started.is_some() {
            return;
        }
        self.started = Some(PendingLane::start(
            self.shared,
            notifier,
            self.options.tenant.clone(),
            self.clock,
            self.sender.clone(),
        ));
        self.running = true;
    }

    pub fn executors_done(&self) {
        if let Some(lane) = &self.started {
            lane.executors_done();
        }
    }

    pub fn join(&mut self) {
        if let Some(lane) = self.started.take() {
            lane.join();
        }
    }
}

/// The lane that sends pending notices while the tick's executors run.
pub struct PendingLane {
    executors_done: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl PendingLane {
    pub fn start(
        store: &SharedStore,
        notifier: &Notifier,
        tenant: Option<String>,
        clock: Clock,
        messages: mpsc::Sender<Message>,
    ) -> PendingLane {
        let executors_done = Arc::new(AtomicBool::new(false));
        let (done, mut store, notifier) =
            (executors_done.clone(), store.handle(), notifier.clone());
        let handle = std::thread::spawn(move || {
            let result = drain(
                store.as_mut(),
                &notifier,
                tenant.as_deref(),
                clock,
                &done,
                &messages,
            );
            let result = result.busy_during("delivering waiting notices");
            let _ = messages.send(Message::LaneDone(result));
        });
        PendingLane {
            executors_done,
            handle,
        }
    }

    /// Tells the lane that no executor of this tick runs any more: it ends
    /// once nothing is left to send (or its time is up).
    pub fn executors_done(&self) {
        self.executors_done.store(true, Ordering::Release);
    }

    pub fn join(self) {
        self.executors_done();
        let _ = self.handle.join();
    }
}

fn drain(
    store: &mut dyn Store,
    notifier: &Notifier,
    tenant: Option<&str>,
    clock: Clock,
    executors_done: &AtomicBool,
    messages: &mpsc::Sender<Message>,
) -> Result<()> {
    let mut attempted = HashSet::new();
    let mut done_since: Option<Instant> = None;
    loop {
        let done = executors_done.load(Ordering::Acquire);
        if done && done_since.is_none() {
            done_since = Some(Instant::now());
        }
        let out_of_time = done_since.is_some_and(|t| t.elapsed() > DELIVERY_TAIL);
        let interrupted = crate::interrupt::received().is_some();
        if attempted.len() >= MAX_DELIVERIES || out_of_time || interrupted {
            return Ok(());
        }
        let now = clock.now();
        let notices: Vec<Notice> = store
            .read(|tx| tx.notices_to_send(now, tenant, 64))?
            .into_iter()
            .filter(|n| !attempted.contains(&n.delivery_id))
            .collect();
        if notices.is_empty() {
            if done {
                return Ok(());
            }
            std::thread::sleep(LANE_POLL);
            continue;
        }
        for notice in notices {
            if crate::interrupt::received().is_some() {
                return Ok(());
            }
            // At most one attempt per notice per tick.
            attempted.insert(notice.delivery_id.clone());
            let Some(delivery) = deliver_pending(store, notifier, &notice, &clock)? else {
                continue;
            };
            let failed_to_start = delivery.notifier_did_not_start();
            let _ = messages.send(Message::Delivered(Box::new(delivery)));
            if failed_to_start {
                // The same notifier will not start for the next one either.
                return Ok(());
            }
            if attempted.len() >= MAX_DELIVERIES {
                return Ok(());
            }
        }
    }
}
