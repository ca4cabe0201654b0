//! Workqueues: what users queue work on, with the Linux workqueue's guarantees.
//!
//! A [`Workqueue`] sends each item to the pool of the issuing CPU's pod under its scope. The
//! pending/cancel/flush protocol, `max_active` and flush colours are written down as numbered
//! steps in `README.md` beside this file; each step is referred to where it is implemented.
//!
//! Files: `builder.rs` (attributes, validation), `work.rs` ([`Work`], cancel and flush of one
//! item), `delayed.rs` ([`DelayedWork`]), `task.rs` (one queued execution and its accounting),
//! `state.rs` (an item's state word), `dispatch.rs` (from a queue call to a pool), `active.rs`
//! (`max_active`), `flush.rs` (flush colours, drain), `pod_ref.rs` (an execution's uncounted
//! hold on its pod), `timer.rs` (the delayed-work timer thread), `group.rs` ([`Group`]: related
//! items steered to their home pod), `steering.rs` (a group's state and counters) and
//! `group_slot.rs` (a work item's group ticket).

mod active;
mod builder;
mod delayed;
mod dispatch;
mod flush;
#[cfg(test)]
mod flush_tests;
mod group;
mod group_slot;
mod pod_ref;
pub(crate) mod state;
mod steering;
pub(crate) mod task;
mod timer;
mod work;

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::cpuset::CpuSet;
use crate::error::{Error, Result};
use crate::fork::{self, PerFork};
use crate::here::{self, Here};
use crate::policy::Placement;
use crate::pool::{PoolSet, Registry};
use crate::scope::AffinityScope;
use crate::stats::WorkqueueStats;

use active::ActiveLimit;
use flush::{Flush, FlushWait, PodCounters, Stripe};
use state::Claim;
use steering::SteerShared;
use task::{Job, Task};
use work::WorkInner;

use dispatch::{enqueue_claimed, submit};

pub use builder::WorkqueueBuilder;
pub use delayed::DelayedWork;
pub use group::Group;
pub use work::Work;

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
    /// The workqueue's part of each pod (index = pod id).
    pods: Box<[Arc<CachePadded<PodShared>>]>,
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
    /// I: the scope of its pods.
    scope: AffinityScope,
    /// I: the workqueue's CPUs.
    cpus: CpuSet,
    /// I: the pools of every pod (a pod outside the workqueue's CPUs has a pool never used).
    pub(crate) pools: Arc<PoolSet<Task>>,
    /// I: CPU and node to pod.
    placement: Placement,
    /// A: rotation for CPUs outside the workqueue's CPUs and for nodes. Relaxed: any value
    /// spreads the work; only written when a replacement is needed.
    rotation: AtomicUsize,
    /// Flush colours and drain.
    pub(crate) flush: Flush,
    /// I: the `max_active` asked for (`None`: no limit).
    max_active: Option<usize>,
    /// A: items whose closure panicked while a worker dropped it (see `task::release`).
    /// Relaxed: a statistic.
    pub(crate) drop_panics: AtomicU64,
    /// The slot counter and FIFO, when `max_active` can be reached.
    pub(crate) active: Option<ActiveLimit<Task>>,
    /// I: whether its groups steer, and the counters of their items (`steering.rs`).
    steer: Arc<SteerShared>,
}

/// A workqueue's part for one pod: the counters its items of that pod write.
pub(crate) struct PodShared {
    /// The workqueue.
    pub(crate) wq: Arc<WqShared>,
    /// I: the pod id (index into the pools).
    pub(crate) index: usize,
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

    /// Builds the workqueue from checked attributes (see `builder.rs`).
    pub(crate) fn from_parts(
        name: String,
        scope: AffinityScope,
        cpus: CpuSet,
        pools: Arc<PoolSet<Task>>,
        placement: Placement,
        max_active: Option<usize>,
        max_workers: usize,
    ) -> Workqueue {
        let used = pools.serving();
        // A limit of at least every worker the pools may ever have cannot be reached by
        // running items, so it needs no counter: items then never touch a workqueue-wide word.
        let reachable = max_active.filter(|&m| m < used.saturating_mul(max_workers));
        let id = fork::tag_id(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let steer = Arc::new(SteerShared::new(pools.len(), cpus.len()));
        let shared = Arc::new(WqShared {
            id,
            name,
            scope,
            cpus,
            placement,
            rotation: AtomicUsize::new(0),
            flush: Flush::new(flush_wait(id)),
            max_active,
            drop_panics: AtomicU64::new(0),
            active: reachable.map(ActiveLimit::new),
            steer,
            pools: Arc::clone(&pools),
        });
        let pods = (0..pools.len())
            .map(|index| {
                Arc::new(CachePadded::new(PodShared {
                    wq: Arc::clone(&shared),
                    index,
                    counters: PodCounters::new(pools.pod(index).cpus.len()),
                }))
            })
            .collect();
        let wq = Workqueue {
            shared,
            pods,
            steer: true,
        };
        #[cfg(feature = "metrics")]
        crate::metrics::register(&wq.shared, &wq.pods);
        wq
    }

    /// The name given to the builder.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The scope of its pods.
    pub fn scope(&self) -> AffinityScope {
        self.shared.scope
    }

    /// The workqueue's CPUs.
    pub fn cpus(&self) -> &CpuSet {
        &self.shared.cpus
    }

    /// The `max_active` limit, or `None` when none was set.
    pub fn max_active(&self) -> Option<usize> {
        self.shared.max_active
    }

    /// How many pools serve this workqueue (pods with at least one of its CPUs).
    pub fn pools(&self) -> usize {
        self.shared.pools.serving()
    }

    /// Queues a one-shot closure to the pool of the calling thread's pod.
    ///
    /// Returns `false` only while [`Workqueue::drain`] runs and the caller is not one of this
    /// workqueue's own items, or in a child process of `fork()` when the workqueue was built
    /// by its parent (see the crate's "Fork" section): the closure is then dropped without
    /// running.
    pub fn queue(&self, f: impl FnOnce() + Send + 'static) -> bool {
        if self.refused() {
            return false;
        }
        let here = Here::now();
        self.submit(Job::Once(Box::new(f)), self.pod_here(here), here.index());
        true
    }

    /// Queues a one-shot closure to the pool of `cpu`'s pod.
    ///
    /// Returns `Ok(false)` when refused during a drain, as [`Workqueue::queue`].
    ///
    /// # Errors
    ///
    /// * [`Error::UnknownCpu`] when `cpu` is not one of the workqueue's CPUs;
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_on(&self, cpu: usize, f: impl FnOnce() + Send + 'static) -> Result<bool> {
        let pod = self.pod_of_cpu(cpu)?;
        if self.refused() {
            return self.refusal();
        }
        self.submit(Job::Once(Box::new(f)), pod, here::cpu_or_thread());
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
        let pod = self
            .shared
            .placement
            .pod_for_node(node, rotation)
            .ok_or_else(|| Error::UnknownNode {
                node,
                nodes: list(self.shared.placement.nodes()),
            })?;
        if self.refused() {
            return self.refusal();
        }
        self.submit(Job::Once(Box::new(f)), pod, here::cpu_or_thread());
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
        self.queue_work_to(work, self.pod_here(here), here.index())
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
    /// * [`Error::ParentProcess`] in a child process of `fork()` when the workqueue was built
    ///   by its parent.
    pub fn queue_work_on(&self, cpu: usize, work: &Work) -> Result<bool> {
        let pod = self.pod_of_cpu(cpu)?;
        if self.foreign() {
            return self.refusal();
        }
        Ok(self.queue_work_to(work, pod, here::cpu_or_thread()))
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
        self.shared
            .flush
            .flush(|| self.pods.iter().map(|p| &p.counters));
        true
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
        until_empty(&self.shared, &self.pods);
        self.shared.flush.end_drain();
        true
    }

    /// Whether the calling thread is running one of this workqueue's items (step 19).
    fn called_from_own_item(&self) -> bool {
        task::running_wq() == self.shared.id
    }

    /// Counters of this workqueue and the state of its pools, now. In a child process of
    /// `fork()`, a workqueue its parent built shows its counters as they were at the fork and no
    /// pools.
    pub fn stats(&self) -> WorkqueueStats {
        stats_of(&self.shared, &self.pods)
    }

    /// Queues `work` to `pod` from `at` (see [`Workqueue::submit`]), claiming it first.
    fn queue_work_to(&self, work: &Work, pod: usize, at: usize) -> bool {
        self.queue_work_with(work, pod, at, |_| {})
    }

    /// As [`Workqueue::queue_work_to`], calling `claimed` once the claim is this call's, before
    /// the execution is counted and pushed (a group puts its ticket there).
    fn queue_work_with(
        &self,
        work: &Work,
        pod: usize,
        at: usize,
        claimed: impl FnOnce(&WorkInner),
    ) -> bool {
        if self.refused() {
            return false;
        }
        let item = &work.inner;
        match item.state.try_claim() {
            Claim::Refused => false,
            Claim::Claimed { running } if work::stranded_claim(item, running) => false,
            Claim::Claimed { .. } => {
                claimed(item);
                item.record_home(&self.shared, pod);
                self.submit(Job::Work(Arc::clone(item)), pod, at);
                true
            }
        }
    }

    /// Arms the timer for a claimed delayed item (or queues it now for a zero delay).
    fn arm(&self, item: &Arc<WorkInner>, delay: Duration) {
        let here = Here::now();
        let pod = &self.pods[self.pod_here(here)];
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

    /// Counts a new execution in `pod` and sends it on (step 2). `at` is the calling
    /// thread's CPU (or thread index), read once per queue call ([`Here::index`]): the stripe
    /// it is counted in and the lane it is pushed to.
    #[inline]
    fn submit(&self, job: Job, pod: usize, at: usize) {
        submit(&self.shared, &self.pods[pod], job, at);
    }

    /// The pod of the CPU `here` (or its round-robin replacement).
    #[inline]
    fn pod_here(&self, here: Here) -> usize {
        self.shared.placement.pod_for(here.cpu(), || {
            self.shared.rotation.fetch_add(1, Ordering::Relaxed)
        })
    }

    /// The pod of `cpu`, which must be one of the workqueue's CPUs.
    fn pod_of_cpu(&self, cpu: usize) -> Result<usize> {
        self.shared
            .placement
            .pod_of(cpu)
            .ok_or_else(|| Error::UnknownCpu {
                cpu,
                usable: self.shared.cpus.to_string(),
            })
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

    /// Whether the workqueue was built by a parent process of `fork()` (step 22 of `README.md`):
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
            std::mem::forget(std::mem::take(&mut self.pods));
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        for fire in timer::take_for(self.shared.id) {
            fire.fire();
        }
        let pods = std::mem::take(&mut self.pods);
        if self.called_from_own_item() {
            reap(Arc::clone(&self.shared), pods);
            return;
        }
        self.shared.flush.start_drain();
        until_empty(&self.shared, &pods);
        // Step 11: the executions hold the pods without a count; their `Arc`s go only when
        // no finisher reads them any more.
        Flush::wait_for_leavers(pods.iter().map(|p| &p.counters));
        self.shared.flush.end_drain();
    }
}

impl fmt::Debug for Workqueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workqueue")
            .field("name", &self.shared.name)
            .field("scope", &self.shared.scope)
            .field("cpus", &self.shared.cpus)
            .field("max_active", &self.shared.max_active)
            .field("pools", &self.pools())
            .finish()
    }
}

/// Counters of the workqueue of `shared` and `pods` and the state of its pools, now (what
/// [`Workqueue::stats`] returns, and what the `metrics` feature publishes).
pub(crate) fn stats_of(shared: &WqShared, pods: &[Arc<CachePadded<PodShared>>]) -> WorkqueueStats {
    let mut stats = WorkqueueStats {
        name: shared.name.clone(),
        scope: shared.scope,
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
        pools: Vec::new(),
    };
    let steer = shared.steer.totals();
    stats.grouped_at_home = steer.at_home;
    stats.grouped_elsewhere = steer.elsewhere;
    stats.home_changes = steer.home_changes;
    // Panicked, then completed, then started (see `PodCounters::total`): a snapshot taken
    // while items run keeps `panicked <= completed <= started`.
    let total = |count: fn(&Stripe) -> &AtomicU64| -> u64 {
        pods.iter().map(|pod| pod.counters.total(count)).sum()
    };
    stats.panicked = total(|s| &s.panicked);
    stats.completed = total(|s| &s.completed);
    stats.started = total(|s| &s.started);
    stats.cancelled = total(|s| &s.cancelled);
    stats.in_flight = pods.iter().map(|pod| pod.counters.in_flight() as u64).sum();
    // A parent's pools, in a child of `fork()`, have no workers here and their locks may be
    // held by the parent's threads: none is shown.
    if !fork::is_foreign(shared.id) {
        stats.pools = shared.pools.stats();
    }
    stats
}

/// Flushes until every pod's counts are zero (step 18).
fn until_empty(wq: &WqShared, pods: &[Arc<CachePadded<PodShared>>]) {
    loop {
        wq.flush.flush(|| pods.iter().map(|p| &p.counters));
        if pods.iter().all(|p| p.counters.in_flight() == 0) {
            break;
        }
    }
}

/// The drop of a workqueue from one of its own items: a `podq/reaper` thread waits until its
/// executions are done (as the drop would) and then lets the pods go. Where the OS refuses the
/// thread, the pods are leaked: their memory stays, so the executions still run safely.
fn reap(wq: Arc<WqShared>, pods: Box<[Arc<CachePadded<PodShared>>]>) {
    // Two handles: a refused spawn drops the closure, and with it `kept`; `pods` is then
    // leaked rather than dropped.
    let pods = Arc::new(pods);
    let kept = Arc::clone(&pods);
    let spawned = std::thread::Builder::new()
        .name("podq/reaper".into())
        .spawn(move || {
            until_empty(&wq, &kept);
            Flush::wait_for_leavers(kept.iter().map(|p| &p.counters));
        });
    if spawned.is_err() {
        std::mem::forget(pods);
    }
}

/// `0, 1, 3` for error messages.
fn list(items: impl Iterator<Item = usize>) -> String {
    items.map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
}
