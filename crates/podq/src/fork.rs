//! Fork generations: what lets a child process of `fork()` use podq without the parent's
//! threads.
//!
//! `fork()` copies the calling thread only: the parent's workers, timer and watchdog threads
//! are gone in the child, and a lock one of them held stays held. The protocol, steps K1-K4 of
//! `src/workqueue/README.md`, and what a child must still avoid are written down there: a
//! child-side `pthread_atfork` handler raises [`GENERATION`] (K1); process-wide state is a
//! [`PerFork`] value, built afresh in each generation (K2); a workqueue id carries its
//! generation, [`tag_id`] and [`is_foreign`] (K3).

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

/// A: the fork generation of this process: 0 in a process that did not come from a `fork()`
/// made after podq's first use, one more in each child. Relaxed: written only by the child
/// handler, before any other thread of the child exists.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Bits of a workqueue id that count workqueues; the bits above hold the generation.
const ID_BITS: u32 = 40;

/// The child handler (K1): a new generation.
extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Registers the child handler once per process tree (K1).
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
/// (K3).
pub(crate) fn tag_id(n: u64) -> u64 {
    count_forks();
    (generation() << ID_BITS) | (n & ((1 << ID_BITS) - 1))
}

/// Whether workqueue id `id` (never 0) was made in an earlier generation: by a parent process,
/// whose threads are not here (K3).
#[inline]
pub(crate) fn is_foreign(id: u64) -> bool {
    id >> ID_BITS != generation() & ((1 << (64 - ID_BITS)) - 1)
}

/// One value of type `T` per fork generation, built on first use in each (K2).
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
