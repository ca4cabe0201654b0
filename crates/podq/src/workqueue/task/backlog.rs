//! The backlog word of a workqueue with a `max_backlog`: executions waiting (queued and not
//! started), and queue calls sleeping for room (B1-B3 of `workqueue/README.md`). The calls
//! that take room are the user's (`api/backlog.rs`); a task leaves the backlog when it starts
//! or is taken back (`task/mod.rs`).
//!
//! Only a workqueue built with a bound has a [`Backlog`]: without one, a queue call reads one
//! immutable `None` and nothing else, so no counter is written per item.

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Condvar, Mutex};
use crate::workqueue::task::admission::Wakers;

/// The largest `max_backlog`: the waiting count's bits of the word, less one.
pub(crate) const MAX_BACKLOG: u64 = (1 << WAITING_BITS) - 1;

/// Bits of the word that count waiting executions; the bits above count sleeping queuers.
const WAITING_BITS: u32 = 40;

/// One waiting execution, in the low bits of the word.
const WAITING_ONE: u64 = 1;

/// One sleeping queuer, in the high bits of the word.
const SLEEPER_ONE: u64 = 1 << WAITING_BITS;

/// Executions waiting, from the word.
fn waiting_of(s: u64) -> u64 {
    s & MAX_BACKLOG
}

/// The count of waiting executions of one workqueue with a `max_backlog`, and where queue calls
/// wait for room.
#[derive(Debug)]
pub(crate) struct Backlog {
    /// I: the most executions that may wait before queue calls wait (1 to [`MAX_BACKLOG`]).
    limit: u64,
    /// A: `sleepers << WAITING_BITS | waiting`. One word, so that a leaving execution sees a
    /// sleeper that came before it, and a sleeper sees a leave that came before it, each in
    /// the value its own read-modify-write returns (B2).
    word: AtomicU64,
    /// The sleepers' lock, with the wakers of the futures that wait for room
    /// (`task/admission.rs`): a sleeper holds it from its registration to its sleep, a future
    /// from its registration to its last look; a leaver notifies and wakes under it.
    pub(super) lock: Mutex<Wakers>,
    /// Where queue calls sleep until there is room.
    pub(super) room: Condvar,
}

impl Backlog {
    /// A backlog of at most `limit` waiting executions (at least 1; more than [`MAX_BACKLOG`]
    /// is treated as that).
    pub(crate) fn new(limit: usize) -> Self {
        Backlog {
            limit: (limit as u64).clamp(1, MAX_BACKLOG),
            word: AtomicU64::new(0),
            lock: Mutex::new(Wakers::default()),
            room: Condvar::new(),
        }
    }

    /// The most executions that may wait.
    pub(crate) fn limit(&self) -> usize {
        self.limit as usize
    }

    /// Executions waiting now.
    pub(crate) fn waiting(&self) -> u64 {
        waiting_of(self.word.load(Ordering::Relaxed))
    }

    /// B1: counts one more waiting execution if there is room; `false` when the backlog
    /// is full.
    pub(crate) fn try_enter(&self) -> bool {
        // Relaxed: the count orders nothing but itself; the execution's stores are published
        // by its push, as without a bound.
        let mut s = self.word.load(Ordering::Relaxed);
        loop {
            if waiting_of(s) >= self.limit {
                return false;
            }
            match self.word.compare_exchange_weak(
                s,
                s + WAITING_ONE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// B1: counts one more waiting execution, over the limit if need be (the timer's,
    /// and those of the workqueue's own items, never wait).
    pub(crate) fn force(&self) {
        self.word.fetch_add(WAITING_ONE, Ordering::Relaxed);
    }

    /// B2 and B4: raises or lowers (`SLEEPER_ONE` or its negation) the count of sleepers.
    pub(super) fn add_sleeper(&self, delta: i64) {
        if delta >= 0 {
            self.word.fetch_add(SLEEPER_ONE, Ordering::Relaxed);
        } else {
            self.word.fetch_sub(SLEEPER_ONE, Ordering::Relaxed);
        }
    }

    /// B2: counts one more waiting execution, sleeping until there is room.
    pub(crate) fn enter(&self) {
        if self.try_enter() {
            return;
        }
        let mut guard = self.lock.lock();
        self.word.fetch_add(SLEEPER_ONE, Ordering::Relaxed);
        while !self.try_enter() {
            guard = self.room.wait(guard);
        }
        self.word.fetch_sub(SLEEPER_ONE, Ordering::Relaxed);
    }

    /// B3: an execution waits no more (it starts, or is taken back unrun); wakes one
    /// sleeping queuer and one waiting future if the word shows a sleeper.
    pub(crate) fn leave(&self) {
        let prev = self.word.fetch_sub(WAITING_ONE, Ordering::Relaxed);
        debug_assert!(waiting_of(prev) > 0, "leave without an entry");
        if prev >= SLEEPER_ONE {
            // One execution left, so there is room for one: one sleeper. A sleeper that finds
            // the room taken by a queue call that did not sleep sleeps again; that call's
            // execution leaves later and wakes the next.
            let mut wakers = self.lock.lock();
            self.room.notify_one();
            wakers.wake_one();
        }
    }
}
