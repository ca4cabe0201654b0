//! Room in the backlog for futures (B4, B5 of `workqueue/README.md`): a future that finds the
//! backlog full leaves its waker beside the sleeping queuers of B2, counted as a sleeper, and
//! the leave that makes room (B3) wakes one. The futures are `api/async_queue.rs`'s.

use std::collections::VecDeque;
use std::task::Waker;

use crate::workqueue::task::backlog::Backlog;

/// The wakers of the futures waiting for room, kept under the backlog's lock.
#[derive(Debug, Default)]
pub(crate) struct Wakers {
    /// The id of the next registration.
    next: u64,
    /// Registered futures not yet woken, oldest first.
    queue: VecDeque<(u64, Waker)>,
}

impl Wakers {
    /// Wakes the oldest registered future, taking it off the list.
    pub(super) fn wake_one(&mut self) {
        if let Some((_, waker)) = self.queue.pop_front() {
            waker.wake();
        }
    }

    /// Takes registration `id` off the list; `false` when a leave took it off to wake it.
    fn remove(&mut self, id: u64) -> bool {
        match self.queue.iter().position(|(i, _)| *i == id) {
            Some(at) => {
                self.queue.remove(at);
                true
            }
            None => false,
        }
    }

    /// Leaves `waker` for registration `id`: replaces its waker, or puts it back at the end
    /// of the list when a leave woke it.
    fn set(&mut self, id: u64, waker: &Waker) {
        match self.queue.iter_mut().find(|(i, _)| *i == id) {
            Some((_, w)) => {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
            }
            None => self.queue.push_back((id, waker.clone())),
        }
    }
}

impl Backlog {
    /// (B4) Room for a future: `true` once it counted one more waiting execution. Else it is
    /// registered (`reg` holds its id; a sleeper in the word from then on), its waker left,
    /// and `false`.
    pub(crate) fn poll_enter(&self, reg: &mut Option<u64>, waker: &Waker) -> bool {
        if reg.is_none() && self.try_enter() {
            return true;
        }
        let mut wakers = self.lock.lock();
        let id = match *reg {
            Some(id) => id,
            None => {
                let id = wakers.next;
                wakers.next += 1;
                // A sleeper before the look below: a leave after it sees the sleeper, one
                // before it leaves room that the look finds (B2's argument).
                self.add_sleeper(1);
                *reg = Some(id);
                id
            }
        };
        if self.try_enter() {
            wakers.remove(id);
            self.add_sleeper(-1);
            *reg = None;
            return true;
        }
        wakers.set(id, waker);
        false
    }

    /// (B5) A registered future goes without room (dropped, or refused after all): it is no
    /// sleeper any more, and if a leave had woken it, it passes that wake on to the next
    /// sleeper and future, so that the room it was woken for is not lost.
    pub(crate) fn withdraw(&self, reg: &mut Option<u64>) {
        let Some(id) = reg.take() else {
            return;
        };
        let mut wakers = self.lock.lock();
        let woken = !wakers.remove(id);
        self.add_sleeper(-1);
        if woken {
            self.room.notify_one();
            wakers.wake_one();
        }
    }
}
