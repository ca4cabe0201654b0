//! The runtimes a user would pick instead of podq, each behind [`Executor`], each built with one
//! worker thread per usable CPU.
//!
//! [`Executor`]: super::executor::Executor

mod channel;
mod mpsc;
mod mutex;
mod pool;
mod rayon;
mod tokio;

pub(crate) use self::channel::ChannelPeer;
pub(crate) use self::mpsc::MpscPeer;
pub(crate) use self::mutex::MutexPeer;
pub(crate) use self::rayon::RayonPeer;
pub(crate) use self::tokio::TokioPeer;

use crate::bench::executor::{ClosedJob, Executor, Spawn};
use crate::error::CliError;

/// What each peer runtime provides: running a one-shot closure on its workers.
///
/// Every peer is an [`Executor`] through it alone: a peer has no reusable work item, so the
/// closed loop spawns the producer's job anew each time it queues it.
pub(crate) trait Spawner: Sync {
    /// What the runtime's work items queue further jobs through.
    type Handle: Spawn;

    /// Runs `job` on one of the runtime's workers; `false` when the runtime refused it.
    fn spawn_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool;

    /// Runs `job`, which blocks, where the runtime runs blocking work: by default on its
    /// workers, as any job; `false` when the runtime refused it.
    fn spawn_blocking_job<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.spawn_job(job)
    }

    /// A handle for work items to queue further jobs with.
    fn spawn_handle(&self) -> Self::Handle;
}

impl<S: Spawner> Executor for S {
    type Item = ClosedJob;
    type Handle = S::Handle;

    fn handle(&self) -> S::Handle {
        self.spawn_handle()
    }

    fn item(&self, job: ClosedJob) -> ClosedJob {
        job
    }

    fn queue_item(&self, item: &ClosedJob) -> bool {
        let job = item.clone();
        self.spawn(move || job.run())
    }

    fn spawn<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.spawn_job(job)
    }

    fn spawn_blocking<F: FnOnce() + Send + 'static>(&self, job: F) -> bool {
        self.spawn_blocking_job(job)
    }
}

/// A peer runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// A tokio multi-thread runtime, spawned into through a `Handle` from the producer threads.
    Tokio,
    /// A rayon `ThreadPool`, `spawn` from the producer threads.
    Rayon,
    /// One crossbeam-channel queue feeding N workers: the one global queue most services use.
    Channel,
    /// A std `mpsc` channel whose receiver N workers share behind a `Mutex`.
    Mpsc,
    /// A `Mutex<VecDeque>` and a `Condvar` feeding N workers; measured only when asked for.
    Mutex,
}

impl Peer {
    /// Every peer `--peers` accepts: the default ones, then the locked-queue reference.
    pub(crate) const KNOWN: [Peer; 5] = [
        Peer::Tokio,
        Peer::Rayon,
        Peer::Channel,
        Peer::Mpsc,
        Peer::Mutex,
    ];

    /// The peers measured by default, in the order they are measured: all but the reference.
    pub(crate) const DEFAULT: &'static [Peer] = Peer::KNOWN.split_at(4).0;

    /// The name on the command line and in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Peer::Tokio => "tokio",
            Peer::Rayon => "rayon",
            Peer::Channel => "channel",
            Peer::Mpsc => "mpsc",
            Peer::Mutex => "mutex",
        }
    }

    /// The peer called `name`, exactly.
    ///
    /// # Errors
    ///
    /// [`CliError::Usage`] naming `name` and the valid peers.
    pub(crate) fn parse(name: &str) -> Result<Peer, CliError> {
        Peer::KNOWN
            .into_iter()
            .find(|peer| peer.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Peer::KNOWN.into_iter().map(Peer::name).collect();
                CliError::Usage(format!(
                    "unknown peer '{name}': expected one of {}, or none",
                    known.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for peer in Peer::KNOWN {
            assert_eq!(Peer::parse(peer.name()).ok(), Some(peer));
        }
        assert!(Peer::parse("Tokio").is_err(), "names are case-sensitive");
        assert!(
            matches!(Peer::parse("async-std"), Err(CliError::Usage(m)) if m.contains("'async-std'"))
        );
    }

    /// Spawns `count` jobs and checks that each ran exactly once once the peer is dropped.
    fn runs_every_job<E: Executor>(peer: E) {
        let count = 1_000;
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..count {
            let ran = Arc::clone(&ran);
            assert!(peer.spawn(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            }));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while ran.load(Ordering::Relaxed) < count && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        drop(peer);
        assert_eq!(ran.load(Ordering::Relaxed), count);
    }

    /// Runs a chain of `count` jobs, each queueing the next through the peer's handle from
    /// the worker it runs on, and checks that all ran.
    fn handle_queues_from_jobs<E: Executor>(peer: E) {
        fn link<H: Spawn>(handle: H, left: usize, ran: Arc<AtomicUsize>) {
            ran.fetch_add(1, Ordering::Relaxed);
            if left > 0 {
                let next = handle.clone();
                assert!(handle.spawn(move || link(next, left - 1, ran)));
            }
        }
        let count = 500;
        let ran = Arc::new(AtomicUsize::new(0));
        let first = (peer.handle(), Arc::clone(&ran));
        assert!(peer.spawn(move || link(first.0, count - 1, first.1)));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while ran.load(Ordering::Relaxed) < count && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        drop(peer);
        assert_eq!(ran.load(Ordering::Relaxed), count);
    }

    #[test]
    fn every_peer_handle_queues_from_its_jobs() {
        handle_queues_from_jobs(TokioPeer::new(2).expect("tokio"));
        handle_queues_from_jobs(RayonPeer::new(2).expect("rayon"));
        handle_queues_from_jobs(ChannelPeer::new(2).expect("channel"));
        handle_queues_from_jobs(MpscPeer::new(2).expect("mpsc"));
        handle_queues_from_jobs(MutexPeer::new(2).expect("mutex"));
    }

    #[test]
    fn every_peer_runs_every_job() {
        runs_every_job(TokioPeer::new(2).expect("tokio"));
        runs_every_job(RayonPeer::new(2).expect("rayon"));
        runs_every_job(ChannelPeer::new(2).expect("channel"));
        runs_every_job(MpscPeer::new(2).expect("mpsc"));
        runs_every_job(MutexPeer::new(2).expect("mutex"));
    }
}
