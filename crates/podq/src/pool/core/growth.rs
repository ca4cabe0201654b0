//! The growth mechanism: carrying out `policy::growth`'s decisions under the pool lock (wake
//! the most recently parked worker, count a new worker for the caller to start, have the stall
//! watchdog watch), for a push (P5-P6), a worker that leaves tasks in the head (W4), and the
//! watchdog's looks (D2-D4, decided by `policy::stall`).
//!
//! The core never starts a thread: it counts the new worker and tells its caller to start it
//! ([`Grow::Spawn`]), or to hand the pool to the watchdog ([`Grow::Watch`]).

use super::idle::{Parker, WorkerSlot};
use super::queue::Head;
use super::{Core, Grow, Synced};
use crate::policy::growth as policy;
use crate::policy::stall::{self, Look};
use crate::sync::{Arc, MutexGuard};

impl Synced {
    /// Counts one more worker, which the caller must start.
    pub(super) fn add_worker(&mut self) {
        self.workers += 1;
        self.coming += 1;
        self.workers_created += 1;
    }

    /// Takes the most recently parked idle worker off the idle stack, if [`policy::wakes`]
    /// says to wake one, marks it woken and counts it as coming; the caller notifies it after
    /// unlocking (P5, P7).
    pub(super) fn wake_one(&mut self) -> Option<Arc<Parker>> {
        if !policy::wakes(self.workers()) {
            return None;
        }
        let parker = self.idle.pop()?;
        parker.set_notified(true);
        self.coming += 1;
        Some(parker)
    }

    /// A coming worker reached the queue (W1).
    pub(super) fn arrive(&mut self, slot: &mut WorkerSlot) {
        if slot.coming {
            slot.coming = false;
            self.coming -= 1;
        }
    }
}

/// What a worker that leaves tasks in the head does for them (W4).
enum Help {
    /// Nothing: nobody idle, and the pool may not grow.
    None,
    /// Notify this parker after unlocking.
    Wake(Arc<Parker>),
    /// Start a worker, or have the watchdog watch.
    Grow(Grow),
}

impl<T> Core<T> {
    /// Carries out [`policy::grow`] for `waiting` tasks (P6, W4): counts a new worker
    /// ([`Grow::Spawn`]) or marks the pool watched ([`Grow::Watch`]). Changes the state (and so
    /// the hint) only when it returns something other than [`Grow::No`].
    pub(super) fn grow(&self, synced: &mut Synced, waiting: usize) -> Grow {
        let grow = policy::grow(synced.workers(), waiting, self.spinners(), self.limits);
        match grow {
            Grow::No => {}
            Grow::Spawn => synced.add_worker(),
            Grow::Watch => {
                synced.watched = true;
                synced.watched_started = None;
            }
        }
        grow
    }

    /// Whether the pool has room for another running worker: one parked, or fewer workers
    /// than its eager size, so that a CPU of its pod is not used by it (W13). Takes the pool
    /// lock; called once per `pool::apart::CHECK_EVERY` items at most.
    pub(crate) fn has_room(&self) -> bool {
        let synced = self.lock();
        !synced.idle.is_empty() || synced.workers < self.limits.eager_workers
    }

    /// (W4) Counts a task taken from the head and, if more wait there and the hint asks for
    /// help, hands them on: wakes an idle worker, or asks for one more worker (the kernel's
    /// `need_more_worker` chain), so that a batch moved to the head does not wait for this
    /// worker alone and items that block do not starve the ones behind them. A worker that has
    /// just `arrived` (W1) also hands on the tasks waiting in the lanes, which pushes made while
    /// it was on its way left to it ([`Core::left_to_arrival`]). Releases the head lock.
    /// Returns the task, to run after acting on the returned [`Grow`].
    pub(super) fn hand_on(
        &self,
        mut head: MutexGuard<'_, Head<T>>,
        item: T,
        arrived: bool,
    ) -> (T, Grow) {
        head.started += 1;
        self.hand_on_counted(head, item, arrived)
    }

    /// (W4) [`Core::hand_on`] for a task already counted in `started` (one held ahead, H8,
    /// that a sibling's steal takes): hands on the tasks left in the head.
    pub(super) fn hand_on_counted(
        &self,
        head: MutexGuard<'_, Head<T>>,
        item: T,
        arrived: bool,
    ) -> (T, Grow) {
        let waiting = self.in_head(&head);
        self.note_head_waits(waiting > 0);
        // `HELP` first: clear, nobody can be woken or started, and the lanes need no look.
        if (waiting == 0 && !arrived) || !self.hint.help() {
            return (item, Grow::No);
        }
        if waiting == 0 && !self.left_to_arrival() {
            return (item, Grow::No);
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
                parker.notify();
                Grow::No
            }
            Help::Grow(grow) => grow,
        };
        (item, grow)
    }

    /// (D2) The watchdog found `blocked` of the pool's `busy` workers asleep in their tasks:
    /// counts as many new workers as [`stall::replacements`] decides (the caller starts them)
    /// and returns how many.
    pub(crate) fn replace_blocked(&self, busy: usize, blocked: usize) -> usize {
        let head = self.lock_head();
        let waiting = self.in_head(&head) + self.lanes_len();
        drop(head);
        let mut synced = self.lock();
        let n = stall::replacements(
            synced.workers(),
            waiting,
            self.spinners(),
            busy,
            blocked,
            self.limits,
        );
        for _ in 0..n {
            synced.add_worker();
        }
        if n > 0 {
            self.publish(&synced);
        }
        n
    }

    /// The stall watchdog's look at a watched pool (D3-D4), decided by [`stall::check`]:
    /// [`Look::Spawn`] when the caller must start one worker (counted here), [`Look::Watch`] to
    /// look again later, [`Look::Stop`] when the queue is empty and the pool stops being
    /// watched.
    pub(crate) fn check_stall(&self) -> Look {
        let head = self.lock_head();
        let mut synced = self.lock();
        let waiting = self.in_head(&head) + self.lanes_len();
        let started = head.started;
        drop(head);
        let look = stall::check(
            waiting,
            started,
            synced.watched_started,
            synced.workers(),
            self.spinners(),
            self.limits.max_workers,
        );
        match look {
            Look::Stop => {
                // (D4) The next push past the eager size watches again (D1).
                synced.watched = false;
                self.publish(&synced);
            }
            Look::Spawn => {
                synced.watched_started = Some(started);
                synced.add_worker();
                self.publish(&synced);
            }
            Look::Watch => synced.watched_started = Some(started),
        }
        look
    }
}
