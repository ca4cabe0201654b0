//! Where the calling thread runs, for the structures that keep one part per CPU (a pod's
//! counter stripes, a pool's lanes): the CPU it runs on, or, where that cannot be read, an
//! index given to each thread on first use.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Source of thread indexes, for threads whose CPU cannot be read.
static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The calling thread's index, given on first use.
    static THREAD: usize = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

/// The CPU the calling thread runs on (`sched_getcpu` reads the kernel's rseq area, no system
/// call), or a per-thread index where the CPU cannot be read. Possibly stale as soon as it is
/// returned (the thread may migrate): callers use it to pick a part that is usually their own,
/// never for correctness.
#[inline]
pub(crate) fn cpu_or_thread() -> usize {
    crate::sys::current_cpu().unwrap_or_else(|| THREAD.with(|t| *t))
}
