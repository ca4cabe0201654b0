//! rayon's `ThreadPool::spawn`: fire-and-forget jobs into a work-stealing pool, injected from
//! outside it.

use ::rayon::{ThreadPool, ThreadPoolBuilder};

use crate::bench::executor::{ClosedJob, Executor};
use crate::error::CliError;

/// A rayon pool with N threads.
#[derive(Debug)]
pub(crate) struct RayonPeer {
    pool: ThreadPool,
}

impl RayonPeer {
    /// Starts a pool with `workers` threads.
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] when the pool cannot start its threads.
    pub(crate) fn new(workers: usize) -> Result<RayonPeer, CliError> {
        let pool = ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("rayon-peer-{i}"))
            .build()
            .map_err(|err| CliError::Failed(format!("cannot start the rayon pool: {err}")))?;
        Ok(RayonPeer { pool })
    }
}

impl Executor for RayonPeer {
    type Item = ClosedJob;

    fn item(&self, job: ClosedJob) -> ClosedJob {
        job
    }

    fn queue_item(&self, item: &ClosedJob) -> bool {
        let job = item.clone();
        self.spawn(move || job.run())
    }

    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.pool.spawn(job);
        true
    }
}
