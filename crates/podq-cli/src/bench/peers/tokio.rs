//! tokio's multi-thread runtime, spawned into from outside it through a `Handle` (so every task
//! goes through its global injector queue, as a service's I/O threads would).

use ::tokio::runtime::{Builder, Handle, Runtime};

use super::Spawner;
use crate::bench::executor::Spawn;
use crate::error::CliError;

/// A tokio runtime with N worker threads.
#[derive(Debug)]
pub(crate) struct TokioPeer {
    /// Kept alive for its workers; dropped (shut down) with the peer.
    _runtime: Runtime,
    handle: Handle,
}

impl TokioPeer {
    /// Starts a runtime with `workers` worker threads.
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] when the runtime cannot start its threads.
    pub(crate) fn new(workers: usize) -> Result<TokioPeer, CliError> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("tokio-peer")
            .build()
            .map_err(|err| CliError::Failed(format!("cannot start the tokio runtime: {err}")))?;
        let handle = runtime.handle().clone();
        Ok(TokioPeer {
            _runtime: runtime,
            handle,
        })
    }
}

impl Spawner for TokioPeer {
    type Handle = Handle;

    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        Spawn::spawn(&self.handle, job)
    }

    /// On the runtime's blocking pool, which starts a thread per blocking job while none is
    /// idle (up to 512, tokio's default), so that its workers keep running tasks.
    fn spawn_blocking_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        drop(self.handle.spawn_blocking(job));
        true
    }

    fn spawn_handle(&self) -> Handle {
        self.handle.clone()
    }
}

impl Spawn for Handle {
    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        // The JoinHandle is dropped: the task runs detached, like a queued work item. From a
        // worker of the runtime, the task goes to that worker's local queue.
        drop(Handle::spawn(self, async move { job() }));
        true
    }
}
