//! A pool's lifecycle: shutdown when its last user lets go (T1-T3), a worker's exit after
//! shutdown (W8), a worker whose thread could not be started (M1), and the snapshot for stats.

use super::queue::{Head, LockCounts};
use super::{Core, Synced};
use crate::sync::MutexGuard;

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
    /// Tasks waiting, in the head, the lanes and the held slots.
    pub(crate) queue_depth: usize,
    /// The held slots' counts (H1-H7).
    pub(crate) held: super::HeldCounts,
    /// Acquisitions of the pool lock, the head lock and the lane locks together, and how many
    /// found the lock held.
    pub(crate) lock: LockCounts,
}

impl<T> Core<T> {
    /// (W8) A worker found the queue empty after shutdown: it counts itself out and takes the
    /// last look (W10). Lanes empty: it exits (the last one out wakes [`Core::wait_for_exit`])
    /// and `true` says to end the thread. Otherwise a push left it a task: it counts itself
    /// back in and goes on (`false`). Releases both locks.
    pub(super) fn leave_if_empty(
        &self,
        head: MutexGuard<'_, Head<T>>,
        mut synced: MutexGuard<'_, Synced>,
    ) -> bool {
        synced.workers -= 1;
        if self.last_look_empty(&synced) {
            drop(head);
            self.exited(synced);
            return true;
        }
        synced.workers += 1;
        self.publish(&synced);
        drop(synced);
        drop(head);
        false
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

    /// Undoes the worker that the last [`super::Push::Spawn`] or
    /// `Next::Run { grow: Grow::Spawn, .. }` asked for, when its thread could not be started.
    ///
    /// Returns `true` when the pool is then left with waiting items and no worker at all. The
    /// pushes that counted on the worker coming left their items to it; the last look (W10)
    /// finds them, and the caller hands the pool to its rescuer (M1, M2), which runs them.
    pub(crate) fn spawn_failed(&self) -> bool {
        let head = self.lock_head();
        let mut synced = self.lock();
        synced.workers_created -= 1;
        synced.coming -= 1;
        synced.workers -= 1;
        let lanes_empty = self.last_look_empty(&synced);
        let orphaned = synced.workers == 0 && !(self.in_head(&head) == 0 && lanes_empty);
        drop(head);
        self.exited(synced);
        orphaned
    }

    /// Starts shutdown (T1-T2): from now on workers exit once the queue is empty.
    pub(crate) fn shutdown(&self) {
        let mut synced = self.lock();
        // (T1) Under the pool lock: a worker deciding to park (W9) either sees `shutdown` first
        // (W8) or is on the idle stack and is woken here.
        synced.shutdown = true;
        let idle = std::mem::take(&mut synced.idle);
        for parker in &idle {
            parker.set_notified(true);
        }
        synced.coming += idle.len();
        self.publish(&synced);
        drop(synced);
        // (T2) Wake every idle worker outside the lock.
        for parker in &idle {
            parker.notify();
        }
    }

    /// Blocks until every worker has exited (T3). Call after [`Core::shutdown`], never from a
    /// worker of this pool.
    pub(crate) fn wait_for_exit(&self) {
        let mut synced = self.synced.lock();
        while synced.workers > 0 {
            synced = self.exited.wait(synced);
        }
    }

    /// Tasks waiting, for the load signal (`pool/load.rs`), without waiting for a lock: the
    /// lanes' lengths as last stored, and the head's when its lock is free now (a worker
    /// holds it only while it takes a task; a sample that finds it held counts the lanes).
    pub(crate) fn waiting_hint(&self) -> usize {
        let head = self.head.try_lock().map_or(0, |head| self.in_head(&head));
        head + self.lanes_len()
    }

    /// The state now, without counting the lock acquisitions this takes.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let head = self.head.lock();
        let (queued, lanes_lock) =
            self.lanes
                .iter()
                .fold((0, LockCounts::default()), |(queued, counts), lane| {
                    let (len, lock) = lane.peek();
                    (queued + len, counts.plus(lock))
                });
        let synced = self.synced.lock();
        let held = self.held_counts();
        Snapshot {
            workers: synced.workers,
            idle_workers: synced.idle.len(),
            workers_created: synced.workers_created,
            workers_retired: synced.workers_retired,
            executed: head.executed + held.executed,
            queue_depth: self.in_head(&head) + queued + held.held,
            held,
            lock: head.lock.plus(lanes_lock).plus(synced.lock),
        }
    }
}
