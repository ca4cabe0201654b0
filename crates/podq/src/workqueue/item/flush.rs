//! Workqueue flush and drain without a workqueue-wide lock on the hot path: kernel-style flush
//! colours (Q2, E5, E6, F1 and F2 of `workqueue/README.md`).
//!
//! The workqueue has a current colour, written only by flushers (one at a time, in their
//! turn). Each execution is counted, at queue time, in its pod's in-flight count for
//! the colour it was queued under, and uncounted when it finishes. A flusher moves the colour
//! on and waits until the old colour's counts are zero in every pod: that is everything queued
//! before it, and nothing queued after it (later work, self-requeueing items included, lands in
//! the new colour).
//!
//! The counts also keep the pod alive (E6): an execution holds its pod without a reference
//! count (`task/pod_ref.rs`), so a finisher touches the pod's memory after its decrement only
//! while it is announced in its stripe's `leaving` count, and the workqueue's drop waits for
//! those counts too. Flushers sleep on a [`FlushWait`] outside the pod, which a finisher
//! may use after its decrement whatever happened to the pod.
//!
//! This file uses only `crate::sync`, `crate::here` and `std`, so that `podq-loom` compiles it
//! against loom (`crates/podq-loom/tests/flush.rs`).

use std::time::Instant;

use crate::sync::atomic::{after_seqcst_rmw, fence, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{thread, CachePadded, Condvar, Mutex, MutexGuard};

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
/// place, those counts would be one cache line written by every producer and every worker of
/// the pod for every item (`perf annotate` of the flood workload on 2 CPUs: 19 % of the queue
/// call and 59 % of a worker's accounting on that line). In stripes, the threads that write one
/// line take turns on one CPU, and only a flusher (rarely) and the statistics read the others.
/// A stripe's in-flight count may wrap below zero (an item queued on one CPU and finished on
/// another); only the sum over the stripes means anything, and it is never below zero.
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
    /// A: finishers on this stripe between the announcement before their decrement and the
    /// end of their wake-up (E6); the workqueue's drop waits until it is 0 everywhere.
    leaving: AtomicUsize,
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

    /// The stripe of `at`, a CPU id (or, where the CPU cannot be read, a thread index): the
    /// producers and workers that share a stripe take turns on one CPU rather than pull its
    /// line between CPUs.
    #[inline]
    pub(crate) fn stripe(&self, at: usize) -> &Stripe {
        &self.stripes[at & (self.stripes.len() - 1)]
    }

    /// The calling thread's stripe: the one of the CPU it runs on.
    #[inline]
    pub(crate) fn mine(&self) -> &Stripe {
        self.stripe(crate::here::cpu_or_thread())
    }

    /// The sum of one count over the stripes. Acquire: pairs with the `Release` increments of
    /// `completed` and `panicked` (`task/mod.rs`), so that totals read in the order `panicked`,
    /// `completed`, `started` never show more panicked than completed executions, nor more
    /// completed than started ones, even while executions run.
    pub(crate) fn total(&self, count: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.stripes
            .iter()
            .map(|s| count(s).load(Ordering::Acquire))
            .sum()
    }

    /// Executions of colour `colour` queued and not finished, over the stripes. SeqCst: the
    /// flusher's and the last finisher's reads (F1 and E5).
    pub(crate) fn in_flight_of(&self, colour: usize) -> usize {
        self.stripes.iter().fold(0usize, |sum, s| {
            sum.wrapping_add(s.in_flight[colour].load(Ordering::SeqCst))
        })
    }

    /// Executions of this pod queued and not finished, over both colours.
    pub(crate) fn in_flight(&self) -> usize {
        (0..COLOURS).fold(0usize, |sum, c| sum.wrapping_add(self.in_flight_of(c)))
    }
}

/// Where flushers sleep: one of a process-wide table (see `api/flush.rs`), never freed, so
/// that a finisher may wake a flusher after its decrement even when that decrement let the
/// workqueue go. Workqueues whose ids fall on the same entry share it; a flusher woken for
/// another workqueue's finisher re-reads its counts and sleeps again.
#[derive(Debug, Default)]
pub(crate) struct FlushWait {
    /// A: flushers that sleep here or are about to (F1); read by every finisher.
    flushers: AtomicUsize,
    /// The flushers' sleeping lock; finishers notify under it.
    lock: Mutex<()>,
    /// Where the flushers sleep.
    wake: Condvar,
}

/// Whose turn it is to flush: flushers take turns, each waiting with its own deadline.
#[derive(Debug, Default)]
struct Turn {
    /// L: a flusher has its turn.
    taken: bool,
    /// L: flushers waiting for a turn.
    waiting: usize,
}

/// The flush colours and drain state of one workqueue.
#[derive(Debug)]
pub(crate) struct Flush {
    /// A: the epoch: bit 0 is the colour new executions are counted under, flipped only by
    /// the flusher whose turn it is (F1); the bits above count layout changes (R3).
    /// A queue call that reads one epoch before it counts and another after has to count
    /// again.
    epoch: AtomicUsize,
    /// L: whether a flusher has its turn, and how many wait for one (F1).
    turn: Mutex<Turn>,
    /// Where flushers wait for their turn; notified under `turn`.
    next_turn: Condvar,
    /// I: where this workqueue's flushers sleep.
    wait: &'static FlushWait,
    /// A: drains in progress; while non-zero, only the workqueue's own running items may queue.
    draining: AtomicUsize,
}

impl Flush {
    /// Flush state at colour 0, whose flushers sleep on `wait`.
    pub(crate) fn new(wait: &'static FlushWait) -> Flush {
        Flush {
            epoch: AtomicUsize::new(0),
            turn: Mutex::new(Turn::default()),
            next_turn: Condvar::new(),
            wait,
            draining: AtomicUsize::new(0),
        }
    }

    /// Q2: counts a new execution in `pod`'s counts, in the stripe of `at` (the counting
    /// thread's CPU or thread index, read once per queue call), and returns its colour.
    #[inline]
    pub(crate) fn enter(&self, pod: &PodCounters, at: usize) -> usize {
        match self.enter_with(at, || Some((pod, pod))) {
            Some((_, colour)) => colour,
            None => unreachable!("the pod is given"),
        }
    }

    /// Q2 and R3: counts a new execution in the pod that `pick` chooses (its part and its
    /// counters), in the stripe of `at`, and returns that pod and the colour. `pick` reads
    /// the current layout: it is asked again whenever the epoch moved while the execution was
    /// counted (a flush moved the colour, or the layout changed), so the pod returned is in a
    /// layout that was current when the count was made, or the re-formation that replaced it
    /// sees the count. `None` when `pick` finds no pod.
    #[inline]
    pub(crate) fn enter_with<'p, P: ?Sized>(
        &self,
        at: usize,
        mut pick: impl FnMut() -> Option<(&'p P, &'p PodCounters)>,
    ) -> Option<(&'p P, usize)> {
        loop {
            // SeqCst, before `pick` reads the layout: a re-formation publishes its layout
            // (Release) before it moves the epoch, so an epoch read after the move leads to
            // the new layout.
            let epoch = self.epoch.load(Ordering::SeqCst);
            let c = epoch & 1;
            let (part, pod) = pick()?;
            let stripe = pod.stripe(at);
            // A Dekker pair with the flusher (F1): it stores the colour, fences, reads
            // the counts; this raises a count and reads the colour, both `SeqCst`, so in the
            // single order of `SeqCst` operations (`after_seqcst_rmw`). Either the re-read
            // sees the new colour and the count moves to it, or the flusher's reads see this
            // increment and wait for the execution.
            //
            // The increment and the undo below are on the same stripe, so a flusher that read
            // the stripe in between sees it no lower than before.
            stripe.in_flight[c].fetch_add(1, Ordering::SeqCst);
            after_seqcst_rmw();
            if self.epoch.load(Ordering::SeqCst) == epoch {
                return Some((part, c));
            }
            self.leave_from(pod, stripe, c);
        }
    }

    /// E5: uncounts a finished (or discarded) execution of colour `colour` in the calling
    /// thread's stripe, waking a flusher when the pod's count of that colour reaches zero.
    #[inline]
    pub(crate) fn leave(&self, pod: &PodCounters, colour: usize) {
        self.leave_from(pod, pod.mine(), colour);
    }

    /// [`Flush::leave`] on a given stripe of `pod`.
    ///
    /// After its decrement a finisher may have let the pod and the workqueue go: a drop that
    /// saw the count reach zero frees them. So it reads the pod after the decrement only when
    /// it announced itself in the stripe's `leaving` count before it (E6), and otherwise
    /// touches only `wait`, which is never freed.
    #[inline]
    pub(crate) fn leave_from(&self, pod: &PodCounters, stripe: &Stripe, colour: usize) {
        let wait = self.wait;
        // Relaxed: a stale 0 only means no announcement; the SeqCst read below decides.
        let announced = wait.flushers.load(Ordering::Relaxed) != 0;
        if announced {
            // SeqCst: ordered before the decrement, so a drop that sees the decrement sees
            // the announcement (or its withdrawal, which it synchronises with).
            stripe.leaving.fetch_add(1, Ordering::SeqCst);
        }
        // A Dekker pair with the flusher: it raises `flushers`, fences, reads the counts; this
        // lowers a count and reads `flushers`, both `SeqCst` (`after_seqcst_rmw`). Either the
        // flusher sees this decrement, or this sees the flusher and wakes it. Between two
        // finishers the single order of `SeqCst` operations decides the same way, so the last
        // one that adds the stripes up (`SeqCst` reads) sees every other decrement: the zero.
        stripe.in_flight[colour].fetch_sub(1, Ordering::SeqCst);
        after_seqcst_rmw();
        if wait.flushers.load(Ordering::SeqCst) != 0
            && (!announced || pod.in_flight_of(colour) == 0)
        {
            // Not announced: the pod may be gone, so its stripes cannot be added up; wake the
            // flushers and let them read.
            let _guard = wait.lock.lock();
            wait.wake.notify_all();
        }
        if announced {
            // Release: the drop that reads 0 here sees this finisher done with the pod. The
            // last access to the pod's memory.
            stripe.leaving.fetch_sub(1, Ordering::Release);
        }
    }

    /// R3: moves the epoch on after a layout change, so that a queue call that read the
    /// layout before the change and counts after it counts again, in the new layout. The
    /// colour stays. The other half of `enter_with`'s Dekker pair, as a flusher's move of the
    /// colour is: it moves the epoch, fences (`SeqCst`), and what it reads of the old layout's
    /// counts afterwards includes every queue call whose re-read did not see the move.
    pub(crate) fn advance_epoch(&self) {
        self.epoch.fetch_add(COLOURS, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// F1: waits for every execution counted before the call, in `pods` (the entry of
    /// the loom model, `crates/podq-loom/tests/flush.rs`; the workqueue has several layouts
    /// and calls [`Flush::flush_until`]).
    #[allow(dead_code)]
    pub(crate) fn flush<'a, I>(&self, pods: impl Fn() -> I)
    where
        I: Iterator<Item = &'a PodCounters>,
    {
        self.flush_until(|colour| pods().any(|p| p.in_flight_of(colour) != 0), None);
    }

    /// F1: waits for every execution counted before the call, giving up at `deadline`
    /// (`None`: never); `busy(colour)` tells whether some pod still counts executions of that
    /// colour (read after the colour moved, so it sees every layout an execution of the old
    /// colour can be counted in). Returns whether it waited for all of them.
    ///
    /// A flush that gave up leaves the colour it moved from with executions in it; they may
    /// still be counted there when the next flusher moves the colour back to it. So every
    /// flusher first waits until the colour it moves to is empty (at once, unless a flush
    /// gave up before it): executions counted there are all from before its call.
    pub(crate) fn flush_until(
        &self,
        busy: impl Fn(usize) -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        if !self.take_turn(deadline) {
            return false;
        }
        // Only the flusher whose turn it is flips bit 0; re-formations add to the bits above
        // at any time, hence the exclusive or.
        let old = self.epoch.load(Ordering::SeqCst) & 1;
        let new = old ^ 1;
        let done = self.wait_for_zero(&busy, new, deadline) && {
            self.epoch.fetch_xor(1, Ordering::SeqCst);
            self.wait_for_zero(&busy, old, deadline)
        };
        self.end_turn();
        done
    }

    /// Waits until no pod counts an execution of `colour` (`busy`), or until `deadline`.
    /// Returns whether it saw none.
    fn wait_for_zero(
        &self,
        busy: &impl Fn(usize) -> bool,
        colour: usize,
        deadline: Option<Instant>,
    ) -> bool {
        let wait = self.wait;
        wait.flushers.fetch_add(1, Ordering::SeqCst);
        // The flusher's half of both Dekker pairs: with `enter` (the colour written before
        // the call) and with `leave_from` (`flushers`).
        fence(Ordering::SeqCst);
        let mut guard = wait.lock.lock();
        // The stripes are read one after the other while runs finish. Once the colour moved
        // away from `colour`, a stripe's count of it only goes down (an increment that
        // enter() undoes is undone on the same stripe), so a sum of zero means none was left
        // at the last read. The lock is held from before the reads until the wait releases
        // it, so a finisher's notify (under the lock) cannot fall between them.
        let mut empty = true;
        while busy(colour) {
            match wait_until(&wait.wake, guard, deadline) {
                Some(g) => guard = g,
                None => {
                    empty = false;
                    break;
                }
            }
        }
        wait.flushers.fetch_sub(1, Ordering::SeqCst);
        empty
    }

    /// Waits for this flusher's turn, or until `deadline`. Returns whether it has its turn.
    fn take_turn(&self, deadline: Option<Instant>) -> bool {
        let mut turn = self.turn.lock();
        while turn.taken {
            turn.waiting += 1;
            let next = wait_until(&self.next_turn, turn, deadline);
            match next {
                Some(mut t) => {
                    t.waiting -= 1;
                    turn = t;
                }
                None => {
                    let mut t = self.turn.lock();
                    t.waiting -= 1;
                    if !t.taken {
                        // Freed as the wait timed out: the turn is this flusher's after all.
                        t.taken = true;
                        return true;
                    }
                    return false;
                }
            }
        }
        turn.taken = true;
        true
    }

    /// Ends this flusher's turn and wakes the flushers waiting for one.
    fn end_turn(&self) {
        let mut turn = self.turn.lock();
        turn.taken = false;
        if turn.waiting != 0 {
            // All of them: one may have given up meanwhile and would not take the turn.
            self.next_turn.notify_all();
        }
    }

    /// E6: waits until no finisher of `pods` is still announced, that is, between its
    /// decrement and the end of its wake-up. Called by the workqueue's drop after a drain: the
    /// counts are zero, so no finisher comes later, and once this returns the pods' memory may
    /// be freed.
    pub(crate) fn wait_for_leavers<'a>(pods: impl Iterator<Item = &'a PodCounters>) {
        for pod in pods {
            for stripe in pod.stripes.iter() {
                // SeqCst: after the drain's SeqCst reads of the counts (see `leave_from`);
                // reading the withdrawal synchronises with it (Release).
                while stripe.leaving.load(Ordering::SeqCst) != 0 {
                    // A finisher announced here runs a few reads and maybe one notify.
                    thread::yield_now();
                }
            }
        }
    }

    /// F2: marks a drain as started (see `Workqueue::drain`).
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

/// Sleeps on `cv` with `guard` until notified, or until `deadline` (`None`: no deadline).
/// Returns the guard, or `None` (the lock released) when the deadline has passed.
fn wait_until<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    deadline: Option<Instant>,
) -> Option<MutexGuard<'a, T>> {
    let Some(deadline) = deadline else {
        return Some(cv.wait(guard));
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    let (guard, _timed_out) = cv.wait_timeout(guard, left);
    // A timed-out wait still returns the lock: the caller re-checks its state, and the next
    // call sees the deadline passed.
    Some(guard)
}
