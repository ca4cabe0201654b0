//! The lane lock: a lock whose release is a plain store followed by a `SeqCst` fence, the fence
//! that the push needs next anyway (P3).
//!
//! `std`'s lock releases with a locked exchange, to learn whether a thread sleeps on it, and a
//! push would then fence again for P3 (`pool/README.md`, "Why these choices", has what that
//! costs). Here the
//! release stores `held` (Release), fences (`SeqCst`), and reads `sleepers`: a Dekker pair
//! with a thread about to sleep, which counts itself in `sleepers`, fences, and tries `held`.
//! Either the releaser sees the sleeper and wakes it, or the sleeper's try sees the lock free.
//! The releaser's fence is the one P3 asks for, and [`LaneGuard::unlock`] hands the push a
//! [`Fenced`] to say so.
//!
//! Pushers on one CPU, and cancel and re-formation, are the only threads that ever meet here,
//! so the sleeping path is plain: a `std` lock and condition variable, taken only by a thread
//! that found the lock held and by the release that saw it counted. This file uses only
//! `crate::sync`, so that `crates/podq-loom` checks it with loom's cell
//! (`tests/lane_lock.rs`).
#![allow(unsafe_code)]

use crate::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::cell::UnsafeCell;
use crate::sync::{Condvar, Mutex};

/// Backoff rounds a thread that found the lane lock held spins (`sync::spin_until`: 63 spins,
/// about a microsecond) before it sleeps. The holder is most often a thread preempted on the
/// same CPU, for which spinning only waits; a cancel or a re-formation on another CPU holds the
/// lock for a few hundred nanoseconds.
const SPIN_ROUNDS: u32 = 6;

/// Proof that the thread that holds it executed a `SeqCst` fence after it released a lane
/// lock: what P3 needs between the push's publication of its task and its read of `HELP`.
#[derive(Debug)]
pub(crate) struct Fenced(());

/// A lock around `T` (a lane's producer end and its counts).
#[derive(Debug)]
pub(crate) struct LaneLock<T> {
    /// A: whether a thread holds the lock. Taken with a compare-exchange (Acquire), released
    /// with a store (Release) and a `SeqCst` fence.
    held: AtomicBool,
    /// A: threads that found the lock held and sleep, or are about to, on `woken`. Read by
    /// every release after its fence; on the line of `held`, which the releaser has.
    sleepers: AtomicUsize,
    /// The sleepers' lock: a sleeper holds it from its count to its sleep, and a release that
    /// saw a sleeper notifies under it, so no notification falls between the two.
    sleep: Mutex<()>,
    /// Where sleepers wait; notified under `sleep`.
    woken: Condvar,
    /// The guarded value: reached only through a [`LaneGuard`].
    value: UnsafeCell<T>,
}

// SAFETY: the lock gives one thread at a time access to `value` (a `LaneGuard` exists only
// while `held` is true for its thread: Acquire on taking it, Release on letting it go), so
// sharing the lock between threads only moves `T` between them, which `T: Send` allows.
unsafe impl<T: Send> Sync for LaneLock<T> {}

impl<T> LaneLock<T> {
    /// An unlocked lock around `value`.
    pub(crate) fn new(value: T) -> Self {
        Self {
            held: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            woken: Condvar::new(),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock if it is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<LaneGuard<'_, T>> {
        // `then`, not `then_some`: a guard made and dropped on failure would release the lock
        // that another thread holds.
        self.acquire().then(|| LaneGuard { lock: self })
    }

    /// Takes the lock, spinning a little and then sleeping while another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> LaneGuard<'_, T> {
        if !self.acquire() {
            let free_then_taken = || !self.held.load(Ordering::Relaxed) && self.acquire();
            if !crate::sync::spin_until(SPIN_ROUNDS, free_then_taken) {
                self.sleep_until_taken();
            }
        }
        LaneGuard { lock: self }
    }

    /// Sets `held` (Acquire) if it was clear; whether it did.
    #[inline]
    fn acquire(&self) -> bool {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The sleeping path of [`LaneLock::lock`]: counts the thread in `sleepers`, then, until
    /// it takes the lock, fences (`SeqCst`), tries, and sleeps on `woken`.
    fn sleep_until_taken(&self) {
        let mut sleep = self.sleep.lock();
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        loop {
            // The sleeper's half of the pair with `release`: either this try sees the
            // release's store, or the release's read of `sleepers` sees this count.
            fence(Ordering::SeqCst);
            if self.acquire() {
                break;
            }
            sleep = self.woken.wait(sleep);
        }
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }

    /// Lets the lock go: stores `held` (Release), fences (`SeqCst`), and wakes a sleeper if
    /// one is counted.
    #[inline]
    fn release(&self) {
        self.held.store(false, Ordering::Release);
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            let _sleep = self.sleep.lock();
            self.woken.notify_one();
        }
    }
}

/// The lane lock, held: [`LaneGuard::with`] reaches the value, and dropping the guard (or
/// [`LaneGuard::unlock`]) releases it.
#[derive(Debug)]
pub(crate) struct LaneGuard<'a, T> {
    /// The lock this guard holds.
    lock: &'a LaneLock<T>,
}

impl<T> LaneGuard<'_, T> {
    /// Calls `f` with the guarded value.
    #[inline]
    pub(crate) fn with<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: this guard holds the lock, so no other thread reaches the value until it is
        // released (after `f` returns: the guard is borrowed mutably meanwhile), and the
        // Acquire that took it saw every write made under the lock before.
        self.lock.value.with_mut(|value| f(unsafe { &mut *value }))
    }

    /// Releases the lock, which fences (`SeqCst`) after the release: the [`Fenced`] says so.
    #[inline]
    pub(crate) fn unlock(self) -> Fenced {
        drop(self);
        Fenced(())
    }
}

impl<T> Drop for LaneGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.release();
    }
}
