//! One crossbeam-channel queue feeding N worker threads: the "one global queue" design most
//! services use.

use std::thread::{self, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use super::Job;
use crate::bench::executor::{ClosedJob, Executor};
use crate::error::CliError;

/// An unbounded crossbeam channel and the workers draining it.
#[derive(Debug)]
pub(crate) struct ChannelPeer {
    /// `None` once dropping: closing the channel stops the workers after the queue is empty.
    sender: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
}

impl ChannelPeer {
    /// Starts `workers` threads on one unbounded channel.
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] when a worker thread cannot be started.
    pub(crate) fn new(workers: usize) -> Result<ChannelPeer, CliError> {
        let (sender, receiver) = crossbeam_channel::unbounded::<Job>();
        let mut peer = ChannelPeer {
            sender: Some(sender),
            workers: Vec::with_capacity(workers),
        };
        for i in 0..workers {
            let receiver: Receiver<Job> = receiver.clone();
            let worker = thread::Builder::new()
                .name(format!("channel-peer-{i}"))
                .spawn(move || {
                    for job in receiver.iter() {
                        job();
                    }
                })
                .map_err(|err| CliError::Failed(format!("cannot start a channel worker: {err}")))?;
            peer.workers.push(worker);
        }
        Ok(peer)
    }
}

impl Executor for ChannelPeer {
    type Item = ClosedJob;

    fn item(&self, job: ClosedJob) -> ClosedJob {
        job
    }

    fn queue_item(&self, item: &ClosedJob) -> bool {
        let job = item.clone();
        self.spawn(move || job.run())
    }

    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.sender
            .as_ref()
            .is_some_and(|sender| sender.send(Box::new(job)).is_ok())
    }
}

impl Drop for ChannelPeer {
    fn drop(&mut self) {
        self.sender = None;
        for worker in self.workers.drain(..) {
            // A worker only ends by the channel closing; a panic there was already reported.
            let _ = worker.join();
        }
    }
}
