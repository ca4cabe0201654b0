//! [`Counted`]: one execution counted in its pod's in-flight counts, holding that pod without
//! a reference count (E6 of `workqueue/README.md`).
//!
//! Every queued execution needs its workqueue's part for its pod (`PodShared`: the counters
//! its run writes, the workqueue it belongs to). Held as an `Arc`, that part's reference count
//! would be one cache line written twice per item by every producer and every worker of the
//! pod (`perf annotate` of the flood workload on 2 CPUs: 81 % of the queue call and 95 % of a
//! worker's accounting on those two atomic instructions, about 17 % of all samples).
//!
//! The execution's count in the pod's flush colours already says the same thing: while it is
//! counted, the workqueue's drop waits (it drains). So a `Counted` holds a plain pointer, and
//! the pod lives as long as any execution is counted in it:
//!
//! * a `Counted` is made only by counting an execution ([`Counted::enter`], Q2) and
//!   uncounts it only when it is dropped (E5), last;
//! * the owners of a pod's `Arc` (the `Workqueue`, and its reaper when it is dropped from one of
//!   its own items) drop it only after a drain saw every count at zero and
//!   `Flush::wait_for_leavers` saw no finisher still reading the pod after its decrement;
//! * no execution is counted in a pod after that: counting needs the `Workqueue` (gone) or
//!   one of its timer entries (fired by the drop before the drain).
//!
//! This, `once_fn.rs` and `api/owner_gate.rs` are the files of the workqueue that may use
//! `unsafe`.
#![allow(unsafe_code)]

use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::workqueue::item::flush::Flush;
use crate::workqueue::task::shared::PodShared;

/// One execution counted in a pod under a flush colour; uncounted when dropped.
pub(crate) struct Counted {
    /// The pod's part, valid while this execution is counted (see the module's rules), with
    /// the flush colour the execution is counted under in bit 0 ([`COLOUR`]) and
    /// [`Counted::holds_slot`] in bit 1 ([`SLOT`]): the part is aligned to a cache line, so
    /// its address has those bits clear, and a queued task needs no word for either
    /// (`once_fn::PackedJob` says why a task's size matters).
    tagged: NonNull<CachePadded<PodShared>>,
}

/// The bit of [`Counted::tagged`] that holds the flush colour.
const COLOUR: usize = 1;
/// The bit of [`Counted::tagged`] set while the execution holds a `max_active` slot.
const SLOT: usize = 2;
const _: () = assert!(std::mem::align_of::<CachePadded<PodShared>>() > COLOUR | SLOT);

// SAFETY: a `Counted` gives out only `&PodShared` (atomics, locks and immutable data, all
// `Sync`), and the pointer stays valid on any thread while the execution is counted.
unsafe impl Send for Counted {}

// SAFETY: as for `Send`: shared access is only ever `&PodShared`, which is `Sync`.
unsafe impl Sync for Counted {}

impl Counted {
    /// Q2: counts a new execution in `pod`, under the workqueue's current colour, in the
    /// stripe of `at` (the counting thread's CPU or thread index).
    #[inline]
    pub(crate) fn enter(pod: &Arc<CachePadded<PodShared>>, at: usize) -> Counted {
        let colour = pod.wq.flush.enter(&pod.counters, at);
        Counted::new(pod, colour)
    }

    /// The count of an execution just counted in `pod` under `colour` (0 or 1).
    #[inline]
    fn new(pod: &CachePadded<PodShared>, colour: usize) -> Counted {
        debug_assert!(colour <= COLOUR, "two colours");
        Counted {
            tagged: NonNull::from(pod).map_addr(|addr| addr | colour),
        }
    }

    /// The flush colour the execution is counted under.
    #[inline]
    fn colour(&self) -> usize {
        self.tagged.addr().get() & COLOUR
    }

    /// Whether the execution holds a `max_active` slot.
    #[inline]
    pub(crate) fn holds_slot(&self) -> bool {
        self.tagged.addr().get() & SLOT != 0
    }

    /// Marks the execution as holding a `max_active` slot.
    #[inline]
    pub(crate) fn hold_slot(&mut self) {
        self.tagged = self.tagged.map_addr(|addr| addr | SLOT);
    }

    /// Q2 and R3: counts a new execution in the pod that `pick` chooses (in the
    /// workqueue's current layout), under the colour of `flush`, in the stripe of `at`;
    /// `pick` is asked again if the epoch moved meanwhile (`Flush::enter_with`).
    #[inline]
    pub(crate) fn enter_with<'p>(
        flush: &Flush,
        at: usize,
        mut pick: impl FnMut() -> &'p Arc<CachePadded<PodShared>>,
    ) -> Counted {
        let picked = flush.enter_with(at, || {
            let pod = pick();
            Some((pod, &pod.counters))
        });
        let Some((pod, colour)) = picked else {
            unreachable!("a pod is always picked");
        };
        Counted::new(pod, colour)
    }

    /// The workqueue's part for the pod the execution is counted in.
    #[inline]
    pub(crate) fn pod(&self) -> &PodShared {
        // SAFETY: the pointer came from a live `Arc` when the execution was counted, and the
        // pod's `Arc`s are dropped only after every counted execution has been uncounted and
        // its finisher is done with the pod (module rules). This execution is uncounted only
        // in `drop`, which cannot run while this borrow of `self` lives.
        unsafe {
            &*self
                .tagged
                .as_ptr()
                .map_addr(|addr| addr & !(COLOUR | SLOT))
        }
    }
}

impl Counted {
    /// E5 as the drop does, on the pod's stripe for `at` (the CPU or thread index that the
    /// caller read when the run began, so that a run reads it once).
    #[inline]
    pub(crate) fn leave_at(self, at: usize) {
        let this = ManuallyDrop::new(self);
        let pod = this.pod();
        pod.wq
            .flush
            .leave_from(&pod.counters, pod.counters.stripe(at), this.colour());
    }
}

impl Drop for Counted {
    /// E5: uncounts the execution. The pod may be freed by another thread as soon as the
    /// decrement is done; `Flush::leave` touches it afterwards only while announced (E6).
    #[inline]
    fn drop(&mut self) {
        let pod = self.pod();
        pod.wq.flush.leave(&pod.counters, self.colour());
    }
}

impl fmt::Debug for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pod = self.pod();
        f.debug_struct("Counted")
            .field("workqueue", &pod.wq.name)
            .field("pod", &pod.index)
            .field("colour", &self.colour())
            .finish()
    }
}
