//! The pool's concurrent core, a file per concept:
//!
//! * `queue/`: the queue: a tail in per-CPU lanes that pushers fill under their lane's lock, a
//!   head that workers take from under the head lock (claiming a lane's tasks without its
//!   lock: `queue/chain.rs`), and the spinners' mailbox.
//! * `idle.rs`: idle coordination: the hint ([`AtomicHint`]), spinning, parking, and the pair
//!   of `SeqCst` fences by which a push and a worker about to stop looking never miss each
//!   other.
//! * `growth.rs`: the growth mechanism: carrying out `policy::growth`'s decisions (wake a
//!   parked worker, count a new one, have the watchdog watch) and the stall watchdog's look
//!   (`policy::stall`).
//! * `lifecycle.rs`: shutdown, a worker's exit, a worker that could not start, the stats
//!   snapshot.
//! * `held.rs`: each worker's held slot: the one task its running task queued, which it
//!   runs next, and the ways another worker, the watchdog, cancel and a re-formation take it.
//! * `pull.rs`: pull, the core's side: a sibling's worker taking this pool's oldest task, this
//!   pool sending a worker when a sibling offers work, and what a worker asks of its siblings
//!   when its own queue is empty.
//!
//! This file holds the state and the two entry points, [`Core::push`] and [`Core::next`],
//! which take the protocol's steps in order. The steps are written out in `pool/README.md`
//! and cited below as `(P3)`, `(W10)`.
//!
//! The core uses only `crate::sync`, `crate::policy` and `std` types that do not synchronize,
//! so that `crates/podq-loom` compiles this folder against loom and checks it there; the one
//! exception, `Lane::spinners`, is a heuristic whose every value is safe (see there). It never
//! starts a thread itself: [`Core::push`] and [`Core::next`] say when the caller must start one
//! ([`Push::Spawn`], `Next::Run { grow: Grow::Spawn, .. }`), so that the loom models can start
//! loom threads and the pool can start named, pinned OS threads.
//!
//! Lock order: the head lock, then a lane lock, then the pool lock. A pusher holds one lock at
//! a time: its lane's, then, only when the hint says so, the pool lock. A worker takes a lane
//! lock only under the head lock, to cancel or re-form. The mailbox's slot (P1, W6) and the
//! lanes' slots have no lock: their state words (the mailbox's, the chain's counts) make each
//! access exclusive.

mod growth;
mod held;
mod idle;
mod lifecycle;
mod pull;
pub(crate) mod queue;

use std::time::Duration;

use crate::policy::growth::{self as policy, Limits, Workers};
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{Arc, CachePadded, Condvar, Mutex, MutexGuard};

use held::Held;
use idle::{AtomicHint, Parked, Parker};
use queue::chain::Spares;
use queue::mailbox::Mailbox;
use queue::{lock_counted, Head, Lane, LockCounts};

pub(crate) use crate::policy::growth::Grow;
pub(crate) use held::{HeldCounts, Hold, Holder};
pub(crate) use idle::WorkerSlot;
pub(crate) use pull::{NoSiblings, Siblings, Stolen};

/// The workers' state, under the pool lock.
#[derive(Debug)]
pub(crate) struct Synced {
    /// L: pool lock acquisitions and contended acquisitions.
    lock: LockCounts,
    /// L: the parkers of idle workers that nobody has woken yet, most recently parked last.
    /// Pushes wake the last one ([`policy::wakes`]).
    idle: Vec<Arc<Parker>>,
    /// L: live workers: running, parked, or started and not yet running.
    workers: usize,
    /// L: workers started or woken that have not yet come back to the queue
    /// ([`Workers::coming`]).
    coming: usize,
    /// L: set once, when the pool's last user lets go; workers then exit when the queue is
    /// empty.
    shutdown: bool,
    /// L: whether the stall watchdog watches this pool (D1); cleared when it finds the queue
    /// empty (D4).
    watched: bool,
    /// L: [`Head::started`] when the watchdog last looked (D3); `None` from D1 until its first
    /// look.
    watched_started: Option<u64>,
    /// L: workers ever started.
    workers_created: u64,
    /// L: workers that retired after `idle_timeout`.
    workers_retired: u64,
}

impl Synced {
    /// The counts that `policy::growth` decides from.
    #[inline]
    fn workers(&self) -> Workers {
        Workers {
            live: self.workers,
            idle: self.idle.len(),
            coming: self.coming,
            watched: self.watched,
        }
    }
}

/// What [`Core::push`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Push {
    /// An idle worker was woken to take the item.
    Woken,
    /// Every worker is busy: the caller must start one worker (and call
    /// [`Core::spawn_failed`] if it cannot).
    Spawn,
    /// The item waits for a spinning or coming worker (or the pool is at `max_workers`).
    Queued,
    /// The item waits in its lane with nobody idle and the pool at its size or a worker on its
    /// way (a worker running, spinning or coming takes it): the caller may offer the pool's
    /// waiting work to its siblings ([`Core::to_offer`]).
    Busy,
    /// The item went straight to a spinning worker, through the mailbox (P1).
    Handed,
    /// The item waits in its lane with every worker busy and the pool at its eager size: the
    /// caller must have the stall watchdog watch the pool (D1), which adds a worker if the
    /// busy ones block, and may offer the pool's waiting work to its siblings as for
    /// [`Push::Busy`].
    Watch,
}

/// What a worker does next, from [`Core::next`].
#[derive(Debug)]
pub(crate) enum Next<T> {
    /// Run `item`; first act on `grow`.
    Run {
        /// The task to run.
        item: T,
        /// What to do first because more work waits with every worker busy.
        grow: Grow,
    },
    /// Leave the loop and end the thread: retired after `idle_timeout` with another worker
    /// left, or shut down with an empty queue.
    Exit,
}

/// How a pool grows and waits: fixed when the pool is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// The most workers at once, and how many start without the stall watchdog.
    pub(crate) limits: Limits,
    /// How long a worker stays idle before it retires.
    pub(crate) idle_timeout: Duration,
    /// Backoff rounds a worker spins before it parks.
    pub(crate) spin_rounds: u32,
    /// Whether every round yields the CPU instead (`sync::yield_until`): for a process that
    /// may use one CPU, where a spinning worker only keeps the thread that would queue its
    /// next task from running.
    pub(crate) yield_only: bool,
    /// Lanes of the tail (raised to 1 if 0): pushers on different lanes never contend.
    pub(crate) lanes: usize,
}

/// One pool's queue and workers behind three kinds of lock: the lane locks (pushers), the head
/// lock (workers taking tasks) and the pool lock (the workers' state).
#[derive(Debug)]
pub(crate) struct Core<T> {
    /// The head lock and the head of the queue. On lines of their own: workers take tasks here
    /// without touching the lines that pushers write.
    head: CachePadded<Mutex<Head<T>>>,
    /// The tail of the queue, in lanes, each on lines of its own: a pusher locks and writes
    /// only its own CPU's lane, so pushers on different CPUs share no line.
    lanes: Box<[Lane<T>]>,
    /// The segments that the lanes' chains are done with, kept for the next ones that need
    /// one (`chain.rs`), shared with the other pools of the pod's node; freed when a worker
    /// has been idle for `idle_timeout` (W12).
    spares: Arc<Spares<T>>,
    /// The spinners' mailbox (P1, W6): one spinner at a time waits there for a task that a
    /// pusher hands it directly. On lines of its own.
    mailbox: CachePadded<Mailbox<T>>,
    /// The pool lock: the workers' state. On lines of its own. Pushers take it only when the
    /// `hint` says so.
    synced: CachePadded<Mutex<Synced>>,
    /// Used with the pool lock: notified when `workers` drops to 0.
    exited: Condvar,
    /// The workers' held slots (H1-H8), one per worker up to the eager size.
    held: Held<T>,
    /// A: whether tasks were left in the head when a worker last looked under the head lock
    /// (W2, W4): what H3 reads instead of taking the head lock, so that a worker running held
    /// tasks writes no line that the others' takes write. Written only when it changes, on
    /// lines of its own. Relaxed: a hint, as the head is read again under its lock at W2.
    head_waits: CachePadded<AtomicBool>,
    /// I: the most workers at once, and how many start without the watchdog.
    limits: Limits,
    /// I: how long a worker stays idle before it retires.
    idle_timeout: Duration,
    /// I: backoff rounds a worker spins (W5) before it parks; 0 parks at once.
    spin_rounds: u32,
    /// I: whether each of those rounds yields the CPU rather than spins ([`Config::yield_only`]).
    yield_only: bool,
    /// A: whether a push must take the pool lock, and the spinners (see [`AtomicHint`]), each
    /// on lines of its own.
    hint: AtomicHint,
}

impl<T> Core<T> {
    /// An empty pool with no worker, whose lanes keep drained segments for each other only.
    #[cfg(test)]
    pub(crate) fn new(config: Config) -> Self {
        Self::with_spares(config, Arc::new(Spares::new()))
    }

    /// An empty pool with no worker, whose lanes keep drained segments in `spares`, which
    /// other pools may share (`pool/registry.rs`: the pools of one node do).
    pub(crate) fn with_spares(config: Config, spares: Arc<Spares<T>>) -> Self {
        let (lanes, consumers): (Vec<_>, Vec<_>) = (0..config.lanes.max(1))
            .map(|_| Lane::new(Arc::clone(&spares)))
            .collect();
        let lanes = lanes.into_boxed_slice();
        let consumers = consumers.into_boxed_slice();
        Self {
            head: CachePadded::new(Mutex::new(Head::new(consumers))),
            lanes,
            spares,
            mailbox: CachePadded::new(Mailbox::new()),
            synced: CachePadded::new(Mutex::new(Synced {
                lock: LockCounts::default(),
                idle: Vec::new(),
                workers: 0,
                coming: 0,
                shutdown: false,
                watched: false,
                watched_started: None,
                workers_created: 0,
                workers_retired: 0,
            })),
            exited: Condvar::new(),
            held: Held::new(config.limits.eager_workers),
            head_waits: CachePadded::new(AtomicBool::new(false)),
            limits: config.limits,
            idle_timeout: config.idle_timeout,
            spin_rounds: config.spin_rounds,
            yield_only: config.yield_only,
            // An empty pool can grow.
            hint: AtomicHint::new(true),
        }
    }

    /// Whether this pool's lanes keep their drained segments where `other`'s do.
    #[cfg(test)]
    pub(crate) fn shares_spares_with(&self, other: &Core<T>) -> bool {
        Arc::ptr_eq(&self.spares, &other.spares)
    }

    /// How many segments the lanes' chains keep for each other now.
    #[cfg(test)]
    pub(crate) fn kept_segments(&self) -> usize {
        self.spares.len()
    }

    /// Takes the pool lock, counting the acquisition and whether it was contended.
    fn lock(&self) -> MutexGuard<'_, Synced> {
        lock_counted(&self.synced, |synced| &mut synced.lock)
    }

    /// Queues `item` in lane `lane` (wrapped to the lanes there are) and wakes or asks for a
    /// worker if needed (P1-P7).
    ///
    /// How many tasks wait in the lane is read only where it changes what happens (with
    /// spinners about): in a flood from one CPU the lane's consumer end is written by the
    /// worker taking each task, and reading it cost a line transfer per push.
    pub(crate) fn push(&self, lane: usize, item: T) -> Push {
        // (P1) A spinner on another CPU owns the mailbox, and nothing waits in this lane that
        // the item could overtake: hand it over, and that is all.
        let lane = self.wrap(lane);
        let item = if self.mailbox.open_to(lane) && self.lanes[lane].len() == 0 {
            match self.mailbox.hand(lane, item) {
                Ok(()) => return Push::Handed,
                Err(item) => item,
            }
        } else {
            item
        };
        // (P2) The item is in its lane, published, before anything else.
        let fenced = self.push_to_lane(lane, item);
        // (P3) Fenced (by the lane lock's release), read `HELP`: the push's half of the pair
        // with W10.
        if !self.help_after_push(fenced) {
            // (P4) Nobody idle, and a worker running, spinning or coming takes the item.
            return Push::Busy;
        }
        // (P4) No more items in this lane than spinners on other CPUs: one of them takes it.
        if self.spinners_take(lane) {
            return Push::Queued;
        }
        let mut synced = self.lock();
        // (P5) Wake the most recently parked idle worker, if any.
        if let Some(parker) = synced.wake_one() {
            self.publish(&synced);
            drop(synced);
            // (P7) Notify outside the lock; `notified` was set under it, so the worker cannot
            // miss it even if it has not started waiting yet.
            parker.notify();
            return Push::Woken;
        }
        // (P6) Nobody idle: start a worker unless one is on its way, or, at the eager size,
        // have the watchdog look. This ignores `shutdown` on purpose: an item queued to a pool
        // whose workers have all exited still runs. Tasks in the head are not counted: a
        // worker that moved them there is running, and hands them on itself (W4).
        let grow = self.grow(&mut synced, self.lanes_len());
        if grow != Grow::No {
            self.publish(&synced);
        }
        match grow {
            Grow::Spawn => Push::Spawn,
            Grow::Watch => Push::Watch,
            Grow::No => Push::Queued,
        }
    }

    /// After a push to lane `lane` that said [`Push::Busy`] or [`Push::Watch`]: how many tasks
    /// wait in the lane, when that is enough for the pool to offer its work to its siblings
    /// (`policy::pull::offers`; `from_pod`: the pusher runs on a CPU of the pool's pod) and the
    /// spinners on other CPUs will not take them all (P4); `None` otherwise.
    pub(crate) fn to_offer(&self, lane: usize, from_pod: bool) -> Option<usize> {
        let lane = self.wrap(lane);
        let waiting = self.lanes[lane].len();
        (crate::policy::pull::offers(waiting, from_pod) && !self.spinners_take(lane))
            .then_some(waiting)
    }

    /// (P4) Whether the spinners on CPUs other than lane `lane`'s are at least as many as the
    /// tasks waiting there, so that they take them. The lane is looked at only when there are
    /// such spinners.
    fn spinners_take(&self, lane: usize) -> bool {
        let lane = &self.lanes[lane];
        let elsewhere = self.spinners_elsewhere(lane);
        elsewhere > 0 && policy::spinners_take(lane.len(), elsewhere)
    }

    /// Queues `item` in lane `lane` for the calling worker itself, which is between two items
    /// and looks at the queue next (P2w): nobody is woken and no worker is added. Only a worker
    /// of this pool that returns to [`Core::next`] right after may call it.
    pub(crate) fn push_for_self(&self, lane: usize, item: T) {
        let _ = self.push_to_lane(self.wrap(lane), item);
    }

    /// Records whether tasks are left in the head (called under the head lock), writing the
    /// hint only when it changes.
    #[inline]
    fn note_head_waits(&self, waits: bool) {
        if self.head_waits.load(Ordering::Relaxed) != waits {
            self.head_waits.store(waits, Ordering::Relaxed);
        }
    }

    /// The worker's step: takes the next item, or pulls one from `siblings`, or parks until
    /// there is one, or says to exit (W1-W12). `lane_here` gives the lane of the CPU the worker
    /// runs on (wrapped to the lanes there are), where it counts itself while it spins. It looks
    /// at the worker's held task (H3) only if `held`: the worker loop (`pool/worker.rs`) takes
    /// that task itself first ([`Core::take_held_first`]) and passes `false` when it looked.
    pub(crate) fn next(
        &self,
        slot: &mut WorkerSlot,
        lane_here: impl Fn() -> usize,
        siblings: &mut impl Siblings<T>,
        held: bool,
    ) -> Next<T> {
        // (W1) Back at the queue: leave `coming`, and write `HELP` as this worker's own, for
        // the first hand-on's look at the lanes (W4).
        let mut arrived = slot.coming;
        if arrived {
            let mut synced = self.lock();
            synced.arrive(slot);
            self.write_help(&synced);
        }
        // (H3) The task this worker's last task queued, which it holds, comes first.
        if held {
            if let Some(item) = self.take_held(slot, &lane_here) {
                return Next::Run {
                    item,
                    grow: Grow::No,
                };
            }
        }
        let mut spun = false;
        // Whether this worker has looked at the others' held tasks after its spin (H5).
        let mut took_over = false;
        // Whether this worker has asked its siblings for a task since its queue ran empty.
        let mut pulled = false;
        // The lane whose CPU this worker spins on, while it spins.
        let mut spinning: Option<&Lane<T>> = None;
        // A task handed over through the mailbox while this worker spun.
        let mut handed = None;
        loop {
            let mut head = self.lock_head();
            head.executed += std::mem::take(&mut slot.ran);
            if let Some(lane) = spinning.take() {
                // (W7) Back from spinning: a last look for the pushes that left their item to
                // the spinners (P4).
                self.end_spin(lane);
            }
            if let Some(item) = handed.take() {
                // (W6) Behind whatever another worker claimed for the head meanwhile, mostly
                // queued before it (`pool/README.md`, "Order", says when not).
                head.queue.push_back(item);
            }
            // (W2, W3) The oldest item of the head, or of a lane moved to it in one swap: no
            // pusher ever takes the head lock.
            if let Some(item) = self.take(&mut head) {
                slot.pulled = false;
                // (H8) With others waiting behind it and nobody idle, its share of them too.
                self.hold_ahead(&mut head, slot);
                // (W4)
                let (item, grow) = self.hand_on(head, item, arrived);
                return Next::Run { item, grow };
            }
            self.note_head_waits(false);
            // (O3) Empty: the pool no longer offers work to its siblings.
            siblings.drained();
            // (H5) Empty after a spin: a task that another worker held throughout the spin.
            if spun && !took_over {
                took_over = true;
                if let Some(item) = self.take_over_held(slot) {
                    slot.pulled = false;
                    return Next::Run {
                        item,
                        grow: Grow::No,
                    };
                }
            }
            // (O4) Pull: after spinning, or at once when the last task was pulled too (the
            // work is at a sibling; spinning on an empty queue would only delay it).
            if !pulled && (spun || slot.pulled || self.spin_rounds == 0) {
                pulled = true;
                drop(head);
                if let Some(item) = siblings.pull() {
                    slot.pulled = true;
                    return Next::Run {
                        item,
                        grow: Grow::No,
                    };
                }
                slot.pulled = false;
                continue;
            }
            // (W5) Empty: spin a little before parking, once per empty queue, without the pool
            // lock. Counted in the hint, so a push meanwhile leaves its item to us (P4); we
            // look again after a last look's fence (W7), so it is never stranded. After
            // shutdown this only delays the exit by one spin.
            if !spun && self.spin_rounds > 0 {
                spun = true;
                // (H4) What the others hold as the spin begins.
                self.mark_held(slot);
                let at = self.wrap(lane_here());
                let (lane, owner) = self.start_spin(at);
                spinning = Some(lane);
                drop(head);
                self.spin(owner);
                if owner {
                    // (W6) Close the mailbox, or take the task handed over.
                    handed = self.mailbox.close();
                }
                continue;
            }
            let synced = self.lock();
            // (W8) Empty and shut down: leave, unless the last look finds a task that a push
            // left to this worker.
            if synced.shutdown {
                if self.leave_if_empty(head, synced) {
                    return Next::Exit;
                }
                continue;
            }
            // (W9-W12) Park until woken, or retire.
            match self.park(head, synced, slot) {
                Parked::Woken(mut synced) => {
                    slot.wakes += 1;
                    synced.arrive(slot);
                    self.write_help(&synced);
                    arrived = true;
                    // Woken, perhaps by a sibling's kick (O2): a new look at the siblings.
                    pulled = false;
                }
                Parked::Found => {}
                Parked::Retired => return Next::Exit,
            }
        }
    }
}
