//! A `Mutex<VecDeque>` and a `Condvar` feeding N workers: the pool people write by hand, and
//! the bare form of podq's one-lock pool (no spinning before sleeping, no accounting). Not
//! measured by default: `--peers mutex` asks for it, to tell what the one lock itself costs
//! from what podq adds around it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::pool::{Job, JobHandle, JobPool, JobSender};
use super::Spawner;
use crate::error::CliError;

/// One queue behind one lock, and the workers sleeping on its condvar.
#[derive(Debug)]
pub(crate) struct MutexPeer {
    pool: JobPool<MutexSender>,
}

impl MutexPeer {
    /// Starts `workers` threads on one locked queue.
    ///
    /// # Errors
    ///
    /// [`CliError::Failed`] when a worker thread cannot be started.
    pub(crate) fn new(workers: usize) -> Result<MutexPeer, CliError> {
        let queue = Arc::new(Queue {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                sleepers: 0,
                closed: false,
            }),
            ready: Condvar::new(),
        });
        let sender = MutexSender(Arc::clone(&queue));
        let pool = JobPool::start(sender, workers, "mutex", "a mutex-pool worker", || {
            let queue = Arc::clone(&queue);
            move || work(&queue)
        })?;
        Ok(MutexPeer { pool })
    }
}

impl Spawner for MutexPeer {
    type Handle = JobHandle<MutexSender>;

    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.pool.send(job)
    }

    fn spawn_handle(&self) -> JobHandle<MutexSender> {
        self.pool.handle()
    }
}

/// The queue the producers and the workers share.
struct Queue {
    state: Mutex<State>,
    /// Notified when a job is queued while a worker sleeps, and when the queue closes.
    ready: Condvar,
}

/// Everything under the lock.
struct State {
    jobs: VecDeque<Job>,
    /// Workers waiting on `ready`: a push notifies only when one is.
    sleepers: usize,
    /// Set when the peer is dropped: workers leave once `jobs` is empty.
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A job runs outside the lock, so a poisoned lock only means a worker died between two
        // plain field updates; the state is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The producers' and the jobs' handle on the queue.
#[derive(Clone)]
pub(crate) struct MutexSender(Arc<Queue>);

impl JobSender for MutexSender {
    fn send_job(&self, job: Job) -> bool {
        let mut state = self.0.lock();
        if state.closed {
            return false;
        }
        state.jobs.push_back(job);
        let wake = state.sleepers > 0;
        drop(state);
        if wake {
            self.0.ready.notify_one();
        }
        true
    }

    fn close(&self) {
        self.0.lock().closed = true;
        self.0.ready.notify_all();
    }
}

impl fmt::Debug for MutexSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexSender").finish_non_exhaustive()
    }
}

/// One worker: take the oldest job under the lock (sleeping while there is none), run it after
/// letting the lock go; leave when the queue is closed and empty.
fn work(queue: &Queue) {
    loop {
        let job = {
            let mut state = queue.lock();
            loop {
                if let Some(job) = state.jobs.pop_front() {
                    break job;
                }
                if state.closed {
                    return;
                }
                state.sleepers += 1;
                state = queue
                    .ready
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                state.sleepers -= 1;
            }
        };
        job();
    }
}
