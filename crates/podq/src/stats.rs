//! Counters a user reads to see what a scope does: per pool (workers, queue depth, lock
//! contention) and per workqueue.

use crate::cpuset::CpuSet;

/// One pool's workers, queue and lock, at the moment `Workqueue::stats` was called.
///
/// A pool serves one pod and is shared by every workqueue with equal attributes, so its counts
/// include the work of all of them. Counts (`u64`) run from the pool's creation; the others
/// are the state now.
///
/// The lock counts show what the scope does to contention: `lock_contended` out of
/// `lock_acquisitions` is how often a pusher or a worker found the pool's lock held by another
/// thread.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PoolStats {
    /// The pool's short name (`cs8-p2`: scope, shard size, pod); its worker threads are named
    /// `podq/` and this.
    pub name: String,
    /// The pod this pool serves (its id under the workqueue's scope).
    pub pod: usize,
    /// The pod's CPUs, within the workqueue's CPUs.
    pub cpus: CpuSet,
    /// Live worker threads, busy or idle.
    pub workers: usize,
    /// Workers parked with nothing to do.
    pub idle_workers: usize,
    /// Busy workers whose thread sleeps in a work item now (blocked on I/O, a lock, a sleep),
    /// as the stall watchdog sees them; 0 where a thread's state cannot be read (systems other
    /// than Linux).
    pub blocked_workers: usize,
    /// Worker threads ever started.
    pub workers_created: u64,
    /// Workers that retired after being idle for the idle timeout.
    pub workers_retired: u64,
    /// Work items waiting in the queue.
    pub queue_depth: usize,
    /// Times one of the pool's locks was taken by a pusher or a worker: the lane locks of its
    /// queue's tail, the head lock and the pool lock, together.
    pub lock_acquisitions: u64,
    /// Times such a lock was found held by another thread (a failed `try_lock` before
    /// blocking).
    pub lock_contended: u64,
    /// Work items queued on another pool that this pool's workers pulled and ran.
    pub pulled_in: u64,
    /// Work items queued on this pool that workers of another pool pulled and ran.
    pub pulled_out: u64,
    /// Work items run to the end by this pool's workers, pulled ones included (counted when the
    /// worker comes back to the queue after the run, so a `flush` may return a moment before this
    /// count moves).
    pub executed: u64,
    /// Work items that a running item queued to this pool and its worker then ran itself,
    /// right after the item that queued them ("held" items: `pool/README.md`, H1-H7).
    pub ran_by_queuer: u64,
    /// Held items that another worker of the pool, or the stall watchdog, took from the worker
    /// that held them because it ran on or blocked.
    pub taken_from_queuer: u64,
    /// Work items that a worker took from the pool's queue together with the one before them
    /// (up to its share of those waiting behind it), while no worker was idle, and ran after it
    /// without taking the queue's lock again (`pool/README.md`, H8); held items too, until they
    /// run.
    pub ran_ahead: u64,
    /// Workers that could not be placed on their CPUs and ran where the OS put them (for
    /// instance on a synthetic topology whose CPUs this machine lacks).
    pub pin_failures: u64,
    /// Runs that unwound into a worker past the workqueue's own panic handling; 0 unless
    /// something is badly wrong. The worker goes on.
    pub worker_panics: u64,
    /// Worker threads the OS refused to start (a refusal within
    /// [`RETRY_INTERVAL`](crate::threads::RETRY_INTERVAL) of the last one does not ask the OS,
    /// and is not counted).
    pub spawn_failures: u64,
    /// When the OS began refusing this pool's workers, if no worker has started since: the
    /// pool cannot grow, its rescuer runs what waits (see [`crate::threads`]), and it asks
    /// the OS again every [`RETRY_INTERVAL`](crate::threads::RETRY_INTERVAL).
    pub workers_refused_since: Option<std::time::SystemTime>,
    /// Work items of this pool that its rescuer ran because no worker could be started
    /// (counted when the run returns, so a `flush` may return a moment before this count
    /// moves).
    pub rescued: u64,
    /// Busy workers that the stall watchdog found asleep in a work item (blocked on I/O, a
    /// lock, a sleep), each item counted once.
    pub workers_seen_blocked: u64,
    /// Workers started because busy ones were found asleep, so that work waiting behind them
    /// runs.
    pub workers_started_for_blocked: u64,
    /// The pull gate's state and the searches of this pool's workers; `None` when the pool
    /// does not pull (pull off, a strict workqueue, or no sibling pool).
    pub pull: Option<PullStats>,
}

/// One pool's pull: its workers' searches of sibling pools and the gate that decides whether
/// they search (the levels and the offer: [`WorkqueueBuilder::pull`](crate::WorkqueueBuilder::pull)).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PullStats {
    /// Per level, nearest first: `cache_domain`, `node`, `machine`.
    pub levels: Vec<PullLevelStats>,
    /// Idle entries that did not search because their cache domain had its cap of searchers.
    pub capped: u64,
    /// The gate's mean interval between this pool's idle entries (a moving mean).
    pub mean_idle_interval: std::time::Duration,
    /// Whether the pool offers waiting work to its siblings now.
    pub offering: bool,
}

/// One level of a pool's pull.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct PullLevelStats {
    /// `cache_domain`, `node` or `machine`.
    pub level: &'static str,
    /// Sibling pools at this level.
    pub siblings: usize,
    /// Searches of this level by the pool's workers.
    pub searches: u64,
    /// Searches that found a task.
    pub found: u64,
    /// Idle entries that found work offered at this level and did not search: the gate.
    pub gated: u64,
    /// The gate's success ratio for this level, from 0 to 1 (a moving mean over about the
    /// last 8 searches; 1 before the first).
    pub success_ratio: f64,
}

/// One workqueue's counters and the state of its pools, at the moment
/// [`Workqueue::stats`](crate::Workqueue::stats) was called.
///
/// Counts run from the workqueue's creation. They are summed over per-pod counters, each read
/// on its own, so while work runs the sums may be a moment apart (`completed` never exceeds
/// what was queued).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct WorkqueueStats {
    /// The workqueue's name.
    pub name: String,
    /// Its scope.
    pub scope: crate::scope::AffinityScope,
    /// Cores per `cache_shard` pod (kept under another scope for when it becomes
    /// `cache_shard`).
    pub shard_size: usize,
    /// Whether its pools' idle workers pull from sibling pools
    /// ([`Workqueue::set_pull`](crate::Workqueue::set_pull)).
    pub pull: bool,
    /// Whether its groups' items are steered
    /// ([`Workqueue::set_steer`](crate::Workqueue::set_steer)).
    pub steer: bool,
    /// Its `max_active`; `None` without one.
    pub max_active: Option<usize>,
    /// Its `max_backlog`; `None` without one.
    pub max_backlog: Option<usize>,
    /// Executions whose closure started.
    pub started: u64,
    /// Executions whose closure returned or panicked.
    pub completed: u64,
    /// Executions queued and not finished: waiting in a pool, for a `max_active` slot, or
    /// running (delayed items still waiting for their delay are not counted).
    pub in_flight: u64,
    /// Executions whose closure panicked (also counted in `completed`).
    pub panicked: u64,
    /// Pending executions discarded by `cancel_sync` before they ran.
    pub cancelled: u64,
    /// Work items whose closure panicked while being dropped (a captured value's `Drop`), when
    /// a worker let go of the item's last handle after its last execution. The worker goes on.
    pub drop_panics: u64,
    /// Executions waiting for a `max_active` slot now.
    pub waiting_for_slot: u64,
    /// Executions queued through a [`Group`](crate::Group) that started on their group's home
    /// pod (see [`Group`](crate::Group)).
    pub grouped_at_home: u64,
    /// Executions queued through a group that started on another pod (the home was loaded or
    /// crowded, or an idle pod pulled them) or while their group had no home (its first item,
    /// or the first after its home expired). A workqueue that does not steer counts its
    /// groups' executions in neither.
    pub grouped_elsewhere: u64,
    /// Moves of a group's home from one pod to another (100 ms apart at least, per group:
    /// the hold of [`Group`](crate::Group)).
    pub home_changes: u64,
    /// Executions counted against `max_backlog` now (queued and not started); 0 without a
    /// `max_backlog`.
    pub backlog: u64,
    /// Times its pods were re-formed: the CPUs the process may use changed (see
    /// [`crate::limits`]), or its scope or shard size was set.
    pub reformations: u64,
    /// The pools serving the workqueue (pods with at least one of its CPUs), by pod id.
    pub pools: Vec<PoolStats>,
}
