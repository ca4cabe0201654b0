//! The pool's queue: a tail in lanes, which pushers fill under their lane's lock (P2), and a
//! head, which workers take from under the head lock (W2) and refill by claiming one lane's
//! published tasks at a time (W3). A lane's tasks are a chain of segments (`chain.rs`) whose
//! producer end the lane lock holds and whose consumer end the head lock holds, so a refill
//! takes no lane lock and moves no task. Beside them, the spinners' mailbox (`mailbox.rs`: P1,
//! W6) hands one task straight from a pusher to a spinning worker.
//!
//! Order: each lane is FIFO and a refill claims a whole lane, read in its order, so the tasks
//! queued from one CPU start in queueing order; the lanes take turns.
//!
//! Every lock here is taken counted ([`lock_counted`]): `try_lock` first, a failure counted as
//! contended, then `lock`. The counts live under the lock they count, so counting costs no
//! atomic operation.

pub(crate) mod chain;
pub(crate) mod held_slot;
pub(crate) mod lane_lock;
pub(crate) mod mailbox;

use std::collections::VecDeque;

use super::Core;
use crate::sync::atomic::{fence, Ordering};
use crate::sync::{Arc, CachePadded, Mutex, MutexGuard};
use chain::{Chain, Consumer, Producer, Spares};
use lane_lock::{Fenced, LaneGuard, LaneLock};
// Std's, on purpose, also under loom: only for `Lane::spinners`.
use std::sync::atomic::AtomicUsize as UnmodelledAtomicUsize;

/// Waiting tasks, oldest first: one lane's, or the head's.
///
/// Plain data: every function takes `&mut self`, so it is reached only through the lock that
/// guards it.
#[derive(Debug)]
pub(crate) struct Fifo<T> {
    /// The tasks, in queueing order.
    items: VecDeque<T>,
}

impl<T> Fifo<T> {
    /// An empty FIFO.
    pub(crate) fn new() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }

    /// Appends `item` at the tail.
    pub(crate) fn push_back(&mut self, item: T) {
        self.items.push_back(item);
    }

    /// Takes the oldest item.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    /// How many items wait.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Takes out the oldest item for which `matches` is true, keeping the others in order.
    pub(crate) fn remove_if(&mut self, matches: impl FnMut(&T) -> bool) -> Option<T> {
        let at = self.items.iter().position(matches)?;
        self.items.remove(at)
    }

    /// Moves every item for which `matches` is true to `out`, oldest first, keeping the
    /// others in order.
    pub(crate) fn take_all_if(&mut self, mut matches: impl FnMut(&T) -> bool, out: &mut Vec<T>) {
        if !self.items.iter().any(&mut matches) {
            return;
        }
        let mut kept = VecDeque::with_capacity(self.items.len());
        for item in self.items.drain(..) {
            if matches(&item) {
                out.push(item);
            } else {
                kept.push_back(item);
            }
        }
        self.items = kept;
    }
}

/// How often a lock was taken, and how often it was held by another thread at the time.
///
/// Kept inside the locked state, so counting costs no atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LockCounts {
    /// Acquisitions by pushers and workers.
    pub(crate) acquisitions: u64,
    /// Acquisitions whose first `try_lock` failed because another thread held the lock.
    pub(crate) contended: u64,
}

impl LockCounts {
    /// Records one acquisition; `contended` when the lock was found held.
    pub(crate) fn record(&mut self, contended: bool) {
        self.acquisitions += 1;
        if contended {
            self.contended += 1;
        }
    }

    /// The counts of two locks together.
    pub(crate) fn plus(self, other: LockCounts) -> LockCounts {
        LockCounts {
            acquisitions: self.acquisitions + other.acquisitions,
            contended: self.contended + other.contended,
        }
    }
}

/// Locks `mutex`, trying without blocking first, and records in the counts that `counts` finds
/// in the locked data whether another thread held it.
pub(super) fn lock_counted<S>(
    mutex: &Mutex<S>,
    counts: impl FnOnce(&mut S) -> &mut LockCounts,
) -> MutexGuard<'_, S> {
    let (mut guard, contended) = tried_first(mutex.try_lock(), || mutex.lock());
    counts(&mut guard).record(contended);
    guard
}

/// The guard of a `try_lock` (`tried`), or else of a blocking `lock`, and whether the lock had
/// to be waited for (counted as contended).
#[inline]
fn tried_first<G>(tried: Option<G>, lock: impl FnOnce() -> G) -> (G, bool) {
    match tried {
        Some(guard) => (guard, false),
        None => (lock(), true),
    }
}

/// The head of the pool's queue: the oldest waiting tasks, under the head lock. Only workers
/// (and cancel, the watchdog and stats) take it; pushers never do.
#[derive(Debug)]
pub(crate) struct Head<T> {
    /// H: tasks moved here from one lane in one swap (W3), in that lane's order.
    pub(super) queue: Fifo<T>,
    /// H: head lock acquisitions and contended acquisitions.
    pub(super) lock: LockCounts,
    /// H: the lane the next refill looks at first, so that the lanes take turns.
    pub(super) next_lane: usize,
    /// H: tasks taken from the queue by workers: the pool's progress, which the stall
    /// watchdog watches (D3). Beside the head lock's word, so that a pop writes one line.
    pub(super) started: u64,
    /// H: tasks that workers ran to the end, added from their `WorkerSlot`s (W1).
    pub(super) executed: u64,
    /// H: the consumer end of each lane's chain, by lane.
    consumers: Box<[Consumer]>,
    /// H: the lane whose claimed tasks (W3) are taken before `queue`'s; they count as the
    /// head's, and no longer as the lane's.
    batch: Option<usize>,
}

impl<T> Head<T> {
    /// An empty head, taking from the lanes whose consumer ends are `consumers`.
    pub(super) fn new(consumers: Box<[Consumer]>) -> Self {
        Self {
            queue: Fifo::new(),
            lock: LockCounts::default(),
            next_lane: 0,
            started: 0,
            executed: 0,
            consumers,
            batch: None,
        }
    }
}

/// What one lane's lock guards.
#[derive(Debug)]
pub(crate) struct LaneTasks {
    /// Q: the producer end of the lane's chain.
    producer: Producer,
    /// Q: lane lock acquisitions and contended acquisitions.
    lock: LockCounts,
}

/// One lane of the pool's tail: where the pushers of one CPU of the pod (or of a few, on a pod
/// with more CPUs than lanes) queue their tasks. Each part sits on lines of its own (the lock,
/// the chain's two ends and its spare, the spinner count), so a lane needs no padding around
/// it.
#[derive(Debug)]
pub(crate) struct Lane<T> {
    /// The lane lock and the producer end of the lane's tasks. Only pushers (and cancel and
    /// re-formation, which hold the head lock too) take it: workers take the lane's tasks
    /// from the consumer end, under the head lock.
    tasks: CachePadded<LaneLock<LaneTasks>>,
    /// The lane's tasks (`chain.rs`). Their count is read without a lock: by spinners, by
    /// refills, for statistics, and after a `SeqCst` fence by a worker about to stop looking
    /// for work (W10), which is what makes a lost wake-up impossible (see `pool/README.md`).
    chain: Chain<T>,
    /// A: spinners (W5) whose CPU pushes to this lane, as they counted themselves in when they
    /// began to spin. A pusher on such a CPU is running, so those spinners are not: it does
    /// not leave its task to them (P4). Only a heuristic, which only ever makes a push wake
    /// more: any value it is read with is safe (the hint's count is what the protocol rests
    /// on). So it is a plain `std` atomic, which loom does not interleave: it would multiply
    /// the models' states without a wrong outcome to find.
    /// Written by spinners only, so on lines of its own.
    pub(super) spinners: CachePadded<UnmodelledAtomicUsize>,
}

impl<T> Lane<T> {
    /// An empty lane whose chain shares `spares` with the pool's other lanes, and the consumer
    /// end of its tasks, for the head.
    pub(super) fn new(spares: Arc<Spares<T>>) -> (Self, Consumer) {
        let (chain, producer, consumer) = Chain::new(spares);
        let lane = Self {
            tasks: CachePadded::new(LaneLock::new(LaneTasks {
                producer,
                lock: LockCounts::default(),
            })),
            chain,
            spinners: CachePadded::new(UnmodelledAtomicUsize::new(0)),
        };
        (lane, consumer)
    }

    /// Takes the lane lock, counting the acquisition and whether it was contended (as
    /// [`lock_counted`] does).
    #[inline(always)]
    fn lock(&self) -> LaneGuard<'_, LaneTasks> {
        let (mut guard, contended) = tried_first(self.tasks.try_lock(), || self.tasks.lock());
        guard.with(|tasks| tasks.lock.record(contended));
        guard
    }

    /// The tasks waiting in the lane (a hint unless read under the head lock after a `SeqCst`
    /// fence, W10).
    pub(super) fn len(&self) -> usize {
        self.chain.len()
    }

    /// The tasks waiting here and the lane lock's counts, without counting this acquisition.
    pub(super) fn peek(&self) -> (usize, LockCounts) {
        let mut tasks = self.tasks.lock();
        (self.chain.len(), tasks.with(|tasks| tasks.lock))
    }

    /// Takes every task of the lane out, oldest first, into a FIFO; the caller holds the head
    /// lock (`consumer`, with no batch claimed from this lane) and the lane lock, and puts
    /// back what it keeps with [`Lane::put_back`].
    fn take_out(&self, consumer: &mut Consumer) -> Fifo<T> {
        self.chain.claim(consumer);
        self.read_claimed(consumer)
    }

    /// Reads every task claimed from the lane and not yet read, oldest first, into a FIFO; the
    /// caller holds the head lock (`consumer`).
    fn read_claimed(&self, consumer: &mut Consumer) -> Fifo<T> {
        let mut all = Fifo::new();
        while let Some(task) = self.chain.next(consumer) {
            all.push_back(task);
        }
        all
    }

    /// Appends `kept`'s tasks, in order, to the lane emptied by [`Lane::take_out`].
    fn put_back(&self, tasks: &mut LaneGuard<'_, LaneTasks>, kept: Fifo<T>) {
        tasks.with(|tasks| {
            for task in kept.items {
                self.chain.push(&mut tasks.producer, task);
            }
        });
    }
}

impl<T> Core<T> {
    /// Takes the head lock, counting the acquisition and whether it was contended.
    pub(super) fn lock_head(&self) -> MutexGuard<'_, Head<T>> {
        lock_counted(&self.head, |head| &mut head.lock)
    }

    /// `lane` wrapped to the lanes there are. A pusher's lane is already one of them (the
    /// pool's `LaneMap` gives it), so the division is only ever taken for a stray index: on
    /// the push path a division costs 3-4 % of `Core::push`'s samples (`perf annotate`).
    #[inline]
    pub(super) fn wrap(&self, lane: usize) -> usize {
        let lanes = self.lanes.len();
        if lane < lanes {
            lane
        } else {
            lane % lanes
        }
    }

    /// (P2) Appends `item` to lane `lane` (one of the lanes: see [`Core::wrap`]) and publishes
    /// it. The lane lock's release fences (`SeqCst`) after the publication: the [`Fenced`]
    /// that P3 asks for.
    #[inline(always)]
    pub(super) fn push_to_lane(&self, lane: usize, item: T) -> Fenced {
        let lane = &self.lanes[lane];
        let mut tasks = lane.lock();
        tasks.with(|tasks| lane.chain.push(&mut tasks.producer, item));
        tasks.unlock()
    }

    /// (W2, W3) Takes the oldest task of the head: the batch's, then the handed ones (W6);
    /// when the head is empty, first claims one lane's tasks for it. `None` when the head and
    /// every lane were empty.
    #[inline]
    pub(super) fn take(&self, head: &mut Head<T>) -> Option<T> {
        loop {
            if let Some(at) = head.batch {
                if let Some(item) = self.lanes[at].chain.next(&mut head.consumers[at]) {
                    return Some(item);
                }
                head.batch = None;
            }
            if let Some(item) = head.queue.pop_front() {
                return Some(item);
            }
            if !self.refill(head) {
                return None;
            }
        }
    }

    /// (W3) Claims the tasks of one non-empty lane as the (empty) head's batch, the lanes
    /// taking turns; `false` when every lane was empty. The tasks stay where their pusher
    /// wrote them, and the lane lock is not taken: the head lock holds the consumer ends.
    ///
    /// It fences (`SeqCst`) before it looks, the refill's half of a pair with the push's fence
    /// (P3): either this look sees the push's task, or the push's read of `HELP` sees what
    /// this worker wrote before (its arrival's `HELP`, W1). The lane's lock is not taken to
    /// give that order; without the fence, a worker could claim a batch without a task
    /// pushed while it arrived, run into a task that waits for that one, and leave the push,
    /// which read the old `HELP`, to think it would be taken (the loom model
    /// `a_batch_moved_to_the_head_is_handed_on` finds that without the fence).
    fn refill(&self, head: &mut Head<T>) -> bool {
        fence(Ordering::SeqCst);
        let lanes = self.lanes.len();
        for k in 0..lanes {
            let at = (head.next_lane + k) % lanes;
            let lane = &self.lanes[at];
            if lane.chain.claim(&mut head.consumers[at]) == 0 {
                continue;
            }
            head.batch = Some(at);
            head.next_lane = (at + 1) % lanes;
            return true;
        }
        false
    }

    /// Tasks in the head: the batch's left, and the handed ones.
    pub(super) fn in_head(&self, head: &Head<T>) -> usize {
        let batch = head.batch.map_or(0, |at| {
            self.lanes[at].chain.claimed_left(&head.consumers[at])
        });
        batch + head.queue.len()
    }

    /// Moves the batch's tasks left into the head's FIFO, ahead of the handed ones, so that
    /// the FIFO holds every task of the head in order (cancel and re-formation search it).
    fn settle(&self, head: &mut Head<T>) {
        let Some(at) = head.batch.take() else {
            return;
        };
        let mut all = self.lanes[at].read_claimed(&mut head.consumers[at]);
        all.items.append(&mut head.queue.items);
        head.queue = all;
    }

    /// Tasks in the lanes, as last stored (a hint: the lanes are not locked).
    pub(super) fn lanes_len(&self) -> usize {
        self.lanes.iter().map(|lane| lane.len()).sum()
    }

    /// Takes the oldest task without being a worker (tests that drive the core by hand).
    #[cfg(test)]
    pub(crate) fn pop(&self) -> Option<T> {
        let mut head = self.lock_head();
        self.take(&mut head)
    }

    /// Takes out every waiting task for which `matches` is true (a workqueue's tasks when its
    /// pods are re-formed): the head's, oldest first, then each lane's, then the held ones.
    pub(crate) fn take_all_if(&self, mut matches: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut out = Vec::new();
        let mut head = self.lock_head();
        self.settle(&mut head);
        head.queue.take_all_if(&mut matches, &mut out);
        for (lane, consumer) in self.lanes.iter().zip(head.consumers.iter_mut()) {
            let mut tasks = lane.lock();
            let mut all = lane.take_out(consumer);
            all.take_all_if(&mut matches, &mut out);
            lane.put_back(&mut tasks, all);
        }
        self.take_all_held_if(&mut matches, &mut out);
        out
    }

    /// Takes out a waiting task for which `matches` is true (for cancel): the oldest such in
    /// the head, else the oldest in the first lane that has one, else a held one.
    pub(crate) fn remove_if(&self, mut matches: impl FnMut(&T) -> bool) -> Option<T> {
        let mut head = self.lock_head();
        self.settle(&mut head);
        if let Some(item) = head.queue.remove_if(&mut matches) {
            return Some(item);
        }
        let consumers = head.consumers.iter_mut();
        let found = self
            .lanes
            .iter()
            .zip(consumers)
            .find_map(|(lane, consumer)| {
                let mut tasks = lane.lock();
                let mut all = lane.take_out(consumer);
                let item = all.remove_if(&mut matches);
                lane.put_back(&mut tasks, all);
                item
            });
        // (H7) Else a held one.
        found.or_else(|| self.remove_held_if(&mut matches))
    }

    /// Holds lane `lane`'s lock until the guard drops, without counting it (tests use it to
    /// make pushers find the lock held).
    #[cfg(test)]
    pub(crate) fn hold_lane(&self, lane: usize) -> LaneGuard<'_, LaneTasks> {
        self.lanes[self.wrap(lane)].tasks.lock()
    }
}
