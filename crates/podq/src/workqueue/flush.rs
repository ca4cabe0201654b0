//! Workqueue flush and drain without a workqueue-wide lock on the hot path: kernel-style flush
//! colours (steps 14-17 of `README.md` in this folder).
//!
//! The workqueue has a current colour, written only by flushers (one at a time, under
//! `flush_lock`). Each execution is counted, at queue time, in its pod's in-flight count for
//! the colour it was queued under, and uncounted when it finishes. A flusher moves the colour
//! on and waits until the old colour's counts are zero in every pod: that is everything queued
//! before it, and nothing queued after it (later work, self-requeueing items included, lands in
//! the new colour).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

/// Two colours suffice: flushers are serialised, so at most one colour is being waited on
/// while the other collects new work.
const COLOURS: usize = 2;

/// The counters of one pod of one workqueue.
///
/// `in_flight` is written by every queue call and by every finished run; the statistics only by
/// the workers, before and after a run. They sit on separate cache lines, so that a worker
/// about to run an item does not first pull back the line that the queuer just wrote. Together
/// with the pool lock's own lines (`pool/idle.rs`), measured with `podq bench` on 2 CPUs in 8
/// alternating runs: cache_shard median 395k items/s against 372k without the padding.
#[derive(Debug, Default)]
pub(crate) struct PodCounters {
    /// A: executions queued under each colour and not finished yet.
    in_flight: CachePadded<[AtomicUsize; COLOURS]>,
    /// A: executions whose closure started.
    pub(crate) started: AtomicU64,
    /// A: executions whose closure returned or panicked.
    pub(crate) completed: AtomicU64,
    /// A: executions whose closure panicked (also counted in `completed`).
    pub(crate) panicked: AtomicU64,
    /// A: executions discarded by `cancel_sync` before they ran.
    pub(crate) cancelled: AtomicU64,
}

impl PodCounters {
    /// Executions of this pod queued and not finished, over both colours.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }
}

/// The flush colours and drain state of one workqueue.
#[derive(Debug, Default)]
pub(crate) struct Flush {
    /// A: the colour new executions are counted under; written under `flush_lock` only.
    colour: AtomicUsize,
    /// A: a flusher sleeps (or is about to) on `wait`.
    flushing: AtomicBool,
    /// Serialises flushers.
    flush_lock: Mutex<()>,
    /// The flusher's sleeping lock; finishers notify under it.
    wait_lock: Mutex<()>,
    /// Where the flusher sleeps.
    wait: Condvar,
    /// A: drains in progress; while non-zero, only the workqueue's own running items may queue.
    draining: AtomicUsize,
}

impl Flush {
    /// Step 14: counts a new execution in `pod`'s counts and returns its colour.
    #[inline]
    pub(crate) fn enter(&self, pod: &PodCounters) -> usize {
        loop {
            // SeqCst on the three steps: if the re-read still sees `c`, the increment is
            // ordered before any flusher's colour change from `c`, hence before that
            // flusher's reads of the counts (step 15), which therefore wait for this
            // execution. Otherwise the count moves to the new colour.
            let c = self.colour.load(Ordering::SeqCst);
            pod.in_flight[c].fetch_add(1, Ordering::SeqCst);
            if self.colour.load(Ordering::SeqCst) == c {
                return c;
            }
            self.leave(pod, c);
        }
    }

    /// Step 16: uncounts a finished (or discarded) execution of colour `colour`, waking a
    /// flusher when a count reaches zero.
    #[inline]
    pub(crate) fn leave(&self, pod: &PodCounters, colour: usize) {
        // SeqCst: the Dekker pair with the flusher's `flushing` store and count reads: either
        // the flusher sees this decrement, or we see `flushing` and wake it.
        if pod.in_flight[colour].fetch_sub(1, Ordering::SeqCst) == 1
            && self.flushing.load(Ordering::SeqCst)
        {
            let _guard = self.wait_lock.lock();
            self.wait.notify_all();
        }
    }

    /// Step 15: waits for every execution counted before the call.
    pub(crate) fn flush<'a, I>(&self, pods: impl Fn() -> I)
    where
        I: Iterator<Item = &'a PodCounters>,
    {
        let _flusher = self.flush_lock.lock();
        let old = self.colour.load(Ordering::SeqCst);
        self.colour.store((old + 1) % COLOURS, Ordering::SeqCst);
        let mut guard = self.wait_lock.lock();
        loop {
            self.flushing.store(true, Ordering::SeqCst);
            let busy = pods().any(|p| p.in_flight[old].load(Ordering::SeqCst) != 0);
            if !busy {
                break;
            }
            self.wait.wait(&mut guard);
        }
        self.flushing.store(false, Ordering::SeqCst);
    }

    /// Step 17: marks a drain as started (see `Workqueue::drain`).
    pub(crate) fn start_drain(&self) {
        self.draining.fetch_add(1, Ordering::SeqCst);
    }

    /// Marks a drain as ended.
    pub(crate) fn end_drain(&self) {
        self.draining.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether a drain is in progress.
    #[inline]
    pub(crate) fn draining(&self) -> bool {
        // Relaxed: a queue call concurrent with the start of a drain may go either way; the
        // drain's flushes wait for it if it got in.
        self.draining.load(Ordering::Relaxed) != 0
    }
}
