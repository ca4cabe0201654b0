//! `max_active`: at most `limit` executions of a workqueue pushed to its pools at once, the
//! rest waiting in FIFO order (steps 10-13 of `README.md` in this folder).
//!
//! This file uses only `crate::sync` and `std`, so that `podq-loom` compiles it against loom
//! (`crates/podq-loom/tests/work_active.rs`): no lost activation, never over the limit.
//!
//! An execution holds a slot from the moment it is pushed to a pool until it finishes, so at
//! most `limit` of them run at once. `active` and `waiting` are the only workqueue-wide words
//! written per item, and only for a workqueue whose limit can be reached (see
//! `Workqueue::builder`).

use std::collections::VecDeque;

use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::Mutex;

/// The slot counter and FIFO of one workqueue with a reachable `max_active`.
#[derive(Debug)]
pub(crate) struct ActiveLimit<T> {
    /// I: the most executions holding a slot at once (at least 1).
    limit: usize,
    /// A: executions holding a slot; only raised by a compare-exchange below `limit`.
    active: AtomicUsize,
    /// A: `fifo.len()`, stored under `fifo`'s lock, read without it.
    waiting: AtomicUsize,
    /// L: executions waiting for a slot, oldest first.
    fifo: Mutex<VecDeque<T>>,
}

impl<T> ActiveLimit<T> {
    /// A limit of `limit` slots (callers reject 0 before).
    pub(crate) fn new(limit: usize) -> Self {
        ActiveLimit {
            limit: limit.max(1),
            active: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            fifo: Mutex::new(VecDeque::new()),
        }
    }

    /// Executions holding a slot now (read by the loom model, `podq-loom/tests/work_active.rs`).
    #[allow(dead_code)]
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Executions waiting for a slot now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Step 10: `task` takes a free slot and goes to `push` at once when nothing waits, or
    /// joins the FIFO; then waiting executions are activated while slots are free.
    pub(crate) fn admit(&self, task: T, mut push: impl FnMut(T)) {
        // SeqCst (with `release`): the Dekker pair `waiting` store / `active` read here
        // against `active` decrement / `waiting` read there; see `park`.
        if self.waiting.load(Ordering::SeqCst) == 0 && self.try_acquire() {
            push(task);
            return;
        }
        let mut fifo = self.fifo.lock();
        fifo.push_back(task);
        self.waiting.store(fifo.len(), Ordering::SeqCst);
        self.pump(&mut fifo, &mut push);
    }

    /// Step 12: an execution that held a slot finished: frees its slot and activates waiting
    /// executions (oldest first) while slots are free.
    pub(crate) fn release(&self, mut push: impl FnMut(T)) {
        // SeqCst: either this decrement is ordered before a parker's `active` read (so the
        // parker activates), or the parker's `waiting` store is ordered before our read below
        // (so we pump). Both cannot miss: no lost activation.
        let prev = self.active.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(prev > 0 && prev <= self.limit, "release of slot {prev}");
        if self.waiting.load(Ordering::SeqCst) != 0 {
            let mut fifo = self.fifo.lock();
            self.pump(&mut fifo, &mut push);
        }
    }

    /// Step 13: removes the first waiting execution that `is_it` accepts (cancel).
    pub(crate) fn remove_if(&self, mut is_it: impl FnMut(&T) -> bool) -> Option<T> {
        let mut fifo = self.fifo.lock();
        let i = fifo.iter().position(&mut is_it)?;
        let task = fifo.remove(i);
        self.waiting.store(fifo.len(), Ordering::SeqCst);
        task
    }

    /// Step 11: activates waiting executions in FIFO order while a slot is free; called with
    /// the FIFO locked, so activations leave in queueing order.
    fn pump(&self, fifo: &mut VecDeque<T>, push: &mut impl FnMut(T)) {
        while !fifo.is_empty() && self.try_acquire() {
            if let Some(task) = fifo.pop_front() {
                self.waiting.store(fifo.len(), Ordering::SeqCst);
                push(task);
            }
        }
    }

    /// Takes a slot if one is free.
    fn try_acquire(&self) -> bool {
        let mut n = self.active.load(Ordering::SeqCst);
        loop {
            if n >= self.limit {
                return false;
            }
            // SeqCst: this read-modify-write is the `active` read of the Dekker pair.
            match self
                .active
                .compare_exchange_weak(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
    }
}
