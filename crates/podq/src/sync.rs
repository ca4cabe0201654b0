//! The synchronization facade of podq's concurrent core.
//!
//! Protocol files (the pool's queue and park/wake protocol, the workqueue's pending/flush
//! state) use only this module (and `core`/`std` types that do not synchronize), so that
//! `crates/podq-loom` can compile the same files a second time against a `sync` module with the
//! same API built on [loom], and explore their interleavings.
//!
//! In production the locks are `std`'s (futex words on Linux: small, fast uncontended paths,
//! and no process-wide state, so a child of `fork()` can use new ones), with poisoning
//! ignored, in the by-value guard API that loom (and `std`) offer. Against `parking_lot`'s
//! locks, whose process-wide table of parked threads a child of `fork()` cannot use, `podq
//! bench --workload flood` and `--workload queue` (`--runs 5 --scopes cache_shard --peers
//! channel`, three pairs) tell no difference: medians 0.95x and 0.94x, within either's spread.
//!
//! * [`Mutex`]: `new`, `lock() -> MutexGuard`, `try_lock() -> Option<MutexGuard>`.
//! * [`Condvar`]: `new`, `wait(guard) -> guard`, `wait_timeout(guard, dur) -> (guard, timed
//!   out)`, `notify_one`, `notify_all`.
//! * [`Arc`], [`atomic`]`::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, AtomicU64,
//!   Ordering}`,
//!   [`cell`]`::UnsafeCell` (`new`, `with`, `with_mut`), [`thread`]`::{spawn, yield_now}`.
//!
//! Nothing here poisons: a panic while a lock is held leaves the data as it was, and podq's
//! protocols never leave state half-updated across a call that can panic.
//!
//! [loom]: https://docs.rs/loom

use std::sync::{PoisonError, TryLockError};
use std::time::Duration;

pub(crate) use std::sync::Arc;

/// Keeps a value on cache lines of its own (128 bytes on x86_64: the adjacent-line prefetcher
/// moves lines in pairs). Not a synchronisation primitive, so loom's facade offers the same one.
pub(crate) use crossbeam_utils::CachePadded;

/// Atomics, as `std::sync::atomic` has them.
// The facade offers the same API as podq-loom's, whether or not every item has a user yet.
#[allow(unused_imports)]
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };

    /// Between a `SeqCst` read-modify-write and the `SeqCst` accesses after it, in a Dekker
    /// pair whose other side fences (`workqueue/item/flush.rs`): nothing. In Rust's memory model
    /// (C++20's) every `SeqCst` operation, access or fence, takes its place in one total order
    /// that keeps each thread's program order, so the accesses order themselves; a `SeqCst`
    /// fence here would cost a second locked instruction per item on x86 (`lock or` after the
    /// `lock xadd`). podq-loom's facade fences here: loom models `SeqCst` accesses as
    /// `AcqRel` (its documented limitation), and without the fence its models would find
    /// executions that cannot happen.
    #[inline(always)]
    pub(crate) fn after_seqcst_rmw() {}
}

/// A cell whose every access a protocol makes exclusive, with loom's API (`with_mut`), so that
/// podq-loom's facade can give loom's cell, which checks in every interleaving that no two
/// accesses overlap.
pub(crate) mod cell {
    use std::fmt;

    /// `std::cell::UnsafeCell` with loom's access API.
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// A cell holding `value`.
        pub(crate) fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Calls `f` with a pointer to the value; the caller's protocol makes the access
        /// exclusive.
        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a pointer to read the value through; the caller's protocol keeps
        /// every [`UnsafeCell::with_mut`] out meanwhile.
        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
    }

    impl<T> fmt::Debug for UnsafeCell<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("UnsafeCell { .. }")
        }
    }
}

/// Threads, as `std::thread` has them.
#[allow(unused_imports)]
pub(crate) mod thread {
    pub(crate) use std::thread::{spawn, yield_now};
}

/// Backoff rounds spent spinning with `spin_loop` before the remaining rounds yield: round `r`
/// spins up to `2^r` times, so 9 rounds are 511 spins, about 10 us on the 2-CPU test machine
/// (19 ns per `spin_loop`), two futex round trips there. This is the one home of the spin
/// budget's measurements; the pool's workers (`pool::SPIN_ROUNDS`) and an item's `flush` wait
/// with it.
///
/// `podq bench` (queue workload, cache_shard, 2 pinned producers sharing the 2 CPUs with 2
/// workers): 6 rounds (63 spins) 285k-380k items/s, 7 (127 spins, crossbeam's `Backoff`)
/// 370k-450k, 8 470k-600k, 9 550k-720k, no gain past 9 (the channel pool: 600k-630k). A
/// worker that gives up sooner yields to the producer on its CPU, which parks, so the item
/// pays a futex round trip. The cost: an idle worker burns about 10 us of CPU each time it
/// empties the queue before it parks. A `flush` waits with the same budget (criterion
/// `queue_work+flush`: 3.0 us with 63 spins, 1.6-1.9 us with 127).
const SPIN_ONLY_ROUNDS: u32 = 9;

/// Looks at `ready` with backoff for at most `rounds` rounds (spins first, then yields); returns
/// whether it became true. The caller falls back to blocking when it did not: this only saves a
/// futex round trip when the wait is short. podq-loom's facade looks once instead, to keep the
/// models small.
pub(crate) fn spin_until(rounds: u32, mut ready: impl FnMut() -> bool) -> bool {
    for round in 0..rounds {
        if round < SPIN_ONLY_ROUNDS {
            for _ in 0..1u32 << round {
                if ready() {
                    return true;
                }
                std::hint::spin_loop();
            }
        } else {
            if ready() {
                return true;
            }
            std::thread::yield_now();
        }
    }
    ready()
}

/// Looks at `ready` at most `rounds` times, yielding the CPU between looks; returns whether it
/// became true. [`spin_until`] for a thread that shares one CPU with the thread it waits for,
/// where spinning only keeps that thread from running. podq-loom's facade looks as its
/// `spin_until` does.
pub(crate) fn yield_until(rounds: u32, mut ready: impl FnMut() -> bool) -> bool {
    for _ in 0..rounds {
        if ready() {
            return true;
        }
        std::thread::yield_now();
    }
    ready()
}

/// A guard of a locked [`Mutex`]; the lock is released when it is dropped.
pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;

/// A mutual exclusion lock that does not poison (a poisoned `std` lock is used as it is).
///
/// `std`'s locks keep all their state in the lock itself (a futex word on Linux), with no
/// process-wide table of parked threads as `parking_lot` has: a child of `fork()` can use its
/// own new locks whatever the parent's threads were doing (K2 of
/// `src/workqueue/README.md`).
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    /// A new, unlocked mutex holding `value`.
    pub(crate) fn new(value: T) -> Self {
        Self(std::sync::Mutex::new(value))
    }

    /// Locks, blocking the calling thread until the lock is free.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks if the lock is free now; `None` when another thread holds it.
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.0.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// A condition variable, used with one [`Mutex`] at a time.
#[derive(Debug, Default)]
pub(crate) struct Condvar(std::sync::Condvar);

impl Condvar {
    /// A new condition variable with no waiter.
    pub(crate) fn new() -> Self {
        Self(std::sync::Condvar::new())
    }

    /// Releases `guard`'s lock, sleeps until notified, and locks again.
    ///
    /// Callers re-check their condition in a loop: the facade allows spurious wake-ups.
    pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0.wait(guard).unwrap_or_else(PoisonError::into_inner)
    }

    /// Like [`Condvar::wait`], but gives up after `timeout`; the `bool` is `true` when the wait
    /// timed out rather than being notified.
    pub(crate) fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        let (guard, result) = self
            .0
            .wait_timeout(guard, timeout)
            .unwrap_or_else(PoisonError::into_inner);
        (guard, result.timed_out())
    }

    /// Wakes one waiter, if any.
    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Wakes every waiter.
    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = Mutex::new(1);
        let g = m.lock();
        assert!(m.try_lock().is_none());
        drop(g);
        assert_eq!(*m.try_lock().expect("free"), 1);
    }

    #[test]
    fn wait_timeout_reports_a_timeout_and_keeps_the_lock() {
        let m = Mutex::new(5);
        let cv = Condvar::new();
        let (g, timed_out) = cv.wait_timeout(m.lock(), Duration::from_millis(1));
        assert!(timed_out);
        assert_eq!(*g, 5);
        assert!(m.try_lock().is_none());
    }

    #[test]
    fn notify_wakes_a_waiter() {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let other = Arc::clone(&pair);
        let waiter = thread::spawn(move || {
            let (m, cv) = &*other;
            let mut g = m.lock();
            while !*g {
                g = cv.wait(g);
            }
        });
        *pair.0.lock() = true;
        pair.1.notify_all();
        waiter.join().expect("waiter");
    }
}
