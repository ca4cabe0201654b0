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

/// Stripes of a pod's counters at most: 16, one per CPU of a `cache_shard` pod of 8 cores
/// with SMT (the kernel's default shard size).
const MAX_STRIPES: usize = 16;

/// The counters of one pod of one workqueue, in stripes: each CPU counts in its own stripe (on
/// cache lines of its own), and readers add the stripes up.
///
/// Every queue call raises an in-flight count and every finished run lowers one. Kept in one
/// place, those counts were one cache line written by every producer and every worker of the
/// pod for every item; `perf annotate` of the flood workload on 2 CPUs put 19 % of the queue
/// call and 59 % of a worker's accounting (3 % and 8 % of all samples) on that line. In
/// stripes, the threads that write one line take turns on one CPU, and only a flusher (rarely)
/// and the statistics read the others; the worker's accounting then fell from 8.2 % to 5.3 % of
/// all samples in the same profile (what is left is mostly the pod's reference count). A stripe's in-flight count may wrap below zero (an item queued on one CPU and
/// finished on another); only the sum over the stripes means anything, and it is never below
/// zero.
#[derive(Debug)]
pub(crate) struct PodCounters {
    /// Indexed by CPU id modulo the length, a power of two.
    stripes: Box<[CachePadded<Stripe>]>,
}

/// The counts of the CPUs whose id falls on one stripe.
#[derive(Debug, Default)]
pub(crate) struct Stripe {
    /// A: executions counted here under each colour minus those uncounted here, wrapping.
    in_flight: [AtomicUsize; COLOURS],
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
    /// Counters for a pod of `cpus` CPUs: twice as many stripes as CPUs, so that pods whose
    /// CPU ids are not consecutive rarely put two CPUs on one stripe; a power of two between 2
    /// and [`MAX_STRIPES`].
    pub(crate) fn new(cpus: usize) -> Self {
        let stripes = cpus
            .saturating_mul(2)
            .clamp(2, MAX_STRIPES)
            .next_power_of_two();
        Self {
            stripes: (0..stripes).map(|_| CachePadded::default()).collect(),
        }
    }

    /// The calling thread's stripe: the one of the CPU it runs on, so that the producers and
    /// workers that share a stripe take turns on one CPU rather than pull its line between
    /// CPUs.
    #[inline]
    pub(crate) fn mine(&self) -> &Stripe {
        &self.stripes[crate::here::cpu_or_thread() & (self.stripes.len() - 1)]
    }

    /// The sum of one count over the stripes.
    pub(crate) fn total(&self, count: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.stripes
            .iter()
            .map(|s| count(s).load(Ordering::Relaxed))
            .sum()
    }

    /// Executions of colour `colour` queued and not finished, over the stripes. SeqCst: the
    /// flusher's and the last finisher's reads (step 15, 16).
    fn in_flight_of(&self, colour: usize) -> usize {
        self.stripes.iter().fold(0usize, |sum, s| {
            sum.wrapping_add(s.in_flight[colour].load(Ordering::SeqCst))
        })
    }

    /// Executions of this pod queued and not finished, over both colours.
    pub(crate) fn in_flight(&self) -> usize {
        (0..COLOURS).fold(0usize, |sum, c| sum.wrapping_add(self.in_flight_of(c)))
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
            //
            // The increment and the undo below are on the calling thread's stripe, so a
            // flusher that read the stripe in between sees it no lower than before.
            let stripe = pod.mine();
            let c = self.colour.load(Ordering::SeqCst);
            stripe.in_flight[c].fetch_add(1, Ordering::SeqCst);
            if self.colour.load(Ordering::SeqCst) == c {
                return c;
            }
            self.leave_from(pod, stripe, c);
        }
    }

    /// Step 16: uncounts a finished (or discarded) execution of colour `colour` in the calling
    /// thread's stripe, waking a flusher when the pod's count of that colour reaches zero.
    #[inline]
    pub(crate) fn leave(&self, pod: &PodCounters, colour: usize) {
        self.leave_from(pod, pod.mine(), colour);
    }

    /// [`Flush::leave`] on a given stripe of `pod`.
    #[inline]
    fn leave_from(&self, pod: &PodCounters, stripe: &Stripe, colour: usize) {
        // SeqCst: the Dekker pair with the flusher's `flushing` store and count reads: either
        // the flusher sees this decrement, or we see `flushing`, add the stripes up and wake
        // it at zero. In the single order of SeqCst operations, the last decrement's reads
        // come after every other decrement, so the last finisher sees the zero.
        stripe.in_flight[colour].fetch_sub(1, Ordering::SeqCst);
        if self.flushing.load(Ordering::SeqCst) && pod.in_flight_of(colour) == 0 {
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
            // The stripes are read one after the other while runs finish. After the colour
            // moved, a stripe's count of `old` only goes down (an increment that enter() undoes
            // is undone on the same stripe), so a sum of zero means none was left at the last
            // read.
            let busy = pods().any(|p| p.in_flight_of(old) != 0);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    /// Runs `f` on a thread pinned to `cpu` (or unpinned where pinning is not supported).
    fn on_cpu<R: Send + 'static>(cpu: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
        thread::spawn(move || {
            let _ = crate::sys::pin_current_thread(&[cpu]);
            f()
        })
        .join()
        .expect("counting thread")
    }

    #[test]
    fn counts_raised_on_one_cpu_and_lowered_on_another_add_up_to_zero() {
        let cpus = crate::sys::allowed_cpus().expect("sched_getaffinity");
        let (first, last) = (cpus[0], cpus[cpus.len() - 1]);
        let pod = Arc::new(PodCounters::new(cpus.len()));
        let flush = Arc::new(Flush::default());
        let colours: Vec<usize> = {
            let (pod, flush) = (Arc::clone(&pod), Arc::clone(&flush));
            on_cpu(first, move || (0..3).map(|_| flush.enter(&pod)).collect())
        };
        assert_eq!(pod.in_flight(), 3);
        {
            let (pod, flush) = (Arc::clone(&pod), Arc::clone(&flush));
            on_cpu(last, move || {
                for c in colours {
                    flush.leave(&pod, c);
                    pod.mine().completed.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // On a machine with two CPUs or more, one stripe is at 3 and another wrapped to -3.
        assert_eq!(pod.in_flight(), 0);
        assert_eq!(pod.total(|s| &s.completed), 3);
    }

    #[test]
    fn a_flush_waits_for_counts_lowered_on_other_cpus() {
        let cpus = crate::sys::allowed_cpus().expect("sched_getaffinity");
        let pod = Arc::new(PodCounters::new(cpus.len()));
        let flush = Arc::new(Flush::default());
        let colour = flush.enter(&pod);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flusher = {
            let (pod, flush, done) = (Arc::clone(&pod), Arc::clone(&flush), Arc::clone(&done));
            thread::spawn(move || {
                flush.flush(|| std::iter::once(&*pod));
                done.store(true, Ordering::SeqCst);
            })
        };
        // The flusher cannot finish while the execution is counted (a bounded look, not a
        // speed check: it only gives a wrongly finishing flusher time to show).
        thread::sleep(Duration::from_millis(20));
        assert!(!done.load(Ordering::SeqCst));
        let (pod2, flush2) = (Arc::clone(&pod), Arc::clone(&flush));
        on_cpu(cpus[cpus.len() - 1], move || flush2.leave(&pod2, colour));
        flusher.join().expect("flusher");
        assert!(done.load(Ordering::SeqCst));
        assert_eq!(pod.in_flight(), 0);
    }
}
