//! A std `mpsc` channel whose one receiver N workers share behind a `Mutex`: the textbook
//! thread pool.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

use super::Job;
use crate::bench::executor::{ClosedJob, Executor};
use crate::error::CliError;

/// An mpsc channel and the workers taking turns on its receiver.
#[derive(Debug)]
pub(crate) struct MpscPeer {
    /// `None` once dropping: closing the channel stops the workers after the queue is empty.
    sender: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
}

impl MpscPeer {
    /// Starts `workers` threads on one channel.
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] when a worker thread cannot be started.
    pub(crate) fn new(workers: usize) -> Result<MpscPeer, CliError> {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut peer = MpscPeer {
            sender: Some(sender),
            workers: Vec::with_capacity(workers),
        };
        for i in 0..workers {
            let receiver = Arc::clone(&receiver);
            let worker = thread::Builder::new()
                .name(format!("mpsc-peer-{i}"))
                .spawn(move || work(&receiver))
                .map_err(|err| CliError::Failed(format!("cannot start an mpsc worker: {err}")))?;
            peer.workers.push(worker);
        }
        Ok(peer)
    }
}

/// One worker: take a job under the lock, run it after letting the lock go.
fn work(receiver: &Mutex<Receiver<Job>>) {
    loop {
        let job = receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv();
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

impl Executor for MpscPeer {
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

impl Drop for MpscPeer {
    fn drop(&mut self) {
        self.sender = None;
        for worker in self.workers.drain(..) {
            // A worker only ends by the channel closing; a panic there was already reported.
            let _ = worker.join();
        }
    }
}
