//! A std `mpsc` channel whose one receiver N workers share behind a `Mutex`: the textbook
//! thread pool.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use super::pool::{Job, JobHandle, JobPool};
use super::Spawner;
use crate::error::CliError;

/// An mpsc channel and the workers taking turns on its receiver.
#[derive(Debug)]
pub(crate) struct MpscPeer {
    pool: JobPool<Sender<Job>>,
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
        let pool = JobPool::start(sender, workers, "mpsc", "an mpsc worker", || {
            let receiver = Arc::clone(&receiver);
            move || work(&receiver)
        })?;
        Ok(MpscPeer { pool })
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

impl Spawner for MpscPeer {
    type Handle = JobHandle<Sender<Job>>;

    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.pool.send(job)
    }

    fn spawn_handle(&self) -> JobHandle<Sender<Job>> {
        self.pool.handle()
    }
}
