//! rayon's `ThreadPool::spawn`: fire-and-forget jobs into a work-stealing pool, injected from
//! outside it.

use std::sync::Arc;

use ::rayon::{ThreadPool, ThreadPoolBuilder};

use super::Spawner;
use crate::bench::executor::Spawn;
use crate::error::CliError;

/// A rayon pool with N threads.
#[derive(Debug)]
pub(crate) struct RayonPeer {
    /// Shared with the jobs that queue further jobs; dropping the last `Arc` stops the pool's
    /// threads without waiting for them.
    pool: Arc<ThreadPool>,
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
        Ok(RayonPeer {
            pool: Arc::new(pool),
        })
    }
}

impl Spawner for RayonPeer {
    type Handle = Arc<ThreadPool>;

    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        Spawn::spawn(&self.pool, job)
    }

    fn spawn_handle(&self) -> Arc<ThreadPool> {
        Arc::clone(&self.pool)
    }
}

impl Spawn for Arc<ThreadPool> {
    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        // From a worker of the pool, the job goes to that worker's own deque.
        ThreadPool::spawn(self, job);
        true
    }
}
