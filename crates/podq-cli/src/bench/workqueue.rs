//! podq itself as a system under test: one workqueue per measurement, with the scope, shard
//! size and pull setting being measured.

use std::sync::Arc;

use podq::{AffinityScope, Work, Workqueue};

use super::executor::{ClosedJob, Executor, Spawn};
use super::measurement::Steering;
use crate::error::CliError;

/// Counts summed over a workqueue's pools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PoolCounts {
    /// Pools serving the workqueue.
    pub(crate) pools: usize,
    /// Worker threads the pools created.
    pub(crate) workers_created: u64,
    /// Times a pool lock was found held by another thread.
    pub(crate) lock_contended: u64,
    /// Items queued on one of the pools that a worker of another pool pulled and ran.
    pub(crate) pulled: u64,
    /// Times a busy worker was seen blocked in its item.
    pub(crate) seen_blocked: u64,
    /// Workers started because busy ones were blocked.
    pub(crate) started_for_blocked: u64,
    /// Items that the worker of the item that queued them ran (`PoolStats::ran_by_queuer`).
    pub(crate) ran_by_queuer: u64,
    /// Items a worker took from the queue with the one before them (`PoolStats::ran_ahead`).
    pub(crate) ran_ahead: u64,
    /// Acquisitions of the pools' locks (`PoolStats::lock_acquisitions`).
    pub(crate) lock_acquisitions: u64,
}

/// A podq workqueue built for one measurement.
pub(crate) struct PodqExecutor {
    /// Shared with the items that queue further items ([`Executor::handle`]); they let it go
    /// when they finish, before the run's flush returns.
    wq: Arc<Workqueue>,
}

impl PodqExecutor {
    /// Builds a workqueue with `scope`, `shard_size` and `pull`, steering on (everything else
    /// default).
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] with podq's reason when the workqueue cannot be built.
    #[cfg(test)]
    pub(crate) fn new(
        scope: AffinityScope,
        shard_size: usize,
        pull: bool,
    ) -> Result<PodqExecutor, CliError> {
        PodqExecutor::with_steer(scope, shard_size, pull, true)
    }

    /// Builds a workqueue with `scope`, `shard_size`, `pull` and `steer` (everything else
    /// default).
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] with podq's reason when the workqueue cannot be built.
    pub(crate) fn with_steer(
        scope: AffinityScope,
        shard_size: usize,
        pull: bool,
        steer: bool,
    ) -> Result<PodqExecutor, CliError> {
        let wq = Workqueue::builder("podq-bench")
            .scope(scope)
            .shard_size(shard_size)
            .pull(pull)
            .steer(steer)
            .build()
            .map_err(|err| CliError::Failed(format!("cannot build a {scope} workqueue: {err}")))?;
        Ok(PodqExecutor { wq: Arc::new(wq) })
    }

    /// What the runtime reports about the run: pools serving the workqueue, workers they
    /// created, how often a pool lock was found held, how many items were pulled, and how
    /// often busy workers were seen blocked and workers started for them, and how many items
    /// their queuer's worker ran.
    pub(crate) fn pool_counts(&self) -> PoolCounts {
        let stats = self.wq.stats();
        let sum = |count: fn(&podq::PoolStats) -> u64| stats.pools.iter().map(count).sum();
        PoolCounts {
            pools: self.wq.pools(),
            workers_created: sum(|pool| pool.workers_created),
            lock_contended: sum(|pool| pool.lock_contended),
            pulled: sum(|pool| pool.pulled_out),
            seen_blocked: sum(|pool| pool.workers_seen_blocked),
            started_for_blocked: sum(|pool| pool.workers_started_for_blocked),
            ran_by_queuer: sum(|pool| pool.ran_by_queuer),
            ran_ahead: sum(|pool| pool.ran_ahead),
            lock_acquisitions: sum(|pool| pool.lock_acquisitions),
        }
    }

    /// The workqueue, for the groups of the locality workload.
    pub(crate) fn workqueue(&self) -> &Workqueue {
        &self.wq
    }

    /// The steering counts of the run (`WorkqueueStats`).
    pub(crate) fn steering(&self) -> Steering {
        let stats = self.wq.stats();
        Steering {
            at_home: stats.grouped_at_home,
            elsewhere: stats.grouped_elsewhere,
            home_changes: stats.home_changes,
        }
    }

    /// Executions of the workqueue's items that have finished.
    #[cfg(test)]
    pub(crate) fn completed(&self) -> u64 {
        self.wq.stats().completed
    }
}

impl Executor for PodqExecutor {
    /// One reusable work item per producer thread, as in the kernel's test: it is queued again
    /// as soon as it has run, never re-created while it may still be running.
    type Item = Work;

    type Handle = Arc<Workqueue>;

    fn handle(&self) -> Arc<Workqueue> {
        Arc::clone(&self.wq)
    }

    fn item(&self, job: ClosedJob) -> Work {
        Work::new(move || job.run())
    }

    fn queue_item(&self, item: &Work) -> bool {
        self.wq.queue_work(item)
    }

    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.wq.queue(job)
    }

    fn quiesce(&self) {
        self.wq.flush();
    }
}

impl Spawn for Arc<Workqueue> {
    /// From a worker, to the pool of the pod of the CPU it runs on.
    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.queue(job)
    }
}
