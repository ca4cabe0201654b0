//! Held items, the threads' side (H1-H8 of `pool/README.md`; the slots are `core/held.rs`):
//! which worker a push comes from, the push that a worker's running task makes to its own pool
//! ([`Pool::push_held`]), and the stall watchdog's watch over the held slots.

use std::cell::Cell;
use std::sync::{OnceLock, Weak};

use super::core::{Hold, WorkerSlot};
use super::set::PoolSet;
use super::watchdog::{self, Checked, Watched};
use super::{Pool, Runnable, Shared};
use crate::policy::pull::Level;
use crate::sync::Arc;

thread_local! {
    /// The pool state this thread works for (its address, only compared) and the held slot it
    /// owns; `(0, 0)` on threads that own none.
    static HOLDER: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The held slot that the calling thread owns in `shared`'s pool, if it is one of its workers
/// and got one.
#[inline]
fn slot_of<T>(shared: &Arc<Shared<T>>) -> Option<usize> {
    let (pool, slot) = HOLDER.with(Cell::get);
    (pool == Arc::as_ptr(shared) as usize).then_some(slot)
}

/// A worker's claim on a held slot, from its start to its exit (H1, H7).
pub(super) struct Holding<'a, T: Runnable> {
    /// The worker's pool.
    shared: &'a Arc<Shared<T>>,
    /// The slot it owns, if it got one.
    index: Option<usize>,
}

/// (H1) The calling worker of `shared` claims a held slot, if one is free, for its run loop.
pub(super) fn enter<'a, T: Runnable>(
    shared: &'a Arc<Shared<T>>,
    slot: &mut WorkerSlot,
) -> Holding<'a, T> {
    let index = shared.core.claim_held(slot);
    if let Some(index) = index {
        HOLDER.with(|h| h.set((Arc::as_ptr(shared) as usize, index)));
    }
    Holding { shared, index }
}

impl<T: Runnable> Drop for Holding<'_, T> {
    /// (H7) The worker leaves: the slot is free again, and the tasks left in it are pushed.
    fn drop(&mut self) {
        if let Some(index) = self.index {
            HOLDER.with(|h| h.set((0, 0)));
            for task in self.shared.core.release_held(index) {
                release(self.shared, task);
            }
        }
    }
}

impl<T: Runnable> Pool<T> {
    /// Queues `task` from the worker of this pool that owns held slot `index` (the caller runs
    /// on it: a running task queues to its own pool, [`PoolSet::held_slot_here`]): that worker
    /// holds the running task's first task and runs it when the running task ends (H2); from
    /// its second on, the running task's tasks are pushed as [`Pool::push`] does, the first one
    /// again too.
    #[inline(always)]
    pub(crate) fn push_held(
        &self,
        index: usize,
        task: T,
        at: usize,
        siblings: bool,
    ) -> Option<Level> {
        if self.shared.core.fanned_out(index) {
            return self.push(task, at, siblings);
        }
        match self.shared.core.hold_first(index, task) {
            Hold::Held { watch } => {
                if watch {
                    watch_held(&self.shared);
                }
                None
            }
            Hold::Push(task) => self.push(task, at, siblings),
            Hold::PushBoth(first, task) => {
                // Its offer, if any, is the next push's: that push finds both in the lane.
                let _ = self.push(first, at, siblings);
                self.push(task, at, siblings)
            }
        }
    }
}

impl<T: Runnable> PoolSet<T> {
    /// The held slot that the calling thread owns in pod `index`'s pool, if it is one of that
    /// pool's workers and got one (H2). Asked before the task moves, so that a queue call from
    /// any other thread hands its task straight to [`PoolSet::push`].
    #[inline]
    pub(crate) fn held_slot_here(&self, index: usize) -> Option<usize> {
        slot_of(&self.pools[index].shared)
    }

    /// Queues `task` to pod `index`'s pool from `at`, from that pool's worker that owns held
    /// slot `slot` ([`Pool::push_held`]).
    #[inline(always)]
    pub(crate) fn push_held(&self, index: usize, slot: usize, task: T, at: usize) {
        if let Some(reach) = self.pools[index].push_held(slot, task, at, self.pull.is_some()) {
            self.offer(index, reach);
        }
    }
}

/// (H6) Pushes a task taken out of a held slot as a push from the calling thread would, and
/// offers it to the pool's siblings when the push says so.
fn release<T: Runnable>(shared: &Arc<Shared<T>>, task: T) {
    let group = shared.group.get().and_then(Weak::upgrade);
    let reach = super::push_to(shared, task, shared.lanes.here(), group.is_some());
    if let (Some(group), Some(reach)) = (group, reach) {
        group.offer(shared.pod.id, reach);
    }
}

/// The stall watchdog's watch over a pool's held slots; one per pool, made at the first watch.
pub(super) struct HeldWatch<T> {
    /// The pool.
    pool: Weak<Shared<T>>,
}

/// (H2, H8) Has the watchdog watch `shared`'s held slots.
pub(super) fn watch_held<T: Runnable>(shared: &Arc<Shared<T>>) {
    let watch = shared.held_watch.get_or_init(|| {
        Arc::new(HeldWatch {
            pool: Arc::downgrade(shared),
        })
    });
    let weak: Weak<HeldWatch<T>> = Arc::downgrade(watch);
    watchdog::watch(weak);
}

impl<T: Runnable> Watched for HeldWatch<T> {
    /// (H6) At every look of the watchdog: the tasks held since its last look are pushed.
    fn check(self: Arc<Self>, _progress: bool) -> Checked {
        let Some(shared) = self.pool.upgrade() else {
            return Checked {
                keep: false,
                replaced: false,
            };
        };
        let look = shared.core.look_held();
        for task in look.taken {
            release(&shared, task);
        }
        Checked {
            keep: look.keep,
            replaced: false,
        }
    }
}

/// The field of [`Shared`] that keeps a pool's [`HeldWatch`].
pub(super) type WatchCell<T> = OnceLock<Arc<HeldWatch<T>>>;
