//! What the channel-fed peers share: N worker threads draining one channel of boxed jobs, and
//! a shutdown that closes the channel and joins them.

use std::thread::{self, JoinHandle};

use crate::bench::executor::Spawn;
use crate::error::CliError;

/// A boxed one-shot job, for the channel-fed pools.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// The sending half of a channel of [`Job`]s, cloned into the jobs that queue further jobs.
pub(crate) trait JobSender: Clone + Send + Sync + 'static {
    /// Sends `job`; `false` when the channel is closed.
    fn send_job(&self, job: Job) -> bool;

    /// Called when the pool is dropped, with its own sender: the workers leave once the queue
    /// is empty. A channel closes when its last sender is dropped, so for channels this does
    /// nothing.
    fn close(&self) {}
}

impl JobSender for crossbeam_channel::Sender<Job> {
    fn send_job(&self, job: Job) -> bool {
        self.send(job).is_ok()
    }
}

impl JobSender for std::sync::mpsc::Sender<Job> {
    fn send_job(&self, job: Job) -> bool {
        self.send(job).is_ok()
    }
}

/// A channel's sender and the worker threads draining its receiver.
#[derive(Debug)]
pub(crate) struct JobPool<S: JobSender> {
    /// `None` once dropping: closing the channel stops the workers after the queue is empty.
    sender: Option<S>,
    workers: Vec<JoinHandle<()>>,
}

impl<S: JobSender> JobPool<S> {
    /// Starts `workers` threads named `{name}-peer-{i}`, each running the body `worker` makes
    /// for it (a loop over the receiving half of `sender`'s channel).
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] naming `what` (such as "a channel worker") when a worker thread
    /// cannot be started; the workers started so far are stopped first.
    pub(crate) fn start<W>(
        sender: S,
        workers: usize,
        name: &str,
        what: &str,
        mut worker: impl FnMut() -> W,
    ) -> Result<JobPool<S>, CliError>
    where
        W: FnOnce() + Send + 'static,
    {
        let mut pool = JobPool {
            sender: Some(sender),
            workers: Vec::with_capacity(workers),
        };
        for i in 0..workers {
            let handle = thread::Builder::new()
                .name(format!("{name}-peer-{i}"))
                .spawn(worker())
                .map_err(|err| CliError::Failed(format!("cannot start {what}: {err}")))?;
            pool.workers.push(handle);
        }
        Ok(pool)
    }

    /// Queues `job` for the workers; `false` once the channel is closed.
    pub(crate) fn send<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.sender
            .as_ref()
            .is_some_and(|sender| sender.send_job(Box::new(job)))
    }

    /// A handle on the same channel, for jobs that queue further jobs.
    pub(crate) fn handle(&self) -> JobHandle<S> {
        JobHandle(self.sender.clone())
    }
}

/// A clone of a [`JobPool`]'s sender, held by jobs that queue further jobs; `None` only when
/// taken from a pool being dropped.
#[derive(Clone, Debug)]
pub(crate) struct JobHandle<S: JobSender>(Option<S>);

impl<S: JobSender> Spawn for JobHandle<S> {
    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.0
            .as_ref()
            .is_some_and(|sender| sender.send_job(Box::new(job)))
    }
}

impl<S: JobSender> Drop for JobPool<S> {
    fn drop(&mut self) {
        if let Some(sender) = self.sender.take() {
            sender.close();
        }
        for worker in self.workers.drain(..) {
            // A worker only ends by the channel closing; a panic there was already reported.
            let _ = worker.join();
        }
    }
}
