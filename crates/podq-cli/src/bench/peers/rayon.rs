//! rayon's `ThreadPool::spawn`: fire-and-forget jobs into a work-stealing pool, injected from
//! outside it.

use ::rayon::{ThreadPool, ThreadPoolBuilder};

use super::Spawner;
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

impl Spawner for RayonPeer {
    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.pool.spawn(job);
        true
    }
}
