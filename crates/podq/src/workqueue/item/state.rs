//! The state of one reusable work item: pending, running, canceling, and the waiters of flush
//! and cancel (Q1, Q5, E1-E3 and C1-C5 of `workqueue/README.md`).
//!
//! This file uses only `crate::sync` and `std`, so that `podq-loom` compiles it against loom
//! and explores its interleavings (`crates/podq-loom/tests/work_state.rs`).
//!
//! One 64-bit word holds four flags and a generation: the number of times the item was
//! claimed. `D` is what a queuer hands to the worker that is running the item (a queued
//! execution, for the worker to push when it finishes); `X` is slow-path data kept under the
//! same lock (where the item was last queued, its timer).

use std::task::Waker;
use std::time::Instant;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Condvar, Mutex};

/// Backoff rounds a waiter (item flush, cancel) looks at the word before it sleeps: the same
/// budget as an idle pool worker's spin (`pool::SPIN_ROUNDS`; what a round costs, and how that
/// budget was measured, is at `sync::SPIN_ONLY_ROUNDS`). `queue_work` + `Work::flush` on one
/// thread of the 2-CPU test machine takes 1.57-1.68 us with this budget, 15.4-16.1 us when the
/// waiter sleeps at once (`cargo bench -p podq --bench queue`, `queue_work+flush`).
/// A `JoinHandle::join` looks at its slot with the same budget (`api/join.rs`).
pub(crate) const WAIT_SPIN_ROUNDS: u32 = 13;

/// Claimed by a queuer: queued, waiting in a FIFO or timer, or handed to its runner.
pub(crate) const PENDING: u64 = 1;
/// A worker is running the item's closure.
pub(crate) const RUNNING: u64 = 1 << 1;
/// A `cancel_sync` is in progress: claims fail, a pending execution is discarded.
pub(crate) const CANCELING: u64 = 1 << 2;
/// Someone sleeps on [`ItemState::wait_until_deadline`] (or a future waits as it does):
/// whoever clears PENDING, RUNNING or CANCELING must wake them.
const WAITERS: u64 = 1 << 3;
/// One claim, in the generation bits above the flags.
const GEN_ONE: u64 = 1 << 4;

/// What [`ItemState::try_claim`] found.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Claim {
    /// The caller now owns the pending execution. `running`: a worker was running the item at
    /// the moment of the claim, so the execution must go through [`ItemState::defer`].
    Claimed {
        /// Whether the item was running when it was claimed.
        running: bool,
    },
    /// The item was already pending (or being cancelled): nothing was claimed.
    Refused,
}

/// What [`ItemState::start`] decided for a popped execution.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Start {
    /// Run the closure now; call [`ItemState::finish`] afterwards.
    Run,
    /// A cancel is in progress: the execution is discarded without running.
    Discarded,
}

/// The data under an item's lock.
#[derive(Debug, Default)]
pub(crate) struct Slot<D, X> {
    /// L: an execution claimed while the item was running, for its runner to push.
    deferred: Option<D>,
    /// L: the caller's slow-path data.
    pub(crate) extra: X,
    /// L: the wakers of futures waiting as [`ItemState::wait_until_deadline`] waits (C4);
    /// woken, and emptied, with the condvar's sleepers.
    wakers: Vec<Waker>,
}

/// The pending/running/canceling state of one work item.
#[derive(Debug)]
pub(crate) struct ItemState<D, X> {
    /// A: flags and generation (see the constants above).
    word: AtomicU64,
    /// The deferred execution and the caller's slow-path data; also the waiters' lock.
    slot: Mutex<Slot<D, X>>,
    /// Waiters of [`ItemState::wait_until_deadline`]; notified under `slot`.
    changed: Condvar,
}

impl<D, X: Default> Default for ItemState<D, X> {
    fn default() -> Self {
        ItemState {
            word: AtomicU64::new(0),
            slot: Mutex::new(Slot {
                deferred: None,
                extra: X::default(),
                wakers: Vec::new(),
            }),
            changed: Condvar::new(),
        }
    }
}

impl<D, X> ItemState<D, X> {
    /// The state word now (flags and generation).
    #[inline]
    pub(crate) fn load(&self) -> u64 {
        // Acquire: pairs with the Release of every transition, so a caller that sees an item
        // idle also sees everything its last run wrote.
        self.word.load(Ordering::Acquire)
    }

    /// Q1: claims the pending execution, unless the item is pending or being cancelled.
    ///
    /// A refusal because the item is pending still publishes the caller's stores to that
    /// pending execution: it "runs once for both requests", so it must see both (the kernel's
    /// barrier in `set_work_pool_and_clear_pending`).
    #[inline]
    pub(crate) fn try_claim(&self) -> Claim {
        let mut s = self.word.load(Ordering::Relaxed);
        let mut published = false;
        loop {
            if s & (PENDING | CANCELING) != 0 {
                if published {
                    return Claim::Refused;
                }
                // A plain load may show a PENDING that a worker has already cleared (the
                // store-buffer pattern: the caller's stores still in flight, the worker's
                // loads already done), and then nobody would run for this request. A
                // read-modify-write reads the latest value; Release: the execution pending
                // there starts with a later RMW of this word (Acquire in `start`), which
                // reads from this one's release sequence (every write to the word is an
                // RMW), so it sees the caller's stores.
                s = self.word.fetch_add(0, Ordering::Release);
                published = true;
                continue;
            }
            // Release: publishes the queuer's stores before the claim to the worker that
            // starts this execution (Acquire in `start`); Acquire: pairs with `finish` so a
            // re-queue sees the previous run's stores.
            match self.word.compare_exchange_weak(
                s,
                (s | PENDING).wrapping_add(GEN_ONE),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Claim::Claimed {
                        running: s & RUNNING != 0,
                    }
                }
                Err(now) => s = now,
            }
        }
    }

    /// Q5: the owner of a claim made while the item was running hands its execution to
    /// the runner. Returns it back when the run has ended meanwhile, for the caller to push.
    pub(crate) fn defer(&self, execution: D) -> Option<D> {
        let mut slot = self.slot.lock();
        // RUNNING is only cleared under `slot` once PENDING is set (E3), so this check
        // and the runner's `finish` cannot miss each other.
        if self.word.load(Ordering::Acquire) & RUNNING != 0 {
            slot.deferred = Some(execution);
            None
        } else {
            Some(execution)
        }
    }

    /// E1: a worker popped the pending execution: it runs, or is discarded when a cancel
    /// is in progress (the claim ends either way).
    pub(crate) fn start(&self) -> Start {
        let mut s = self.word.load(Ordering::Relaxed);
        loop {
            debug_assert!(
                s & PENDING != 0 && s & RUNNING == 0,
                "start of state {s:#x}"
            );
            let (next, start) = if s & CANCELING != 0 {
                (s & !(PENDING | WAITERS), Start::Discarded)
            } else {
                ((s & !PENDING) | RUNNING, Start::Run)
            };
            // Acquire: pairs with the Release of `try_claim`: the closure sees every store the
            // queuer made before queueing. Release: pairs with waiters' Acquire loads.
            match self
                .word
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(prev) => {
                    if start == Start::Discarded {
                        self.wake(prev);
                    }
                    return start;
                }
                Err(now) => s = now,
            }
        }
    }

    /// E3: the runner's closure returned. Clears RUNNING and returns the execution a
    /// queuer deferred meanwhile, which the caller must push.
    pub(crate) fn finish(&self) -> Option<D> {
        let mut s = self.word.load(Ordering::Relaxed);
        while s & PENDING == 0 {
            // Fast path: nobody claimed the item while it ran. Release: publishes the run's
            // stores to the next claimer and to flush/cancel waiters.
            match self.word.compare_exchange_weak(
                s,
                s & !(RUNNING | WAITERS),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(prev) => {
                    self.wake(prev);
                    return None;
                }
                Err(now) => s = now,
            }
        }
        // A claim was made while running: its owner defers (or has deferred) under `slot`.
        let mut slot = self.slot.lock();
        let prev = self.word.fetch_and(!(RUNNING | WAITERS), Ordering::AcqRel);
        let wakers = if prev & WAITERS != 0 {
            self.changed.notify_all();
            std::mem::take(&mut slot.wakers)
        } else {
            Vec::new()
        };
        let deferred = slot.deferred.take();
        drop(slot);
        wakers.into_iter().for_each(Waker::wake);
        deferred
    }

    /// C2: a grabber took the pending execution out of a queue, FIFO or timer, and
    /// discards it: the claim ends.
    pub(crate) fn release_claim(&self) {
        let prev = self.word.fetch_and(!(PENDING | WAITERS), Ordering::AcqRel);
        debug_assert!(prev & PENDING != 0, "release of an unclaimed item");
        self.wake(prev);
    }

    /// Takes the deferred execution back (cancel, `mod_delayed`): its claim moves to the caller.
    pub(crate) fn take_deferred(&self) -> Option<D> {
        self.slot.lock().deferred.take()
    }

    /// Runs `f` on the slow-path data under the item's lock.
    pub(crate) fn with_extra<R>(&self, f: impl FnOnce(&mut X) -> R) -> R {
        f(&mut self.slot.lock().extra)
    }

    /// C1: starts a cancel: sets CANCELING (waiting for a concurrent cancel to end first,
    /// until `deadline`; `None`: no deadline) and returns the state just before. `None` when
    /// the deadline passed while another cancel was in progress: then nothing changed.
    pub(crate) fn begin_cancel_until(&self, deadline: Option<Instant>) -> Option<u64> {
        loop {
            let prev = self.word.fetch_or(CANCELING, Ordering::AcqRel);
            if prev & CANCELING == 0 {
                return Some(prev);
            }
            if !self.wait_until_deadline(|s| s & CANCELING == 0, deadline) {
                return None;
            }
        }
    }

    /// C1, from the item's own closure: sets CANCELING and returns the state just before,
    /// or returns `Err` with the state when another cancel is in progress (that cancel waits
    /// for the running closure, which therefore must not wait for it).
    pub(crate) fn begin_cancel_or_join(&self) -> Result<u64, u64> {
        let prev = self.word.fetch_or(CANCELING, Ordering::AcqRel);
        if prev & CANCELING == 0 {
            Ok(prev)
        } else {
            Err(prev)
        }
    }

    /// C5: ends a cancel (the item is neither pending nor running).
    pub(crate) fn end_cancel(&self) {
        let prev = self
            .word
            .fetch_and(!(CANCELING | WAITERS), Ordering::AcqRel);
        self.wake(prev);
    }

    /// C4: sleeps until `done(state)` holds, or until `deadline` (`None`: no deadline).
    /// Every transition that clears PENDING, RUNNING or CANCELING wakes the sleepers. Returns
    /// whether `done` held. Giving up leaves WAITERS set, which only costs the next transition
    /// a needless notify.
    pub(crate) fn wait_until_deadline(
        &self,
        done: impl Fn(u64) -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        // Most waits (a flush of an item that is about to finish) end within microseconds:
        // look with backoff first (`WAIT_SPIN_ROUNDS`), and only then sleep on the condvar,
        // whose wake-up costs the finishing worker a lock and a futex call.
        if crate::sync::spin_until(WAIT_SPIN_ROUNDS, || done(self.load())) {
            return true;
        }
        let mut slot = self.slot.lock();
        loop {
            // Set WAITERS and test in one step under `slot`: a transition ordered before the
            // fetch_or is seen in `s`; one ordered after it sees WAITERS and notifies under
            // `slot`, which it can only take once we sleep.
            let s = self.word.fetch_or(WAITERS, Ordering::AcqRel) | WAITERS;
            if done(s) {
                return true;
            }
            slot = match deadline {
                None => self.changed.wait(slot),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.changed.wait_timeout(slot, left).0
                }
            };
        }
    }

    /// Wakes the sleepers of [`ItemState::wait_until_deadline`] and the wakers of
    /// [`ItemState::poll_until`] if `prev` (the word before a transition that cleared WAITERS)
    /// had any.
    fn wake(&self, prev: u64) {
        if prev & WAITERS != 0 {
            let mut slot = self.slot.lock();
            self.changed.notify_all();
            let wakers = std::mem::take(&mut slot.wakers);
            drop(slot);
            wakers.into_iter().for_each(Waker::wake);
        }
    }

    /// C4 for a future: whether `done(state)` holds; if not, `waker` is kept (once) to be
    /// woken by the next transition that clears PENDING, RUNNING or CANCELING, as a sleeper
    /// of [`ItemState::wait_until_deadline`] is.
    pub(crate) fn poll_until(&self, done: impl Fn(u64) -> bool, waker: &Waker) -> bool {
        if done(self.load()) {
            return true;
        }
        let mut slot = self.slot.lock();
        // As a sleeper does: WAITERS set and the word tested in one step under `slot`.
        let s = self.word.fetch_or(WAITERS, Ordering::AcqRel) | WAITERS;
        if done(s) {
            return true;
        }
        if !slot.wakers.iter().any(|w| w.will_wake(waker)) {
            slot.wakers.push(waker.clone());
        }
        false
    }
}

/// The generation of a state word: how many times the item was claimed.
#[inline]
pub(crate) fn generation(s: u64) -> u64 {
    s / GEN_ONE
}

/// Whether the execution claimed as generation `target` has finished (run, or discarded by a
/// cancel), judged from a later state word `s` of the same item.
///
/// Executions of one item run one after another, so generation `target` is done when a
/// later one started, or when nothing is pending or running. While a cancel runs, the
/// running execution may be older than the newest claim, so nothing is judged done then.
pub(crate) fn flushed(s: u64, target: u64) -> bool {
    let g = generation(s);
    if g >= target.saturating_add(2) {
        return true;
    }
    let pending = s & PENDING != 0;
    let running = s & RUNNING != 0;
    if running && s & CANCELING != 0 {
        return false;
    }
    if g == target.saturating_add(1) {
        !(pending && running)
    } else {
        !pending && !running
    }
}
