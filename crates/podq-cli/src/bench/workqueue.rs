//! podq itself as a system under test: one workqueue per measurement, with the scope and shard
//! size being measured.

use podq::{AffinityScope, Work, Workqueue};

use super::executor::{ClosedJob, Executor};
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
}

/// A podq workqueue built for one measurement.
pub(crate) struct PodqExecutor {
    wq: Workqueue,
}

impl PodqExecutor {
    /// Builds a workqueue with `scope` and `shard_size` (everything else default).
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] with podq's reason when the workqueue cannot be built.
    pub(crate) fn new(scope: AffinityScope, shard_size: usize) -> Result<PodqExecutor, CliError> {
        let wq = Workqueue::builder("podq-bench")
            .scope(scope)
            .shard_size(shard_size)
            .build()
            .map_err(|err| CliError::Failed(format!("cannot build a {scope} workqueue: {err}")))?;
        Ok(PodqExecutor { wq })
    }

    /// What the runtime reports about the run: pools serving the workqueue, workers they
    /// created, and how often a pool lock was found held.
    pub(crate) fn pool_counts(&self) -> PoolCounts {
        let stats = self.wq.stats();
        PoolCounts {
            pools: self.wq.pools(),
            workers_created: stats.pools.iter().map(|pool| pool.workers_created).sum(),
            lock_contended: stats.pools.iter().map(|pool| pool.lock_contended).sum(),
        }
    }
}

impl Executor for PodqExecutor {
    /// One reusable work item per producer thread, as in the kernel's test: it is queued again
    /// as soon as it has run, never re-created while it may still be running.
    type Item = Work;

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
