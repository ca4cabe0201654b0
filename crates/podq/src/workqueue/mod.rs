//! Workqueues: what users queue work on, with the Linux workqueue's guarantees.
//!
//! A [`Workqueue`] sends each item to the pool of the issuing CPU's pod under its scope. The
//! pending/cancel/flush protocol, `max_active` and flush colours are written down as numbered
//! steps in `README.md` beside this file; each step is referred to where it is implemented.
//!
//! Files: `builder.rs` (attributes, validation), `work.rs` ([`Work`], cancel and flush of one
//! item), `delayed.rs` ([`DelayedWork`]), `task.rs` (one queued execution and its accounting),
//! `once_fn.rs` (a one-shot closure kept inline in its task), `state.rs` (an item's state
//! word), `dispatch.rs` (from a queue call to a pool), `active.rs`
//! (`max_active`), `flush.rs` (flush colours, drain), `pod_ref.rs` (an execution's uncounted
//! hold on its pod), `timer.rs` (the delayed-work timer thread), `layout.rs` (the pods,
//! placement and pools now, re-formed at run time), `follow.rs` (the `podq/limits` thread that
//! re-forms layouts when the CPUs the process may use change), `reshape.rs` (`set_scope`,
//! `set_shard_size`), `group.rs` ([`Group`]: related items steered to their home pod),
//! `steering.rs` (a group's state and counters), `group_slot.rs` (a work item's group ticket),
//! `join.rs` ([`Workqueue::spawn`], [`JoinHandle`]), `oneshot.rs` (the slot between a spawned
//! closure and its handle), `backlog.rs` (`max_backlog`, the `try_` calls, [`QueueError`]) and
//! `timeout.rs` (workqueue flush and drain with a deadline).

mod api;
mod item;
mod layout;
mod task;

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::fork::{self, PerFork};
use crate::here::{self, Here};
use crate::pool::Registry;
use crate::scope::AffinityScope;
use crate::stats::WorkqueueStats;
use crate::topology::Topology;

use api::backlog::Backlog;
use api::work::{self, WorkInner};
use item::flush::{Flush, FlushWait, PodCounters, Stripe};
use item::state::Claim;
use layout::{follow, Layout, PoolSets, Reform, Shape};
use task::active::ActiveLimit;
use task::dispatch::{enqueue_claimed, submit};
use task::steering::SteerShared;
use task::timer;
use task::{Job, Task};

pub(crate) use layout::Layouts;

pub use api::backlog::QueueError;
pub use api::builder::WorkqueueBuilder;
pub use api::delayed::DelayedWork;
pub use api::group::Group;
pub use api::join::{JoinError, JoinHandle};
pub use api::work::Work;

/// A workqueue: a name, a scope, strictness, `max_active` and ordering, over per-pod pools.
///
/// Work queued from a thread goes to the pool of the pod of the CPU that thread runs on (a CPU
/// outside the workqueue's CPUs is replaced round-robin by one of them). Pools are shared by
/// every workqueue with equal attributes, as in the kernel.
///
/// Guarantees, as the Linux workqueue gives them:
///
/// * a [`Work`] is pending at most once and never runs on two workers at once;
/// * everything stored before a successful queue call is visible to the work when it runs;
/// * [`Workqueue::flush`] waits for everything queued before it, not for later work;
///   [`Workqueue::drain`] flushes until nothing is left;
/// * [`Work::cancel_sync`] leaves the item neither pending nor running;
/// * delayed work never runs early;
/// * at most `max_active` items run at once, the rest wait in FIFO order;
///   [`Workqueue::ordered`] runs one at a time, in queueing order;
/// * a panicking item is caught and counted; its worker goes on;
/// * dropping the workqueue runs everything already queued, then lets its pools go;
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
    shared: Arc<WqShared>,
    /// Its layouts: the pods, placement and pools now, and every earlier one.
    layouts: Arc<Layouts>,
    /// I: whether its groups steer (`WorkqueueBuilder::steer`; set by the builder).
    steer: bool,
}

/// The part of a workqueue that its tasks, timers and items reach.
pub(crate) struct WqShared {
    /// I: unique among the workqueues of the process and of its parents (never 0); its top bits
    /// are the fork generation it was built in ([`fork::tag_id`]).
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
    pub(crate) layouts: std::sync::OnceLock<std::sync::Weak<Layouts>>,
    /// Flush colours and drain.
    pub(crate) flush: Flush,
    /// I: the `max_active` asked for (`None`: no limit).
    max_active: Option<usize>,
    /// A: items whose closure panicked while a worker dropped it (see `task::release`).
    /// Relaxed: a statistic.
    pub(crate) drop_panics: AtomicU64,
    /// The slot counter and FIFO, when `max_active` can be reached.
    pub(crate) active: Option<ActiveLimit<Task>>,
    /// I: the counters of its groups' items (`steering.rs`).
    steer: Arc<SteerShared>,
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

/// The process's pools of workqueue tasks: one per (attributes, pod), shared by every
/// workqueue with equal attributes, as in the kernel. One registry per fork generation
/// (`fork.rs`): a child of `fork()` never gets its parent's pools, whose workers it lacks.
static POOLS: PerFork<Registry<Task>> = PerFork::new();

/// This process's pool registry (see [`POOLS`]).
pub(crate) fn pool_registry() -> &'static Registry<Task> {
    POOLS.get(Registry::new)
}

/// Source of workqueue ids, before [`fork::tag_id`] adds the generation; starts at 1 so that
/// 0 means "none".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Entries of the table of flush waits: workqueue `id` sleeps on entry `id % FLUSH_WAITS`.
/// Enough that workqueues flushing at once rarely share one.
pub(crate) const FLUSH_WAITS: usize = 64;

/// The process's flush waits (see [`FlushWait`]): leaked on purpose, because a finisher may
/// use its workqueue's entry after the workqueue is gone. One table per fork generation
/// (`fork.rs`): a child's workqueues never share a wait lock with the parent's threads.
static FLUSH_WAIT_TABLE: PerFork<Box<[CachePadded<FlushWait>]>> = PerFork::new();

/// The flush wait of workqueue `id`.
fn flush_wait(id: u64) -> &'static FlushWait {
    let table = FLUSH_WAIT_TABLE.get(|| (0..FLUSH_WAITS).map(|_| CachePadded::default()).collect());
    // The remainder is below FLUSH_WAITS, so it fits.
    &table[(id % FLUSH_WAITS as u64) as usize]
}

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
    /// As `layout::form`.
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
            layouts: std::sync::OnceLock::new(),
            flush: Flush::new(flush_wait(id)),
            max_active,
            drop_panics: AtomicU64::new(0),
            active: reachable.map(ActiveLimit::new),
            // Pod ids of every layout are below the machine's CPU count.
            steer: Arc::new(SteerShared::new(most_pools, most_pools)),
            backlog: max_backlog.map(|n| Box::new(CachePadded::new(Backlog::new(n)))),
        });
        layouts.reform_state().wq = Arc::downgrade(&shared);
        let _ = shared.layouts.set(Arc::downgrade(&layouts));
        layouts.install(&shared, topology, shape)?;
        if follows {
            follow::follow(&layouts);
        }
        let wq = Workqueue {
            shared,
            layouts,
            steer: true,
        };
        #[cfg(feature = "metrics")]
        crate::metrics::register(&wq.shared, &wq.layouts);
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
    fn pool_set(&self, layout: &Layout) -> &crate::pool::PoolSet<Task> {
        self.shared
            .pools
            .get(layout.set)
            .expect("a layout's pool set is pushed before the layout")
    }

    /// Queues a one-shot closure to the pool of the calling thread's pod.
    ///
    /// A closure that captures up to six words (48 bytes, aligned to at most a word) is kept
    /// inside the queued task, so queueing it allocates nothing; a bigger one is boxed.
    ///
    /// Returns `false` only while [`Workqueue::drain`] runs and the caller is not one of this
    /// workqueue's own items, or in a child process of `fork()` when the workqueue was built
    /// by its parent (see the crate's "Fork" section): the closure is then dropped without
    /// running.
    ///
    /// On a workqueue with a [`max_backlog`](WorkqueueBuilder::max_backlog) that is full, it
    /// first waits for room (never from one of this workqueue's own items); the calls that
    /// never wait are [`Workqueue::try_queue`] and [`Workqueue::try_queue_work`].
    pub fn queue(&self, f: impl FnOnce() + Send + 'static) -> bool {
        self.queue_job(Job::once(f))
    }

    /// [`Workqueue::queue`] of a task's job (a closure, or a spawned closure).
    #[inline]
    fn queue_job(&self, job: Job) -> bool {
        if !self.admit() {
            return false;
        }
        let here = Here::now();
        self.submit(job, self.pick_here(here), here.index());
        true
    }

    /// The pod of `here`'s CPU in a layout (a CPU outside the workqueue's CPUs replaced
    /// round-robin).
    #[inline]
    fn pick_here(&self, here: Here) -> impl Fn(&Layout) -> usize + '_ {
        move |layout| layout.pod_for(here.cpu(), &self.shared.rotation)
    }

    /// Queues a one-shot closure to the pool of `cpu`'s pod.
    ///
    /// Returns `Ok(false)` when refused during a drain, as [`Workqueue::queue`].
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownCpu`] when `cpu` is not one of the workqueue's CPUs;
    /// * [`Error::CpuNotAllowed`] when it is, but the process may not use it now (see
    ///   [`crate::limits`]);
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_on(&self, cpu: usize, f: impl FnOnce() + Send + 'static) -> Result<bool> {
        self.check_cpu(cpu)?;
        if !self.admit() {
            return self.refusal();
        }
        self.submit(
            Job::once(f),
            |layout| layout.pod_for(Some(cpu), &self.shared.rotation),
            here::cpu_or_thread(),
        );
        Ok(true)
    }

    /// Queues a one-shot closure to a pool of `node`: the pods of the node's CPUs take turns.
    ///
    /// Returns `Ok(false)` when refused during a drain, as [`Workqueue::queue`].
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownNode`] when `node` has none of the workqueue's CPUs;
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_node(&self, node: usize, f: impl FnOnce() + Send + 'static) -> Result<bool> {
        let rotation = self.shared.rotation.fetch_add(1, Ordering::Relaxed);
        let placement = &self.layouts.current().placement;
        if placement.pod_for_node(node, rotation).is_none() {
            return Err(Error::UnknownNode {
                node,
                nodes: list(placement.nodes()),
            });
        }
        if !self.admit() {
            return self.refusal();
        }
        // The node's pod in the layout current when the execution is counted; should a
        // re-formation have taken the node's CPUs meanwhile, a pod of the workqueue's CPUs.
        self.submit(
            Job::once(f),
            |layout| {
                layout
                    .placement
                    .pod_for_node(node, rotation)
                    .unwrap_or_else(|| layout.pod_for(None, &self.shared.rotation))
            },
            here::cpu_or_thread(),
        );
        Ok(true)
    }

    /// Queues `work` to the pool of the calling thread's pod.
    ///
    /// Returns `true` when this call queued it. `false` when it did not:
    ///
    /// * `work` was already pending (queued and not started, waiting for its delay, or for a
    ///   `max_active` slot): that pending execution runs once for both requests, and it sees
    ///   everything stored before this call;
    /// * a [`Work::cancel_sync`] of it is in progress: nothing is queued;
    /// * a [`Workqueue::drain`] runs and the caller is not one of this workqueue's own items:
    ///   nothing is queued;
    /// * in a child process of `fork()`, the workqueue was built by its parent, or the item was
    ///   pending or running there when the parent forked: nothing is queued (see the crate's
    ///   "Fork" section).
    pub fn queue_work(&self, work: &Work) -> bool {
        let here = Here::now();
        self.queue_work_to(work, self.pick_here(here), here.index())
    }

    /// Queues `work` to the pool of `cpu`'s pod.
    ///
    /// Returns `Ok(true)` when this call queued it, and `Ok(false)` in the cases where
    /// [`Workqueue::queue_work`] returns `false`: already pending (it runs once for both
    /// requests), being cancelled, or refused while a drain runs.
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownCpu`] when `cpu` is not one of the workqueue's CPUs;
    /// * [`Error::CpuNotAllowed`] when it is, but the process may not use it now (see
    ///   [`crate::limits`]);
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_work_on(&self, cpu: usize, work: &Work) -> Result<bool> {
        self.check_cpu(cpu)?;
        if self.foreign() {
            return self.refusal();
        }
        Ok(self.queue_work_to(
            work,
            |layout| layout.pod_for(Some(cpu), &self.shared.rotation),
            here::cpu_or_thread(),
        ))
    }

    /// Queues `work` after `delay` (at once for a zero delay), to the pod of the calling
    /// thread's CPU when the delay ends. The work never runs before `delay` has passed.
    ///
    /// Returns `true` when this call armed it. `false` when it did not:
    ///
    /// * `work` was already pending (waiting for its delay, or queued and not started): its
    ///   delay is left as it was (to replace it, see [`Workqueue::mod_delayed`]), and that
    ///   pending execution runs once for both requests;
    /// * a [`DelayedWork::cancel_sync`] of it is in progress: nothing is armed;
    /// * a [`Workqueue::drain`] runs and the caller is not one of this workqueue's own items:
    ///   nothing is armed;
    /// * in a child process of `fork()`, as for [`Workqueue::queue_work`]: nothing is armed.
    pub fn queue_delayed(&self, work: &DelayedWork, delay: Duration) -> bool {
        if self.refused() {
            return false;
        }
        let item = &work.work.inner;
        match item.state.try_claim() {
            Claim::Refused => false,
            Claim::Claimed { running } if work::stranded_claim(item, running) => false,
            Claim::Claimed { .. } => {
                self.arm(item, delay);
                true
            }
        }
    }

    /// Sets `work` to run after `delay` from now, whether it was pending or not.
    ///
    /// Returns `true` when it was pending: its old delay is replaced by `delay`. `false` when
    /// it was not:
    ///
    /// * `work` was idle: it is armed as by [`Workqueue::queue_delayed`];
    /// * a [`DelayedWork::cancel_sync`] of it is in progress: nothing is armed;
    /// * a [`Workqueue::drain`] runs and the caller is not one of this workqueue's own items:
    ///   nothing is armed;
    /// * in a child process of `fork()`, as for [`Workqueue::queue_work`]: nothing is armed.
    pub fn mod_delayed(&self, work: &DelayedWork, delay: Duration) -> bool {
        let item = &work.work.inner;
        loop {
            if work::canceling(item) || self.refused() || work::stranded(item) {
                return false;
            }
            if let Some(grabbed) = item.grab() {
                // The claim is ours again: re-arm it.
                grabbed.unqueue();
                self.arm(item, delay);
                return true;
            }
            match item.state.try_claim() {
                Claim::Claimed { .. } => {
                    self.arm(item, delay);
                    return false;
                }
                // Pending somewhere the grab did not see yet (between two places): retry.
                Claim::Refused => std::thread::yield_now(),
            }
        }
    }

    /// Waits until every item queued before the call has finished. Items queued after it
    /// (including re-queues by the items themselves) do not hold it up.
    ///
    /// Delayed items whose delay has not ended are not waited for (they are not queued yet).
    ///
    /// Returns `true` once everything queued before the call has finished. Called from one of
    /// this workqueue's own items it would wait for that very item (the kernel deadlocks
    /// there), so it returns `false` at once and waits for nothing; so does it in a child
    /// process of `fork()` for a workqueue its parent built (its items never run here).
    pub fn flush(&self) -> bool {
        if self.called_from_own_item() || self.foreign() {
            return false;
        }
        flush_all(&self.shared, &self.layouts, None)
    }

    /// Flushes until the workqueue is empty. While it runs, only this workqueue's own running
    /// items may queue more work on it; other queue calls return `false` and queue nothing.
    ///
    /// Returns `true` once the workqueue was empty; `false` at once, having waited for nothing,
    /// when called from one of this workqueue's own items, or in a child process for a
    /// workqueue its parent built (as [`Workqueue::flush`]).
    pub fn drain(&self) -> bool {
        if self.called_from_own_item() || self.foreign() {
            return false;
        }
        self.shared.flush.start_drain();
        until_empty(&self.shared, &self.layouts);
        self.shared.flush.end_drain();
        true
    }

    /// Whether the calling thread is running one of this workqueue's items (F3).
    fn called_from_own_item(&self) -> bool {
        task::running_wq() == self.shared.id
    }

    /// Counters of this workqueue and the state of its pools, now. In a child process of
    /// `fork()`, a workqueue its parent built shows its counters as they were at the fork and no
    /// pools.
    pub fn stats(&self) -> WorkqueueStats {
        stats_of(&self.shared, &self.layouts)
    }

    /// Queues `work` to the pod `pick` chooses from `at` (see [`Workqueue::submit`]),
    /// claiming it first.
    #[inline]
    fn queue_work_to(&self, work: &Work, pick: impl Fn(&Layout) -> usize, at: usize) -> bool {
        self.queue_work_with(work, pick, at, |_| {})
    }

    /// As [`Workqueue::queue_work_to`], calling `claimed` once the claim is this call's, before
    /// the execution is counted and pushed (a group puts its ticket there).
    fn queue_work_with(
        &self,
        work: &Work,
        pick: impl Fn(&Layout) -> usize,
        at: usize,
        claimed: impl FnOnce(&WorkInner),
    ) -> bool {
        // With a `max_backlog`, room first (B1): a claim is never held while waiting.
        if !self.admit() {
            return false;
        }
        let item = &work.inner;
        match item.state.try_claim() {
            Claim::Refused => {
                self.give_back_room();
                false
            }
            Claim::Claimed { running } if work::stranded_claim(item, running) => {
                self.give_back_room();
                false
            }
            Claim::Claimed { .. } => {
                claimed(item);
                self.submit_claimed(item, pick, at);
                true
            }
        }
    }

    /// Counts and sends on the execution of an item whose claim this call owns, to the pod
    /// `pick` chooses, from `at`.
    #[inline]
    fn submit_claimed(&self, item: &Arc<WorkInner>, pick: impl Fn(&Layout) -> usize, at: usize) {
        // Where it goes is recorded before it is pushed, for cancel to find it: the pick that
        // counts it is the last one made.
        let pick = |layout: &Layout| {
            let pod = pick(layout);
            item.record_home(&self.shared, pod);
            pod
        };
        self.submit(Job::Work(Arc::clone(item)), pick, at);
    }

    /// Arms the timer for a claimed delayed item (or queues it now for a zero delay).
    fn arm(&self, item: &Arc<WorkInner>, delay: Duration) {
        let here = Here::now();
        let layout = self.layouts.current();
        let pod = &layout.pods[layout.pod_for(here.cpu(), &self.shared.rotation)];
        if delay.is_zero() {
            enqueue_claimed(Arc::clone(item), pod, here.index());
            return;
        }
        item.record_home(&self.shared, pod.index);
        let deadline = timer::deadline_after(delay);
        let fire = timer::Armed {
            work: Arc::clone(item),
            pod: Arc::clone(pod),
        };
        // Under the item's lock, so that the key it keeps is never older than the entry.
        item.state
            .with_extra(|home| home.timer = Some(timer::arm(deadline, fire)));
    }

    /// Counts a new execution in the pod that `pick` chooses in the current layout, and sends
    /// it on (Q2 and R3). `at` is the calling thread's CPU (or thread index), read once
    /// per queue call ([`Here::index`]): the stripe it is counted in and the lane it is
    /// pushed to.
    #[inline]
    fn submit(&self, job: Job, pick: impl FnMut(&Layout) -> usize, at: usize) {
        submit(&self.shared, &self.layouts, pick, job, at);
    }

    /// Whether a queue call must be refused: a drain runs and the caller is not one of this
    /// workqueue's items, or the workqueue was built by a parent process.
    #[inline]
    fn refused(&self) -> bool {
        (self.shared.flush.draining() && !self.called_from_own_item()) || self.foreign()
    }

    /// What a queue call that returns a `Result` answers when [`Workqueue::refused`]:
    /// [`Error::ParentProcess`] for a workqueue of a parent process, else `Ok(false)`.
    #[cold]
    fn refusal(&self) -> Result<bool> {
        if self.foreign() {
            return Err(Error::ParentProcess {
                workqueue: self.shared.name.clone(),
            });
        }
        Ok(false)
    }

    /// Whether the workqueue was built by a parent process of `fork()` (K3 of `README.md`):
    /// its pools have no workers here.
    #[inline]
    fn foreign(&self) -> bool {
        fork::is_foreign(self.shared.id)
    }
}

impl Drop for Workqueue {
    /// Runs everything already queued (delayed items whose delay has not ended are queued
    /// now), then lets the pools go; they stop their workers once no workqueue uses them.
    ///
    /// Dropped from one of its own items, it does not wait (it would wait for itself): the
    /// queued items still run, and a `podq/reaper` thread waits for them and then lets the
    /// pools go.
    ///
    /// Dropped in a child process of `fork()` when its parent built it, it returns at once and
    /// leaks what it holds (its pools, the items queued on it): their workers are the
    /// parent's, and their locks may be held by the parent's threads.
    fn drop(&mut self) {
        if self.foreign() {
            std::mem::forget(Arc::clone(&self.layouts));
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        // No re-formation after this: the drain below sees every layout there will be.
        self.layouts.reform_state().closed = true;
        for fire in timer::take_for(self.shared.id) {
            fire.fire();
        }
        if self.called_from_own_item() {
            reap(Arc::clone(&self.shared), Arc::clone(&self.layouts));
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

/// Counters of the workqueue of `shared` and `layouts` and the state of its pools now (what
/// [`Workqueue::stats`] returns, and what the `metrics` feature publishes). The counts add up
/// the pods of every layout it has had; the pools are those of its current layout.
pub(crate) fn stats_of(shared: &WqShared, layouts: &Layouts) -> WorkqueueStats {
    let current = layouts.current();
    let mut stats = WorkqueueStats {
        name: shared.name.clone(),
        scope: current.shape.scope,
        started: 0,
        completed: 0,
        in_flight: 0,
        panicked: 0,
        cancelled: 0,
        drop_panics: shared.drop_panics.load(Ordering::Relaxed),
        waiting_for_slot: shared.active.as_ref().map_or(0, |a| a.waiting() as u64),
        grouped_at_home: 0,
        grouped_elsewhere: 0,
        home_changes: 0,
        backlog: shared.backlog.as_ref().map_or(0, |b| b.waiting()),
        reformations: layouts.reformations(),
        pools: Vec::new(),
    };
    let steer = shared.steer.totals();
    stats.grouped_at_home = steer.at_home;
    stats.grouped_elsewhere = steer.elsewhere;
    stats.home_changes = steer.home_changes;
    // Panicked, then completed, then started (see `PodCounters::total`): a snapshot taken
    // while items run keeps `panicked <= completed <= started`.
    let total = |count: fn(&Stripe) -> &AtomicU64| -> u64 {
        layouts.counters().map(|pod| pod.total(count)).sum()
    };
    stats.panicked = total(|s| &s.panicked);
    stats.completed = total(|s| &s.completed);
    stats.started = total(|s| &s.started);
    stats.cancelled = total(|s| &s.cancelled);
    stats.in_flight = layouts.counters().map(|pod| pod.in_flight() as u64).sum();
    // A parent's pools, in a child of `fork()`, have no workers here and their locks may be
    // held by the parent's threads: none is shown.
    if !fork::is_foreign(shared.id) {
        if let Some(pools) = shared.pools.get(current.set) {
            stats.pools = pools.stats();
        }
    }
    stats
}

/// F1 over every layout: waits for every execution of the workqueue counted before the
/// call, in whichever layout it was counted, giving up at `deadline` (`None`: never). Returns
/// whether it waited for all of them.
fn flush_all(wq: &WqShared, layouts: &Layouts, deadline: Option<std::time::Instant>) -> bool {
    wq.flush.flush_until(
        |colour| layouts.counters().any(|p| p.in_flight_of(colour) != 0),
        deadline,
    )
}

/// Flushes until every pod's counts are zero, in every layout (F2).
fn until_empty(wq: &WqShared, layouts: &Layouts) {
    api::flush::until_empty_by(wq, layouts, None);
}

/// The drop of a workqueue from one of its own items: a `podq/reaper` thread waits until its
/// executions are done (as the drop would) and then lets the layouts go. Where the OS refuses
/// the thread, the layouts are leaked: their memory stays, so the executions still run safely.
fn reap(wq: Arc<WqShared>, layouts: Arc<Layouts>) {
    // Two handles: a refused spawn drops the closure, and with it `kept`; `layouts` is then
    // leaked rather than dropped.
    let kept = Arc::clone(&layouts);
    let spawned = crate::launch::spawn_helper("podq/reaper", move || {
        until_empty(&wq, &kept);
        Flush::wait_for_leavers(kept.counters());
    });
    if spawned.is_err() {
        std::mem::forget(layouts);
    }
}

/// `0, 1, 3` for error messages.
fn list(items: impl Iterator<Item = usize>) -> String {
    items.map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
}
