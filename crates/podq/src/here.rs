//! Where the calling thread runs, for the placement of work on a pod and for the structures
//! that keep one part per CPU (a pod's counter stripes, a pool's lanes): the CPU it runs on,
//! or, where that cannot be read, an index given to each thread on first use.
//!
//! A queue call reads it once ([`Here::now`]) and passes it down, so that the pod, the stripe
//! and the lane it uses all come from the same read; a thread that pushes work queued by
//! another (a `max_active` activation, a re-queue after a run, the timer) reads its own where
//! it pushes ([`cpu_or_thread`]).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Source of thread indexes, for threads whose CPU cannot be read.
static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The calling thread's index, given on first use.
    static THREAD: usize = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

/// One read of the CPU the calling thread runs on (`sched_getcpu` reads the kernel's rseq
/// area, no system call). Possibly stale as soon as it is read (the thread may migrate):
/// callers use it to pick a part that is usually their own, never for correctness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Here {
    /// The CPU, or `None` where it cannot be read.
    cpu: Option<usize>,
}

impl Here {
    /// Reads the calling thread's CPU.
    #[inline]
    pub(crate) fn now() -> Here {
        Here {
            cpu: crate::sys::current_cpu(),
        }
    }

    /// The CPU, or `None` where it cannot be read (placement then replaces it).
    #[inline]
    pub(crate) fn cpu(self) -> Option<usize> {
        self.cpu
    }

    /// The CPU, or, where it cannot be read, the calling thread's index: which part of a
    /// per-CPU structure (a stripe, a lane) to use.
    #[inline]
    pub(crate) fn index(self) -> usize {
        self.cpu.unwrap_or_else(|| THREAD.with(|t| *t))
    }
}

/// The calling thread's CPU, or its index where the CPU cannot be read: [`Here::index`] of a
/// fresh read.
#[inline]
pub(crate) fn cpu_or_thread() -> usize {
    Here::now().index()
}
