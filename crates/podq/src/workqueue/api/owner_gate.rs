//! The gate between a workqueue's owned handles (a [`Group`](crate::Group)) and its drop
//! (G6, G7 of `workqueue/README.md`): a handle's call runs with a borrowed copy of the
//! workqueue's handle while the gate is open; the drop closes it, waits for the calls inside,
//! and takes the copy away, so that a later call finds nothing and the workqueue's pools go
//! with its drop, not with the last owned handle.
//!
//! A call writes only its CPU's stripe (no workqueue-wide word, nothing process-wide); the
//! drop reads every stripe once it closed the gate. A protocol file: it uses only
//! `crate::sync`, and `crates/podq-loom` models it (`tests/owner_gate.rs`).
//!
//! Unsafe code: the value lives in a cell that the gate's counts make shared (calls inside)
//! or exclusive (the close, once none is inside); a lock there would be a workqueue-wide
//! word written by every call.
#![allow(unsafe_code)]

use crate::sync::atomic::{self, fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::cell::UnsafeCell;
use crate::sync::{thread, CachePadded};

/// A value that calls borrow while the gate is open, and that [`OwnerGate::close`] takes.
pub(crate) struct OwnerGate<T> {
    /// Set once, by the close (G7).
    closed: AtomicBool,
    /// Calls inside the gate, by the caller's CPU (or thread index) modulo their number.
    inside: Box<[CachePadded<AtomicUsize>]>,
    /// The value: `Some` until the close takes it.
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is read (shared) only by calls inside the open gate, and taken only by the
// close after every such call left (G6, G7): `T` is shared between threads like a `&T`, and
// moved to the closing thread.
unsafe impl<T: Send + Sync> Sync for OwnerGate<T> {}
// SAFETY: as above; the gate owns the value.
unsafe impl<T: Send> Send for OwnerGate<T> {}

impl<T> OwnerGate<T> {
    /// An open gate over `value`, with `stripes` (at least 1) counters of calls inside.
    pub(crate) fn new(value: T, stripes: usize) -> Self {
        OwnerGate {
            closed: AtomicBool::new(false),
            inside: (0..stripes.max(1))
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            value: UnsafeCell::new(Some(value)),
        }
    }

    /// (G6) Runs `f` on the value when the gate is open, counted inside on stripe `at`
    /// (the calling thread's CPU or index). `None`, without calling `f`, once it is closed.
    #[inline]
    pub(crate) fn with<R>(&self, at: usize, f: impl FnOnce(&T) -> R) -> Option<R> {
        let stripe = &self.inside[at % self.inside.len()];
        // Dekker pair with the close: the raise is ordered before the look at `closed`, as
        // the close's store is before its look at the stripes (`SeqCst`).
        stripe.fetch_add(1, Ordering::SeqCst);
        atomic::after_seqcst_rmw();
        if self.closed.load(Ordering::SeqCst) {
            stripe.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        /// Leaves the gate also when `f` panics: a drop must not wait for a call that is over.
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                // Release: what the call did (its item counted, Q2) is seen by the close that
                // reads the stripe at zero.
                self.0.fetch_sub(1, Ordering::Release);
            }
        }
        let _leave = Leave(stripe);
        // SAFETY: inside the open gate the close has not taken the value, and does not until
        // this call left (G7).
        let value = self.value.with(|v| unsafe { (*v).as_ref() });
        value.map(f)
    }

    /// (G7) Closes the gate, waits until no call is inside, and takes the value (`None` when
    /// closed before). A call that entered before the close finishes what it does with the
    /// value; every call after finds the gate closed.
    pub(crate) fn close(&self) -> Option<T> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return None;
        }
        // loom models `SeqCst` accesses as `AcqRel`: the fence keeps the store before the
        // reads below there too (in Rust's model the `SeqCst` accesses order themselves).
        fence(Ordering::SeqCst);
        for stripe in self.inside.iter() {
            while stripe.load(Ordering::Acquire) != 0 {
                thread::yield_now();
            }
        }
        // SAFETY: closed, and no call is inside: nothing reads the value any more.
        self.value.with_mut(|v| unsafe { (*v).take() })
    }
}
