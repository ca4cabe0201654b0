//! A work item's shared part ([`WorkInner`]), what a task of `Job::Work` runs, and where a
//! cancel finds its pending execution (C2 of `workqueue/README.md`): the runner's deferred
//! slot, the timer, the `max_active` FIFO or a pool's queue. The public handle is `Work`
//! (`api/work.rs`); the state word and the cancel over it are `item/`'s.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crate::fork;
use crate::sync::Mutex;
use crate::workqueue::item::group_slot::GroupSlot;
use crate::workqueue::item::state::{ItemState, CANCELING, PENDING, RUNNING};
use crate::workqueue::task::shared::WqShared;
use crate::workqueue::task::steering::Ticket;
use crate::workqueue::task::timer::{self, Fire, TimerKey};
use crate::workqueue::task::Task;

/// A work item's closure, given the item it runs as.
pub(crate) type ItemFn = dyn FnMut(&Arc<WorkInner>) + Send + 'static;

/// The shared part of a [`Work`](crate::Work): its state, its closure, where it was last
/// queued.
pub(crate) struct WorkInner {
    /// Pending/running/canceling, the deferred execution, and where it was queued.
    pub(crate) state: ItemState<Task, Home>,
    /// A: id of the workqueue this item was last queued on (0: never); written only by the
    /// owner of a claim. Relaxed: a hint checked again under `state`'s lock.
    home_id: AtomicU64,
    /// A: pod it was last queued to; a hint for cancel, which falls back to every pool.
    home_pod: AtomicUsize,
    /// The closure, given the item it runs as; locked only by the one worker running the
    /// item.
    pub(crate) func: Mutex<Box<ItemFn>>,
    /// The user's handles (`Work` values) of the item, which `Work::with_self` reads; the
    /// queued executions hold the item without one.
    pub(crate) handles: AtomicUsize,
    /// The group ticket of the pending execution, when a group queued it (`steering.rs`, G4).
    pub(crate) group: GroupSlot<Ticket>,
}

/// Where a pending item can be found, kept under the item's lock.
#[derive(Default)]
pub(crate) struct Home {
    /// The workqueue it was last queued on.
    wq: Weak<WqShared>,
    /// The timer entry of a pending delayed execution.
    pub(crate) timer: Option<TimerKey>,
}

/// A pending execution taken back out of wherever it waited; its claim is the holder's.
pub(crate) enum Grabbed {
    /// From a pool's queue, a `max_active` FIFO or the item's runner.
    Task(Task),
    /// From the timer: counted in its colour, holding no `max_active` slot.
    Timer(Fire),
}

impl WorkInner {
    /// A new item running `f` each time it is queued.
    pub(crate) fn new(f: impl FnMut(&Arc<WorkInner>) + Send + 'static) -> WorkInner {
        WorkInner {
            state: ItemState::default(),
            home_id: AtomicU64::new(0),
            home_pod: AtomicUsize::new(0),
            func: Mutex::new(Box::new(f)),
            handles: AtomicUsize::new(1),
            group: GroupSlot::new(),
        }
    }

    /// Records where the owner of a claim queues the item, for cancel to find it.
    #[inline]
    pub(crate) fn record_home(&self, wq: &Arc<WqShared>, pod: usize) {
        self.home_pod.store(pod, Ordering::Relaxed);
        if self.home_id.load(Ordering::Relaxed) != wq.id {
            self.state.with_extra(|home| home.wq = Arc::downgrade(wq));
            self.home_id.store(wq.id, Ordering::Relaxed);
        }
    }

    /// C2: takes the pending execution back from wherever it waits: the runner's hand, the
    /// timer, the `max_active` FIFO (C3) or a pool's queue. `None` when it is not in any of
    /// them (nothing pending, or it is moving between two of them).
    pub(crate) fn grab(self: &Arc<Self>) -> Option<Grabbed> {
        if let Some(task) = self.state.take_deferred() {
            return Some(Grabbed::Task(task));
        }
        if let Some(key) = self.state.with_extra(|home| home.timer.take()) {
            if let Some(fire) = timer::disarm(key) {
                return Some(Grabbed::Timer(fire));
            }
        }
        let wq = self.state.with_extra(|home| home.wq.upgrade())?;
        if let Some(active) = &wq.active {
            if let Some(task) = active.remove_if(|t| t.is_work(self)) {
                return Some(Grabbed::Task(task));
            }
        }
        // In the pool sets of every layout, the newest first: the hint is a pod of the one the
        // item was last queued in.
        let hint = self.home_pod.load(Ordering::Relaxed);
        let sets: Vec<_> = wq.pools.iter().collect();
        sets.iter()
            .rev()
            .find_map(|pools| pools.remove_if(hint, |t| t.is_work(self)))
            .map(Grabbed::Task)
    }

    /// C2 for a cancel: takes the pending execution back from wherever it waits, counts it as
    /// cancelled and uncounts it, and drops its group ticket (G5). Returns whether it found
    /// it; the claim is then the caller's to release.
    pub(crate) fn take_back(self: &Arc<Self>) -> bool {
        match self.grab() {
            Some(grabbed) => {
                grabbed.cancel();
                // The cancelled execution's group ticket, if a group queued it (G5).
                drop(self.group.take());
                true
            }
            None => false,
        }
    }
}

impl Grabbed {
    /// Uncounts the execution from its workqueue; the claim stays with the caller.
    pub(crate) fn unqueue(self) {
        match self {
            Grabbed::Task(task) => drop(task.unqueue()),
            Grabbed::Timer(fire) => fire.discard(),
        }
    }

    /// Counts the execution as cancelled in its pod, then uncounts it as
    /// [`Grabbed::unqueue`] does. In that order: once uncounted, its workqueue may go.
    pub(crate) fn cancel(self) {
        let counted = match &self {
            Grabbed::Task(task) => &task.acct.counted,
            Grabbed::Timer(fire) => &fire.counted,
        };
        counted
            .pod()
            .counters
            .mine()
            .cancelled
            .fetch_add(1, Ordering::Relaxed);
        self.unqueue();
    }
}

/// Whether `item` is pending or running on a workqueue of a parent process (K4 of
/// `workqueue/README.md`): that execution never runs here.
///
/// The item's last workqueue is written by the owner of a claim after it claims, so a first
/// queueing in the child may be seen as the parent's for a moment: a flush or cancel that
/// reads that moment is one made before that queue call returned, and answers as if it came
/// first.
pub(crate) fn stranded(item: &WorkInner) -> bool {
    if item.state.load() & (PENDING | RUNNING) == 0 {
        return false;
    }
    let id = item.home_id.load(Ordering::Relaxed);
    id != 0 && fork::is_foreign(id)
}

/// Whether a claim just made on `item`, which found it `running`, must be given back: the run
/// is a parent process's (K4), whose runner is not here to take the deferred execution.
/// Then the claim is released. Only a claim on a running item looks further than `running`.
pub(crate) fn stranded_claim(item: &WorkInner, running: bool) -> bool {
    if running && stranded(item) {
        item.state.release_claim();
        return true;
    }
    false
}

/// Whether a cancel of `item` is in progress.
pub(crate) fn canceling(item: &WorkInner) -> bool {
    item.state.load() & CANCELING != 0
}
