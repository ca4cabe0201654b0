//! The pool's concurrent core: the pool's queue (a tail in per-CPU lanes that pushers fill
//! under their lane's lock, a head that workers take from under the head lock), the park/wake
//! protocol, on-demand worker creation, idle retirement and shutdown.
//!
//! The protocol is written out as numbered steps in `pool/README.md`; the step numbers appear
//! below as `(Pn)`. This file uses only `crate::sync` and `std` types that do not synchronize,
//! so that `crates/podq-loom` compiles it against loom and checks it there; the one exception,
//! `Lane::spinners`, is a heuristic whose every value is safe (see there).
//!
//! The core never starts a thread itself: [`Core::push`] and [`Core::next`] say when the caller
//! must start one ([`Push::Spawn`], `Next::Run { grow: Grow::Spawn, .. }`), so that the loom
//! models can start loom threads and the pool can start named, pinned OS threads.
//!
//! Lock order: the head lock, then a lane lock, then the pool lock. A pusher holds one lock at
//! a time: the mailbox's slot lock (P1m), or its lane's, then, only when the hint says so, the
//! pool lock. A spinner takes the slot lock holding no other.

use std::time::{Duration, Instant};

use super::mailbox::Mailbox;
use super::queue::{LockCounts, Queue};
use crate::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::{Arc, CachePadded, Condvar, Mutex, MutexGuard};
// Std's, on purpose, also under loom: only for `Lane::spinners`.
use std::sync::atomic::AtomicUsize as UnmodelledAtomicUsize;

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
    /// Tasks this worker ran to the end since it last took the head lock, where they are added
    /// to [`Head::executed`]: counting there costs no write to a line that another worker
    /// also writes.
    ran: u64,
}

impl WorkerSlot {
    /// The slot of a worker that a [`Push::Spawn`] or a `Next::Run { grow: Grow::Spawn, .. }`
    /// asked for: it is counted as coming until its first [`Core::next`].
    pub(crate) fn new() -> Self {
        Self {
            parker: Arc::new(Parker::new()),
            coming: true,
            ran: 0,
        }
    }

    /// Counts a task this worker ran to the end; the pool's count gets it at the worker's next
    /// [`Core::next`].
    pub(crate) fn ran_one(&mut self) {
        self.ran += 1;
    }
}

/// The head of the pool's queue: the oldest waiting tasks, under the head lock. Only workers
/// (and cancel, the watchdog and stats) take it; pushers never do.
#[derive(Debug)]
pub(crate) struct Head<T> {
    /// H: tasks moved here from one lane in one swap (P4r), in that lane's order.
    queue: Queue<T>,
    /// H: head lock acquisitions and contended acquisitions.
    lock: LockCounts,
    /// H: the lane the next refill looks at first, so that the lanes take turns.
    next_lane: usize,
    /// H: tasks taken from the queue by workers: the pool's progress, which the stall check
    /// (W1-W3) watches. Beside the head lock's word, so that a pop writes one line.
    started: u64,
    /// H: tasks that workers ran to the end, added from their [`WorkerSlot`]s.
    executed: u64,
}

/// What one lane's lock guards.
#[derive(Debug)]
pub(crate) struct LaneTasks<T> {
    /// Q: the lane's waiting tasks, in queueing order.
    queue: Queue<T>,
    /// Q: lane lock acquisitions and contended acquisitions.
    lock: LockCounts,
}

/// One lane of the pool's tail: where the pushers of one CPU of the pod (or of a few, on a pod
/// with more CPUs than [`Limits::lanes`]) queue their tasks.
#[derive(Debug)]
pub(crate) struct Lane<T> {
    /// The lane lock and the lane's tasks.
    tasks: Mutex<LaneTasks<T>>,
    /// A (Q): the lane's length, stored under the lane lock after every change. Read without
    /// the lock: by spinners, by refills before they lock, for statistics, and after a `SeqCst`
    /// fence by a worker about to stop looking for work (P6f), which is what makes a lost
    /// wake-up impossible (see `pool/README.md`).
    len: AtomicUsize,
    /// A: spinners (P6s) whose CPU pushes to this lane, as they counted themselves in when they
    /// began to spin. A pusher on such a CPU is running, so those spinners are not: it does
    /// not leave its task to them (P2s). Only a heuristic, which only ever makes a push wake
    /// more: any value it is read with is safe (the hint's count is what the protocol rests
    /// on). So it is a plain `std` atomic, which loom does not interleave: it would multiply
    /// the models' states without a wrong outcome to find.
    spinners: UnmodelledAtomicUsize,
}

impl<T> Lane<T> {
    fn new() -> Self {
        Self {
            tasks: Mutex::new(LaneTasks {
                queue: Queue::new(),
                lock: LockCounts::default(),
            }),
            len: AtomicUsize::new(0),
            spinners: UnmodelledAtomicUsize::new(0),
        }
    }

    /// Takes the lane lock, counting the acquisition and whether it was contended.
    fn lock(&self) -> MutexGuard<'_, LaneTasks<T>> {
        lock_counted(&self.tasks, |tasks| &mut tasks.lock)
    }

    /// The lane's length as last stored (a hint unless read after a `SeqCst` fence, P6f).
    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

/// The workers' state, under the pool lock.
#[derive(Debug)]
pub(crate) struct Synced {
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
    /// L: [`Head::started`] when the watchdog last looked (W2); `None` from W1 until its first
    /// look.
    watched_started: Option<u64>,
    /// L: workers ever started.
    workers_created: u64,
    /// L: workers that retired after `idle_timeout`.
    workers_retired: u64,
}

/// The `hint` bit that says "a push must take the pool lock": [`Synced::wants_help`].
const HELP: usize = 1;

/// One spinning worker in the `hint` word: the bits above [`HELP`] count the workers that
/// found the queue empty and spin (P6s) before they park. A push that leaves no more items in
/// its lane than spinners wakes nobody: a spinner takes it.
const SPINNER: usize = 2;

impl Synced {
    /// "need_more_worker": `waiting` tasks wait, more than the `spinners` can take, nobody is
    /// idle or on the way, and the pool may grow.
    fn need_more_workers(&self, waiting: usize, spinners: usize, max_workers: usize) -> bool {
        waiting > spinners && self.idle.is_empty() && self.coming == 0 && self.workers < max_workers
    }

    /// Whether a push, or a worker that leaves tasks behind in the head (P4h), must take the
    /// pool lock: an idle worker could be woken, or the pool could grow or be watched. When
    /// false, nobody is idle and at least one worker is running, spinning or on its way, and
    /// each of them looks at every lane before it stops (P6f).
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
    /// The item went straight to a spinning worker, through the mailbox (P1m).
    Handed,
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
    /// Tasks that workers ran to the end (counted when the worker comes back for the next).
    pub(crate) executed: u64,
    /// Tasks waiting, in the head and the lanes.
    pub(crate) queue_depth: usize,
    /// Acquisitions of the pool lock, the head lock and the lane locks together, and how many
    /// found the lock held.
    pub(crate) lock: LockCounts,
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
    lanes: Box<[CachePadded<Lane<T>>]>,
    /// The spinners' mailbox (P1m, P6m): one spinner at a time waits there for a task that a
    /// pusher hands it directly. On lines of its own.
    mailbox: CachePadded<Mailbox<T>>,
    /// The pool lock: the workers' state. On lines of its own. Pushers take it only when the
    /// `hint` says so.
    synced: CachePadded<Mutex<Synced>>,
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
    /// A: bit [`HELP`] is [`Synced::wants_help`], written under the pool lock whenever it
    /// changes (and always before a worker's last look, P6f); the bits above count spinners
    /// ([`SPINNER`]), which add and remove themselves without a lock. Read without a lock by
    /// pushes after a `SeqCst` fence (P2f), and under the head lock by a worker that leaves
    /// tasks behind in the head (P4h). On lines of its own: every push reads it, and it changes
    /// only when workers spin, park, wake, come, go or are watched.
    hint: CachePadded<AtomicUsize>,
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
    /// Lanes of the tail (raised to 1 if 0): pushers on different lanes never contend.
    pub(crate) lanes: usize,
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

/// How a worker's attempt to park ended (P6-P8).
enum Parked<'a> {
    /// Woken on purpose: the pool lock is held again.
    Woken(MutexGuard<'a, Synced>),
    /// A task came in while it went on the idle stack (P6f): it did not sleep, and looks again.
    Found,
    /// Retired after `idle_timeout` (P8).
    Retired,
}

impl<T> Core<T> {
    /// An empty pool with no worker.
    pub(crate) fn new(limits: Limits) -> Self {
        let max_workers = limits.max_workers.max(1);
        let eager_workers = limits.eager_workers.clamp(1, max_workers);
        Self {
            head: CachePadded::new(Mutex::new(Head {
                queue: Queue::new(),
                lock: LockCounts::default(),
                next_lane: 0,
                started: 0,
                executed: 0,
            })),
            lanes: (0..limits.lanes.max(1))
                .map(|_| CachePadded::new(Lane::new()))
                .collect(),
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
            max_workers,
            eager_workers,
            idle_timeout: limits.idle_timeout,
            spin_rounds: limits.spin_rounds,
            // An empty pool can grow.
            hint: CachePadded::new(AtomicUsize::new(HELP)),
        }
    }

    /// Decides how the pool grows when `waiting` tasks wait (P2', P4h): start a worker while
    /// below the eager size, else have the watchdog look (once), else nothing. Changes the
    /// state (and so the hint) only when it returns something other than `Grow::No`.
    fn grow(&self, synced: &mut Synced, waiting: usize) -> Grow {
        if !synced.need_more_workers(waiting, self.spinners(), self.max_workers) {
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
        synced.watched_started = None;
        Grow::Watch
    }

    /// Sets the hint's [`HELP`] bit to [`Synced::wants_help`], if it changed. Called under the
    /// pool lock after every change to the idle stack, `coming`, `workers` or `watched`.
    fn publish(&self, synced: &Synced) {
        let help = synced.wants_help(self.max_workers, self.eager_workers);
        if (self.hint.load(Ordering::Relaxed) & HELP != 0) != help {
            self.set_help(help);
        }
    }

    /// Writes the [`HELP`] bit (only ever under the pool lock), leaving the spinner count that
    /// spinners change without the lock.
    fn set_help(&self, help: bool) {
        if help {
            self.hint.fetch_or(HELP, Ordering::Relaxed);
        } else {
            self.hint.fetch_and(!HELP, Ordering::Relaxed);
        }
    }

    /// Workers spinning now (P6s), as the hint says.
    fn spinners(&self) -> usize {
        self.hint.load(Ordering::Relaxed) / SPINNER
    }

    /// Spinners in `hint` less those counted on `lane`: the ones a pusher on that lane's CPU
    /// is not keeping off their CPU.
    fn spinners_elsewhere(&self, hint: usize, lane: &Lane<T>) -> usize {
        (hint / SPINNER).saturating_sub(lane.spinners.load(Ordering::Relaxed))
    }

    /// (P6f) A worker's last look before it stops looking for work (parks, exits, or is undone
    /// by `spawn_failed`), called under the pool lock after the change to `synced`: writes the
    /// [`HELP`] bit even if unchanged (the write must be this worker's own), fences (`SeqCst`),
    /// then reads every lane's length. A push stores its lane's length, then fences, then reads
    /// the hint (P2f). Of two `SeqCst` fences one comes first: either the push sees this
    /// worker's hint and acts on it, or this look sees the push's task. Returns whether every
    /// lane looked empty.
    fn last_look_empty(&self, synced: &Synced) -> bool {
        self.set_help(synced.wants_help(self.max_workers, self.eager_workers));
        fence(Ordering::SeqCst);
        self.lanes.iter().all(|lane| lane.len() == 0)
    }

    /// Tasks in the lanes, as last stored (a hint: the lanes are not locked).
    fn lanes_len(&self) -> usize {
        self.lanes.iter().map(|lane| lane.len()).sum()
    }

    /// Takes the pool lock, counting the acquisition and whether it was contended.
    fn lock(&self) -> MutexGuard<'_, Synced> {
        lock_counted(&self.synced, |synced| &mut synced.lock)
    }

    /// Takes the head lock, counting the acquisition and whether it was contended.
    fn lock_head(&self) -> MutexGuard<'_, Head<T>> {
        lock_counted(&self.head, |head| &mut head.lock)
    }

    /// Queues `item` in lane `lane` (wrapped to the lanes there are) and wakes or asks for a
    /// worker if needed (P1-P3).
    pub(crate) fn push(&self, lane: usize, item: T) -> Push {
        // (P1m) A spinner on another CPU owns the mailbox, and nothing waits in this lane that
        // the item could overtake: hand it over, and that is all.
        let lane = lane % self.lanes.len();
        let item = if self.lanes[lane].len() == 0 {
            match self.mailbox.hand(lane, item) {
                Ok(()) => return Push::Handed,
                Err(item) => item,
            }
        } else {
            item
        };
        // (P1) The item is in its lane, and the lane's length stored, before anything else.
        let waiting = self.push_to_lane(lane, item);
        // (P2f) Fence, then read the hint: a worker that stops looking for work stores the
        // hint, fences, then looks at every lane (P6f), so either it sees this item or this
        // push sees its hint.
        fence(Ordering::SeqCst);
        let hint = self.hint.load(Ordering::Relaxed);
        // (P2s) Nobody idle and a worker running, spinning or coming: it takes the item. Or
        // no more items in this lane than spinners on other CPUs: one of them takes it. A
        // spinner on this lane's CPU has been preempted by this pusher, and cannot take the
        // item before the pusher blocks.
        if hint & HELP == 0 || self.spinners_elsewhere(hint, &self.lanes[lane]) >= waiting {
            return Push::Queued;
        }
        let mut synced = self.lock();
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

    /// Queues `item` in lane `lane` for the calling worker itself, which is between two items
    /// and looks at the queue next (P1w): nobody is woken and no worker is added. Only a worker
    /// of this pool that returns to [`Core::next`] right after may call it.
    pub(crate) fn push_for_self(&self, lane: usize, item: T) {
        self.push_to_lane(lane, item);
    }

    /// Appends `item` to lane `lane` (wrapped) and stores the lane's new length, which it
    /// returns.
    fn push_to_lane(&self, lane: usize, item: T) -> usize {
        let lane = &self.lanes[lane % self.lanes.len()];
        let mut tasks = lane.lock();
        tasks.queue.push_back(item);
        let len = tasks.queue.len();
        lane.len.store(len, Ordering::Relaxed);
        len
    }

    /// (P4r) Moves the tasks of one non-empty lane to the (empty) head in one swap, the lanes
    /// taking turns; `false` when every lane was empty.
    fn refill(&self, head: &mut Head<T>) -> bool {
        let lanes = self.lanes.len();
        for k in 0..lanes {
            let at = (head.next_lane + k) % lanes;
            let lane = &self.lanes[at];
            if lane.len() == 0 {
                continue;
            }
            let mut tasks = lane.lock();
            if tasks.queue.is_empty() {
                continue;
            }
            head.queue.refill_from(&mut tasks.queue);
            lane.len.store(0, Ordering::Relaxed);
            head.next_lane = (at + 1) % lanes;
            return true;
        }
        false
    }

    /// The worker's step: takes the next item, or parks until there is one, or says to exit
    /// (P4-P8). `lane_here` gives the lane of the CPU the worker runs on (wrapped to the lanes
    /// there are), where it counts itself while it spins.
    pub(crate) fn next(&self, slot: &mut WorkerSlot, lane_here: impl Fn() -> usize) -> Next<T> {
        if slot.coming {
            let mut synced = self.lock();
            synced.arrive(slot);
            self.publish(&synced);
        }
        let mut spun = false;
        // The lane whose CPU this worker spins on, while it spins.
        let mut spinning: Option<&Lane<T>> = None;
        // A task handed over through the mailbox while this worker spun.
        let mut handed = None;
        loop {
            let mut head = self.lock_head();
            head.executed += std::mem::take(&mut slot.ran);
            if let Some(lane) = spinning.take() {
                // (P6e) Back from spinning: stop counting as a spinner, then make the last
                // look's fence (P6f), so that a push that left its item to the spinners is
                // seen below. The count is in the hint, changed without the pool lock.
                self.hint.fetch_sub(SPINNER, Ordering::Relaxed);
                lane.spinners.fetch_sub(1, Ordering::Relaxed);
                fence(Ordering::SeqCst);
            }
            if let Some(item) = handed.take() {
                // (P6m) Behind whatever another worker moved to the head meanwhile, which was
                // queued before it.
                head.queue.push_back(item);
            }
            // (P4) Take the oldest item from the head: no pusher ever takes this lock.
            if let Some(item) = head.queue.pop_front() {
                return self.started(head, item);
            }
            // (P4r) The head is empty: move one lane's tasks to it in one swap and take the
            // oldest. Each lane keeps its order.
            if self.refill(&mut head) {
                if let Some(item) = head.queue.pop_front() {
                    return self.started(head, item);
                }
            }
            // (P6s) Empty: spin a little before parking, once per empty queue, without the pool
            // lock. Counted in the hint, so a push meanwhile leaves its item to us (P2s); we
            // look again after a last look's fence (P6e), so it is never stranded. After
            // shutdown this only delays the exit by one spin.
            if !spun && self.spin_rounds > 0 {
                spun = true;
                let at = lane_here() % self.lanes.len();
                let lane = &self.lanes[at];
                lane.spinners.fetch_add(1, Ordering::Relaxed);
                spinning = Some(lane);
                self.hint.fetch_add(SPINNER, Ordering::Relaxed);
                // (P6m) Own the mailbox if no other spinner does, and close it (or take the
                // task handed over) before looking again.
                let owner = self.mailbox.open(at);
                drop(head);
                self.spin(owner);
                if owner {
                    handed = self.mailbox.close();
                }
                continue;
            }
            let mut synced = self.lock();
            // (P5) Empty and shut down: leave, unless the last look finds a task that a push
            // left to this worker.
            if synced.shutdown {
                synced.workers -= 1;
                if self.last_look_empty(&synced) {
                    drop(head);
                    self.exited(synced);
                    return Next::Exit;
                }
                synced.workers += 1;
                self.publish(&synced);
                continue;
            }
            // (P6-P8) Park until woken, or retire.
            match self.park(head, synced, slot) {
                Parked::Woken(mut synced) => {
                    synced.arrive(slot);
                    self.publish(&synced);
                }
                Parked::Found => {}
                Parked::Retired => return Next::Exit,
            }
        }
    }

    /// Counts a task taken from the head and, if more wait there, hands them on (P4h): wakes
    /// an idle worker, or asks for one more worker (the kernel's need_more_worker chain), so
    /// that a batch moved to the head does not wait for this worker alone and items that
    /// block do not starve the ones behind them. Releases the head lock.
    fn started(&self, mut head: MutexGuard<'_, Head<T>>, item: T) -> Next<T> {
        head.started += 1;
        let waiting = head.queue.len();
        if waiting == 0 || self.hint.load(Ordering::Relaxed) & HELP == 0 {
            return Next::Run {
                item,
                grow: Grow::No,
            };
        }
        let mut synced = self.lock();
        let help = match synced.wake_one() {
            Some(parker) => Help::Wake(parker),
            None => match self.grow(&mut synced, waiting + self.lanes_len()) {
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
    /// (P4h) or shutdown wakes it, or retires it after `idle_timeout`. Called with both locks
    /// held, the head and the lanes found empty.
    fn park<'a>(
        &'a self,
        head: MutexGuard<'a, Head<T>>,
        mut synced: MutexGuard<'a, Synced>,
        slot: &mut WorkerSlot,
    ) -> Parked<'a> {
        // (P6) Go on the idle stack and store the hint that says so, then take the last look
        // (P6f): a push whose item this look misses sees the hint and wakes a worker under the
        // pool lock, which this worker holds until it waits. The head lock is held until the
        // parker is there, so a worker that later leaves tasks in the head sees the hint
        // (P4h).
        slot.parker.set_notified(false);
        synced.idle.push(Arc::clone(&slot.parker));
        if !self.last_look_empty(&synced) {
            // Nobody could take the parker off the stack: this worker held the pool lock.
            synced.idle.pop();
            self.publish(&synced);
            return Parked::Found;
        }
        drop(head);
        let deadline = Instant::now().checked_add(self.idle_timeout);
        let mut may_retire = deadline.is_some();
        loop {
            // (P7) Sleep; the condvar releases the lock and takes it again. `notified` is the
            // condition, so a spurious wake-up or a notify that came early changes nothing.
            if slot.parker.is_notified() {
                slot.coming = true;
                return Parked::Woken(synced);
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
            // the last worker stays, parked without a timeout, while the pool is in use. No
            // last look is needed: while this worker was on the idle stack every push saw the
            // hint and took the pool lock.
            if synced.workers > 1 {
                synced.idle.retain(|p| !Arc::ptr_eq(p, &slot.parker));
                synced.workers -= 1;
                synced.workers_retired += 1;
                self.publish(&synced);
                return Parked::Retired;
            }
            may_retire = false;
        }
    }

    /// Spins with backoff until a lane looks non-empty or the rounds are spent (P6s).
    fn spin(&self, owner: bool) {
        crate::sync::spin_until(self.spin_rounds, || {
            (owner && self.mailbox.is_full()) || self.lanes.iter().any(|lane| lane.len() > 0)
        });
    }

    /// The stall watchdog's look at a watched pool (W2-W3): `Grow::Spawn` when items waited
    /// since the last look and none was taken (every worker may be blocked), so the caller
    /// must start one worker; `Grow::Watch` to look again later; `Grow::No` when the queue is
    /// empty and the pool is no longer watched.
    pub(crate) fn check_stall(&self) -> Grow {
        let head = self.lock_head();
        let mut synced = self.lock();
        let waiting = head.queue.len() + self.lanes_len();
        let started = head.started;
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
        // The first look after W1 only records the progress.
        let stalled = synced.watched_started == Some(started);
        synced.watched_started = Some(started);
        if stalled && synced.need_more_workers(waiting, self.spinners(), self.max_workers) {
            synced.add_worker();
            self.publish(&synced);
            return Grow::Spawn;
        }
        Grow::Watch
    }

    /// A worker counted out of `workers` goes; the last one out after shutdown wakes
    /// [`Core::wait_for_exit`].
    fn exited(&self, synced: MutexGuard<'_, Synced>) {
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
    /// caller must run them itself ([`Core::pop`]) so that nothing queued is lost. The pushes
    /// that counted on the worker coming left their items to it; the last look (P6f) finds them.
    pub(crate) fn spawn_failed(&self) -> bool {
        let head = self.lock_head();
        let mut synced = self.lock();
        synced.workers_created -= 1;
        synced.coming -= 1;
        synced.workers -= 1;
        let lanes_empty = self.last_look_empty(&synced);
        let orphaned = synced.workers == 0 && !(head.queue.is_empty() && lanes_empty);
        drop(head);
        self.exited(synced);
        orphaned
    }

    /// Takes the oldest item without being a worker (see [`Core::spawn_failed`]).
    pub(crate) fn pop(&self) -> Option<T> {
        let mut head = self.lock_head();
        if head.queue.is_empty() {
            self.refill(&mut head);
        }
        head.queue.pop_front()
    }

    /// Takes out a waiting item for which `matches` is true (for cancel): the oldest such in
    /// the head, else the oldest in the first lane that has one.
    pub(crate) fn remove_if(&self, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        let mut head = self.lock_head();
        if let Some(item) = head.queue.remove_if(&mut matches) {
            return Some(item);
        }
        self.lanes.iter().find_map(|lane| {
            let mut tasks = lane.lock();
            let item = tasks.queue.remove_if(&mut matches)?;
            lane.len.store(tasks.queue.len(), Ordering::Relaxed);
            Some(item)
        })
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

    /// Holds lane `lane`'s lock until the guard drops, without counting it (tests use it to
    /// make pushers find the lock held).
    #[cfg(test)]
    pub(crate) fn hold_lane(&self, lane: usize) -> MutexGuard<'_, LaneTasks<T>> {
        self.lanes[lane % self.lanes.len()].tasks.lock()
    }

    /// The state now, without counting the lock acquisitions this takes.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let head = self.head.lock();
        let (queued, lanes_lock) =
            self.lanes
                .iter()
                .fold((0, LockCounts::default()), |(queued, counts), lane| {
                    let tasks = lane.tasks.lock();
                    (queued + tasks.queue.len(), counts.plus(tasks.lock))
                });
        let synced = self.synced.lock();
        Snapshot {
            workers: synced.workers,
            idle_workers: synced.idle.len(),
            workers_created: synced.workers_created,
            workers_retired: synced.workers_retired,
            executed: head.executed,
            queue_depth: head.queue.len() + queued,
            lock: head.lock.plus(lanes_lock).plus(synced.lock),
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
