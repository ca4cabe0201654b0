//! The pool's concurrent core: the pool's queue in two parts (a tail that pushers fill under the
//! pool lock, a head that workers take from under the head lock), the park/wake protocol,
//! on-demand worker creation, idle retirement and shutdown.
//!
//! The protocol is written out as numbered steps in `pool/README.md`; the step numbers appear
//! below as `(Pn)`. This file uses only `crate::sync` and `std` types that do not synchronize,
//! so that `crates/podq-loom` compiles it against loom and checks it there.
//!
//! The core never starts a thread itself: [`Core::push`] and [`Core::next`] say when the caller
//! must start one ([`Push::Spawn`], `Next::Run { grow: Grow::Spawn, .. }`), so that the loom
//! models can start loom threads and the pool can start named, pinned OS threads.
//!
//! Lock order: the head lock before the pool lock. Pushers take only the pool lock.

use std::time::{Duration, Instant};

use super::queue::{LockCounts, Queue};
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, CachePadded, Condvar, Mutex, MutexGuard};

/// Where one idle worker sleeps, and the flag that says it was woken on purpose.
#[derive(Debug)]
pub(crate) struct Parker {
    /// Used with the pool lock only; notified after the lock is released.
    condvar: Condvar,
    /// L: set by the thread that takes this parker off the idle stack (a pusher, a worker
    /// handing on work, or shutdown), cleared by the worker before it parks. Read
    /// and written only under the pool lock, so `Relaxed` is enough: the lock orders every
    /// access. It is atomic only to be `Sync`.
    notified: AtomicBool,
}

impl Parker {
    fn new() -> Self {
        Self {
            condvar: Condvar::new(),
            notified: AtomicBool::new(false),
        }
    }

    fn is_notified(&self) -> bool {
        self.notified.load(Ordering::Relaxed)
    }

    fn set_notified(&self, notified: bool) {
        self.notified.store(notified, Ordering::Relaxed);
    }
}

/// What one worker thread keeps between calls to [`Core::next`].
#[derive(Debug)]
pub(crate) struct WorkerSlot {
    /// The worker's own parker; on the idle stack while it sleeps.
    parker: Arc<Parker>,
    /// Whether this worker is counted in [`Synced::coming`] (started or woken, and not yet
    /// arrived at the queue).
    coming: bool,
}

impl WorkerSlot {
    /// The slot of a worker that a [`Push::Spawn`] or a `Next::Run { grow: Grow::Spawn, .. }`
    /// asked for: it is counted as coming until its first [`Core::next`].
    pub(crate) fn new() -> Self {
        Self {
            parker: Arc::new(Parker::new()),
            coming: true,
        }
    }
}

/// The head of the pool's queue: the oldest waiting tasks, under the head lock. Only workers
/// (and cancel, the watchdog and stats) take it; pushers never do.
#[derive(Debug)]
pub(crate) struct Head<T> {
    /// H: the oldest waiting tasks; every task here was queued before every task in the tail.
    queue: Queue<T>,
    /// H: head lock acquisitions and contended acquisitions.
    lock: LockCounts,
}

/// Everything under the pool lock: the tail of the queue and the workers' state.
///
/// `repr(C)`, hot fields first: a push touches the lock word, `tail`, `spinning`, `lock` and
/// `idle`'s length on the first cache line of the pool lock.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Synced<T> {
    /// L: the newest waiting tasks, in queueing order; workers move them to the head in one
    /// swap when the head is empty (P4r).
    tail: Queue<T>,
    /// L: workers that found the queue empty and are spinning (P6s) before they park. A push
    /// that leaves no more items in the tail than spinners wakes nobody: a spinner takes it.
    spinning: usize,
    /// L: pool lock acquisitions and contended acquisitions.
    lock: LockCounts,
    /// L: the parkers of idle workers that nobody has woken yet, most recently parked last.
    /// Pushes wake the last one (LIFO, like the kernel's `idle_list`), so the workers at the
    /// bottom stay idle long enough to retire.
    idle: Vec<Arc<Parker>>,
    /// L: live workers: running, parked, or started and not yet running.
    workers: usize,
    /// L: workers started or woken that have not yet come back to the queue. While one is
    /// coming, no further worker is started: like the kernel's single manager, creation is a
    /// chain, one worker at a time.
    coming: usize,
    /// L: set once, when the pool's last user lets go; workers then exit when the queue is
    /// empty.
    shutdown: bool,
    /// L: whether the stall watchdog watches this pool (W1); cleared when it finds the queue
    /// empty.
    watched: bool,
    /// L: [`Core::started`] when the watchdog last looked (W2), or when it was asked to (W1).
    watched_started: u64,
    /// L: workers ever started.
    workers_created: u64,
    /// L: workers that retired after `idle_timeout`.
    workers_retired: u64,
}

impl<T> Synced<T> {
    /// "need_more_worker": `waiting` tasks wait (head and tail), more than spinners can take,
    /// nobody is idle or on the way, and the pool may grow.
    fn need_more_workers(&self, waiting: usize, max_workers: usize) -> bool {
        waiting > self.spinning
            && self.idle.is_empty()
            && self.coming == 0
            && self.workers < max_workers
    }

    /// Whether a worker that leaves tasks behind in the head must take the pool lock (P4h): an
    /// idle worker could be woken, or the pool could grow or be watched.
    fn wants_help(&self, max_workers: usize, eager_workers: usize) -> bool {
        !self.idle.is_empty()
            || (self.coming == 0
                && self.workers < max_workers
                && (self.workers < eager_workers || !self.watched))
    }

    /// Counts one more worker, which the caller must start.
    fn add_worker(&mut self) {
        self.workers += 1;
        self.coming += 1;
        self.workers_created += 1;
    }

    /// Takes the most recently parked idle worker off the idle stack, marks it woken and counts
    /// it as coming; the caller notifies its condvar after unlocking (P2, P3).
    fn wake_one(&mut self) -> Option<Arc<Parker>> {
        let parker = self.idle.pop()?;
        parker.set_notified(true);
        self.coming += 1;
        Some(parker)
    }

    /// A coming worker reached the queue.
    fn arrive(&mut self, slot: &mut WorkerSlot) {
        if slot.coming {
            slot.coming = false;
            self.coming -= 1;
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
    /// The item waits for a busy, spinning or coming worker (or the pool is at `max_workers`).
    Queued,
    /// The item waits with every worker busy and the pool at its eager size: the caller must
    /// have the stall watchdog watch the pool (W1), which adds a worker if nothing is taken from
    /// the queue for a while (the busy workers may be blocked).
    Watch,
}

/// More workers wanted: what [`Core::push`] and [`Core::next`] ask of their caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grow {
    /// Nothing to do.
    No,
    /// Start one worker now (and call [`Core::spawn_failed`] if that fails).
    Spawn,
    /// Have the stall watchdog watch the pool (W1).
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

/// A snapshot of a pool's state, for stats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// Live workers.
    pub(crate) workers: usize,
    /// Workers parked and not yet woken.
    pub(crate) idle_workers: usize,
    /// Workers ever started.
    pub(crate) workers_created: u64,
    /// Workers that retired when idle.
    pub(crate) workers_retired: u64,
    /// Tasks waiting, in the head and the tail.
    pub(crate) queue_depth: usize,
    /// Acquisitions of the pool lock and the head lock together, and how many found the lock
    /// held.
    pub(crate) lock: LockCounts,
}

/// One pool's queue and workers behind two locks: the pool lock (pushers and the workers'
/// state) and the head lock (workers taking tasks).
#[derive(Debug)]
pub(crate) struct Core<T> {
    /// The head lock and the head of the queue. On lines of their own: workers take tasks here
    /// without touching the lines that pushers write.
    head: CachePadded<Mutex<Head<T>>>,
    /// A: tasks taken from the queue by workers: the pool's progress, which the stall check
    /// (W1-W3) watches. Written only under the head lock, read under the pool lock by the
    /// watchdog; `Relaxed`: the head lock orders the writes, and the watchdog only compares
    /// two of its own reads. On the head lock's lines (the same `CachePadded` would not fit a
    /// field outside the mutex), so it is kept beside them.
    started: AtomicU64,
    /// The pool lock: the tail of the queue and the workers' state. On lines of its own, so
    /// that pushers and workers share nothing else with it.
    synced: CachePadded<Mutex<Synced<T>>>,
    /// Used with the pool lock: notified when `workers` drops to 0.
    exited: Condvar,
    /// I: the most workers this pool runs at once (at least 1).
    max_workers: usize,
    /// I: how many workers are started as soon as work waits with every worker busy; past
    /// this, a new worker waits for the stall watchdog (W1-W3).
    eager_workers: usize,
    /// I: how long a worker stays idle before it retires.
    idle_timeout: Duration,
    /// I: backoff rounds a worker spins (P6s) before it parks; 0 parks at once.
    spin_rounds: u32,
    /// A: the tail's length, stored under the pool lock by pushes while a worker spins (and
    /// cleared when a spinner starts or a worker empties the tail), read without it by spinning
    /// workers (P6s). Only a hint that work may be there: the decision is always taken again
    /// under the locks, so `Relaxed` is enough. On lines of its own: spinners read it in a loop,
    /// which must not pull the pool lock's line from the thread holding it.
    tail_hint: CachePadded<AtomicUsize>,
    /// A: [`Synced::wants_help`], stored under the pool lock whenever it changes, read under
    /// the head lock by a worker that leaves tasks behind in the head (P4h). `Relaxed`: a
    /// worker parks (making it true) holding the head lock, so a later pop under that lock sees
    /// it; the other changes only decide whether the pool grows a little sooner, and the
    /// decision is taken again under the pool lock. On lines of its own: every pop reads it, and
    /// it changes only when workers park, wake, come, go or are watched.
    help: CachePadded<AtomicBool>,
}

/// How a pool grows and waits: fixed when the pool is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The most workers at once (raised to 1 if 0).
    pub(crate) max_workers: usize,
    /// Workers started without waiting (raised to 1 if 0; at most `max_workers`).
    pub(crate) eager_workers: usize,
    /// How long a worker stays idle before it retires.
    pub(crate) idle_timeout: Duration,
    /// Backoff rounds a worker spins before it parks.
    pub(crate) spin_rounds: u32,
}

/// What a worker that leaves tasks in the head does for them (P4h).
enum Help {
    /// Nothing: nobody idle, and the pool may not grow.
    None,
    /// Notify this parker after unlocking.
    Wake(Arc<Parker>),
    /// Start a worker, or have the watchdog watch.
    Grow(Grow),
}

impl<T> Core<T> {
    /// An empty pool with no worker.
    pub(crate) fn new(limits: Limits) -> Self {
        let max_workers = limits.max_workers.max(1);
        Self {
            head: CachePadded::new(Mutex::new(Head {
                queue: Queue::new(),
                lock: LockCounts::default(),
            })),
            started: AtomicU64::new(0),
            synced: CachePadded::new(Mutex::new(Synced {
                tail: Queue::new(),
                spinning: 0,
                lock: LockCounts::default(),
                idle: Vec::new(),
                workers: 0,
                coming: 0,
                shutdown: false,
                watched: false,
                watched_started: 0,
                workers_created: 0,
                workers_retired: 0,
            })),
            exited: Condvar::new(),
            max_workers,
            eager_workers: limits.eager_workers.clamp(1, max_workers),
            idle_timeout: limits.idle_timeout,
            spin_rounds: limits.spin_rounds,
            tail_hint: CachePadded::new(AtomicUsize::new(0)),
            // An empty pool can grow.
            help: CachePadded::new(AtomicBool::new(true)),
        }
    }

    /// Decides how the pool grows when `waiting` tasks wait (P2', P4h): start a worker while
    /// below the eager size, else have the watchdog look (once), else nothing. Changes the
    /// state (and so `help`) only when it returns something other than `Grow::No`.
    fn grow(&self, synced: &mut Synced<T>, waiting: usize) -> Grow {
        if !synced.need_more_workers(waiting, self.max_workers) {
            return Grow::No;
        }
        if synced.workers < self.eager_workers {
            synced.add_worker();
            return Grow::Spawn;
        }
        if synced.watched {
            return Grow::No;
        }
        synced.watched = true;
        synced.watched_started = self.started.load(Ordering::Relaxed);
        Grow::Watch
    }

    /// Stores [`Synced::wants_help`] in the `help` hint, if it changed. Called under the pool
    /// lock after every change to the idle stack, `coming`, `workers` or `watched`.
    fn publish(&self, synced: &Synced<T>) {
        let help = synced.wants_help(self.max_workers, self.eager_workers);
        if self.help.load(Ordering::Relaxed) != help {
            self.help.store(help, Ordering::Relaxed);
        }
    }

    /// Takes the pool lock, counting the acquisition and whether it was contended.
    fn lock(&self) -> MutexGuard<'_, Synced<T>> {
        lock_counted(&self.synced, |synced| &mut synced.lock)
    }

    /// Takes the head lock, counting the acquisition and whether it was contended.
    fn lock_head(&self) -> MutexGuard<'_, Head<T>> {
        lock_counted(&self.head, |head| &mut head.lock)
    }

    /// Queues `item` at the tail and wakes or asks for a worker (P1-P3).
    pub(crate) fn push(&self, item: T) -> Push {
        let mut synced = self.lock();
        // (P1) The item is in the tail before anyone is woken, under the lock that every
        // worker holds when it decides to park: a worker either sees it, or is on the idle
        // stack already and is woken below.
        synced.tail.push_back(item);
        // (P2s) No more items in the tail than spinning workers: one of them takes it (each
        // looks under the locks before it parks, P6s).
        if synced.spinning > 0 {
            self.tail_hint.store(synced.tail.len(), Ordering::Relaxed);
            if synced.tail.len() <= synced.spinning {
                return Push::Queued;
            }
        }
        // (P2) Wake the most recently parked idle worker, if any.
        if let Some(parker) = synced.wake_one() {
            self.publish(&synced);
            drop(synced);
            // (P3) Notify outside the lock; `notified` was set under it, so the worker cannot
            // miss it even if it has not started waiting yet.
            parker.condvar.notify_one();
            return Push::Woken;
        }
        // (P2') Nobody idle: start a worker unless one is on its way, or, at the eager size,
        // have the watchdog look. This ignores `shutdown` on purpose: an item queued to a pool
        // whose workers have all exited still runs. Tasks in the head are not counted: a
        // worker that moved them there is running, and hands them on itself (P4h).
        let waiting = synced.tail.len();
        let grow = self.grow(&mut synced, waiting);
        if grow != Grow::No {
            self.publish(&synced);
        }
        match grow {
            Grow::Spawn => Push::Spawn,
            Grow::Watch => Push::Watch,
            Grow::No => Push::Queued,
        }
    }

    /// Queues `item` at the tail for the calling worker itself, which is between two items and
    /// takes the oldest one next (P1w): nobody is woken and no worker is added. Only a worker
    /// of this pool that returns to [`Core::next`] right after may call it.
    pub(crate) fn push_for_self(&self, item: T) {
        let mut synced = self.lock();
        synced.tail.push_back(item);
        if synced.spinning > 0 {
            self.tail_hint.store(synced.tail.len(), Ordering::Relaxed);
        }
    }

    /// The worker's step: takes the next item, or parks until there is one, or says to exit
    /// (P4-P8).
    pub(crate) fn next(&self, slot: &mut WorkerSlot) -> Next<T> {
        if slot.coming {
            let mut synced = self.lock();
            synced.arrive(slot);
            self.publish(&synced);
        }
        let mut spun = false;
        let mut spinning = false;
        loop {
            let mut head = self.lock_head();
            // (P4) Take the oldest item from the head: no pusher contends for this lock. A
            // worker back from spinning first stops counting as a spinner, under the pool lock.
            if !spinning {
                if let Some(item) = head.queue.pop_front() {
                    return self.started(head, item);
                }
            }
            let mut synced = self.lock();
            if spinning {
                spinning = false;
                synced.spinning -= 1;
            }
            // (P4r) The head is empty (or a spinner is back; another worker may have filled
            // it meanwhile): move the whole tail to it in one swap, and take the oldest item.
            // Everything in the tail is newer than anything that was in the head, so the order
            // stays FIFO.
            if head.queue.is_empty() && !synced.tail.is_empty() {
                head.queue.refill_from(&mut synced.tail);
                if synced.spinning > 0 {
                    self.tail_hint.store(0, Ordering::Relaxed);
                }
            }
            if let Some(item) = head.queue.pop_front() {
                drop(synced);
                return self.started(head, item);
            }
            // (P5) Empty and shut down: leave.
            if synced.shutdown {
                drop(head);
                self.leave(synced);
                return Next::Exit;
            }
            // (P6s) Empty: spin a little before parking, once per empty queue. Counted in
            // `spinning` under the pool lock, so a push meanwhile leaves its item to us (P2s);
            // we take the locks again and look before parking, so it is never stranded.
            if !spun && self.spin_rounds > 0 {
                spun = true;
                spinning = true;
                synced.spinning += 1;
                self.tail_hint.store(0, Ordering::Relaxed);
                drop(synced);
                drop(head);
                self.spin();
                continue;
            }
            // (P6-P8) Park until woken, or retire.
            let Some(mut synced) = self.park(head, synced, slot) else {
                return Next::Exit;
            };
            synced.arrive(slot);
            self.publish(&synced);
        }
    }

    /// Counts a task taken from the head and, if more wait there, hands them on (P4h): wakes
    /// an idle worker, or asks for one more worker (the kernel's need_more_worker chain), so
    /// that a batch moved to the head does not wait for this worker alone and items that
    /// block do not starve the ones behind them. Releases the head lock.
    fn started(&self, head: MutexGuard<'_, Head<T>>, item: T) -> Next<T> {
        // Only written under the head lock: a plain read and store is enough.
        let started = self.started.load(Ordering::Relaxed);
        self.started.store(started + 1, Ordering::Relaxed);
        let waiting = head.queue.len();
        if waiting == 0 || !self.help.load(Ordering::Relaxed) {
            return Next::Run {
                item,
                grow: Grow::No,
            };
        }
        let mut synced = self.lock();
        let tail = synced.tail.len();
        let help = match synced.wake_one() {
            Some(parker) => Help::Wake(parker),
            None => match self.grow(&mut synced, waiting + tail) {
                Grow::No => Help::None,
                grow => Help::Grow(grow),
            },
        };
        if !matches!(help, Help::None) {
            self.publish(&synced);
        }
        drop(synced);
        drop(head);
        let grow = match help {
            Help::None => Grow::No,
            Help::Wake(parker) => {
                parker.condvar.notify_one();
                Grow::No
            }
            Help::Grow(grow) => grow,
        };
        Next::Run { item, grow }
    }

    /// Parks the worker of `slot` on the idle stack until a pusher, a worker handing on work
    /// (P4h) or shutdown wakes it (`Some`, with the pool lock held again), or retires it after
    /// `idle_timeout` (`None`). Called with both locks held and the head and tail empty.
    fn park<'a>(
        &'a self,
        head: MutexGuard<'a, Head<T>>,
        mut synced: MutexGuard<'a, Synced<T>>,
        slot: &mut WorkerSlot,
    ) -> Option<MutexGuard<'a, Synced<T>>> {
        // (P6) Go on the idle stack while still holding the lock that P1 takes: a push that
        // comes after this finds the parker and sets `notified`; one that came before left its
        // item in the tail, which P4r saw. The head lock is held until the parker is there, so
        // a worker that later leaves tasks in the head sees `help` (P4h).
        slot.parker.set_notified(false);
        synced.idle.push(Arc::clone(&slot.parker));
        self.publish(&synced);
        drop(head);
        let deadline = Instant::now().checked_add(self.idle_timeout);
        let mut may_retire = deadline.is_some();
        loop {
            // (P7) Sleep; the condvar releases the lock and takes it again. `notified` is the
            // condition, so a spurious wake-up or a notify that came early changes nothing.
            if slot.parker.is_notified() {
                slot.coming = true;
                return Some(synced);
            }
            if !may_retire {
                synced = slot.parker.condvar.wait(synced);
                continue;
            }
            let left = deadline.map_or(Duration::ZERO, |d| {
                d.saturating_duration_since(Instant::now())
            });
            let (again, timed_out) = slot.parker.condvar.wait_timeout(synced, left);
            synced = again;
            if !timed_out || slot.parker.is_notified() {
                continue;
            }
            // (P8) Idle for `idle_timeout` and not woken: retire if another worker remains;
            // the last worker stays, parked without a timeout, while the pool is in use.
            if synced.workers > 1 {
                synced.idle.retain(|p| !Arc::ptr_eq(p, &slot.parker));
                synced.workers -= 1;
                synced.workers_retired += 1;
                self.publish(&synced);
                return None;
            }
            may_retire = false;
        }
    }

    /// Spins with backoff until the tail looks non-empty or the rounds are spent (P6s).
    fn spin(&self) {
        crate::sync::spin_until(self.spin_rounds, || {
            self.tail_hint.load(Ordering::Relaxed) > 0
        });
    }

    /// The stall watchdog's look at a watched pool (W2-W3): `Grow::Spawn` when items waited
    /// since the last look and none was taken (every worker may be blocked), so the caller
    /// must start one worker; `Grow::Watch` to look again later; `Grow::No` when the queue is
    /// empty and the pool is no longer watched.
    pub(crate) fn check_stall(&self) -> Grow {
        let head = self.lock_head();
        let mut synced = self.lock();
        let waiting = head.queue.len() + synced.tail.len();
        drop(head);
        if waiting == 0 {
            // (W3) Nothing waits: stop watching; the next push past the eager size watches
            // again (W1).
            synced.watched = false;
            self.publish(&synced);
            return Grow::No;
        }
        // (W2) Items wait: if none was taken since the last look and nobody idle, spinning or
        // coming could take one, add a worker (the busy ones may be blocked).
        let started = self.started.load(Ordering::Relaxed);
        let stalled = synced.watched_started == started;
        synced.watched_started = started;
        if stalled && synced.need_more_workers(waiting, self.max_workers) {
            synced.add_worker();
            self.publish(&synced);
            return Grow::Spawn;
        }
        Grow::Watch
    }

    /// Counts one worker out; the last one out after shutdown wakes [`Core::wait_for_exit`].
    fn leave(&self, mut synced: MutexGuard<'_, Synced<T>>) {
        synced.workers -= 1;
        self.publish(&synced);
        let last = synced.workers == 0;
        drop(synced);
        if last {
            self.exited.notify_all();
        }
    }

    /// Undoes the worker that the last [`Push::Spawn`] or `Next::Run { grow: Grow::Spawn, .. }`
    /// asked for, when its thread could not be started.
    ///
    /// Returns `true` when the pool is then left with waiting items and no worker at all: the
    /// caller must run them itself ([`Core::pop`]) so that nothing queued is lost.
    pub(crate) fn spawn_failed(&self) -> bool {
        let head = self.lock_head();
        let mut synced = self.lock();
        synced.workers_created -= 1;
        synced.coming -= 1;
        let orphaned = synced.workers == 1 && !(head.queue.is_empty() && synced.tail.is_empty());
        drop(head);
        self.leave(synced);
        orphaned
    }

    /// Takes the oldest item without being a worker (see [`Core::spawn_failed`]).
    pub(crate) fn pop(&self) -> Option<T> {
        let mut head = self.lock_head();
        if let Some(item) = head.queue.pop_front() {
            return Some(item);
        }
        self.lock().tail.pop_front()
    }

    /// Takes out the oldest waiting item for which `matches` is true (for cancel).
    pub(crate) fn remove_if(&self, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        let mut head = self.lock_head();
        if let Some(item) = head.queue.remove_if(&mut matches) {
            return Some(item);
        }
        self.lock().tail.remove_if(matches)
    }

    /// Starts shutdown (S1-S2): from now on workers exit once the queue is empty.
    pub(crate) fn shutdown(&self) {
        let mut synced = self.lock();
        // (S1) Under the pool lock: a worker deciding to park (P6) either sees `shutdown` first
        // (P5) or is on the idle stack and is woken here.
        synced.shutdown = true;
        let idle = std::mem::take(&mut synced.idle);
        for parker in &idle {
            parker.set_notified(true);
        }
        synced.coming += idle.len();
        self.publish(&synced);
        drop(synced);
        // (S2) Wake every idle worker outside the lock.
        for parker in &idle {
            parker.condvar.notify_one();
        }
    }

    /// Blocks until every worker has exited (S3). Call after [`Core::shutdown`], never from a
    /// worker of this pool.
    pub(crate) fn wait_for_exit(&self) {
        let mut synced = self.synced.lock();
        while synced.workers > 0 {
            synced = self.exited.wait(synced);
        }
    }

    /// Holds the pool lock until the guard drops, without counting it (tests use it to make
    /// pushers find the lock held).
    #[cfg(test)]
    pub(crate) fn hold_lock(&self) -> MutexGuard<'_, Synced<T>> {
        self.synced.lock()
    }

    /// The state now, without counting the lock acquisitions this takes.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let head = self.head.lock();
        let synced = self.synced.lock();
        Snapshot {
            workers: synced.workers,
            idle_workers: synced.idle.len(),
            workers_created: synced.workers_created,
            workers_retired: synced.workers_retired,
            queue_depth: head.queue.len() + synced.tail.len(),
            lock: head.lock.plus(synced.lock),
        }
    }
}

/// Locks `mutex`, trying without blocking first, and records in the counts that `counts` finds
/// in the locked data whether another thread held it.
fn lock_counted<S>(
    mutex: &Mutex<S>,
    counts: impl FnOnce(&mut S) -> &mut LockCounts,
) -> MutexGuard<'_, S> {
    let (mut guard, contended) = match mutex.try_lock() {
        Some(guard) => (guard, false),
        None => (mutex.lock(), true),
    };
    counts(&mut guard).record(contended);
    guard
}
