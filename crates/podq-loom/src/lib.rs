//! loom models of podq's concurrent core.
//!
//! The protocol files of `crates/podq/src` that only use `crate::sync` are compiled here a
//! second time with `sync` pointing at loom, so `cargo test --workspace` explores their
//! interleavings without a special `--cfg loom` build.
//!
//! A model (a file under `tests/`) includes the protocol files with `#[path]` and names this
//! crate's [`sync`] as its own `crate::sync` (and, for the pool's core, this crate's
//! [`policy`] as its `crate::policy`):
//!
//! ```text
//! use podq_loom::{policy, sync};
//! #[path = "../../podq/src/pool/core/mod.rs"]
//! mod core;
//! ```

pub mod policy;

/// Runs `model` under loom with at most `preemptions` preemptions per execution: 3 finds the
/// bugs of small protocols (loom's own advice for models of this size) and keeps each model to
/// seconds; four-thread models use 2, whose space at 3 takes minutes, or 1 where 2 does.
pub fn check(preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(model);
}

/// The loom version of `podq::sync`: the same names and signatures, built on loom's types, so
/// that a protocol file compiles against either.
pub mod sync {
    use std::ops::{Deref, DerefMut};
    use std::time::Duration;

    /// What a lock call says when a model thread panicked while holding the lock.
    const POISONED: &str = "a model thread panicked holding the lock";

    pub use loom::sync::Arc;

    /// The same padding as podq's facade: layout only, nothing for loom to model.
    pub use crossbeam_utils::CachePadded;

    /// Atomics, from loom.
    pub mod atomic {
        pub use loom::sync::atomic::{
            fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
        };

        /// podq's no-op between a `SeqCst` read-modify-write and the `SeqCst` accesses after
        /// it is a `SeqCst` fence here: loom models `SeqCst` accesses as `AcqRel`.
        pub fn after_seqcst_rmw() {
            fence(Ordering::SeqCst);
        }
    }

    /// loom's cell, which checks that no two accesses overlap.
    pub mod cell {
        pub use loom::cell::UnsafeCell;
    }

    /// Threads, from loom.
    pub mod thread {
        pub use loom::thread::{spawn, yield_now};
    }

    /// podq's bounded yielding wait: looks as [`spin_until`] does.
    pub fn yield_until(rounds: u32, ready: impl FnMut() -> bool) -> bool {
        spin_until(rounds, ready)
    }

    /// podq's bounded spin-wait: here one look when `rounds > 0` (loom explores every
    /// interleaving of that look; more looks only multiply the states), and a second look to
    /// answer, as podq's version ends with one.
    pub fn spin_until(rounds: u32, mut ready: impl FnMut() -> bool) -> bool {
        (rounds > 0 && ready()) || ready()
    }

    /// A guard of a locked [`Mutex`]; the lock is released when it is dropped.
    ///
    /// It remembers its mutex, so that [`Condvar::wait_timeout`] can release and take the
    /// lock again the way a real timed wait does.
    #[derive(Debug)]
    pub struct MutexGuard<'a, T> {
        guard: loom::sync::MutexGuard<'a, T>,
        mutex: &'a loom::sync::Mutex<T>,
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            &self.guard
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.guard
        }
    }

    /// loom's mutex behind podq's non-poisoning API.
    #[derive(Debug)]
    pub struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Self::new(T::default())
        }
    }

    impl<T> Mutex<T> {
        /// A new, unlocked mutex holding `value`.
        pub fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        /// Locks, blocking until the lock is free.
        ///
        /// # Panics
        ///
        /// When a thread panicked while holding the lock (the model has failed already).
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard {
                guard: self.0.lock().expect(POISONED),
                mutex: &self.0,
            }
        }

        /// Locks if the lock is free now.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            let guard = self.0.try_lock().ok()?;
            Some(MutexGuard {
                guard,
                mutex: &self.0,
            })
        }
    }

    /// loom's condition variable behind podq's API.
    #[derive(Debug)]
    pub struct Condvar(loom::sync::Condvar);

    impl Default for Condvar {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Condvar {
        /// A new condition variable with no waiter.
        pub fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        /// Releases `guard`'s lock, sleeps until notified, and locks again.
        ///
        /// # Panics
        ///
        /// When a thread panicked while holding the lock.
        pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            let MutexGuard { guard, mutex } = guard;
            MutexGuard {
                guard: self.0.wait(guard).expect(POISONED),
                mutex,
            }
        }

        /// A timed wait. loom has no time, so this models the case a protocol must survive:
        /// the timeout fires at an arbitrary point. It releases the lock, lets any other
        /// thread run, takes the lock again and reports a timeout (`true`) without waiting for
        /// a notify (which the caller must then find in its own state).
        ///
        /// # Panics
        ///
        /// When a thread panicked while holding the lock.
        pub fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            _timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            let MutexGuard { guard, mutex } = guard;
            drop(guard);
            loom::thread::yield_now();
            let guard = mutex.lock().expect(POISONED);
            (MutexGuard { guard, mutex }, true)
        }

        /// Wakes one waiter, if any.
        pub fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter.
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
