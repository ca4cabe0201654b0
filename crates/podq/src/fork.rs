//! Fork generations: what lets a child process of `fork()` use podq without the parent's
//! threads.
//!
//! `fork()` copies the calling thread only. Every worker, the timer thread and the watchdog
//! thread of the parent are gone in the child, and a lock one of them held at that moment stays
//! held forever. So podq's process-wide state is kept per *fork generation*:
//!
//! 1. **Count.** The first use of any per-generation state registers a `pthread_atfork` child
//!    handler (`sys`) that raises [`generation`] by one in the child; the child inherits the
//!    registration, so a grandchild counts too. The handler does one atomic add, which is
//!    async-signal-safe; nothing is done in the parent, and no lock is taken before the fork
//!    (a prepare handler taking podq's locks would stall `fork()` behind running items and
//!    deadlock a `fork()` made while one of those locks is held).
//! 2. **Start afresh.** Each piece of process-wide state ([`PerFork`]: the pool registry, the
//!    timer, the watchdog, the flush waits, the `metrics` list) is reached through a pointer to
//!    the value of one generation. The first use in a new generation builds a new value and
//!    swaps it in; the parent's value is forgotten (leaked), never dropped, locked or joined.
//!    A child therefore never takes a lock that a thread of its parent could hold.
//! 3. **Tell old from new.** A workqueue's id carries the generation it was built in
//!    ([`tag_id`]); [`is_foreign`] tells a workqueue (or a work item's last workqueue) of an
//!    earlier generation, whose pools have no workers here. Such a workqueue refuses work,
//!    returns from flush, drain and cancel at once and leaks its pools when dropped.
//!
//! The queue path pays one relaxed load of [`GENERATION`], a word written only by the child
//! handler, to refuse work on a parent's workqueue.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

/// A: the fork generation of this process: 0 in a process that did not come from a `fork()`
/// made after podq's first use, one more in each child. Relaxed: written only by the child
/// handler, before any other thread of the child exists.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Bits of a workqueue id that count workqueues; the bits above hold the generation.
const ID_BITS: u32 = 40;

/// The child handler (step 1): a new generation.
extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the child handler once per process tree (step 1).
fn count_forks() {
    static REGISTERED: Once = Once::new();
    // A refusal (out of memory) leaves children sharing the parent's generation: they hang as
    // they would without podq's care, nothing worse.
    REGISTERED.call_once(|| drop(crate::sys::on_fork_in_child(in_child)));
}

/// This process's fork generation (one relaxed load).
#[inline]
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Workqueue id `n` (counted from 1, below 2^40) tagged with this process's generation
/// (step 3).
pub(crate) fn tag_id(n: u64) -> u64 {
    count_forks();
    (generation() << ID_BITS) | (n & ((1 << ID_BITS) - 1))
}

/// Whether workqueue id `id` (never 0) was made in an earlier generation: by a parent process,
/// whose threads are not here (step 3).
#[inline]
pub(crate) fn is_foreign(id: u64) -> bool {
    id >> ID_BITS != generation() & ((1 << (64 - ID_BITS)) - 1)
}

/// One value of type `T` per fork generation, built on first use in each (step 2).
pub(crate) struct PerFork<T: 'static> {
    /// A: the value of the latest generation that used it; null before the first use.
    /// Acquire/Release: publishes the value to the threads that load the pointer.
    slot: AtomicPtr<Slot<T>>,
}

/// The value of one generation.
struct Slot<T> {
    /// I: the generation it was built in.
    generation: u64,
    /// I: the value.
    value: T,
}

impl<T: Send + Sync + 'static> PerFork<T> {
    /// No value yet.
    pub(crate) const fn new() -> Self {
        PerFork {
            slot: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// This generation's value, built by `init` on its first use. A value built by a thread
    /// that loses the race to swap its own in is dropped unused.
    pub(crate) fn get(&self, init: impl Fn() -> T) -> &'static T {
        let generation = generation();
        let mut seen = self.slot.load(Ordering::Acquire);
        loop {
            if let Some(slot) = ptr_to_ref(seen) {
                if slot.generation == generation {
                    return &slot.value;
                }
            }
            count_forks();
            let fresh = Box::into_raw(Box::new(Slot {
                generation,
                value: init(),
            }));
            match self
                .slot
                .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // The old generation's value is forgotten, never dropped.
                Ok(_) => return &ptr_to_ref(fresh).expect("not null").value,
                Err(now) => {
                    drop(box_from_raw(fresh));
                    seen = now;
                }
            }
        }
    }

    /// This generation's value, if it was built.
    pub(crate) fn built(&self) -> Option<&'static T> {
        ptr_to_ref(self.slot.load(Ordering::Acquire))
            .filter(|slot| slot.generation == generation())
            .map(|slot| &slot.value)
    }
}

/// The slot `ptr` points to, `None` for null.
#[allow(unsafe_code)]
fn ptr_to_ref<T>(ptr: *mut Slot<T>) -> Option<&'static Slot<T>> {
    // SAFETY: every non-null pointer in a `PerFork` comes from `Box::into_raw` and is freed only
    // by `box_from_raw` before any other thread saw it (a lost swap); a swapped-in one is never
    // freed, so it lives for the rest of the process.
    unsafe { ptr.as_ref() }
}

/// Takes back a slot that was never swapped in (no other thread saw it).
#[allow(unsafe_code)]
fn box_from_raw<T>(ptr: *mut Slot<T>) -> Box<Slot<T>> {
    // SAFETY: `ptr` comes from `Box::into_raw` in `PerFork::get`, lost its swap and so was
    // never shared; it is taken back once.
    unsafe { Box::from_raw(ptr) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_this_generation_are_not_foreign() {
        let id = tag_id(7);
        assert!(!is_foreign(id));
        assert!(is_foreign(id + (1 << ID_BITS)));
    }

    #[test]
    fn a_per_fork_value_is_built_once_per_generation() {
        static VALUE: PerFork<u32> = PerFork::new();
        let a: *const u32 = VALUE.get(|| 5);
        let b: *const u32 = VALUE.get(|| 6);
        assert_eq!(a, b);
        assert_eq!(VALUE.built().copied(), Some(5));
    }
}
