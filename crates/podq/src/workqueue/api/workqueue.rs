//! [`Workqueue`]: the handle, how it is built from checked attributes, what it says of itself,
//! and its drop (E6, F3 of `workqueue/README.md`). What it does is in the file of each
//! concept beside this one (`api/mod.rs` lists them).

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use crossbeam_utils::CachePadded;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::fork;
use crate::pool::PoolSet;
use crate::scope::AffinityScope;
use crate::topology::Topology;
use crate::workqueue::api::builder::WorkqueueBuilder;
use crate::workqueue::api::flush::{flush_wait, until_empty};
use crate::workqueue::api::owner_gate::OwnerGate;
use crate::workqueue::item::flush::Flush;
use crate::workqueue::layout::follow;
use crate::workqueue::layout::{Layout, Layouts, Reform, Shape};
use crate::workqueue::task::active::ActiveLimit;
use crate::workqueue::task::backlog::Backlog;
use crate::workqueue::task::shared::{CurrentLayout, PoolSets, WqShared};
use crate::workqueue::task::steering::SteerShared;
use crate::workqueue::task::{self, timer, Task};

/// A workqueue: a name, a scope, strictness, `max_active` and ordering, over per-pod pools.
///
/// Work queued from a thread goes to the pool of the pod of the CPU that thread runs on (a CPU
/// outside the workqueue's CPUs is replaced round-robin by one of them). Pools are shared by
/// every workqueue with equal attributes, as in the kernel.
///
/// Guarantees, as the Linux workqueue gives them:
///
/// * a [`Work`](crate::Work) is pending at most once and never runs on two workers at once;
/// * everything stored before a successful queue call is visible to the work when it runs;
/// * [`Workqueue::flush`] waits for everything queued before it, not for later work;
///   [`Workqueue::drain`] flushes until nothing is left;
/// * [`Work::cancel_sync`](crate::Work::cancel_sync) leaves the item neither pending nor running;
/// * delayed work never runs early;
/// * at most `max_active` items run at once, the rest wait in FIFO order;
///   [`Workqueue::ordered`] runs one at a time, in queueing order;
/// * a panicking item is caught and counted; its worker goes on;
/// * dropping the workqueue runs everything already queued, then lets its pools go
///   ([`Workqueue::shutdown_timeout`] bounds that wait);
/// * its pods follow the CPUs the process may use, and [`Workqueue::set_scope`] changes
///   them, while work flows: nothing queued is lost (see [`crate::limits`]);
/// * in a child process of `fork()`, new workqueues work fully, and the parent's refuse work
///   and return from every call at once (see the crate's "Fork" section).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use podq::Workqueue;
///
/// let wq = Workqueue::builder("doc").max_active(4).build()?;
/// let done = Arc::new(AtomicUsize::new(0));
/// for _ in 0..10 {
///     let done = Arc::clone(&done);
///     wq.queue(move || {
///         done.fetch_add(1, Ordering::Relaxed);
///     });
/// }
/// wq.flush();
/// assert_eq!(done.load(Ordering::Relaxed), 10);
/// assert_eq!(wq.stats().completed, 10);
/// # Ok::<(), podq::Error>(())
/// ```
pub struct Workqueue {
    /// What tasks, timers and items share.
    pub(super) shared: Arc<WqShared>,
    /// Its layouts: the pods, placement and pools now, and every earlier one.
    pub(super) layouts: Arc<Layouts>,
    /// The gate of its owned handles (groups), made by the first [`Workqueue::group`]; it
    /// holds a copy of this handle, which the drop takes away (G7).
    pub(super) owned: OnceLock<Arc<OwnerGate<Workqueue>>>,
    /// Its drop lets its `Arc`s go and does nothing else: the gate's copy, or a workqueue
    /// whose `shutdown_timeout` handed the rest to the reaper (E7).
    pub(super) inert: bool,
}

/// Source of workqueue ids, before [`fork::tag_id`] adds the generation; starts at 1 so that
/// 0 means "none".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Workqueue {
    /// A builder for a workqueue named `name` (the name shows in statistics).
    pub fn builder(name: impl Into<String>) -> WorkqueueBuilder {
        WorkqueueBuilder::new(name.into())
    }

    /// An ordered workqueue: one item at a time, in queueing order (`max_active` 1, one pool
    /// of all CPUs: the `system` scope).
    ///
    /// # Errors
    ///
    /// As [`WorkqueueBuilder::build`].
    pub fn ordered(name: impl Into<String>) -> Result<Workqueue> {
        Workqueue::builder(name)
            .scope(AffinityScope::System)
            .max_active(1)
            .build()
    }

    /// Builds the workqueue from checked attributes (see `builder.rs`): its first layout is
    /// formed for `shape` on `topology` (the machine within the CPUs allowed now); `reform`
    /// says what later layouts are formed from, and whether the workqueue follows the CPUs
    /// the process may use.
    ///
    /// # Errors
    ///
    /// As `Layouts::install`.
    pub(crate) fn from_parts(
        name: String,
        topology: &Topology,
        shape: Shape,
        reform: Reform,
        max_active: Option<usize>,
        max_backlog: Option<usize>,
    ) -> Result<Workqueue> {
        // A limit of at least every worker the pools may ever have cannot be reached by
        // running items, so it needs no counter: items then never touch a workqueue-wide word.
        // Every layout has at most one pool per CPU of the machine.
        let most_pools = reform.machine.cpus().len();
        let reachable =
            max_active.filter(|&m| m < most_pools.saturating_mul(reform.attrs.max_workers));
        let follows = reform.limits.is_some();
        let id = fork::tag_id(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let layouts = Arc::new(Layouts::new(reform));
        let shared = Arc::new(WqShared {
            id,
            name,
            pools: PoolSets::new(),
            rotation: AtomicUsize::new(0),
            layouts: OnceLock::new(),
            flush: Flush::new(flush_wait(id)),
            max_active,
            drop_panics: AtomicU64::new(0),
            active: reachable.map(ActiveLimit::new),
            // Pod ids of every layout are below the machine's CPU count.
            steer: Arc::new(SteerShared::new(most_pools, most_pools)),
            backlog: max_backlog.map(|n| Box::new(CachePadded::new(Backlog::new(n)))),
        });
        layouts.reform_state().wq = Arc::downgrade(&shared);
        let current: Weak<dyn CurrentLayout> = Arc::downgrade(&layouts) as Weak<Layouts>;
        let _ = shared.layouts.set(current);
        layouts.install(&shared, topology, shape)?;
        if follows {
            follow::follow(&layouts);
        }
        let wq = Workqueue {
            shared,
            layouts,
            owned: OnceLock::new(),
            inert: false,
        };
        crate::live::register(&wq.shared, &wq.layouts);
        Ok(wq)
    }

    /// The name given to the builder.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The scope of its pods.
    pub fn scope(&self) -> AffinityScope {
        self.layouts.current().shape.scope
    }

    /// The workqueue's CPUs that the process may use now: those its pods are formed on
    /// (see [`crate::limits`]).
    pub fn cpus(&self) -> &CpuSet {
        &self.layouts.current().cpus
    }

    /// The `max_active` limit, or `None` when none was set.
    pub fn max_active(&self) -> Option<usize> {
        self.shared.max_active
    }

    /// How many pools serve this workqueue now (pods with at least one of its CPUs).
    pub fn pools(&self) -> usize {
        self.pool_set(self.layouts.current()).serving()
    }

    /// The pool set of `layout`.
    pub(super) fn pool_set(&self, layout: &Layout) -> &PoolSet<Task> {
        self.shared
            .pools
            .get(layout.set)
            .expect("a layout's pool set is pushed before the layout")
    }

    /// Whether the calling thread is running one of this workqueue's items (F3).
    pub(super) fn called_from_own_item(&self) -> bool {
        task::running_wq() == self.shared.id
    }

    /// Whether a queue call must be refused: a drain runs and the caller is not one of this
    /// workqueue's items, or the workqueue was built by a parent process.
    #[inline]
    pub(super) fn refused(&self) -> bool {
        (self.shared.flush.draining() && !self.called_from_own_item()) || self.foreign()
    }

    /// What a queue call that returns a `Result` answers when [`Workqueue::refused`]:
    /// [`Error::ParentProcess`] for a workqueue of a parent process, else `Ok(false)`.
    #[cold]
    pub(super) fn refusal(&self) -> Result<bool> {
        if self.foreign() {
            return Err(Error::ParentProcess {
                workqueue: self.shared.name.clone(),
            });
        }
        Ok(false)
    }

    /// Whether the workqueue was built by a parent process of `fork()` (K3 of
    /// `workqueue/README.md`): its pools have no workers here.
    #[inline]
    pub(super) fn foreign(&self) -> bool {
        fork::is_foreign(self.shared.id)
    }
}

impl Drop for Workqueue {
    /// Runs everything already queued (delayed items whose delay has not ended are queued
    /// now), then lets the pools go; they stop their workers once no workqueue uses them.
    ///
    /// It waits for everything queued, without a bound; [`Workqueue::shutdown_timeout`] bounds
    /// the wait and cancels what has not started. Its [`Group`](crate::Group)s stop taking
    /// work first: their calls return `false` from then on.
    ///
    /// Dropped from one of its own items, it does not wait (it would wait for itself): the
    /// queued items still run, and the `podq/reaper` thread waits for them and then lets the
    /// pools go.
    ///
    /// Dropped in a child process of `fork()` when its parent built it, it returns at once and
    /// leaks what it holds (its pools, the items queued on it): their workers are the
    /// parent's, and their locks may be held by the parent's threads.
    fn drop(&mut self) {
        if self.inert {
            return;
        }
        if self.foreign() {
            std::mem::forget(Arc::clone(&self.layouts));
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        // G7: no group call after this one; those inside have counted their items.
        if let Some(gate) = self.owned.get() {
            drop(gate.close());
        }
        // No re-formation after this: the drain below sees every layout there will be.
        self.layouts.reform_state().closed = true;
        for fire in timer::take_for(self.shared.id) {
            fire.fire();
        }
        if self.called_from_own_item() {
            super::helpers::reap(Arc::clone(&self.shared), Arc::clone(&self.layouts));
            return;
        }
        self.shared.flush.start_drain();
        until_empty(&self.shared, &self.layouts);
        // E6: the executions hold the pods without a count; their `Arc`s go only when
        // no finisher reads them any more.
        Flush::wait_for_leavers(self.layouts.counters());
        self.shared.flush.end_drain();
    }
}

impl fmt::Debug for Workqueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workqueue")
            .field("name", &self.shared.name)
            .field("scope", &self.scope())
            .field("cpus", self.cpus())
            .field("max_active", &self.shared.max_active)
            .field("pools", &self.pools())
            .finish()
    }
}
