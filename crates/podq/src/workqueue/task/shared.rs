//! What a queued task reaches of its workqueue: the workqueue's shared part ([`WqShared`]) and
//! its part for each pod ([`PodShared`]), which a task's count holds (`pod_ref.rs`).
//!
//! The layouts that hold the pods are the higher group `layout/`'s; the timer, which counts a
//! fired execution in the current layout, reaches them through [`CurrentLayout`].

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock, Weak};

use crossbeam_utils::CachePadded;

use crate::pool::PoolSet;
use crate::workqueue::item::flush::{Flush, PodCounters};
use crate::workqueue::task::active::ActiveLimit;
use crate::workqueue::task::backlog::Backlog;
use crate::workqueue::task::pod_ref::Counted;
use crate::workqueue::task::slots::Slots;
use crate::workqueue::task::steering::SteerShared;
use crate::workqueue::task::Task;

/// The pool sets a workqueue's layouts use, by index: what its executions are pushed to
/// (`PodShared::set`). Kept as long as the workqueue's shared part, like its layouts.
pub(crate) type PoolSets = Slots<Arc<PoolSet<Task>>>;

/// The part of a workqueue that its tasks, timers and items reach.
pub(crate) struct WqShared {
    /// I: unique among the workqueues of the process and of its parents (never 0); its top bits
    /// are the fork generation it was built in (`fork::tag_id`).
    pub(crate) id: u64,
    /// I: the name given to the builder.
    pub(crate) name: String,
    /// The pool sets of its layouts, by `PodShared::set` (a pod outside the workqueue's CPUs
    /// has a pool never used); only added to.
    pub(crate) pools: PoolSets,
    /// A: rotation for CPUs outside the workqueue's CPUs and for nodes. Relaxed: any value
    /// spreads the work; only written when a replacement is needed.
    pub(crate) rotation: AtomicUsize,
    /// I (set once, as it is built): its layouts, for the timer, which queues a delayed item
    /// to the current one. Weak: the layouts hold this part.
    pub(crate) layouts: OnceLock<Weak<dyn CurrentLayout>>,
    /// Flush colours and drain.
    pub(crate) flush: Flush,
    /// I: the `max_active` asked for (`None`: no limit).
    pub(crate) max_active: Option<usize>,
    /// A: items whose closure panicked while a worker dropped it (see `task::release`).
    /// Relaxed: a statistic.
    pub(crate) drop_panics: AtomicU64,
    /// The slot counter and FIFO, when `max_active` can be reached.
    pub(crate) active: Option<ActiveLimit<Task>>,
    /// I: the counters of its groups' items (`steering.rs`).
    pub(crate) steer: Arc<SteerShared>,
    /// The count of waiting executions, when a `max_backlog` was set (`backlog.rs`).
    pub(crate) backlog: Option<Box<CachePadded<Backlog>>>,
}

/// A workqueue's part for one pod: the counters its items of that pod write.
pub(crate) struct PodShared {
    /// The workqueue.
    pub(crate) wq: Arc<WqShared>,
    /// I: the pod id (index into the pools of its set).
    pub(crate) index: usize,
    /// I: its layout's pool set: index into `WqShared::pools`.
    pub(crate) set: usize,
    /// In-flight counts per colour and statistics.
    pub(crate) counters: PodCounters,
}

/// What the timer asks of a workqueue's layouts (`layout/`, which implements it).
pub(crate) trait CurrentLayout: Send + Sync {
    /// Counts an execution armed for `pod` (a delayed item firing) in the current layout, in
    /// the stripe of `at` (R5).
    fn enter_current(&self, pod: &Arc<CachePadded<PodShared>>, at: usize) -> Counted;
}
