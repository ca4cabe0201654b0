//! One crossbeam-channel queue feeding N worker threads: the "one global queue" design most
//! services use.

use crossbeam_channel::{Receiver, Sender};

use super::pool::{Job, JobHandle, JobPool};
use super::Spawner;
use crate::error::CliError;

/// An unbounded crossbeam channel and the workers draining it.
#[derive(Debug)]
pub(crate) struct ChannelPeer {
    pool: JobPool<Sender<Job>>,
}

impl ChannelPeer {
    /// Starts `workers` threads on one unbounded channel.
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] when a worker thread cannot be started.
    pub(crate) fn new(workers: usize) -> Result<ChannelPeer, CliError> {
        let (sender, receiver) = crossbeam_channel::unbounded::<Job>();
        let pool = JobPool::start(sender, workers, "channel", "a channel worker", || {
            let receiver: Receiver<Job> = receiver.clone();
            move || {
                for job in receiver.iter() {
                    job();
                }
            }
        })?;
        Ok(ChannelPeer { pool })
    }
}

impl Spawner for ChannelPeer {
    type Handle = JobHandle<Sender<Job>>;

    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.pool.send(job)
    }

    fn spawn_handle(&self) -> JobHandle<Sender<Job>> {
        self.pool.handle()
    }
}
