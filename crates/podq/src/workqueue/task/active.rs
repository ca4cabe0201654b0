//! `max_active`: at most `limit` executions of a workqueue pushed to its pools at once, the
//! rest waiting in FIFO order (Q3, Q4, E4 and C3 of `workqueue/README.md`).
//!
//! This file uses only `crate::sync` and `std`, so that `podq-loom` compiles it against loom
//! (`crates/podq-loom/tests/work_active.rs`): no lost activation, never over the limit.
//!
//! An execution holds a slot from the moment it is pushed to a pool until it finishes, so at
//! most `limit` of them run at once. One word holds both counts, so every decision ("take a
//! slot", "free a slot, is anyone waiting?") is one read-modify-write of one location and no
//! two of them can miss each other. It is the only workqueue-wide word written per item, and
//! only for a workqueue whose limit can be reached (see `WorkqueueBuilder::max_active`).

use std::collections::VecDeque;

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::Mutex;

/// One active execution, in the low half of the word.
const ACTIVE_ONE: u64 = 1;
/// One waiting execution, in the high half of the word.
const WAITING_ONE: u64 = 1 << 32;
/// The most slots a limit may have (the low half of the word).
const MAX_LIMIT: u64 = (1 << 32) - 1;

/// Executions holding a slot, from the word.
fn active_of(s: u64) -> u64 {
    s & MAX_LIMIT
}

/// Executions waiting in the FIFO, from the word.
fn waiting_of(s: u64) -> u64 {
    s >> 32
}

/// The slot counter and FIFO of one workqueue with a reachable `max_active`.
#[derive(Debug)]
pub(crate) struct ActiveLimit<T> {
    /// I: the most executions holding a slot at once (1 to `MAX_LIMIT`).
    limit: u64,
    /// A: `waiting << 32 | active`. `active` only rises below `limit`; `waiting` changes only
    /// under `fifo`'s lock, together with the FIFO.
    word: AtomicU64,
    /// L: executions waiting for a slot, oldest first.
    fifo: Mutex<VecDeque<T>>,
}

impl<T> ActiveLimit<T> {
    /// A limit of `limit` slots (at least 1; at most 2^32 - 1, more is treated as that).
    pub(crate) fn new(limit: usize) -> Self {
        ActiveLimit {
            limit: u64::try_from(limit)
                .unwrap_or(MAX_LIMIT)
                .clamp(1, MAX_LIMIT),
            word: AtomicU64::new(0),
            fifo: Mutex::new(VecDeque::new()),
        }
    }

    /// Executions holding a slot now (read by the loom model, `podq-loom/tests/work_active.rs`).
    #[allow(dead_code)]
    pub(crate) fn active(&self) -> usize {
        usize::try_from(active_of(self.word.load(Ordering::Relaxed))).unwrap_or(usize::MAX)
    }

    /// Executions waiting for a slot now.
    pub(crate) fn waiting(&self) -> usize {
        usize::try_from(waiting_of(self.word.load(Ordering::Relaxed))).unwrap_or(usize::MAX)
    }

    /// Q3: `task` takes a free slot and goes to `push` at once when nothing waits, or
    /// joins the FIFO; then waiting executions are activated while slots are free.
    pub(crate) fn admit(&self, task: T, mut push: impl FnMut(T)) {
        let mut s = self.word.load(Ordering::Relaxed);
        while waiting_of(s) == 0 && active_of(s) < self.limit {
            // Relaxed: the word only counts; the task itself is published by the pool's lock.
            match self.word.compare_exchange_weak(
                s,
                s + ACTIVE_ONE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    push(task);
                    return;
                }
                Err(now) => s = now,
            }
        }
        let mut fifo = self.fifo.lock();
        fifo.push_back(task);
        // Ordered with every `release` on the one word: a release before this sees no waiter
        // but left its slot for `pump` below; a release after it sees the waiter and pumps.
        self.word.fetch_add(WAITING_ONE, Ordering::Relaxed);
        self.pump(&mut fifo, &mut push);
    }

    /// E4: an execution that held a slot finished: frees its slot and activates waiting
    /// executions (oldest first) while slots are free.
    pub(crate) fn release(&self, mut push: impl FnMut(T)) {
        let prev = self.word.fetch_sub(ACTIVE_ONE, Ordering::Relaxed);
        debug_assert!(active_of(prev) > 0, "release without a slot");
        if waiting_of(prev) != 0 {
            let mut fifo = self.fifo.lock();
            self.pump(&mut fifo, &mut push);
        }
    }

    /// C3: removes the first waiting execution that `is_it` accepts (cancel).
    pub(crate) fn remove_if(&self, mut is_it: impl FnMut(&T) -> bool) -> Option<T> {
        let mut fifo = self.fifo.lock();
        let i = fifo.iter().position(&mut is_it)?;
        let task = fifo.remove(i)?;
        self.word.fetch_sub(WAITING_ONE, Ordering::Relaxed);
        Some(task)
    }

    /// Q4: moves executions from the FIFO to `push` while a slot is free, in FIFO order;
    /// called with the FIFO locked, so activations leave in queueing order. `push` only puts
    /// the execution in a pool's queue: a pool never runs a task on the pushing thread, not
    /// even when the OS refuses it a worker (its rescuer runs it, M1-M5 of `pool/README.md`),
    /// so no item runs under this lock and an item may queue to its own workqueue.
    fn pump(&self, fifo: &mut VecDeque<T>, push: &mut impl FnMut(T)) {
        let mut s = self.word.load(Ordering::Relaxed);
        while waiting_of(s) != 0 && active_of(s) < self.limit {
            // One waiter becomes active in one step: the count of both never passes the limit.
            match self.word.compare_exchange_weak(
                s,
                s - WAITING_ONE + ACTIVE_ONE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if let Some(task) = fifo.pop_front() {
                        push(task);
                    }
                    s = self.word.load(Ordering::Relaxed);
                }
                Err(now) => s = now,
            }
        }
    }
}
